"""`sensitivity frameworks`, `datasets` and `import-caffe`: what is here, and Caffe's files."""
from __future__ import annotations

import sys

from sensitivity import datasets, frameworks
from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError
from sensitivity.config.caffe_import import CaffeImportError, import_phases, table_entry
from sensitivity.config.files import dump_config
from sensitivity.core import paths, semantics, semantics_table
from sensitivity.datasets import REGISTRY
from sensitivity.frameworks import gpu
from sensitivity.core.paths import atomic_write


def add_parsers(commands) -> None:
    p = commands.add_parser("frameworks", help="list frameworks, their environment and version")
    p.set_defaults(handler=_cmd_frameworks)
    p = commands.add_parser("datasets", help="list datasets, or download one")
    p.add_argument("action", nargs="?", choices=("list", "download"), default="list")
    p.add_argument("name", nargs="?")
    p.add_argument("--data-dir")
    p.set_defaults(handler=_cmd_datasets)
    p = commands.add_parser("semantics", help="what native and canonical mean in each framework, with sources")
    p.add_argument("--framework", action="append", help="only these (repeatable)")
    p.add_argument("--markdown", action="store_true", help="as the table of docs/semantics.md")
    p.set_defaults(handler=_cmd_semantics)
    _add_import_caffe_parser(commands)


def _cmd_semantics(args) -> int:
    unknown = [f for f in args.framework or [] if f not in semantics.NATIVE]
    if unknown:
        raise UsageError(f"sensitivity semantics: --framework {unknown[0]}: allowed {', '.join(semantics.NATIVE)}")
    if args.markdown:
        print(semantics_table.markdown(args.framework), end="")
        return EXIT_OK
    for framework, knob, canonical, native, source in semantics_table.rows(args.framework):
        print(f"{framework} {knob}\n  canonical: {canonical}\n  native:    {native}\n  source:    {source}")
    return EXIT_OK


def _cmd_frameworks(args) -> int:
    driver = gpu.driver()
    print(f"{'framework':<12} {'environment':<12} {'version':<12} {'usable':<37} GPU")
    for name, info in frameworks.FRAMEWORKS.items():
        version, usable, why, gpu_build = frameworks.gpu_probe(name)
        backends = f" (--backend {'|'.join(info.backends)})" if info.backends and usable else ""
        print(f"{name:<12} {info.env:<12} {version or '-':<12} {'yes' + backends if usable else 'no: ' + why:<37} "
              f"{gpu.column(usable, gpu_build, driver)}")
    for name, why in frameworks.CONFIGURATION_ONLY.items():
        print(f"{name:<12} {'-':<12} {'-':<12} {'no: ' + why:<37} -")
    return EXIT_OK


def _cmd_datasets(args) -> int:
    if args.action == "download":
        if args.name is None:
            raise UsageError("sensitivity datasets download: a dataset name is required; downloadable: "
                             + ", ".join(datasets.downloads.PINS))
        if args.name not in datasets.REGISTRY:
            raise UsageError(f"sensitivity datasets download: unknown dataset {args.name!r}; "
                             f"allowed: {', '.join(sorted(datasets.REGISTRY))}")
        try:
            print(datasets.download(args.name, args.data_dir))
        except datasets.DatasetError as exc:
            print(f"sensitivity datasets download: {exc}", file=sys.stderr)
            return EXIT_TRIAL_FAILED
        return EXIT_OK
    print(f"{'name':<14} {'shape':<12} {'classes':<8} {'present':<8} source")
    for row in datasets.info_table(args.data_dir):
        shape = "x".join(str(n) for n in row["shape"])
        print(f"{row['name']:<14} {shape:<12} {row['classes']:<8} {'yes' if row['present'] else 'no':<8} "
              f"{row['source']}")
    return EXIT_OK


def _add_import_caffe_parser(commands) -> None:
    p = commands.add_parser(
        "import-caffe", help="turn a Caffe solver (and net) into a configuration",
        description="Writes the configuration a Caffe solver and net describe, in the defaults table's schema. "
                    "`not_reproduced` lists what changes training in Caffe but is not reproduced here (biases at "
                    "lr_mult 2, mean subtraction, input scale): a trial of it is not Caffe's run in those respects. "
                    "`ignored` lists fields that do not change training.")
    p.add_argument("solver", nargs="+", help="SOLVER.prototxt, then any solvers that resume it (e.g. "
                   "cifar10_quick_solver_lr1.prototxt): one multistep schedule")
    p.add_argument("--net", help="NET.prototxt (default: the solver's net: path, if it is beside the solver)")
    p.add_argument("--out", help="CONFIG.yaml to write (default: stdout)")
    p.add_argument("--entry", metavar="NAME", help="write a complete defaults-table entry named NAME (with --dataset); "
                   "its network goes to original_model")
    p.add_argument("--dataset", choices=sorted(REGISTRY), help="with --entry: the dataset the solver was tuned for")
    p.set_defaults(handler=_cmd_import_caffe)


NOT_REPRODUCED = ("# not_reproduced (an entry's notes): these change training in Caffe and no framework here\n"
                  "# reproduces them; a trial of this configuration differs from Caffe's run in those respects.\n")


def _cmd_import_caffe(args) -> int:
    if (args.entry is None) != (args.dataset is None):
        raise UsageError("sensitivity import-caffe: --entry and --dataset go together")
    if args.out:  # a FIFO, a device or a folder there is refused, not replaced by the file written
        try:
            paths.check_output(args.out, "--out")
        except ValueError as exc:
            raise UsageError(f"sensitivity import-caffe: {exc}")
    try:
        entry = import_phases(args.solver, args.net)
    except CaffeImportError as exc:
        raise UsageError(f"sensitivity import-caffe: {exc}")
    if args.entry:
        entry = table_entry(entry, args.entry, args.dataset)
    reproduced = entry.get("not_reproduced") or entry.get("notes")
    text = (NOT_REPRODUCED if reproduced else "") + dump_config(entry)
    if args.out:
        try:
            with atomic_write(args.out) as f:
                f.write(text.encode())
        except (OSError, ValueError) as exc:  # a folder, a missing permission, a NUL in the name
            raise UsageError(f"sensitivity import-caffe: --out {args.out!r}: {getattr(exc, 'strerror', None) or exc}")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
