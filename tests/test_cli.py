"""The command line as a user runs it: a real process, its stdout, stderr and exit code."""
import json
import os
import subprocess
import sys

import fault_worker
import pytest

from sensitivity import frameworks


def sensitivity(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("args, names", [
    (["--framework", "nosuch", "--dataset", "digits"], ["--framework", "torch", "tensorflow"]),
    (["--framework", "torch", "--dataset", "nosuch"], ["--dataset", "mnist5k", "digits"]),
    (["--framework", "torch", "--dataset", "digits", "--model", "nosuch"], ["--model", "lenet5", "mlp"]),
    (["--framework", "torch", "--dataset", "digits", "--lr", "-0.1"], ["--lr", "> 0"]),
    (["--framework", "torch", "--dataset", "digits", "--batch-size", "0"], ["--batch-size", "> 0"]),
    (["--framework", "torch", "--dataset", "digits", "--batch-size"], ["--batch-size", "expected one argument"]),
    (["--framework", "torch", "--dataset", "digits", "--epochs", "two"], ["--epochs", "integer"]),
    (["--framework", "torch", "--dataset", "digits", "--optimizer", "lbfgs"], ["--optimizer", "adam"]),
    (["--framework", "torch", "--dataset", "digits", "--lr-policy", "multistep"], ["--stepvalues"]),
    (["--framework", "torch", "--dataset", "digits", "--momentum", "1.5"], ["--momentum", "less than 1"]),
    (["--dataset", "digits"], ["--framework", "required"]),
    (["--framework", "torch", "--dataset", "digits", "--backend", "jax"], ["--backend", "no backends"]),
    (["--framework", "torch", "--dataset", "digits", "--lr", "inf"], ["--lr", "finite"]),
    (["--framework", "torch", "--dataset", "digits", "--lr", "1e400"], ["--lr", "finite"]),
    (["--framework", "torch", "--dataset", "digits", "--lr", "nan"], ["--lr", "finite"]),
    (["--framework", "torch", "--dataset", "digits", "--timeout", "inf", "--json"], ["--timeout", "finite"]),
    (["--framework", "torch", "--dataset", "digits", "--model", "lenet5", "--json"],
     ["--model lenet5", "does not fit", "1x8x8", "mlp"]),
    (["--framework", "torch", "--dataset", "mnist1d", "--model", "cifar10_quick"], ["--model", "models that fit: mlp"]),
    (["--framework", "torch", "--dataset", "digits", "--batch-size", "1439"], ["--batch-size", "1 to 1438"]),
    (["--framework", "torch", "--dataset", "digits", "--batch-size", "1200", "--val-fraction", "0.2"],
     ["--batch-size", "--val-fraction", "1 to 1151"]),
])
def test_usage_errors_are_one_line_exit_2(args, names):
    proc = sensitivity("trial", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for name in names:
        assert name in lines[0], lines[0]


def test_unknown_command_is_one_line_exit_2():
    proc = sensitivity("nosuch")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_later_option_overrides_earlier(tmp_path):
    from sensitivity.cli import build_parser
    from sensitivity.commands.trial import _spec_from_args
    args = build_parser().parse_args(["trial", "--framework", "torch", "--dataset", "digits", "--lr", "0.1",
                                      "--lr", "0.2"])
    spec = _spec_from_args(args)
    assert spec.lr == 0.2 and spec.model is None and spec.batch_size == 64


CONFIG = """\
framework: torch
dataset: mnist5k
model: lenet
iterations: 500
epochs: 7
lr: 0.01
layers:
  - {type: Conv, out_channels: 4, kernel: 5}
  - {type: Flatten}
  - {type: Dense, units: 10}
"""


@pytest.mark.parametrize("options, expected", [
    ([], dict(iterations=500, epochs=7, model="lenet", lr=0.01)),
    (["--epochs", "2"], dict(iterations=None, epochs=2, model="lenet")),
    (["--iterations", "30"], dict(iterations=30, epochs=5)),
    (["--epochs", "2", "--iterations", "30"], dict(iterations=30, epochs=2)),
    (["--model", "mlp"], dict(layers=None, model="mlp", iterations=500)),
    (["--lr", "0.1"], dict(lr=0.1, model="lenet", iterations=500)),
])
def test_command_line_options_override_the_config(tmp_path, options, expected):
    from sensitivity.cli import build_parser
    from sensitivity.commands.trial import _spec_from_args
    config = tmp_path / "lenet.yaml"
    config.write_text(CONFIG)
    spec = _spec_from_args(build_parser().parse_args(["trial", "--config", str(config), *options]))
    for field, value in expected.items():
        assert getattr(spec, field) == value, field
    assert (spec.layers is None) == ("--model" in options)


def test_missing_data_files_are_a_one_line_error(tmp_path):
    proc = sensitivity("trial", "--framework", "torch", "--dataset", "mnist", "--data-dir", str(tmp_path))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "mnist" in proc.stderr


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_trial_json_is_the_last_line_of_stdout():
    proc = sensitivity("trial", "--framework", "torch", "--dataset", "digits", "--epochs", "2",
                       "--batch-size", "32", "--lr", "0.05", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok" and result["accuracy"] > 0.8
    assert result["spec"]["model"] is None and result["env"]["model"] == "mlp"
    assert len(result["curve"]) == 2


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_json_trial_keeps_the_workers_stderr():
    env = {**os.environ, **fault_worker.environ("raise")}
    proc = sensitivity("trial", "--framework", "torch", "--dataset", "digits", "--epochs", "1", "--json", env=env)
    assert proc.returncode == 1
    assert json.loads(proc.stdout.strip().splitlines()[-1])["status"] == "failed"
    assert "Traceback" in proc.stderr and "SENSITIVITY_WORKER_FAULT=raise" in proc.stderr
    assert "epoch 1:" not in proc.stderr  # the human progress lines stay off with --json


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_diverged_trial_is_a_result_exit_0():
    proc = sensitivity("trial", "--framework", "torch", "--dataset", "digits", "--lr", "1e6", "--optimizer", "sgd",
                       "--epochs", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "diverged" and result["accuracy"] < 0.3


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_timeout_exit_1_with_readable_summary():
    proc = sensitivity("trial", "--framework", "torch", "--dataset", "digits", "--epochs", "10000",
                       "--timeout", "6")
    assert proc.returncode == 1
    assert "torch on digits: timeout" in proc.stdout


def test_frameworks_lists_every_framework_with_version():
    proc = sensitivity("frameworks")
    assert proc.returncode == 0
    required = os.environ.get("SENSITIVITY_REQUIRE_ALL_FRAMEWORKS") == "1"  # CI: every framework, both envs
    for name in frameworks.FRAMEWORKS:
        line = next(row for row in proc.stdout.splitlines() if row.startswith(name + " "))
        if frameworks.importable(name) or required:
            assert line.split()[3] == "yes", line
    assert "yes (--backend tensorflow|jax|torch)" in next(row for row in proc.stdout.splitlines()
                                                       if row.startswith("keras "))
    caffe = next(row for row in proc.stdout.splitlines() if row.startswith("caffe "))
    assert "configuration only" in caffe


def test_datasets_download_without_a_name_is_one_line_exit_2():
    proc = sensitivity("datasets", "download")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "name is required" in lines[0], proc.stderr
    assert "mnist, fashion_mnist, cifar10, cifar100, svhn" in lines[0] and "None" not in lines[0]


def test_datasets_lists_offline_sets_as_present(tmp_path):
    proc = sensitivity("datasets", "--data-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert {"digits", "mnist5k", "mnist1d", "mnist", "fashion_mnist", "cifar10", "cifar100", "svhn"} <= set(rows)
    assert rows["mnist5k"].split()[3] == "yes" and rows["cifar10"].split()[3] == "no"


def test_import_sensitivity_imports_no_framework_ray_or_plotly():
    code = ("import sys, sensitivity, sensitivity.cli, sensitivity.core.spec, sensitivity.datasets, "
            "sensitivity.frameworks, sensitivity.trial.runner; "
            "print(sorted(m for m in ('torch', 'tensorflow', 'jax', 'ray', 'plotly', 'mxnet', 'sklearn') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_every_help_text_formats():
    """argparse formats help texts with %: a bare "95% interval" made `sensitivity --help` raise."""
    from sensitivity.cli import build_parser

    parser = build_parser()
    assert "findings" in parser.format_help()
    for command in parser._subparsers._group_actions[0].choices.values():
        assert command.format_help()


def test_each_command_is_parsed_by_its_own_module_alone():
    """`sensitivity CMD` builds only the parsers of CMD's module (GROUPS): the names there must be the ones
    each module adds, and a command's own parser parses as the full one does."""
    import importlib

    from sensitivity.cli import GROUPS, build_parser
    from sensitivity.commands.common import Parser, UsageError

    for group, names in GROUPS.items():
        commands = Parser(prog="sensitivity").add_subparsers(dest="command", parser_class=Parser)
        importlib.import_module(f"sensitivity.commands.{group}").add_parsers(commands)
        assert tuple(commands.choices) == names, group
    argv = ["findings", "s", "--storage", "sqlite:///x.db"]
    assert vars(build_parser("findings").parse_args(argv)) == vars(build_parser().parse_args(argv))
    with pytest.raises(UsageError) as caught:  # an unknown command gets the full parser's usage error
        build_parser("no-such-command").parse_args(["no-such-command"])
    assert all(f"'{name}'" in str(caught.value) for names in GROUPS.values() for name in names)


def test_report_and_findings_parse_without_pydantic():
    """The analysis commands import neither TrialSpec's pydantic nor the attacks: a quarter second of start-up each."""
    code = ("import sys; from sensitivity.cli import build_parser; build_parser('report'); build_parser('findings'); "
            "import sensitivity.analysis.report.page, sensitivity.analysis.claims.findings, sensitivity.studies.catalog; "
            "print(sorted(m for m in ('pydantic', 'sensitivity.core.spec', 'sensitivity.trial.attacks') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


@pytest.mark.parametrize("command", ["findings", "findings-json", "findings-missing", "report", "export"])
def test_report_findings_and_export_end_alike_from_the_shell_and_in_process(tmp_path, capsys, command):
    """`main()` of the process's own command line (the shell's) and `main(argv)` in a process give the same exit
    code, output and files; the shell's process then ends as usual, its exit handlers run."""
    from benchmarks import synthetic
    from sensitivity.cli import main

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    synthetic.write_study(storage, "s", 12)
    capsys.readouterr()  # Optuna's line on the study it created: not the command's
    args = {"findings": ["findings", "s"], "findings-json": ["findings", "s", "--json"],
            "findings-missing": ["findings", "nosuch"], "report": ["report", "s", "--out", str(tmp_path / "r.html")],
            "export": ["export", "s", "--format", "csv", "--out", str(tmp_path / "s.csv")]}[command]
    args += ["--storage", storage]
    script = ("import atexit, sys; atexit.register(lambda: print('torn down', file=sys.stderr)); "
              "from sensitivity.cli import main; sys.exit(main())")
    shell = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300)
    written = {path.name: path.read_bytes() for path in tmp_path.glob("s.csv")}
    code = main(args)
    here = capsys.readouterr()
    assert shell.returncode == code == (2 if command == "findings-missing" else 0), shell.stderr[-2000:]
    assert shell.stdout == here.out and (bool(here.out) or code == 2)
    assert shell.stderr.strip().splitlines()[-1] == "torn down"
    assert shell.stderr.replace("torn down\n", "") == here.err
    assert written == {path.name: path.read_bytes() for path in tmp_path.glob("s.csv")}


def test_studies_lists_long_names_in_aligned_columns(tmp_path, capsys):
    """The main job's study names run past 40 characters: every row's counts stand under the header's."""
    import optuna

    from sensitivity.cli import main

    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    names = ["s", "main-transfer-steps-torch-tensorflow-mxnet"]
    for name, trials in zip(names, (3, 2)):
        optuna.create_study(study_name=name, storage=storage, direction="maximize").optimize(lambda _: 0.5, trials)
    capsys.readouterr()
    assert main(["studies", "--storage", storage]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    end = header.index("trials") + len("trials")
    assert [row.split()[0] for row in rows] == names
    assert [row[end - 1] for row in rows] == ["3", "2"] and all(row[end] == " " for row in rows)
