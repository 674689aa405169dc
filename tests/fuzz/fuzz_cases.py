"""Generated hostile input, one list per kind, each case a command line and the files it needs.

Every case is invalid by construction and must be refused with one line on stderr and exit 2, before Ray
starts and before any study or file is created. Generation is seeded, so every run tries the same cases.
A case is (id, argv, files): `files` maps a path relative to the working folder to its text or bytes.
"""
from __future__ import annotations

import gzip
import io
import random

import numpy as np

SEED = 12
BIG = "9" * 5000  # an integer of 5,000 digits

# ---------------------------------------------------------------------------------------------------------
# search spaces: a valid base, then one bad value at one key path per case, and raw files that are no YAML

BASE_SPACE = {
    "study": "fz",
    "dataset": "digits",
    "frameworks": ["torch"],
    "parameters": {"lr": {"type": "float", "low": 0.001, "high": 0.1, "log": True},
                   "batch_size": {"type": "categorical", "choices": [32, 64]},
                   "epochs": {"type": "int", "low": 1, "high": 3}},
    "fixed": {"optimizer": "momentum", "momentum": 0.9},
    "objectives": [{"metric": "val_accuracy", "direction": "maximize"}],
    "val_fraction": 0.2,
    "seeds": 1,
}

NOT_AN_INT = ["2.5", "'2'", "'yes'", "true", "[1]", "{a: 1}", "null", "1e20", ".inf", ".nan", BIG, "-" + BIG]
NOT_A_FLOAT = ["'0.1'", "'yes'", "true", "[0.1]", "{a: 1}", ".inf", "-.inf", ".nan", BIG]
NOT_A_BOOL = ["'yes'", "'true'", "1", "0", "'on'", "[true]", "2.5"]
NOT_A_NAME = ["''", "42", "[torch]", '"\\0torch"', "'" + "x" * 5000 + "'", "'/etc/passwd'", "'../../x'", "null"]
# (key path, bad values): each replaces the value at the path in BASE_SPACE
BAD_VALUES = [
    (("study",), NOT_A_NAME + ["'a b'", "'-x'", '"x\\ny"']),
    (("dataset",), ["'imagenet'", "cifar10", "mnist", "fashion_mnist", "cifar100", "svhn", "3", "[digits]", "''"]),
    (("model",), ["'resnet'", "3", "[lenet5]", "'LENET5'"]),
    (("frameworks",), ["[]", "torch", "[caffe]", "[torch, torch]", "[3]", "[[torch]]", "{torch: 1}", '["tor\\0ch"]']),
    (("parameters",), ["[]", "3", "{color: {type: categorical, choices: [a]}}", "{lr: 0.1}", "{lr: []}"]),
    (("parameters", "lr", "type"), ["'int'", "'floaty'", "3", "null", "[float]"]),
    (("parameters", "lr", "low"), NOT_A_FLOAT + ["0", "-1", "1e300"]),
    (("parameters", "lr", "high"), NOT_A_FLOAT + ["0.0001", "-1"]),
    (("parameters", "lr", "log"), NOT_A_BOOL),
    (("parameters", "lr", "step"), ["1e-300", "0", "-0.1", "'0.1'", "true", ".inf"]),
    (("parameters", "lr", "extra"), ["1"]),
    (("parameters", "batch_size", "choices"), ["[]", "['32']", "[0]", "[-1]", "[2.5]", "[" + BIG + "]",
                                               "[1e20]", "[true]", "[[32]]", "32",
                                               "[" + ", ".join(["1"] * 1001) + "]"]),
    (("parameters", "epochs", "low"), NOT_AN_INT + ["0", "-1", "100000000000000000000"]),
    (("parameters", "epochs", "high"), NOT_AN_INT + ["100000000000000000000", "10001"]),
    (("parameters", "epochs", "step"), ["0", "-1", "'1'", "1.5", "true"]),
    (("parameters", "epochs", "log"), NOT_A_BOOL),
    (("fixed",), ["[]", "3", "{color: red}", "{lr: 0.1, parameters: 1}", "{epochs: {a: 1}}"]),
    (("fixed", "momentum"), NOT_A_FLOAT + ["2", "1", "-0.1"]),
    (("fixed", "optimizer"), ["'adagrad'", "3", "true", "[sgd]"]),
    (("fixed", "threads"), NOT_AN_INT + ["1000000000", "-1", "1025"]),
    (("fixed", "device"), ["'gpu:99999'", "'gpu:5'", "'gpu'", "'tpu'", "'gpu:-1'", "'cuda:0'", "'gpu:٣'", "3",
                           "'gpu: 1'", '"cpu\\0"']),
    (("fixed", "timeout"), NOT_A_FLOAT + ["1e30", "0", "-5", "2592001"]),
    (("fixed", "seed"), NOT_AN_INT + ["-1", "2147483648", "1e30"]),
    (("fixed", "stepvalues"), ["[2, 1]", "['a']", "[0]", "[1.5]", "3",
                               "[" + ", ".join(map(str, range(1, 1003))) + "]"]),
    (("fixed", "weight_decay"), NOT_A_FLOAT + ["-1"]),
    (("fixed", "lr_policy"), ["'poly'", "multistep", "3"]),
    (("objectives",), ["[]", "val_accuracy", "[{metric: accuracy, direction: maximize}]",
                       "[{metric: val_accuracy, direction: up}]", "[{metric: val_accuracy}]",
                       "[{metric: val_accuracy, direction: maximize}, {metric: val_accuracy, direction: minimize}]",
                       "[{metric: val_accuracy, direction: maximize, weight: 2}]", "[3]"]),
    (("val_fraction",), NOT_A_FLOAT + ["0", "1", "-0.5", "'0.2'"]),
    (("seeds",), NOT_AN_INT + ["0", "-1", "1001", "'2'"]),
    (("unknown_key",), ["1"]),
    # YAML 1.1 forms (PyYAML reads `1:0` as 60, `010` as 8, `yes` as true): refused, naming the key
    (("parameters", "epochs", "high"), ["1:0", "010", "1_0", "0b11", "+1_0"]),
    (("parameters", "batch_size", "choices"), ["[32, 0100]", "[1:04]"]),
    (("parameters", "lr", "log"), ["yes", "on", "Off", "NO"]),
    (("fixed", "momentum"), ["0:0.9", "0.9_0"]),
    (("seeds",), ["01", "0:1"]),
]
RAW_SPACES = {
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "latin1": "study: caf\xe9\n".encode("latin-1"),
    "utf16": "study: fz\n".encode("utf-16"),
    "nul": b"study: f\x00z\n",
    "list": b"- study: fz\n",
    "scalar": b"42\n",
    "nested_1000": ("parameters: " + "[" * 1000 + "]" * 1000 + "\n").encode(),
    "nested_map_1000": ("fixed: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n").encode(),
    "int_5000_digits": f"seeds: {BIG}\n".encode(),
    "alias_bomb": ("a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                   "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                   "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nfixed: {stepvalues: [*e,*e,*e,*e,*e,*e]}\n").encode(),
    "over_1mb": b"# " + b"x" * 1_100_000 + b"\n",
    "python_tag": b"study: !!python/object/apply:os.system ['true']\n",
    "bad_yaml": b"study: [unclosed\n",
    "tabs": b"study:\tfz\n\tdataset: digits\n",
    "duplicate_anchor": b"a: *undefined\n",
    "date": b"study: 2020-13-45\n",
}


def _space_text(*changes) -> bytes:
    """BASE_SPACE as YAML with each (path, text) change: `text` (YAML already) becomes the value at `path`."""
    import copy

    import yaml
    space = copy.deepcopy(BASE_SPACE)
    for i, (path, _) in enumerate(changes):
        target = space
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = f"BADVALUE{i}"
    text = yaml.safe_dump(space, sort_keys=False, width=10**7)
    for i, (_, value) in enumerate(changes):
        text = text.replace(f"BADVALUE{i}", value)
    return text.encode()


def space_cases(count: int = 330) -> list:
    """`count` search spaces, each refused: raw files, every bad value at its key path, then pairs of bad
    values at two unrelated paths, sampled with SEED."""
    rng = random.Random(SEED)
    singles = list(dict.fromkeys((path, text) for path, values in BAD_VALUES for text in values))
    cases = [(f"raw-{name}", body) for name, body in RAW_SPACES.items()]
    cases += [(f"{'.'.join(path)}={text[:24]!r}", _space_text((path, text))) for path, text in singles]
    while len(cases) < count:
        (p1, t1), (p2, t2) = rng.sample(singles, 2)
        name = f"{'.'.join(p1)}={t1[:16]!r}+{'.'.join(p2)}={t2[:16]!r}"
        if p1[:len(p2)] == p2 or p2[:len(p1)] == p1 or name in {n for n, _ in cases}:
            continue
        cases.append((name, _space_text((p1, t1), (p2, t2))))
    return [(f"{i:03d} {name}", ["sweep", "space.yaml", "--trials", "1"], {"space.yaml": body})
            for i, (name, body) in enumerate(cases)]


# ---------------------------------------------------------------------------------------------------------
# command-line values

def cli_cases() -> list:
    """Bad values of every command's options (and a few whole commands), each refused in one line."""
    trial = ["trial", "--framework", "torch", "--dataset", "digits"]
    sweep = ["sweep", "space.yaml", "--trials", "1"]  # BASE_SPACE: valid, so each option is what is refused
    bad = {
        "--timeout": ["1e30", "0", "-1", "nan", "inf", "abc", "2592001"],
        "--epochs": ["1e20", "0", "-3", "2.5", BIG, "10001", "ten", "١٠", "６", "1_0", " 3", "0x10"],
        "--threads": ["1e9", "1000000000", "-1", "1025", "x"],
        "--batch-size": ["0", "-1", "1e6", "1048577", "64.0"],
        "--lr": ["0", "-0.1", "nan", "inf", "-inf", "1e999", "lr", "٠.١", "０.１", "0.0_1", "1e１"],
        "--momentum": ["1", "2", "-0.5", "nan"],
        "--weight-decay": ["-1", "inf"],
        "--seed": ["-1", "2147483648", "1e30", BIG],
        "--val-fraction": ["1", "1.5", "-0.1"],
        "--iterations": ["0", "100000001", "1e9"],
        "--stepsize": ["0", "-1"],
        "--stepvalues": ["a,b", "3,2", "0,1", "1.5", "١,٢", "1_0,2_0"],
        "--device": ["gpu:99999", "gpu:5", "tpu", "gpu:-1", "cuda", "gpu:" + "9" * 50],
        "--optimizer": ["adagrad"], "--lr-policy": ["poly"], "--semantics": ["both"], "--init": ["zeros"],
        "--dataset": ["imagenet", "../x"], "--model": ["resnet"], "--framework": ["caffe", "pytorch"],
        "--backend": ["numpy"],
    }
    cases = [(f"trial {option} {value[:12]}", trial + [option, value]) for option, values in bad.items()
             for value in values]
    sweep_bad = {
        "--trials": ["0", "-1", "1e9", "1000001", "x", "١٠", "６", "1_0", "+1_0", "٣"],
        "--parallel": ["0", "1025", "-2"],
        "--seed": ["-1", "4294967296", BIG], "--seeds": ["0", "1001"],
        "--time-budget": ["0", "inf", "1e30", "６0", "1_000"],
        "--cpus-per-trial": ["0", "1e9", "-1"], "--gpus-per-trial": ["-1", "1e6"],
        "--timeout-per-trial": ["1e30", "0"], "--sampler": ["cmaes"], "--pruner": ["median"],
        "--study": ["/etc/passwd", "../../../../tmp/x", "x" * 5000, "a b", "-"], "--semantics": ["both"],
        "--frameworks": ["caffe", "torch,torch"],
        "--address": ["host:70000", "host:0", "[::1", "host:", ":80", "host:port"],
        "--storage": ["[::1", "postgresql://u:p@[::1", "nosuch://x", "sqlite:////proc/no/such/dir/x.db"],
    }
    cases += [(f"sweep {option} {value[:12]}", sweep + [option, value]) for option, values in sweep_bad.items()
              for value in values]
    cases += [
        ("dashboard --port 70000", ["dashboard", "--port", "70000"]),
        ("dashboard --port 0", ["dashboard", "--port", "0"]),
        ("dashboard --port -1", ["dashboard", "--port", "-1"]),
        ("dashboard --port http", ["dashboard", "--port", "http"]),
        ("dashboard missing storage", ["dashboard", "--storage", "sqlite:///missing.db", "--port", "65001"]),
        ("studies missing storage", ["studies", "--storage", "sqlite:///missing.db"]),
        ("studies show missing", ["studies", "show", "nosuch", "--storage", "sqlite:///missing.db"]),
        ("export missing storage", ["export", "nosuch", "--storage", "sqlite:///missing.db"]),
        ("export --format xml", ["export", "x", "--format", "xml"]),
        ("plot --kind pie", ["plot", "x", "--kind", "pie", "--out", "x.html"]),
        ("report missing storage", ["report", "nosuch", "--storage", "journal:missing.journal"]),
        ("findings --effect 0", ["findings", "x", "--effect", "0"]),
        ("findings --effect nan", ["findings", "x", "--effect", "nan"]),
        ("robustness --samples 0", ["robustness", "x", "--samples", "0"]),
        ("robustness --protocol missing", ["robustness", "x", "--protocol", "missing.yaml"]),
        ("robustness --eps (gone: the protocol file)", ["robustness", "x", "--eps", "0.1"]),
        ("defaults --datasets imagenet", ["defaults", "--frameworks", "torch", "--datasets", "imagenet"]),
        ("defaults --datasets cifar10", ["defaults", "--frameworks", "torch", "--datasets", "cifar10"]),
        ("defaults --budget-epochs 0", ["defaults", "--budget-epochs", "0"]),
        ("transfer --seeds 0", ["transfer", "--seeds", "0"]),
        ("ablate --from x", ["ablate", "--from", "x", "--to", "torch:native", "--dataset", "digits"]),
        ("ablate --seeds 1e9", ["ablate", "--from", "torch:native", "--to", "torch:canonical", "--seeds", "1e9"]),
        ("datasets download imagenet", ["datasets", "download", "imagenet"]),
        ("trial --config missing", ["trial", "--config", "missing.yaml"]),
        ("trial --trial -1", ["trial", "--from-study", "x", "--trial", "-1"]),
        ("trial NUL", ["trial", "--framework", "torch\0", "--dataset", "digits"]),
        ("no command", []),
        ("unknown command", ["fly"]),
    ]
    return [(name, argv, {"space.yaml": _space_text()} if argv[:2] == sweep[:2] else {}) for name, argv in cases]


# ---------------------------------------------------------------------------------------------------------
# Caffe prototxt

SOLVER = 'net: "net.prototxt"\nbase_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\nmax_iter: 100\n'
NET = """name: "LeNet"
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        transform_param { scale: 0.00390625 } data_param { source: "x" batch_size: 64 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        param { lr_mult: 1 } param { lr_mult: 2 }
        convolution_param { num_output: 20 kernel_size: 5 stride: 1 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1" inner_product_param { num_output: 500 } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "drop" type: "Dropout" bottom: "ip1" top: "ip1" dropout_param { dropout_ratio: 0.5 } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""
SOLVER_BAD = {
    "base_lr": ['"0.01"', "0", "-0.01", "true", "{ }", "1e999", BIG, "lr", "nan", "inf"],
    "momentum": ["2", "1", "-0.1", '"0.9"', "{ x: 1 }"],
    "weight_decay": ["-1", '"x"', "false"],
    "max_iter": ["0", "-5", "1.5", "1e12", BIG, '"100"'],
    "stepsize": ["0", "2.5", '"x"'],
    "gamma": ['"x"', "-1"],
    "random_seed": ["1.5", '"x"', "3000000000"],
    "lr_policy": ['"poly"', "3", "{ }"],
    "type": ['"AdaGrad"', "{ }", "7"],
    "net": ["{ }", "3"],
}
NET_BAD = [  # (what, the text replaced, its replacement)
    ("num_output string", "num_output: 20", 'num_output: "x"'),
    ("num_output zero", "num_output: 20", "num_output: 0"),
    ("num_output negative", "num_output: 500", "num_output: -5"),
    ("num_output float", "num_output: 500", "num_output: 2.5"),
    ("num_output huge", "num_output: 500", "num_output: " + BIG),
    ("kernel message", "kernel_size: 5", "kernel_size { }"),
    ("kernel zero", "kernel_size: 5", "kernel_size: 0"),
    ("stride negative", "stride: 1", "stride: -1"),
    ("dropout 2", "dropout_ratio: 0.5", "dropout_ratio: 2"),
    ("dropout string", "dropout_ratio: 0.5", 'dropout_ratio: "x"'),
    ("batch zero", "batch_size: 64", "batch_size: 0"),
    ("batch string", "batch_size: 64", 'batch_size: "64"'),
    ("batch float", "batch_size: 64", "batch_size: 6.4"),
    ("layer scalar", 'layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }', "layer: 5"),
    ("include scalar", "include { phase: TRAIN }", "include: 5"),
    ("param scalar", "param { lr_mult: 1 }", "param: 3"),
    ("lr_mult string", "param { lr_mult: 2 }", 'param { lr_mult: "x" }'),
    ("lr_mult message", "param { lr_mult: 2 }", "param { lr_mult { } }"),
    ("conv param scalar", "convolution_param { num_output: 20 kernel_size: 5 stride: 1 weight_filler { type: "
                          '"xavier" } }', "convolution_param: 5"),
    ("scale string", "scale: 0.00390625", 'scale: "x"'),
    ("transform scalar", "transform_param { scale: 0.00390625 }", "transform_param: 1"),
    ("pool unknown", "pool: MAX", "pool: STOCHASTIC"),
    ("pool message", "pool: MAX", "pool { }"),
    ("unknown layer", '"ReLU"', '"PReLU"'),
    ("no data layer", "batch_size: 64", ""),
    ("unclosed", 'top: "loss" }', 'top: "loss"'),
    ("deep", 'name: "LeNet"', "a { " * 2000 + "}" * 2000),
]
RAW_PROTOTXT = {
    "binary": bytes(range(256)),
    "latin1": "base_lr: 0.01 # caf\xe9\n".encode("latin-1"),
    "empty": b"",
    "only comment": b"# nothing\n",
    "unterminated string": b'net: "net.prototxt\nbase_lr: 0.01\n',
    "bad escape": b'net: "\\x"\nbase_lr: 0.01\n',
    "deep": b"a { " * 3000 + b"}" * 3000,
    "stray brace": b"base_lr: 0.01 }\n",
    "no value": b"base_lr:\n",
    "colon message": b"base_lr: { \n",
    "unknown field": b"base_lr: 0.01\niter_size: 4\n",
    "bad token": b"base_lr: 0.01 @\n",
    "lr_policy step no stepsize": b"base_lr: 0.01\nlr_policy: \"step\"\ngamma: 0.1\n",
    "rmsprop no decay": b'base_lr: 0.01\ntype: "RMSProp"\n',
    "adam momentum": b'base_lr: 0.01\ntype: "Adam"\nmomentum: 0.5\n',
}


def prototxt_cases() -> list:
    """Malformed or unsupported solvers and nets, and solvers describing what TrialSpec refuses."""
    cases = []
    for field, values in SOLVER_BAD.items():
        for value in values:
            lines = [line for line in SOLVER.splitlines() if not line.startswith(field + ":")]
            cases.append((f"solver {field} {value[:12]}", "\n".join(lines + [f"{field}: {value}"]) + "\n", NET))
    for what, old, new in NET_BAD:
        assert old in NET or what == "deep", what
        cases.append((f"net {what}", SOLVER, NET.replace(old, new, 1)))
    cases += [(f"raw {name}", body, NET) for name, body in RAW_PROTOTXT.items()]
    cases.append(("phases lr 0", "two", NET))
    out = []
    for name, solver, net in cases:
        if solver == "two":  # a continuation at rate 0: the ratio of rates would divide by zero
            files = {"solver.prototxt": SOLVER, "solver2.prototxt": SOLVER.replace("0.01", "0").replace("100", "200"),
                     "net.prototxt": net}
            argv = ["import-caffe", "solver.prototxt", "solver2.prototxt", "--out", "out.yaml"]
        else:
            files = {"solver.prototxt": solver, "net.prototxt": net}
            argv = ["import-caffe", "solver.prototxt", "--out", "out.yaml"]
        out.append((name, argv, files))
    out += [("out is a folder", ["import-caffe", "solver.prototxt", "--out", "."],
             {"solver.prototxt": SOLVER, "net.prototxt": NET}),
            ("missing solver", ["import-caffe", "nosuch.prototxt"], {}),
            ("solver is a folder", ["import-caffe", "."], {})]
    return out


# ---------------------------------------------------------------------------------------------------------
# dataset files in the official formats, corrupted

def _idx(array, magic=None) -> bytes:
    array = np.asarray(array, dtype=np.uint8)
    magic = (0x0800 | array.ndim) if magic is None else magic
    return magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape) + array.tobytes()


def _mnist(**replace) -> dict:
    rng = np.random.default_rng(SEED)
    files = {"train-images-idx3-ubyte": _idx(rng.integers(0, 256, (12, 28, 28))),
             "train-labels-idx1-ubyte": _idx(np.arange(12) % 10),
             "t10k-images-idx3-ubyte": _idx(rng.integers(0, 256, (5, 28, 28))),
             "t10k-labels-idx1-ubyte": _idx(np.arange(5) % 10)}
    files.update(replace)
    return {f"data/mnist/{name}": body for name, body in files.items() if body is not None}


def _bomb() -> bytes:
    """A small .gz whose IDX header claims 60,000 images and whose body inflates far beyond them."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as f:
        f.write((2051).to_bytes(4, "big") + (60000).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2)
        chunk = b"\0" * (1 << 20)
        for _ in range(200):  # 200 MiB of zeros, about 200 KB compressed
            f.write(chunk)
    return out.getvalue()


def _cifar(labels, n=3) -> bytes:
    rows = np.concatenate([np.asarray(labels, np.uint8).reshape(n, 1),
                           np.random.default_rng(SEED).integers(0, 256, (n, 3072), dtype=np.uint8)], axis=1)
    return rows.tobytes()


def dataset_cases() -> list:
    """Corrupt official files: a `trial` and a `sweep` on each are refused in one line, before any training
    and before Ray starts."""
    img = "train-images-idx3-ubyte"
    good = _mnist()[f"data/mnist/{img}"]
    mnist = {
        "idx bad magic": _mnist(**{img: (1234).to_bytes(4, "big") + good[4:]}),
        "idx truncated": _mnist(**{img: good[:-100]}),
        "idx trailing bytes": _mnist(**{img: good + b"\0" * 7}),
        "idx header only": _mnist(**{img: good[:16]}),
        "idx short header": _mnist(**{img: good[:6]}),
        "idx empty": _mnist(**{img: b""}),
        "idx huge dims": _mnist(**{img: (2051).to_bytes(4, "big") + (2**31).to_bytes(4, "big") + good[8:]}),
        "idx 27x27": _mnist(**{img: _idx(np.zeros((12, 27, 27)))}),
        "idx label 10": _mnist(**{"train-labels-idx1-ubyte": _idx(np.full(12, 10))}),
        "idx label count": _mnist(**{"train-labels-idx1-ubyte": _idx(np.arange(11) % 10)}),
        "idx missing file": _mnist(**{"t10k-labels-idx1-ubyte": None}),
        "idx zero images": _mnist(**{img: _idx(np.zeros((0, 28, 28))), "train-labels-idx1-ubyte": _idx([])}),
        "gz not gzip": _mnist(**{img: None, img + ".gz": b"not gzip at all"}),
        "gz truncated": _mnist(**{img: None, img + ".gz": gzip.compress(good)[:-20]}),
        "gz bomb": _mnist(**{img: None, img + ".gz": _bomb()}),
    }
    cases = [(name, "mnist", files) for name, files in mnist.items()]
    test = {"data/cifar-10-batches-bin/test_batch.bin": _cifar([1, 2, 3])}
    cases += [
        ("cifar empty", "cifar10", {**test, "data/cifar-10-batches-bin/data_batch_1.bin": b""}),
        ("cifar partial record", "cifar10",
         {**test, "data/cifar-10-batches-bin/data_batch_1.bin": _cifar([1, 2, 3])[:-5]}),
        ("cifar label 10", "cifar10", {**test, "data/cifar-10-batches-bin/data_batch_1.bin": _cifar([1, 10, 3])}),
        ("cifar no train batch", "cifar10", test),
        ("svhn garbage", "svhn", {"data/svhn/train_32x32.mat": b"MATLAB 5.0" + bytes(200),
                                  "data/svhn/test_32x32.mat": b"\0" * 10}),
        ("svhn text", "svhn", {"data/svhn/train_32x32.mat": b"hello", "data/svhn/test_32x32.mat": b"hello"}),
        ("cifar100 label 100", "cifar100", {
            "data/cifar-100-binary/train.bin": np.concatenate([np.array([[1, 100]] * 2, np.uint8),
                                                               np.zeros((2, 3072), np.uint8)], 1).tobytes(),
            "data/cifar-100-binary/test.bin": np.zeros((2, 3074), np.uint8).tobytes()}),
    ]
    trials = [(f"trial {name}", ["trial", "--framework", "torch", "--dataset", dataset, "--data-dir", "data",
                                 "--epochs", "1"], files) for name, dataset, files in cases]
    sweeps = [(f"sweep {name}", ["sweep", "space.yaml", "--trials", "1"],  # the data folder: $SENSITIVITY_DATA_DIR
               {**files, "space.yaml": _space_text((("dataset",), dataset))}) for name, dataset, files in cases]
    return trials + sweeps


# ---------------------------------------------------------------------------------------------------------
# input edges (issue 33): files that are no regular file, output endings. A case is (id, argv, files, setup):
# `setup(work, env)` makes what `files` cannot (a FIFO, a link; `env` is pytest's monkeypatch, for variables)
# in the working folder before the command runs.

def _fifo(name):
    def make(work, env):
        import os
        os.mkfifo(work / name)
    return make


def _nothing(work, env):
    return None


def _link(name, target):
    def make(work, env):
        import os
        os.symlink(target, work / name)
    return make


def _gone(work, env):
    """The working folder deleted under the command."""
    import os
    (work / "gone").mkdir()
    os.chdir(work / "gone")
    os.rmdir(work / "gone")


def _home_file(work, env):
    (work / "home").write_text("a file, not a folder")
    env.setenv("HOME", str(work / "home"))
    env.delenv("SENSITIVITY_CACHE_DIR", raising=False)


def _environ(name, value):
    def make(work, env):
        env.setenv(name, value)
    return make


SOLVER_FILES = {"solver.prototxt": SOLVER, "net.prototxt": NET}


def edge_cases() -> list:
    """Each refused in one line, exit 2, nothing written, within 10 s: a FIFO hangs a blocking open or read,
    a device reads without end, and an unknown ending would be written before it is refused."""
    fifo = [
        ("space file is a FIFO", ["sweep", "fifo.yaml", "--trials", "1"], {}, _fifo("fifo.yaml")),
        ("trial --config FIFO", ["trial", "--config", "fifo.yaml"], {}, _fifo("fifo.yaml")),
        ("solver is a FIFO", ["import-caffe", "fifo.prototxt"], {}, _fifo("fifo.prototxt")),
        ("--net is a FIFO", ["import-caffe", "solver.prototxt", "--net", "fifo.prototxt"], SOLVER_FILES,
         _fifo("fifo.prototxt")),
        ("robustness --protocol FIFO", ["robustness", "x", "--protocol", "fifo.yaml"], {}, _fifo("fifo.yaml")),
        ("export --out FIFO", ["export", "x", "--out", "fifo.csv"], {}, _fifo("fifo.csv")),
        ("report --out FIFO", ["report", "x", "--out", "fifo.html"], {}, _fifo("fifo.html")),
        ("plot --out FIFO", ["plot", "x", "--kind", "slice", "--out", "fifo.html"], {}, _fifo("fifo.html")),
        ("space file /dev/zero", ["sweep", "/dev/zero", "--trials", "1"], {}, _nothing),
        ("trial --config /dev/zero", ["trial", "--config", "/dev/zero"], {}, _nothing),
        ("solver /dev/zero", ["import-caffe", "/dev/zero"], {}, _nothing),
        ("--net /dev/urandom", ["import-caffe", "solver.prototxt", "--net", "/dev/urandom"], SOLVER_FILES, _nothing),
        ("trial --config a folder", ["trial", "--config", "."], {}, _nothing),
        ("export --out /dev/null", ["export", "x", "--out", "/dev/null"], {}, _nothing),
        ("export --out under a file", ["export", "x", "--out", "f.txt/x.csv"], {"f.txt": "x"}, _nothing),
        ("plot --out x.exe", ["plot", "x", "--kind", "slice", "--out", "x.exe"], {}, _nothing),
        ("plot --out no ending", ["plot", "x", "--kind", "slice", "--out", "x"], {}, _nothing),
    ]
    shown = [  # names that would move the cursor, reorder or cut the line if printed raw
        ("ESC in a space path", ["sweep", "a\x1b[2J\x1b[31m.yaml", "--trials", "1"], {}, _nothing),
        ("U+202E in a space path", ["sweep", "gpj.\u202eyaml", "--trials", "1"], {}, _nothing),
        ("newline in a space path", ["sweep", "a\nb.yaml", "--trials", "1"], {}, _nothing),
        ("newline in --study", ["sweep", "space.yaml", "--trials", "1", "--study", "a\nb"],
         {"space.yaml": _space_text()}, _nothing),
        ("U+2066 and ESC in --config", ["trial", "--config", "\u2066x\x1b]0;t\x07.yaml"], {}, _nothing),
        ("newline in a study name in the space", ["sweep", "space.yaml", "--trials", "1"],
         {"space.yaml": _space_text((("study",), '"x\\n\\u202ey"'))}, _nothing),
        ("a surrogate in a path", ["trial", "--config", "x\udcff.yaml"], {}, _nothing),
    ]
    import os

    from sensitivity.frameworks import gpu
    cores = len(os.sched_getaffinity(0))
    sweep, space = ["sweep", "space.yaml", "--trials", "1"], {"space.yaml": _space_text()}
    ray = [  # what Ray would refuse, or wait on, after the study and the cache were written
        (f"--cpus-per-trial {cores + 1} (this machine has {cores})", sweep + ["--cpus-per-trial", str(cores + 1)],
         space, _nothing),
        ("--cpus-per-trial 1024", sweep + ["--cpus-per-trial", "1024"], space, _nothing),
        ("--cpus-per-trial 1e-300", sweep + ["--cpus-per-trial", "1e-300"], space, _nothing),
        ("--cpus-per-trial 1.5", sweep + ["--cpus-per-trial", "1.5"], space, _nothing),
        ("--cpus-per-trial 0.33333", sweep + ["--cpus-per-trial", "0.33333"], space, _nothing),
        ("--gpus-per-trial 1e-300", sweep + ["--gpus-per-trial", "1e-300"], space, _nothing),
        ("RAY_ADDRESS=garbage", sweep, space, _environ("RAY_ADDRESS", "garbage")),
        ("RAY_ADDRESS=127.0.0.1:1", sweep, space, _environ("RAY_ADDRESS", "127.0.0.1:1")),
        ("RAY_ADDRESS=auto", sweep, space, _environ("RAY_ADDRESS", "auto")),
    ]
    if gpu.visible_count() == 0:
        ray.append(("--gpus-per-trial 1 with no GPU", sweep + ["--gpus-per-trial", "1"], space, _nothing))
    return fifo + shown + ray + robustness_protocol_cases()


def environment_cases() -> list:
    """Faults of the environment, not of the input: one line, exit 1 or 2, never a traceback, nothing written."""
    sweep, space = ["sweep", "space.yaml", "--trials", "1"], {"space.yaml": _space_text()}
    trial = ["trial", "--framework", "torch", "--dataset", "digits", "--epochs", "1"]
    cases = []
    for what, setup in (("HOME is a file", _home_file), ("results is a dangling link", _link("results", "nowhere")),
                        ("results is a link loop", _link("results", "results")), ("the working folder is gone", _gone)):
        cases += [(f"sweep: {what}", sweep, space, setup), (f"studies: {what}", ["studies"], {}, setup),
                  (f"export: {what}", ["export", "x"], {}, setup), (f"report: {what}", ["report", "x"], {}, setup)]
        if setup is _home_file:
            cases.append((f"trial: {what}", trial, {}, setup))
    return cases


# ---------------------------------------------------------------------------------------------------------
# robustness protocols (issue 29): a grid outside [0, 1], and a surrogate naming a model or framework that is
# unknown or not installed here. Each is refused before any study is opened, so the study "x" need not exist.

def robustness_protocol_cases() -> list:
    """(name, argv, files, setup) of bad robustness protocols, each refused in one line, exit 2, nothing written."""
    def case(name, text, setup=_nothing):
        return (f"robustness protocol: {name}", ["robustness", "x", "--protocol", "p.yaml"], {"p.yaml": text}, setup)
    grids = ["[0.1, 1.5]", "[-0.1, 0.2]", "[0, 0.1]", "[0.1, 2]", "[1.0000001]", "[-1e300]", "[0.1, 1e300]"]
    cases = [case(f"eps {grid}", f"eps: {grid}\n") for grid in grids]
    cases += [case(f"eps_by_dataset digits {grid}", f"eps: [0.1]\neps_by_dataset: {{digits: {grid}}}\n")
              for grid in grids[:4]]
    surrogates = {"model resnet": "{model: resnet}", "model ''": "{model: ''}", "model 3": "{model: 3}",
                  "framework caffe2": "{framework: caffe2}", "framework ''": "{framework: ''}",
                  "framework [torch]": "{framework: [torch]}", "layers of no type": "{model: x, layers: [{a: 1}]}",
                  "layers Conv without sizes": "{model: x, layers: [{type: Conv}]}", "epochs 0": "{epochs: 0}",
                  "optimizer adagrad": "{optimizer: adagrad}", "lr -1": "{lr: -1}", "unknown key": "{steps: 3}",
                  "a list": "[torch, mlp]"}
    cases += [case(f"surrogate {name}", f"eps: [0.1]\nsurrogate: {text}\n") for name, text in surrogates.items()]
    cases.append(case("surrogate framework mxnet, its environment gone", "eps: [0.1]\nsurrogate: {framework: mxnet}\n",
                      _environ("SENSITIVITY_PYTHON_LEGACY", "/nonexistent/python")))
    return cases
