"""The budget options of the commands that run framework defaults (defaults, transfer, crossover): a cut for a
quick look, and the definition of the published budget (`core.budgets.BUDGETS`)."""
from __future__ import annotations

from sensitivity.commands.common import UsageError, number
from sensitivity.config.defaults import Cut
from sensitivity.core.budgets import BUDGETS
from sensitivity.core.spec import MAX_EPOCHS

BUDGET_CHOICES = (*BUDGETS, "both")


def add_budget_cut(p) -> None:
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--budget-epochs", type=number(float, 0, strict=True, maximum=MAX_EPOCHS),
                     help="a quick look: each configuration runs at most this many epochs, not its published budget, "
                          "its schedule compressed alike (recorded; findings then say 'not tested')")
    cut.add_argument("--budget-fraction", type=number(float, 0, strict=True, maximum=1),
                     help="a quick look: each configuration runs this fraction of its published epochs")


def add_budget(p, command: str) -> None:
    def parse(value: str) -> tuple:
        if value not in BUDGET_CHOICES:
            raise UsageError(f"sensitivity {command}: --budget {value}: allowed {', '.join(BUDGET_CHOICES)}")
        return BUDGETS if value == "both" else (value,)

    p.add_argument("--budget", type=parse, default=("epochs",), metavar="|".join(BUDGET_CHOICES),
                   help="the definition of each default's published budget on another dataset: epochs (default: "
                        "its published epochs of the source dataset), steps (its published optimizer steps: many "
                        "more passes of a smaller set, e.g. 20,000 for TensorFlow's mnist-deep), or both")


def cut_of(args):
    return Cut(epochs=args.budget_epochs, fraction=args.budget_fraction) if (
        args.budget_epochs or args.budget_fraction) else None
