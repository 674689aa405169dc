"""The eps-grid pilot (scripts/robustness_pilot.py): the grid it proposes from a relative-accuracy curve, and its
refusal of the main job's seeds."""
import importlib.util

from sensitivity.core import envs

SPEC = importlib.util.spec_from_file_location("robustness_pilot", envs.REPO_ROOT / "scripts" / "robustness_pilot.py")
pilot = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pilot)


def test_the_proposed_grid_reads_the_curve_where_it_falls_through_0_9_to_0_05():
    eps = [0.1, 0.2, 0.3, 0.4]
    relative = [0.9, 0.6, 0.3, 0.0]  # linear: 0.9 at 0.1, 0 at 0.4
    assert pilot.proposed(eps, relative) == [0.1, 0.19, 0.29, 0.38]  # levels 0.9, 0.617, 0.333, 0.05
    # a curve that never falls below 0.5 on the grid gives only the levels it reaches
    assert pilot.proposed(eps, [0.95, 0.9, 0.7, 0.5]) == [0.2, 0.34]
    # noise upwards is ignored: the curve is taken as its running minimum
    assert pilot.proposed(eps, [0.9, 0.95, 0.3, 0.0]) == pilot.proposed(eps, [0.9, 0.9, 0.3, 0.0])


def test_the_main_jobs_seeds_are_refused(capsys):
    assert pilot.main(["digits", "--seeds", "0,1000"]) == 2
    assert "--seeds 0,1000: the main job's seeds; allowed: 10 or above" in capsys.readouterr().err
