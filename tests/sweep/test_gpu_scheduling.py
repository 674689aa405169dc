"""GPU-aware scheduling on a real Ray that declares GPUs (`ray start --num-gpus`): Ray hands each trial its
GPU and CUDA_VISIBLE_DEVICES as on a real node, while this machine has no GPU and CPU-only builds, so
every GPU trial here fails its placement check before training. That failure is the point of one test;
the others show what the driver refuses, in one line and before any study exists, and how trials pack.
Nodes are ended by process id, never with `ray stop`."""
import subprocess
import tempfile

import optuna
import pytest
from test_cluster import RAY, _wait_for_nodes, end_nodes, free_port
from test_sweep_faults import one_line, sweep, write

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


@pytest.fixture
def ray_nodes(request, ray_cluster_env):
    """A Ray cluster of the nodes `request.param` lists as (CPUs, GPUs); yields its address."""
    env = ray_cluster_env
    port, started = free_port(), []
    temp_dir = tempfile.mkdtemp(prefix="rayg-", dir="/tmp")
    try:
        for i, (cpus, gpus) in enumerate(request.param):
            where = ["--head", "--port", str(port), "--include-dashboard", "false", "--temp-dir", temp_dir] if i == 0 \
                else ["--address", f"127.0.0.1:{port}"]
            started.append(subprocess.Popen(
                [RAY, "start", *where, "--num-cpus", str(cpus), "--num-gpus", str(gpus),
                 "--object-store-memory", "80000000", "--block"], env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True))
            _wait_for_nodes(port, i + 1, env)
        yield f"127.0.0.1:{port}"
    finally:
        end_nodes(started)


def gpu_space(tmp_path):
    path = write(tmp_path)
    path.write_text(path.read_text().replace("fixed: {", "fixed: {device: gpu, "))
    return path


def no_study(tmp_path):
    db = tmp_path / "results" / "optuna.db"
    return not db.exists() or not optuna.get_all_study_summaries(f"sqlite:///{db}", include_best_trial=False)


def test_more_than_one_gpu_per_trial_is_one_line_and_no_study(tmp_path):
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--gpus-per-trial", 2, timeout=120)
    assert one_line(proc, "--gpus-per-trial 2: at most 1 GPU per trial"), proc.stderr
    assert no_study(tmp_path)


def test_gpu_device_without_gpus_per_trial_is_one_line_and_no_study(tmp_path):
    proc = sweep(tmp_path, gpu_space(tmp_path), "--trials", 1, timeout=120)
    assert one_line(proc, "device: gpu needs --gpus-per-trial above 0"), proc.stderr
    assert no_study(tmp_path)


def test_a_local_gpu_sweep_with_cpu_only_builds_is_one_line_and_no_study(tmp_path):
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--gpus-per-trial", 0.5, timeout=120)
    refusal = frameworks.gpu_refusal("torch")
    if refusal is None:
        pytest.skip("torch can use a GPU here")
    assert one_line(proc, f"--gpus-per-trial 0.5: torch cannot use a GPU here: {refusal}"), proc.stderr
    assert no_study(tmp_path)


@pytest.mark.parametrize("ray_nodes", [[(1, 1), (1, 1)]], indirect=True)
def test_the_resource_check_is_per_node(ray_nodes, tmp_path):
    """Two nodes of 1 CPU and 1 GPU: the cluster has 2 of each, yet no trial of 2 CPUs and a GPU fits on a
    node (Tune would wait forever); and 2 GPUs per trial on 1-GPU nodes is refused too."""
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--address", ray_nodes, "--cpus-per-trial", 2,
                 "--gpus-per-trial", 1, timeout=300)
    lines = [line for line in proc.stderr.strip().splitlines() if "Token authentication" not in line]  # Ray's
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--cpus-per-trial 2 with --gpus-per-trial 1: no Ray node holds that (the 2 node(s) have 1 CPUs and " \
           "1 GPUs)" in lines[0]
    assert no_study(tmp_path)
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--address", ray_nodes, "--gpus-per-trial", 2)
    assert one_line(proc, "--gpus-per-trial 2: at most 1 GPU per trial"), proc.stderr


@pytest.mark.parametrize("ray_nodes", [[(2, 4)]], indirect=True)
def test_four_trials_at_a_quarter_gpu_pack_onto_one_gpu_and_record_it(ray_nodes, tmp_path):
    """One node declaring 4 GPUs, 4 trials at 0.25 GPU running at once: all four share one GPU. Each fails
    its placement check (this torch is CPU-only): no training time, and the study keeps the spec as it ran."""
    proc = sweep(tmp_path, gpu_space(tmp_path), "--trials", 4, "--parallel", 4, "--cpus-per-trial", 0.5,
                 "--gpus-per-trial", 0.25, "--address", ray_nodes, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = optuna.load_study(study_name="f", storage=f"sqlite:///{tmp_path}/results/optuna.db").trials
    assert len(trials) == 4 and all(t.state.name == "FAIL" for t in trials)
    envs = [t.user_attrs["env"] for t in trials]
    devices = {t.user_attrs["spec"]["device"] for t in trials}
    assert len(devices) == 1 and devices.pop() in {f"gpu:{i}" for i in range(4)}, devices
    assert {e["cuda_visible_devices"] for e in envs} == {e["ray_gpu_ids"][0] for e in envs}
    assert len({e["cuda_visible_devices"] for e in envs}) == 1 and {e["gpu_share"] for e in envs} == {0.25}
    # four actors: Tune reuses a free actor, so each trial started while the others still held theirs
    assert len({e["ray_actor_pid"] for e in envs}) == 4
    for t in trials:
        assert "framework torch sees no GPU (" in t.user_attrs["reason"], t.user_attrs["reason"]
        assert t.user_attrs["train_time_s"] is None and t.user_attrs["curve"] == []
        assert "gpu_error" in t.user_attrs  # every TrialResult field is stored
