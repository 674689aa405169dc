"""Command line: parses arguments, calls the library, maps errors to exit codes.

Exit codes: 0 success (a trial that trained to a result, diverged included); 1 a trial that failed or
timed out; 2 a usage error or bad input (one line on stderr, nothing run). The commands live in
`sensitivity.commands`, one module per group.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import unicodedata

from sensitivity.commands.common import EXIT_USAGE, Parser, UsageError
from sensitivity.studies.storage import StorageLost
from sensitivity.sweep import stopping

EXIT_ENVIRONMENT = 1  # a fault of the machine or the environment, not of the input

# The commands each module of sensitivity.commands adds, in the order of `sensitivity --help`.
GROUPS = {"trial": ("trial",), "listing": ("frameworks", "datasets", "semantics", "import-caffe"),
          "sweep": ("sweep", "defaults", "transfer", "crossover", "studies", "dashboard"), "export": ("export",),
          "analysis": ("robustness", "plot", "report"), "findings": ("findings",), "ablate": ("ablate",),
          "timing": ("timing",), "tunability": ("tunability",), "reproduce": ("reproduce",),
          "importance": ("importance",)}
_COMMANDS = {name for names in GROUPS.values() for name in names}


def build_parser(command=None) -> Parser:
    """The parser of every command, or, where `command` names one, of its module's commands only: a command
    then imports what its own options need and no more (the trial options read TrialSpec, so pydantic)."""
    parser = Parser(prog="sensitivity", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group, names in GROUPS.items():
        if command is None or command not in _COMMANDS or command in names:
            importlib.import_module(f"sensitivity.commands.{group}").add_parsers(commands)
    return parser


_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def escaped(message: str) -> str:
    """`message` on one line, safe for a terminal: control, format and surrogate characters (ESC, a newline, U+202E,
    the other bidirectional controls) shown as repr shows them (`\\x1b`, `\\n`, `\\u202e`), so a name cannot
    move the cursor, recolour, reorder or cut the line."""
    return "".join(repr(c)[1:-1] if c in _BIDI or unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") else c
                   for c in message)


# the arguments that name a file (dest -> how the command line names it): a trailing '/' names a folder, and
# pathlib's Path drops it (`sweep space.yaml/` ran the space, `export --out newdir/` wrote a file newdir)
FILE_ARGUMENTS = {"space": "SPACE", "log": "LOG", "solver": "SOLVER", "config": "--config", "out": "--out",
                  "net": "--net", "protocol": "--protocol"}


def _check_file_paths(args) -> None:
    for dest, shown in FILE_ARGUMENTS.items():
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.endswith("/"):
                command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
                raise UsageError(f"sensitivity {command}: {shown} {item!r}: a file's path, which ends in '/' "
                                 "(a folder's); give the file's path without it")


def main(argv=None) -> int:
    """Run the command line `argv` (None: this process's own, `sys.argv`); returns the exit code."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    if sys.stdout is None:  # started with its standard output closed (>&-): every print would vanish, exit 0
        if sys.stderr is not None:
            print("sensitivity: standard output is closed; give the command an output (a file, a pipe, "
                  "/dev/null)", file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        nul = [i for i, a in enumerate(argv, 1) if "\0" in a]  # possible in-process only, never from a shell
        if nul:
            raise UsageError(f"sensitivity: argument {nul[0]} holds a NUL character")
        try:
            os.getcwd()
        except OSError as exc:  # the working folder was deleted: every relative path would fail later
            print(f"sensitivity: the working folder is gone ({exc.strerror}); cd to one that exists",
                  file=sys.stderr)
            return EXIT_ENVIRONMENT
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        _check_file_paths(args)
        stopping.set_command_line(argv)
        return args.handler(args)
    except UsageError as exc:
        print(escaped(str(exc).rstrip("\n")), file=sys.stderr)
        return EXIT_USAGE
    except StorageLost as exc:  # checked before a run as during it (a journal lock no writer holds): exit 1
        print(escaped(f"sensitivity {argv[0]}: {str(exc).splitlines()[0]}"), file=sys.stderr)
        return EXIT_ENVIRONMENT
    except OSError as exc:  # the environment (HOME a file, a looping link, no file descriptors left), not input
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(escaped(f"sensitivity: {exc.strerror or exc}{where}"), file=sys.stderr)
        return EXIT_ENVIRONMENT
    except RuntimeError as exc:  # pathlib's resolve() of Python 3.11 on a symlink loop (results -> results)
        if not str(exc).startswith("Symlink loop"):
            raise
        print(escaped(f"sensitivity: {exc}: fix or remove the link"), file=sys.stderr)
        return EXIT_ENVIRONMENT
    except KeyboardInterrupt:
        name = stopping.stopped_by()
        if name is None:
            return 130
        print(escaped(stopping.line(name)), file=sys.stderr)  # a sweep ended by SIGTERM or SIGINT: told, Ray stopped
        return 128 + signal.Signals[name].value


if __name__ == "__main__":
    sys.exit(main())
