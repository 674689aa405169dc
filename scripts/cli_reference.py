"""Write docs/cli.md, the command-line reference, from the argparse parsers of `sensitivity.cli.build_parser()`:
each command's usage, description and options with their help.

    .venv/bin/python scripts/cli_reference.py           # (re)write docs/cli.md
    .venv/bin/python scripts/cli_reference.py --check   # exit 1 when docs/cli.md differs from the parsers

tests/test_docs.py fails while docs/cli.md differs from what this script writes.
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a file: the package is the checkout's

from sensitivity import cli  # noqa: E402

DOC = ROOT / "docs" / "cli.md"
COMMAND = ".venv/bin/python scripts/cli_reference.py"
WIDTH = 100  # the usage lines' width, fixed: the page must not depend on the terminal that wrote it


def render() -> str:
    """The page, as Markdown."""
    parser = cli.build_parser()
    commands = _subcommands(parser)
    exit_codes = " ".join(cli.__doc__.split("\n\n")[1].split()).split(" The commands live")[0]
    lines = ["# Command-line reference", "",
             f"Generated from the parsers (`sensitivity.cli.build_parser()`) by `{COMMAND}`: do not edit it by hand. "
             "`tests/test_docs.py` fails while it differs from the parsers.", "",
             "Run a command as `sensitivity COMMAND` (the console script) or "
             "`.venv/bin/python -m sensitivity.cli COMMAND`; each takes `-h`/`--help`. " + exit_codes, "",
             "| command | what it does |", "| --- | --- |"]
    lines += [f"| [`{name}`](#{_anchor(sub.prog)}) | {_cell(summary)} |" for name, sub, summary in commands]
    for _, sub, summary in commands:
        lines += _section(sub, summary, level=2)
    return "\n".join(lines).rstrip("\n") + "\n"


def _subcommands(parser) -> list:
    """(name, parser, one-line help) of each subcommand of `parser`, in its order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: _expanded(parser, choice) for choice in action._choices_actions}
            found += [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return found


def _section(parser, summary: str, level: int) -> list:
    lines = ["", f"{'#' * level} {parser.prog}", ""]
    if summary:
        lines += [_text(summary) + ("" if summary.endswith(".") else "."), ""]
    if parser.description:
        lines += [parser.description, ""]
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    lines += ["```text", parser.format_usage().rstrip(), "```"]
    hidden = (argparse._HelpAction, argparse._SubParsersAction)  # every command's -h; subcommands get sections
    options = [a for a in parser._actions if a.help is not argparse.SUPPRESS and not isinstance(a, hidden)]
    if options:
        lines.append("")
        lines += [_option(parser, action) for action in options]
    for _, sub, sub_summary in _subcommands(parser):
        lines += _section(sub, sub_summary, level + 1)
    return lines


def _option(parser, action) -> str:
    formatter = parser._get_formatter()
    line = f"- `{formatter._format_action_invocation(action)}`"
    notes = []
    if action.required and action.option_strings:
        notes.append("required")
    default = action.default
    help_text = _expanded(parser, action) if action.help else ""
    if action.option_strings and default not in (None, False, [], argparse.SUPPRESS) and "default" not in help_text:
        notes.append(f"default `{_shown(default)}`")
    if notes:
        line += f" ({', '.join(notes)})"
    return line + (f": {_text(help_text)}" if help_text else "")


def _expanded(parser, action) -> str:
    """The action's help with argparse's %-formatting applied, as `--help` shows it."""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def _shown(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _text(text: str) -> str:
    """Help text as Markdown: asterisks are literal."""
    return text.replace("*", r"\*")


def _cell(text: str) -> str:
    return _text(text).replace("|", r"\|")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading made of letters, digits, spaces and hyphens."""
    return heading.lower().replace(" ", "-")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md differs; write nothing")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if not DOC.is_file() or DOC.read_text() != page:
            print(f"docs/cli.md differs from the parsers: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(page)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
