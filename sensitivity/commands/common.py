"""What every command shares: one-line usage errors, exit codes, number parsing."""
from __future__ import annotations

import argparse
import contextlib
import math
import re

from sensitivity.studies import catalog
from sensitivity.studies.redaction import reason
from sensitivity.studies.storage import StorageError, is_storage_error

EXIT_OK, EXIT_TRIAL_FAILED, EXIT_USAGE = 0, 1, 2
MAX_TRIALS = 1_000_000  # trials of a sweep, and a trial's number in a study (docs/bounds.md)


class UsageError(Exception):
    """Bad input; the message is one line naming the option and what is allowed."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and no usage block."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")

    def add_argument(self, *names, **kwargs):
        """As argparse's; an option or argument that takes text (no type of its own) refuses an empty one: an
        empty value never stands for the default."""
        if kwargs.get("action", "store") == "store" and "type" not in kwargs:
            kwargs["type"] = text
        return super().add_argument(*names, **kwargs)


def text(value: str) -> str:
    """An argparse type: any text but an empty or blank one."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty; give a value, or leave the option out for its default")
    return value


# ASCII decimal only: Python's int() and float() also take '١٠', '６' and '1_0', which no shell user means.
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def ascii_number(kind, text: str):
    """`text` as an int or float, ASCII decimal only (and inf/nan for a float, refused later); ValueError
    otherwise."""
    if not (_INT if kind is int else _FLOAT).fullmatch(text):
        raise ValueError(text)
    return kind(text)


def number(kind, minimum=None, strict=False, maximum=None):
    """An argparse type: an int or a finite float, at least `minimum` (above it when `strict`), at most
    `maximum`."""
    def parse(text: str):
        try:
            value = ascii_number(kind, text)
        except ValueError:
            noun = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {noun} in ASCII digits, got {_shown(text)}")
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {_shown(text)}")
        if minimum is not None and (value < minimum or (strict and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum}, got {_shown(text)}")
        if maximum is not None and value > maximum:
            shown = f"{int(maximum):,}" if float(maximum).is_integer() else f"{maximum:g}"
            raise argparse.ArgumentTypeError(f"must be <= {shown}, got {_shown(text)}")
        return value
    parse.__name__ = kind.__name__
    return parse


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


port = number(int, 1, maximum=65535)
port.__name__ = "port"


def _number_list(kind, noun: str):
    def parse(text: str):
        if "" in text.split(","):  # `1,,2` is not 1,2: a value left out is refused, not skipped
            raise argparse.ArgumentTypeError(f"expected comma-separated {noun}, got {_shown(text)} (an empty value)")
        try:
            values = tuple(ascii_number(kind, part) for part in text.split(","))
            if not all(math.isfinite(v) for v in values):
                raise ValueError
            return values
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {noun}, got {_shown(text)}")
    parse.__name__ = f"{kind.__name__}_list"
    return parse


int_list = _number_list(int, "integers")


def load_study(command: str, name: str, storage_url=None):
    """The study `name` of the storage; a UsageError naming the command where there is none."""
    try:
        return catalog.load(name, storage_url)
    except StorageError as exc:
        raise UsageError(f"sensitivity {command}: {exc}")


@contextlib.contextmanager
def storage_errors(command: str):
    """A storage that cannot be used, mapped to a one-line usage error naming `command`."""
    try:
        yield
    except StorageError as exc:
        raise UsageError(f"sensitivity {command}: {exc}")
    except Exception as exc:  # the storage failed while being read, beyond its retry window
        if not is_storage_error(exc):
            raise
        raise UsageError(f"sensitivity {command}: the storage failed: {reason(exc)}")
