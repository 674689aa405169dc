"""docs/semantics.md's table is the one the code runs: rendered from sensitivity.core.semantics."""
import re

import pytest

from sensitivity.core import envs, semantics, semantics_table
from sensitivity.cli import main

pytestmark = pytest.mark.portable
DOC = envs.REPO_ROOT / "docs" / "semantics.md"


def test_the_docs_table_is_the_rendered_one():
    text = DOC.read_text()
    table = re.search(r"<!-- begin: sensitivity semantics --markdown -->\n(.*)<!-- end -->", text, re.S).group(1)
    assert table == semantics_table.markdown(), \
        "docs/semantics.md is stale: replace its table with the output of `sensitivity semantics --markdown`"


def test_every_framework_and_knob_has_a_row_with_a_source():
    rows = semantics_table.rows()
    for framework in (f for f in semantics.NATIVE if f != "caffe"):
        knobs = [knob for name, knob, *_ in rows if name == framework]
        assert {"update: momentum", "weight decay", "Adam epsilon", "RMSprop rho", "initialiser",
                "schedule"} <= set(knobs)
    assert all(source for *_, source in rows), "a row without its source"


def test_the_table_shows_the_native_differences(capsys):
    assert main(["semantics", "--framework", "torch"]) == 0
    out = capsys.readouterr().out
    assert "b = mu*b + g; w -= lr*b (torch.optim.SGD(params, lr, momentum=mu" in out
    assert main(["semantics", "--framework", "caffee"]) == 2
