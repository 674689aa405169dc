"""A storage URL, or an error that names one, without its password: what every message, log line and report
that names a storage prints.

`describe` gives a URL safe to print or put in a report: no password, in the user part or the query string,
and never an exception for a malformed URL. `reason` gives an exception's first line, its password masked
(drivers quote the URL).
"""
from __future__ import annotations

import re

# a password-like parameter's value, to the next parameter (a value may hold an unencoded '#', '@' or '/')
_SECRET_KEY = r"[^=&;]*(?:password|passwd|pwd|secret|token)[^=&;]*="
_SECRET_QUERY = re.compile(rf"((?:^|[?&;]){_SECRET_KEY})[^&;]*", re.I)
_SECRET_PARAM = re.compile(rf"([?&;]{_SECRET_KEY})[^&;]*", re.I)  # in a URL: only after its '?', '&' or ';'


def describe(url: str) -> str:
    """The URL without its password: any password-like parameter's value, and in the user part everything
    from the first ':' after `scheme://` to the LAST '@' (a password may hold an unencoded '@', '/', '?' or
    '#'). Parsed by hand, so a malformed URL (`postgresql://u:p@[::1`) is masked all the same and never raises;
    where the URL is ambiguous, more is masked, never less."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        return _SECRET_QUERY.sub(r"\1***", str(url))
    rest = _SECRET_PARAM.sub(r"\1***", rest)  # first, so that an '@' in a parameter's value is not the host's
    user, at, host = rest.rpartition("@")
    if at and ":" in user and not rest.startswith("/"):  # `scheme:///...`: no user part at all
        rest = user.split(":", 1)[0] + ":***@" + host
    return f"{scheme}://{rest}"


def reason(exc: BaseException) -> str:
    """The first line of an exception's message (of its cause, for Optuna's storage error, whose own message
    guesses at invalid data), its password masked (drivers quote the URL)."""
    # lazy: optuna
    import optuna
    if isinstance(exc, optuna.exceptions.StorageInternalError) and exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _masked(text)


def _masked(text: str) -> str:
    """`text` with every password masked: password-like parameters, each URL in it (`describe`), and in any
    other word what precedes its last '@' (a URL split at a password's unencoded '@' gives the driver a host
    holding the password's tail: "failed to resolve host 'tail@h'")."""
    def word(match: re.Match) -> str:
        found = match.group()
        if "://" in found:
            return describe(found)
        return "***@" + found.rpartition("@")[2] if "@" in found else found

    return re.sub(r"[^\s'\"]+", word, _SECRET_QUERY.sub(r"\1***", text))
