"""The README and docs/ stay true: docs/cli.md is the one the parsers give, every relative link resolves, every
`sensitivity` command line they show parses, and the README stays a user's page."""
import argparse
import importlib.util
import os
import re
import shlex

import pytest

from sensitivity.cli import build_parser
from sensitivity.commands.common import UsageError
from sensitivity.core.envs import REPO_ROOT

README = REPO_ROOT / "README.md"
PAGES = [README, REPO_ROOT / "search_spaces" / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
README_LIMIT = 10_000  # characters: the detail goes to docs/


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO_ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_the_one_the_parsers_give():
    reference = _cli_reference()
    assert (REPO_ROOT / "docs" / "cli.md").read_text() == reference.render(), \
        f"docs/cli.md differs from the parsers: run `{reference.COMMAND}` and commit docs/cli.md"


def test_the_cli_reference_names_every_command_and_option():
    page = (REPO_ROOT / "docs" / "cli.md").read_text()

    def walk(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    assert f"# {sub.prog}\n" in page, f"docs/cli.md has no section for {sub.prog}"
                    walk(sub)
            elif not isinstance(action, argparse._HelpAction):
                for option in action.option_strings:
                    assert f"`{option} " in page or f"`{option}`" in page, f"{parser.prog} {option} not in docs/cli.md"
    walk(build_parser())


def _outside_code(text: str) -> str:
    """The page without its fenced code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(page) -> set:
    """GitHub's anchors of a Markdown page's headings."""
    anchors, seen = set(), {}
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", _outside_code(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: link {target!r}: no {linked}"
        assert REPO_ROOT in linked.parents, f"{page.name}: link {target!r} leaves the repository"
        if anchor:
            assert linked.suffix == ".md" and anchor in _anchors(linked), \
                f"{page.name}: link {target!r}: {linked.name} has no heading with that anchor"


def _command_lines(text: str) -> list:
    """The `sensitivity ...` command lines of the page's code blocks, continuations joined, comments cut."""
    lines = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] in ("sensitivity", ".venv/bin/sensitivity"):
                lines.append(words[1:])
    return lines


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_command_line_shown_parses(page):
    for argv in _command_lines(page.read_text()):
        try:
            build_parser(argv[0]).parse_args(argv)
        except UsageError as exc:
            pytest.fail(f"{page.name}: `sensitivity {shlex.join(argv)}` does not parse: {exc}")


def test_a_wrong_command_line_is_caught():
    assert _command_lines("```sh\n.venv/bin/sensitivity sweep s.yaml \\\n    --trials 3  # note\n```\n") == \
        [["sweep", "s.yaml", "--trials", "3"]]
    with pytest.raises(UsageError):
        build_parser("sweep").parse_args(["sweep", "s.yaml", "--trials", "3", "--no-such-option"])


def test_the_readme_starts_with_the_two_set_up_commands_and_stays_short():
    text = README.read_text()
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)
    assert [b.strip() for b in blocks[:2]] == ["scripts/setup.sh && scripts/main_job.sh",
                                               "scripts/setup.sh && scripts/test.sh"]
    for script in ("setup.sh", "main_job.sh", "test.sh"):
        assert os.access(REPO_ROOT / "scripts" / script, os.X_OK), f"scripts/{script} is not executable"
    assert len(text) < README_LIMIT, \
        f"README.md has {len(text):,} characters (at most {README_LIMIT:,}): move detail to a page of docs/"
