"""The analysis keeps its rooms: the statistics every claim shares live in one module, every claim and every figure
is one registered module that the docs name, and the recipes of docs/architecture.md name files that exist."""
import ast
import importlib
import re

from sensitivity.analysis.claims.registry import CLAIMS
from sensitivity.analysis.claims.sensitivity import DESIGN_CLAIMS
from sensitivity.analysis.figure_table import FIGURES
from sensitivity.core.envs import REPO_ROOT

PACKAGE = REPO_ROOT / "sensitivity"
STATISTICS = "sensitivity/analysis/statistics.py"
QUANTILES = {"stdtrit", "ndtri", "inv_cdf", "ppf"}  # scipy.special's, statistics.NormalDist's, scipy.stats' t and norm
DOCS = REPO_ROOT / "docs"


def misplaced(source: str, path: str) -> list:
    """What `source` (the file at `path`) does that only its one home may: call a quantile function outside the
    statistics module, or define ALPHA (any name holding it), REGIME or BUDGETS."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in QUANTILES and path != STATISTICS:
                found.append(f"{path}:{node.lineno}: calls {name}")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for name in [t.id for t in ast.walk(target) if isinstance(t, ast.Name)]:
                if "ALPHA" in name and path != STATISTICS:
                    found.append(f"{path}:{node.lineno}: defines {name}")
                if name in ("REGIME", "BUDGETS"):
                    found.append(f"{path}:{node.lineno}: defines {name}")
    return found


def test_only_the_statistics_module_calls_a_quantile_or_defines_alpha_and_each_name_has_one_home():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += misplaced(path.read_text(), str(path.relative_to(REPO_ROOT)))
    definitions = [f for f in found if f.endswith(("defines REGIME", "defines BUDGETS"))]
    homes = {f.split(":")[0] + " " + f.rsplit(" ", 1)[1] for f in definitions}
    assert homes == {f"{STATISTICS} REGIME", "sensitivity/core/budgets.py BUDGETS"}, definitions
    assert len(definitions) == 2, definitions
    assert not [f for f in found if f not in definitions], found


def test_the_check_finds_a_quantile_an_alpha_and_a_second_regime():
    source = ("from scipy import special, stats\nFAMILY_ALPHA = 0.05\nREGIME = 'semantics'\n"
              "half = special.stdtrit(4, 0.975)\nz = stats.norm.ppf(0.975)\n")
    found = misplaced(source, "sensitivity/analysis/claims/x.py")
    assert [f.split(": ", 1)[1] for f in found] == ["defines FAMILY_ALPHA", "defines REGIME", "calls stdtrit",
                                                     "calls ppf"]
    assert misplaced(source, STATISTICS) == [f"{STATISTICS}:3: defines REGIME"]


def test_every_claim_module_is_registered_and_each_claim_has_its_bullet_in_the_docs():
    registered = {type(claim).__module__ for claim in CLAIMS}
    claim_modules = set()
    for path in sorted((PACKAGE / "analysis" / "claims").glob("*.py")):
        module = importlib.import_module(f"sensitivity.analysis.claims.{path.stem}")
        if any(isinstance(v, type) and v.__module__ == module.__name__ and hasattr(v, "comparisons")
               and not getattr(v, "_is_protocol", False)
               and hasattr(v, "verdict") for v in vars(module).values()):
            claim_modules.add(module.__name__)
    assert claim_modules == registered, f"claim modules not in the registry: {claim_modules - registered}"
    page = (DOCS / "experiments.md").read_text()
    findings = page[page.index("## Findings"):page.index("\n## ", page.index("## Findings") + 5)]
    for claim in CLAIMS:
        assert f"\n- {claim.name[0].upper()}{claim.name[1:]}" in findings, f"{claim.name}: no bullet under Findings"
    for claim in DESIGN_CLAIMS:
        assert claim.name in page, f"{claim.name}: not in docs/experiments.md"


def test_every_figure_module_is_one_line_of_the_table_and_listed_in_the_docs():
    shared = {"__init__", "style", "layout", "export"}
    modules = {f"sensitivity.analysis.figures.{p.stem}" for p in (PACKAGE / "analysis" / "figures").glob("*.py")
               if p.stem not in shared}
    assert modules == set(FIGURES.values())
    listed = re.search(r"Plot kinds: (.*?) \(\.html", (DOCS / "experiments.md").read_text(), re.S).group(1)
    assert [k.strip() for k in listed.replace("\n", " ").split(",")] == list(FIGURES)


def test_the_recipes_of_the_architecture_name_files_that_exist():
    page = (DOCS / "architecture.md").read_text()
    for recipe in ("### Adding a claim", "### Adding a figure", "### Adding a ranking"):
        start = page.index(recipe)
        text = page[start:page.index("\n#", start + 5)]
        named = re.findall(r"`((?:sensitivity|tests|docs)/[\w/]+\.(?:py|md))`", text)
        assert named, recipe
        for path in named:
            if "NAME" not in path and "KIND" not in path:
                assert (REPO_ROOT / path).exists(), f"{recipe}: {path} does not exist"
