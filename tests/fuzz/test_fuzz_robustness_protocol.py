"""Bad robustness protocols (issue 29) are refused for what they are: one line naming the file, the field and
what it allows, exit 2, nothing written, before any study is opened (the study "x" does not exist: a protocol
that got through would be refused for that instead, and fail here)."""
import pytest
from fuzz_runner import check
from fuzz_cases import robustness_protocol_cases

CASES = robustness_protocol_cases()


@pytest.mark.parametrize("name,argv,files,setup", CASES, ids=[c[0] for c in CASES])
def test_refused_naming_the_file_the_field_and_what_it_allows(refused, monkeypatch, tmp_path, name, argv, files,
                                                              setup):
    setup(tmp_path / "work", monkeypatch)
    outcome = refused("edge", name, argv, files, record=False)
    check(outcome)
    line = outcome["stderr"].strip()
    assert line.startswith("sensitivity robustness: p.yaml: ") and "allowed" in line, line
    field = line.split(": ")[2]
    assert field.split(".")[0].split(" ")[0] in ("eps", "eps_by_dataset", "surrogate"), line
    assert "no study" not in line
