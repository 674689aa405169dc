"""Issue 24, strict parsing: a key given twice in YAML, or a non-repeated Caffe field given twice, is refused
naming the key and both lines; YAML's merge override and Caffe's repeated fields stay valid."""
from pathlib import Path

import pytest

from sensitivity.config.caffe_import import CaffeImportError, import_net, import_solver
from sensitivity.config.files import ConfigError, load_config, read_mapping
from sensitivity.config.defaults import DefaultsError, load_table
from sensitivity.config.spaces import SpaceError, load_space

ROOT = Path(__file__).resolve().parents[1]
CAFFE = ROOT / "search_spaces" / "caffe"
SPACE = (ROOT / "search_spaces" / "digits.yaml").read_text()


@pytest.mark.parametrize("old, new, key, lines", [
    ("  epochs: 5\n", "  epochs: 5\n  epochs: 9999\n", "epochs", "line 11 and line 12"),
    ("fixed:\n  epochs: 5\n  momentum: 0.9\n", "fixed: {epochs: 1, epochs: 9999, momentum: 0.9}\n", "epochs", "line 10 column 9 and line 10 column"),
    ("  optimizer:", "  lr: {type: float, low: 0.5, high: 0.9}\n  optimizer:", "lr", "line 7 and line 8"),
    ("seeds: 1\n", "seeds: 1\nseeds: 3\n", "seeds", "line 17 and line 18"),
])
def test_a_space_key_given_twice_is_refused_naming_it_and_both_lines(tmp_path, old, new, key, lines):
    path = tmp_path / "space.yaml"
    path.write_text(SPACE.replace(old, new, 1))
    with pytest.raises(SpaceError, match=rf"space.yaml: key '{key}' given twice, at {lines}"):
        load_space(path)


def test_a_config_and_the_defaults_table_refuse_a_key_given_twice(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("framework: torch\nlr: 0.01\nepochs: 1\nlr: 0.5\n")
    with pytest.raises(ConfigError, match=r"c.yaml: key 'lr' given twice, at line 2 and line 4"):
        load_config(config)
    table = tmp_path / "defaults.yaml"
    text = (ROOT / "search_spaces" / "defaults.yaml").read_text()
    table.write_text(text.replace("\n", "\nversion: 1\n", 1) + "version: 2\n")
    with pytest.raises(DefaultsError, match=r"key 'version' given twice"):
        load_table(table)


def test_yaml_merge_override_and_the_same_value_under_two_parents_stay_valid(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {lr: 1, epochs: 2}\nrun:\n  <<: *b\n  lr: 3\nother: {lr: 1}\n")
    assert read_mapping(path)["run"] == {"lr": 3, "epochs": 2}


def test_a_solver_field_given_twice_is_refused_with_both_lines(tmp_path):
    solver = tmp_path / "s.prototxt"
    solver.write_text("base_lr: 0.01\nmax_iter: 10\nbase_lr: 0.5\n")
    with pytest.raises(CaffeImportError, match=r"s.prototxt:3: field base_lr given twice \(lines 1 and 3\)"):
        import_solver(solver)
    solver.write_text("base_lr: 0.01\nmax_iter: 10\nmax_iter: 20\n")
    with pytest.raises(CaffeImportError, match=r"field max_iter given twice \(lines 2 and 3\)"):
        import_solver(solver)


def test_a_net_field_given_twice_inside_a_layer_is_refused(tmp_path):
    net = tmp_path / "n.prototxt"
    text = (CAFFE / "lenet_train_test.prototxt").read_text()
    net.write_text(text.replace("num_output: 500", "num_output: 500\n    num_output: 10", 1))
    with pytest.raises(CaffeImportError, match=r"field num_output given twice"):
        import_net(net)


def test_repeated_caffe_fields_stay_valid(tmp_path):
    solver = tmp_path / "s.prototxt"
    solver.write_text('base_lr: 0.01\nmax_iter: 100\nlr_policy: "multistep"\ngamma: 0.1\nstepvalue: 10\n'
                      'stepvalue: 50\ntest_iter: 1\ntest_iter: 2\n')
    assert import_solver(solver)["config"]["stepvalues"] == [10, 50]
    net = tmp_path / "n.prototxt"
    net.write_text('name: "n"\nlayer { name: "d" type: "Input" top: "data" top: "label"\n'
                   '  input_param { shape { dim: 8 dim: 1 dim: 28 dim: 28 } } }\n'
                   'layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"\n'
                   '  param { lr_mult: 1 } param { lr_mult: 1 } inner_product_param { num_output: 10 } }\n'
                   'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n')
    assert import_net(net)["batch_size"] == 8
    assert import_solver(CAFFE / "lenet_solver.prototxt")["config"]["model"] == "lenet5"


@pytest.mark.parametrize("text, message", [
    ("config: [1, 2]\n", "c.yaml: config: Input should be a valid dictionary"),
    ("config: 5\n", "c.yaml: config: Input should be a valid dictionary"),
    ("config: {lr: 0.1}\nframework: [torch]\n", "c.yaml: framework: Input should be a valid string"),
    ("config: {lr: 0.1}\ndataset: 3\n", "c.yaml: dataset: Input should be a valid string"),
    ("config: {lr: 0.1}\ncolour: red\n", "c.yaml: colour: unknown key; allowed: budget_epochs, caffe_files, "),
    ("config: {lr: 0.1, colour: red}\n", "c.yaml: config.colour: unknown field; allowed: "),
])
def test_a_config_entry_of_the_wrong_shape_is_refused_naming_the_key(tmp_path, text, message):
    """A configuration file written as a defaults-table entry is validated by its pydantic model: a value of
    the wrong type is one line naming the file and the key, never a TypeError."""
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_config_entry_gives_its_framework_and_dataset_to_the_fields(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("name: x\nframework: torch\ndataset: digits\nconfig: {lr: 0.1}\n")
    assert load_config(config) == {"lr": 0.1, "framework": "torch", "dataset": "digits"}
    config.write_text("name: x\nframework: caffe\nconfig: {lr: 0.1}\n")  # Caffe's run on other frameworks
    assert load_config(config) == {"lr": 0.1}
