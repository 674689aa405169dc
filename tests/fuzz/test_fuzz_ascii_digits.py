"""Numbers in Caffe's files are ASCII decimal only: Python's `\\d` and float() take Arabic-Indic (٠.٠١),
fullwidth (５) and other Unicode digits, which a solver or net then read as numbers silently. Each such file
is refused in one line, exit 2, nothing written (in-process, the `refused` fixture)."""
import pytest
from fuzz_runner import check

from fuzz_cases import NET, SOLVER
from sensitivity.config import defaults, prototxt

DIGITS = {"arabic-indic": "\u0660.\u0660\u0661", "fullwidth": "\uff10.\uff10\uff11",
          "devanagari": "\u0966.\u0966\u0967",
          "mixed": "0.0\u0661", "exponent": "1e-\u0662", "bengali": "\u09e6.\u09e6\u09e7"}
SPACES = {"no-break space": "\u00a0", "em space": "\u2003", "ideographic space": "\u3000"}

CASES = [(f"solver base_lr {what}", SOLVER.replace("base_lr: 0.01", f"base_lr: {text}"), NET)
         for what, text in DIGITS.items()]
OUTPUTS = {"arabic-indic": "\u0662\u0660", "fullwidth": "\uff12\uff10", "thai": "\u0e52\u0e50"}
CASES += [(f"net num_output {what}", SOLVER, NET.replace("num_output: 20", f"num_output: {text}"))
          for what, text in OUTPUTS.items()]
CASES += [(f"solver {what} between tokens", SOLVER.replace("momentum: 0.9", f"momentum:{space}0.9"), NET)
          for what, space in SPACES.items()]
CASES += [("net layer name of non-ASCII letters", SOLVER,
           NET.replace('name: "LeNet"', "name: \u0644\u064a\u0646\u062a"))]


@pytest.mark.parametrize("name,solver,net", CASES, ids=[c[0] for c in CASES])
def test_a_caffe_file_with_unicode_digits_is_refused(refused, name, solver, net):
    outcome = refused("prototxt", name, ["import-caffe", "solver.prototxt", "--out", "out.yaml"],
                      {"solver.prototxt": solver, "net.prototxt": net})
    check(outcome)


def test_the_tokenizer_reads_ascii_numbers_only():
    assert prototxt.parse("base_lr: 0.01\nmax_iter: 1e3\n", "s").get("base_lr") == 0.01
    for text in DIGITS.values():
        with pytest.raises(prototxt.PrototxtError):
            prototxt.parse(f"base_lr: {text}\n", "s")


def test_the_defaults_table_reads_ascii_numbers_only_from_its_sources():
    """`checked_against` quotes are matched for numbers with `defaults.NUMBER`: Unicode digits are none."""
    assert defaults.quoted_numbers("lr 1e-4, batch 50, 55,000 steps, .05") == [1e-4, 50.0, 55000.0, 0.05]
    for text in DIGITS.values():
        assert defaults.quoted_numbers(f"lr {text}") in ([], [0.0], [1.0]), text  # only its ASCII part, if any
    assert defaults.quoted_numbers("batch \u0665\u0660") == []
