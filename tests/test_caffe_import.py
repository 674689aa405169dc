"""Caffe's solver and net files become configurations; what would change training unsupported is an error."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sensitivity import frameworks
from sensitivity.config import prototxt
from sensitivity.config.caffe_import import CaffeImportError, import_net, import_solver
from sensitivity.config.files import ConfigError, load_config
from sensitivity.core.models import layers_from_dicts, get_model
from sensitivity.core.spec import TrialSpec

CAFFE = Path(__file__).resolve().parents[1] / "search_spaces" / "caffe"


def test_prototxt_reads_nested_repeated_fields_with_lines():
    message = prototxt.parse('a: 1  # comment\nb { c: "x" d: TRUE_ENUM }\nb { c: \'y\' }\ne: -1.5e-3\nf: true\n')
    assert message.get("a") == 1 and message.get("e") == -1.5e-3 and message.get("f") is True
    assert [b.get("c") for b in message.get_all("b")] == ["x", "y"]
    assert message.get("b").get("d") == "TRUE_ENUM"
    assert message.line_of("e") == 4


@pytest.mark.parametrize("text, line", [("a: 1\nb {\n c: 2\n", 3), ("a 1\n", 1), ("a: 1\n}\n", 2), ("a: @\n", 1)])
def test_prototxt_errors_name_the_line(text, line):
    with pytest.raises(prototxt.PrototxtError, match=rf"f.prototxt:{line}:"):
        prototxt.parse(text, "f.prototxt")


def test_lenet_solver_gives_caffe_defaults_and_lenet():
    entry = import_solver(CAFFE / "lenet_solver.prototxt")
    config = entry["config"]
    assert config == {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.0005, "lr_policy": "inv", "gamma": 0.0001,
                      "power": 0.75, "iterations": 10000, "optimizer": "momentum", "batch_size": 64,
                      "model": "lenet5"}
    assert get_model(config["model"]).param_count((1, 28, 28), 10) == 431_080
    assert any(item.startswith("snapshot ") for item in entry["ignored"])
    assert any("lr_mult 2" in item for item in entry["not_reproduced"])


def test_cifar10_quick_net_is_the_registered_model():
    entry = import_solver(CAFFE / "cifar10_quick_solver.prototxt")
    assert entry["config"]["model"] == "cifar10_quick" and entry["config"]["batch_size"] == 100
    assert entry["config"]["lr"] == 0.001 and entry["config"]["weight_decay"] == 0.004
    assert any("mean subtraction" in item for item in entry["not_reproduced"])


def test_a_net_unlike_any_registered_model_comes_inline(tmp_path):
    text = (CAFFE / "lenet_train_test.prototxt").read_text().replace("num_output: 500", "num_output: 300")
    (tmp_path / "net.prototxt").write_text(text)
    net = import_net(tmp_path / "net.prototxt")
    model = layers_from_dicts(net["model"]["model"], net["model"]["layers"])
    assert net["model"]["model"] == "LeNet"
    assert model.param_count((1, 28, 28), 10) == 520 + 25_050 + 800 * 300 + 300 + 3010


def test_without_a_net_max_iter_stays_in_iterations(tmp_path):
    solver = tmp_path / "solver.prototxt"
    solver.write_text((CAFFE / "lenet_solver.prototxt").read_text())
    entry = import_solver(solver)
    assert entry["config"]["iterations"] == 10000 and "batch_size" not in entry["config"]
    assert "no net file" in entry["note"]
    explicit = import_solver(solver, CAFFE / "lenet_train_test.prototxt")
    assert explicit["config"]["batch_size"] == 64


@pytest.mark.parametrize("net, message", [
    ("../secret.prototxt", "lies outside the solver's folder"),
    ("/dev/zero", "lies outside the solver's folder"),
    ("sub", "is not a regular file"),
])
def test_a_solver_net_outside_its_folder_or_not_a_file_is_refused_unread(tmp_path, net, message):
    """A solver's `net:` must name a regular file in its folder: the importer never reads (or quotes) another."""
    (tmp_path / "secret.prototxt").write_text("password: 'do-not-quote-me'\n")
    folder = tmp_path / "solvers"
    (folder / "sub").mkdir(parents=True)
    solver = folder / "solver.prototxt"
    solver.write_text(re.sub(r'net: "[^"]*"', f'net: "{net}"', (CAFFE / "lenet_solver.prototxt").read_text()))
    with pytest.raises(CaffeImportError, match=re.escape(message)) as refused:
        import_solver(solver)
    assert "do-not-quote-me" not in str(refused.value) and str(solver) in str(refused.value)


def test_a_solver_net_named_by_caffe_root_path_is_found_beside_it(tmp_path):
    for name in ("lenet_solver.prototxt", "lenet_train_test.prototxt"):
        (tmp_path / name).write_text((CAFFE / name).read_text())
    entry = import_solver(tmp_path / "lenet_solver.prototxt")  # net: "examples/mnist/lenet_train_test.prototxt"
    assert entry["config"]["batch_size"] == 64 and entry["source"]["net"] == str(tmp_path / "lenet_train_test.prototxt")


def test_a_missing_net_option_is_an_error_naming_the_file(tmp_path):
    missing = tmp_path / "nonet.prototxt"
    with pytest.raises(CaffeImportError, match=r"nonet.prototxt: no such file"):
        import_solver(CAFFE / "lenet_solver.prototxt", missing)
    proc = run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"), "--net", str(missing))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"sensitivity import-caffe: {missing}: no such file"


@pytest.mark.parametrize("extra, message", [
    ("iter_size: 2\n", "iter_size 2 is not supported"),
    ("clip_gradients: 10\n", "'clip_gradients' changes training"),
    ('lr_policy: "poly"\n', "lr_policy 'poly' is not supported; allowed: fixed"),
    ('type: "AdaGrad"\n', "solver type 'AdaGrad' is not supported"),
    ("delta: 1e-6\n", "delta 1e-06 is not supported"),
])
def test_unsupported_solver_fields_name_field_and_line(tmp_path, extra, message):
    solver = tmp_path / "solver.prototxt"
    solver.write_text("base_lr: 0.01\n" + extra)
    with pytest.raises(CaffeImportError) as error:
        import_solver(solver)
    assert "solver.prototxt:2: " in str(error.value) and message in str(error.value)


def solver_config(tmp_path, text):
    (tmp_path / "solver.prototxt").write_text(text)
    return import_solver(tmp_path / "solver.prototxt")["config"]


BASE = "base_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\nmax_iter: 9000\n"


@pytest.mark.parametrize("policy, expected", [
    ('lr_policy: "step"\ngamma: 0.1\nstepsize: 3000\n', {"lr_policy": "step", "gamma": 0.1, "stepsize": 3000}),
    ('lr_policy: "multistep"\ngamma: 0.5\nstepvalue: 4000\nstepvalue: 6000\nstepvalue: 8000\n',
     {"lr_policy": "multistep", "gamma": 0.5, "stepvalues": [4000, 6000, 8000]}),
    ('lr_policy: "exp"\ngamma: 0.999\n', {"lr_policy": "exp", "gamma": 0.999}),
    ('lr_policy: "inv"\ngamma: 0.0001\npower: 0.75\n', {"lr_policy": "inv", "gamma": 0.0001, "power": 0.75}),
    ('lr_policy: "fixed"\n', {"lr_policy": "fixed"}),
])
def test_lr_policies_with_their_parameters(tmp_path, policy, expected):
    config = solver_config(tmp_path, BASE + policy)
    assert config == {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.0005, "iterations": 9000,
                      "optimizer": "momentum", **expected}
    TrialSpec(framework="torch", dataset="mnist5k", **config)


@pytest.mark.parametrize("policy, missing", [
    ('lr_policy: "step"\ngamma: 0.1\n', "stepsize"), ('lr_policy: "step"\nstepsize: 100\n', "gamma"),
    ('lr_policy: "multistep"\ngamma: 0.1\n', "stepvalue"), ('lr_policy: "multistep"\nstepvalue: 10\n', "gamma"),
    ('lr_policy: "inv"\npower: 0.75\n', "gamma"), ('lr_policy: "inv"\ngamma: 0.0001\n', "power"),
    ('lr_policy: "exp"\n', "gamma"),
])
def test_a_policy_without_its_parameters_is_an_error_on_the_policy_line(tmp_path, policy, missing):
    name = policy.split('"')[1]
    with pytest.raises(CaffeImportError) as error:
        solver_config(tmp_path, BASE + "display: 10\n" + policy)
    assert str(error.value) == f"{tmp_path / 'solver.prototxt'}:6: lr_policy {name} needs {missing}"


@pytest.mark.parametrize("solver_type, extra, expected", [
    ('type: "Nesterov"', "momentum: 0.95\n", {"optimizer": "nesterov", "momentum": 0.95}),
    ("solver_type: NESTEROV", "momentum: 0.95\n", {"optimizer": "nesterov", "momentum": 0.95}),
    ("solver_type: 1", "momentum: 0.95\n", {"optimizer": "nesterov", "momentum": 0.95}),
    ('type: "Adam"', "momentum: 0.9\nmomentum2: 0.999\ndelta: 1e-8\n", {"optimizer": "adam"}),
    ("solver_type: ADAM", "momentum: 0.9\n", {"optimizer": "adam"}),
    ('type: "RMSProp"', "rms_decay: 0.9\n", {"optimizer": "rmsprop"}),
    ("solver_type: RMSPROP", "rms_decay: 0.9\n", {"optimizer": "rmsprop"}),
    ("solver_type: SGD", "momentum: 0.8\n", {"optimizer": "momentum", "momentum": 0.8}),
    ('type: "SGD"', "", {"optimizer": "sgd"}),
    ('type: "Nesterov"', "", {"optimizer": "sgd"}),  # Caffe's momentum defaults to 0
])
def test_solver_types_in_both_forms(tmp_path, solver_type, extra, expected):
    config = solver_config(tmp_path, f"base_lr: 0.001\n{solver_type}\n{extra}")
    assert config == {"lr": 0.001, **expected}
    TrialSpec(framework="torch", dataset="mnist5k", **config)


@pytest.mark.parametrize("text, message", [
    ('type: "Adam"\nmomentum: 0.5\n', ":3: Adam's momentum (beta1) 0.5 is not supported: the canonical value is 0.9"),
    ("solver_type: ADAM\n", ":2: Adam's momentum (beta1) 0.0 is not supported"),
    ("solver_type: RMSPROP\n", ":2: RMSProp without rms_decay is Caffe's 0.99"),
    ('type: "RMSProp"\nrms_decay: 0.9\nmomentum: 0.9\n', ":4: RMSProp with momentum 0.9 is not supported"),
    ("solver_type: ADAGRAD\n", ":2: solver type 'ADAGRAD' is not supported"),
])
def test_solver_type_settings_unlike_the_canonical_ones_are_errors(tmp_path, text, message):
    with pytest.raises(CaffeImportError, match=re.escape(message)):
        solver_config(tmp_path, "base_lr: 0.001\n" + text)


def test_unsupported_layer_names_type_and_line(tmp_path):
    text = (CAFFE / "lenet_train_test.prototxt").read_text()
    text = text.replace('type: "ReLU"', 'type: "LRN"')
    (tmp_path / "net.prototxt").write_text(text)
    line = text.splitlines().index('  type: "LRN"') + 1
    with pytest.raises(CaffeImportError, match=rf"net.prototxt:{line}: layer type 'LRN' is not supported"):
        import_net(tmp_path / "net.prototxt")


def lenet_net_with(tmp_path, old, new):
    """LeNet's net with `old` replaced by `new` once; returns its path and the line `new` starts on."""
    text = (CAFFE / "lenet_train_test.prototxt").read_text()
    assert old in text
    text = text.replace(old, new, 1)
    (tmp_path / "net.prototxt").write_text(text)
    return tmp_path / "net.prototxt", text[:text.index(new)].count("\n") + 1


CONV1 = "    num_output: 20\n    kernel_size: 5\n"
POOL1 = "    pool: MAX\n    kernel_size: 2\n"
IP2 = "    num_output: 10\n"


@pytest.mark.parametrize("old, new, field, layer", [
    (POOL1, "    global_pooling: true\n" + POOL1, "global_pooling", "pool1"),
    (IP2, "    bias_term: false\n" + IP2, "bias_term", "ip2"),
    (CONV1, "    group: 2\n" + CONV1, "group", "conv1"),
    (CONV1, "    dilation: 2\n" + CONV1, "dilation", "conv1"),
    (CONV1, "    unknown_knob: 3\n" + CONV1, "unknown_knob", "conv1"),
    (POOL1, "    pool: STOCHASTIC\n    kernel_size: 2\n", "pool", "pool1"),
    (POOL1, "    pad: 1\n" + POOL1, "pad", "pool1"),
    ("    scale: 0.00390625\n", "    mirror: true\n", "mirror", "mnist"),
    ("    batch_size: 64\n", "    crop_size: 20\n    batch_size: 64\n", "crop_size", "mnist"),
    ('  name: "ip2"\n', '  name: "ip2"\n  loss_weight: 2\n', "loss_weight", "ip2"),
    ('  name: "relu1"\n', '  name: "relu1"\n  relu_param {\n    negative_slope: 0.1\n  }\n', "negative_slope", "relu1"),
    ("    lr_mult: 2\n", "    lr_mult: 2\n    decay_mult: 0\n", "decay_mult", "conv1"),
    ("    lr_mult: 2\n", '    name: "shared"\n', "name", "conv1"),
    ('  type: "Pooling"\n', '  type: "Pooling"\n  param {\n    lr_mult: 1\n  }\n', "param", "pool1"),
])
def test_net_fields_that_change_training_are_errors_naming_field_layer_and_line(tmp_path, old, new, field, layer):
    net, start = lenet_net_with(tmp_path, old, new)
    line = start + next(i for i, text in enumerate(new.splitlines()) if text.strip().startswith(field))
    with pytest.raises(CaffeImportError) as error:
        import_net(net)
    assert str(error.value) == f"{net}:{line}: field {field} of layer {layer} changes training and is not supported"


def test_square_kernel_h_and_w_are_the_kernel_size_and_rectangles_are_refused(tmp_path):
    net, _ = lenet_net_with(tmp_path, CONV1, "    num_output: 20\n    kernel_h: 5\n    kernel_w: 5\n")
    assert import_net(net)["model"] == {"model": "lenet5"}
    net, start = lenet_net_with(tmp_path, CONV1, "    num_output: 20\n    kernel_h: 5\n    kernel_w: 3\n")
    with pytest.raises(CaffeImportError, match=rf"net.prototxt:{start + 1}: field kernel_h/kernel_w of layer conv1 "
                                               r"changes training and is not supported \(only equal"):
        import_net(net)
    proc = run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"), "--net", str(net))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "kernel_h" in proc.stderr
    net, start = lenet_net_with(tmp_path, CONV1, "    num_output: 20\n")
    with pytest.raises(CaffeImportError, match=r"layer conv1 needs kernel_size"):
        import_net(net)


def test_net_fields_that_do_not_change_training_are_listed_as_ignored(tmp_path):
    net, start = lenet_net_with(tmp_path, CONV1, CONV1 + "    engine: CUDNN\n")
    entry = import_net(net)
    assert entry["model"] == {"model": "lenet5"}
    assert f"engine CUDNN of layer conv1 (line {start + 2})" in entry["ignored"]
    assert any(item.startswith("weight_filler xavier of layer conv1") for item in entry["ignored"])
    assert any(item.startswith("source examples/mnist/mnist_train_lmdb of layer mnist") for item in entry["ignored"])


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *args], capture_output=True, text=True, timeout=300)


def test_import_caffe_cli_writes_yaml_that_trial_reads(tmp_path):
    out = tmp_path / "lenet.yaml"
    proc = run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    fields = load_config(out)
    assert fields["lr"] == 0.01 and fields["lr_policy"] == "inv" and fields["model"] == "lenet5"
    stdout = run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt")).stdout
    assert yaml.safe_load(stdout)["config"] == yaml.safe_load(out.read_text())["config"]


TABLE_KEYS = {"name", "framework", "runs_on", "dataset", "source", "config", "original_model", "notes"}


def test_import_caffe_entry_is_a_defaults_table_entry(tmp_path):
    from sensitivity.config.defaults import load_table
    proc = run_cli("import-caffe", str(CAFFE / "cifar10_quick_solver.prototxt"),
                   str(CAFFE / "cifar10_quick_solver_lr1.prototxt"), "--entry", "caffe-cifar10-quick",
                   "--dataset", "cifar10")
    assert proc.returncode == 0, proc.stderr
    entry = yaml.safe_load(proc.stdout)
    assert set(entry) == TABLE_KEYS | {"train_size"} and {"project", "example", "file"} <= set(entry["source"])
    assert entry["train_size"] == 50000  # its 5,000 steps of 100 are 10 epochs of CIFAR-10
    assert entry["original_model"] == "cifar10_quick" and "model" not in entry["config"]
    assert any(note.startswith("mean subtraction") for note in entry["notes"])
    (tmp_path / "table.yaml").write_text(yaml.safe_dump({"defaults": [entry]}))
    pasted = load_table(tmp_path / "table.yaml")[0]
    shipped = {e.name: e for e in load_table()}["caffe-cifar10-quick"]
    assert pasted.config == shipped.config and pasted.config["stepvalues"] == [4000]
    (tmp_path / "entry.yaml").write_text(proc.stdout)  # trial --config runs an entry too
    assert load_config(tmp_path / "entry.yaml") == {**shipped.config, "stepvalues": (4000,), "dataset": "cifar10"}
    assert run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"), "--entry", "x").returncode == 2


def test_import_caffe_says_plainly_what_is_not_reproduced():
    proc = run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"))
    assert proc.stdout.startswith("# not_reproduced")
    entry = yaml.safe_load(proc.stdout)
    assert set(entry) <= TABLE_KEYS | {"ignored", "not_reproduced", "note"}
    assert {"project", "example", "file"} <= set(entry["source"]) and entry["source"]["example"] == "LeNet"
    assert entry["not_reproduced"] == ["lr_mult 2 (lines 46, 80, 114, 141) changes training and is not reproduced: "
                                       "every parameter trains at the base rate"]
    help_text = " ".join(run_cli("import-caffe", "--help").stdout.split())
    assert "not_reproduced lists what changes training in Caffe but is not reproduced here" in help_text.replace("`", "")
    assert "lr_mult 2" in help_text and "mean subtraction" in help_text


def test_import_caffe_errors_are_one_line_exit_2(tmp_path):
    (tmp_path / "bad.prototxt").write_text("base_lr: 0.01\niter_size: 4\n")
    proc = run_cli("import-caffe", str(tmp_path / "bad.prototxt"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and ":2:" in proc.stderr


def test_config_with_unknown_key_is_an_error_naming_file_and_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("config:\n  lr: 0.1\n  learning_rate: 0.2\n")
    with pytest.raises(ConfigError, match=r"c.yaml: config.learning_rate: unknown field"):
        load_config(path)
    proc = run_cli("trial", "--config", str(path), "--framework", "torch", "--dataset", "digits")
    assert proc.returncode == 2 and "config.learning_rate" in proc.stderr


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_trial_from_caffe_config_with_overrides(tmp_path):
    out = tmp_path / "lenet.yaml"
    run_cli("import-caffe", str(CAFFE / "lenet_solver.prototxt"), "--out", str(out))
    proc = run_cli("trial", "--config", str(out), "--framework", "torch", "--dataset", "mnist5k",
                   "--iterations", "70", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok" and result["steps"] == 70 and len(result["curve"]) == 2
    assert result["spec"]["lr_policy"] == "inv" and result["spec"]["weight_decay"] == 0.0005



@pytest.mark.parametrize("extra, message", [
    ("base_lr: 0\n", "base_lr: Input should be greater than 0"),
    ("momentum: 2\n", "momentum: Input should be less than 1"),
    ("weight_decay: -0.1\n", "weight_decay: Input should be greater than or equal to 0"),
    ("max_iter: 0\n", "max_iter: Input should be greater than 0"),
    ("stepsize: 0\nlr_policy: \"step\"\ngamma: 0.1\n", "stepsize: Input should be greater than 0"),
])
def test_a_configuration_trialspec_refuses_is_never_written(tmp_path, extra, message):
    solver = tmp_path / "solver.prototxt"
    solver.write_text("base_lr: 0.01\n" + extra if not extra.startswith("base_lr") else extra)
    with pytest.raises(CaffeImportError, match=message):
        import_solver(solver)
    proc = run_cli("import-caffe", str(solver), "--out", str(tmp_path / "out.yaml"))
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("text, message", [
    ('base_lr: "0.01"\n', "solver.prototxt:1: base_lr: '0.01' is not a number"),
    ("base_lr: true\n", "base_lr: True is not a number"),
    ("base_lr: { }\n", "base_lr: {...} is not a number"),
    ("base_lr: 1e999\n", "value '1e999' cannot be read: out of range"),
    ("base_lr: " + "9" * 5000 + "\n", "cannot be read: Exceeds the limit (4300 digits)"),
    ("base_lr: 0.01\nmax_iter: 1.5\n", "solver.prototxt:2: max_iter: 1.5 is not a whole number"),
    ('base_lr: "\\x"\n', "cannot be read: a bad escape sequence"),
    ("a { " * 2000 + "}" * 2000, "nested deeper than 64 levels"),
    ("max_iter: 10\n", "base_lr is required"),
    ('base_lr: 0.01\nnet: { }\n', "net {...}: expected a quoted path"),
])
def test_malformed_solvers_are_one_line_errors(tmp_path, text, message):
    solver = tmp_path / "solver.prototxt"
    solver.write_text(text)
    with pytest.raises(CaffeImportError) as error:
        import_solver(solver)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    solver = tmp_path / "solver.prototxt"
    solver.write_bytes(b"base_lr: 0.01 # caf\xe9\n")
    with pytest.raises(CaffeImportError, match=r"solver.prototxt: not UTF-8 text \(byte 0xe9 at offset 19\)"):
        import_solver(solver)


@pytest.mark.parametrize("old, new, message", [
    ("num_output: 20", 'num_output: "x"', "num_output of layer conv1: 'x' is not a number"),
    ("num_output: 20", "num_output: 0", "num_output of layer conv1: 0 is outside 1 to 1,048,576"),
    ("kernel_size: 5", "kernel_size { }", "kernel_size of layer conv1: {...} is not a number"),
    ("batch_size: 64", "batch_size: 0", "batch_size of layer mnist: 0 is outside 1"),
    ("dropout_ratio: 0.5", "dropout_ratio: 2", "dropout_ratio of layer drop: 2.0 is outside [0, 1)"),
    ("param { lr_mult: 2 }", "param: 3", "param 3: expected param { ... }"),
    ("include { phase: TRAIN }", "include: 5", "include 5: expected include { ... }"),
])
def test_malformed_nets_are_one_line_errors(tmp_path, old, new, message):
    sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
    from fuzz_cases import NET
    net = tmp_path / "net.prototxt"
    net.write_text(NET.replace(old, new, 1))
    with pytest.raises(CaffeImportError) as error:
        import_net(net)
    assert message in str(error.value), str(error.value)


def test_a_continuation_at_rate_zero_is_refused_not_divided_by(tmp_path):
    from sensitivity.config.caffe_import import import_phases
    (tmp_path / "a.prototxt").write_text("base_lr: 0.01\nmax_iter: 100\n")
    (tmp_path / "b.prototxt").write_text("base_lr: 0\nmax_iter: 200\n")
    with pytest.raises(CaffeImportError, match="b.prototxt: base_lr: Input should be greater than 0"):
        import_phases([tmp_path / "a.prototxt", tmp_path / "b.prototxt"])
