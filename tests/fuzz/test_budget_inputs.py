"""`transfer --budget` (and defaults', crossover's) takes epochs, steps or both (issue 29): anything else is one
line naming the option and the allowed values, exit 2, and nothing written (no study, no Ray, no file)."""
import pytest
from fuzz_runner import check

BAD = ["", " ", "epoch", "Steps", "STEPS", "both,steps", "epochs steps", "all", "none", "0", "-1", "1e9", "steps\n",
       "\u00e9pochs", "\u202estep", "x" * 5000, "epochs,steps"]
COMMANDS = {"transfer": ["transfer", "--frameworks", "torch", "--datasets", "digits"],
            "defaults": ["defaults", "--frameworks", "torch", "--datasets", "digits"],
            "crossover": ["crossover", "--framework", "torch", "--datasets", "mnist5k,digits"]}
CASES = [(command, value) for command in COMMANDS for value in BAD]


@pytest.mark.parametrize("command,value", CASES, ids=[f"{c}:{v[:20]!r}" for c, v in CASES])
def test_a_budget_other_than_epochs_steps_or_both_is_refused_in_one_line(refused, command, value):
    outcome = refused("cli", f"{command} --budget {value[:40]!r}", COMMANDS[command] + ["--budget", value], {})
    check(outcome)
    if value.strip() and "\n" not in value and "\u202e" not in value:
        assert outcome["stderr"].strip() == f"sensitivity {command}: --budget {value}: allowed epochs, steps, both"
    else:  # a blank value, or control and bidirectional characters escaped on stderr
        assert outcome["stderr"].startswith(f"sensitivity {command}: --budget ")
        assert outcome["stderr"].rstrip().endswith(": allowed epochs, steps, both")
