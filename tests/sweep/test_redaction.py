"""A storage URL's password never shows in a message, not even its tail: in the user part it is everything from
the first ':' after `scheme://` to the last '@' (it may hold an unencoded '@', '/', '?' or '#'), and a driver
that split such a URL at the wrong '@' (naming the password's tail as part of the host) is masked too."""
import itertools

import pytest

from sensitivity.studies.redaction import describe, reason
from sensitivity.studies.storage import StorageError, open_storage

PIECES = ("Qk7x", "Zr9w", "Vm3q")  # a password's parts, each distinctive enough to be found if shown


@pytest.mark.parametrize("url, shown", [
    ("postgresql://u:p@ss@h:5/db", "postgresql://u:***@h:5/db"),
    ("postgresql://u:se/cr@et@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:a#b?c@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:p@ss@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
    ("postgresql://u@h/db?password=p@ss&x=1", "postgresql://u@h/db?password=***&x=1"),
    ("postgresql://u:pw@h/db?password=p@s/s#t", "postgresql://u:***@h/db?password=***"),
    ("postgresql://u:p@[::1", "postgresql://u:***@[::1"),
    ("postgresql://u@h:5/db", "postgresql://u@h:5/db"),
    ("postgresql://h/db", "postgresql://h/db"),
    ("sqlite:////tmp/a:b@c.db", "sqlite:////tmp/a:b@c.db"),
    ("journal:results/x@y.journal", "journal:results/x@y.journal"),
])
def test_describe_masks_from_the_first_colon_to_the_last_at(url, shown):
    assert describe(url) == shown


def passwords(separators: str):
    """Passwords of the three pieces joined by every pair of `separators`."""
    for a, b in itertools.product(separators, repeat=2):
        yield a.join(PIECES[:2]) + b + PIECES[2]


def test_no_piece_of_a_password_in_the_user_part_shows_whatever_it_holds():
    shown = [(pw, describe(f"postgresql://user:{pw}@dbhost:5432/db?sslmode=require"))
             for pw in passwords("@/?#:&;=%! ")]
    leaks = [(pw, text) for pw, text in shown if any(piece in text for piece in PIECES)]
    print(f"{len(shown)} passwords, {len(leaks)} with a piece shown")
    assert not leaks
    assert all(text == "postgresql://user:***@dbhost:5432/db?sslmode=require" for _, text in shown)


def test_no_piece_of_a_password_parameter_shows_whatever_it_holds():
    # '&' and ';' end a parameter's value for the driver too: not in a parameter's password
    shown = [describe(f"postgresql://user@dbhost/db?sslmode=require&password={pw}") for pw in passwords("@/?#:=%")]
    assert not [text for text in shown if any(piece in text for piece in PIECES)]
    assert set(shown) == {"postgresql://user@dbhost/db?sslmode=require&password=***"}


@pytest.mark.parametrize("message", [
    "failed to resolve host 'Zr9w@127.0.0.1': [Errno -2] Name or service not known",
    'could not connect "postgresql://u:Qk7x@Zr9w/Vm3q@h/db"',
    "invalid dsn: password=Qk7x@Zr9w host=h",
    "cannot parse 'postgresql://u@h/db?password=Qk7x@Zr9w&x=1'",
])
def test_reason_masks_a_password_or_its_tail_in_a_driver_message(message):
    text = reason(ValueError(message))
    assert not any(piece in text for piece in PIECES), text


@pytest.mark.parametrize("password", ["Qk7x@Zr9w", "Qk7x/Zr9w@Vm3q", "Qk7x@Zr9w#Vm3q", "Qk7x?Zr9w@Vm3q"])
def test_a_storage_whose_password_holds_an_unencoded_at_is_refused_without_its_tail(password):
    """A real driver (psycopg) given the URL: SQLAlchemy splits it at the first '@', so the driver is asked
    for the host 'Zr9w@127.0.0.1' and says so; the message is one line with no piece of the password."""
    with pytest.raises(StorageError) as caught:
        open_storage(f"postgresql://u:{password}@127.0.0.1:1/db")
    message = str(caught.value)
    print(message)
    assert len(message.splitlines()) == 1 and "cannot be opened" in message
    assert not any(piece in message for piece in PIECES), message
