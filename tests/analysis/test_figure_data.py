"""Typed results: every figure is drawn from a NamedTuple of named, documented fields, and `sensitivity export
--figure` writes the same data, from which the figure is drawn again exactly."""
import csv
import json
import typing

import pandas as pd
import pytest

from sensitivity.analysis.figures.export import write_data
from sensitivity.analysis.figure_table import FIGURES, STUDY_KINDS, compute_of, figure, figure_data, module_of
from sensitivity.analysis.table import trials_table


@pytest.fixture(scope="module")
def table(seeded_study):
    return trials_table(seeded_study)


@pytest.mark.parametrize("kind", list(FIGURES))
def test_each_kind_is_one_module_whose_plot_draws_its_documented_named_tuple(kind):
    module = module_of(kind)
    result = module.Info
    assert issubclass(result, tuple) and result._fields, f"{kind}: its Info is no NamedTuple"
    returned = typing.get_type_hints(compute_of(kind)).get("return", result)
    assert returned is result, f"{kind}: its compute returns {returned}, not its Info"
    first = next(iter(typing.get_type_hints(module.plot).values()))
    assert first is result, f"{kind}: its plot draws from {first}, not from {result.__name__}"
    undocumented = [field for field in result._fields if f"- {field}: " not in (result.__doc__ or "")]
    assert not undocumented, f"{result.__name__}: fields not documented: {undocumented}"
    assert module.TITLE and module.__doc__, f"{kind}: no TITLE or docstring"


def _read_back(path) -> dict:
    """The fields of an exported JSON document, each table a DataFrame again: what a user elsewhere reads."""
    document = json.loads(path.read_text())
    return {name: pd.DataFrame(value["rows"], columns=value["columns"])
            if isinstance(value, dict) and set(value) == {"columns", "rows"} else value
            for name, value in document["fields"].items()}


@pytest.mark.parametrize("kind", list(STUDY_KINDS))
def test_a_figure_drawn_from_its_exported_json_is_the_same_figure(table, kind, tmp_path):
    data = figure_data(table, kind)
    assert isinstance(data, module_of(kind).Info)
    [path] = write_data(data, kind, tmp_path / f"{kind}.json", "json")
    again = module_of(kind).plot(type(data)(**_read_back(path)))
    drawn = figure(table, kind)
    assert json.loads(again.to_json())["data"] == json.loads(drawn.to_json())["data"]
    assert again.layout.title.text == drawn.layout.title.text


def test_csv_writes_each_table_beside_the_first_and_the_other_fields_as_json_values(table, tmp_path):
    frontier = figure_data(table, "frontier")
    written = write_data(frontier, "frontier", tmp_path / "f.csv", "csv")
    assert [p.name for p in written] == ["f.csv", "f.summary.csv", "f.fields.csv"]
    points = pd.read_csv(written[0])
    assert len(points) == len(frontier.points) and list(points.columns) == list(frontier.points.columns)
    assert len(pd.read_csv(written[1])) == len(frontier.summary)
    with written[2].open() as handle:
        fields = {row["field"]: json.loads(row["value"]) for row in csv.DictReader(handle)}
    assert fields == {"reference_point": [float(v) for v in frontier.reference_point]}


def test_a_file_that_cannot_be_written_is_refused_before_any_is(table, tmp_path):
    (tmp_path / "f.summary.csv").mkdir()  # the second table's file is a folder
    with pytest.raises(ValueError, match="f.summary.csv.*not a regular file"):
        write_data(figure_data(table, "frontier"), "frontier", tmp_path / "f.csv", "csv")
    assert not (tmp_path / "f.csv").exists()


def test_the_export_command_writes_a_figures_data_and_refuses_a_format_in_one_line(tmp_path, capsys, monkeypatch):
    from benchmarks import synthetic
    from sensitivity.cli import main

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    synthetic.write_study(storage, "s", 12)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["export", "s", "--figure", "frontier", "--format", "json", "--storage", storage]) == 0
    out = tmp_path / "results" / "s-frontier.json"
    assert capsys.readouterr().out.strip() == str(out.relative_to(tmp_path))
    assert json.loads(out.read_text())["kind"] == "frontier"
    assert main(["export", "s", "--figure", "seeds", "--out", "seeds.csv", "--storage", storage]) == 0
    assert capsys.readouterr().out.split() == ["seeds.csv", "seeds.fields.csv"]  # csv by default
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for argv, why in ((["--figure", "frontier", "--format", "parquet"], "--figure frontier is written as csv or json"),
                      (["--format", "json"], "the trials (no --figure) is written as csv or parquet")):
        assert main(["export", "s", *argv, "--storage", storage]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"sensitivity export: --format {argv[-1]}: {why}"
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written
