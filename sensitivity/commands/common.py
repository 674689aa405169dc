"""What every command shares: one-line usage errors, exit codes, number parsing."""
from __future__ import annotations

import argparse
import math

EXIT_OK, EXIT_TRIAL_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input; the message is one line naming the option and what is allowed."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and no usage block."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def number(kind, minimum=None, strict=False):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}")
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if minimum is not None and (value < minimum or (strict and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum}, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def _number_list(kind, noun: str):
    def parse(text: str):
        try:
            values = tuple(kind(part) for part in text.split(",") if part)
            if not all(math.isfinite(v) for v in values):
                raise ValueError
            return values
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {noun}, got {text!r}")
    parse.__name__ = f"{kind.__name__}_list"
    return parse


int_list = _number_list(int, "integers")
float_list = _number_list(float, "numbers")


def load_study(command: str, name: str, storage_url=None):
    """The study `name` of the storage; a UsageError naming the command where there is none."""
    from sensitivity.sweep import studies
    from sensitivity.sweep.storage import StorageError
    try:
        return studies.load(name, storage_url)
    except StorageError as exc:
        raise UsageError(f"sensitivity {command}: {exc}")
