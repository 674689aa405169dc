"""A real two-node Ray cluster on this machine (a head and a worker node, one CPU each): a sweep given its
address runs trials on both nodes. The nodes are ended by process id, never with `ray stop` (which would
stop every Ray on the machine)."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import psutil
import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def two_node_cluster():
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    port = free_port()
    temp_dir = tempfile.mkdtemp(prefix="rayc-", dir="/tmp")
    common = ["--num-cpus", "1", "--object-store-memory", "80000000", "--block"]
    head = subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--include-dashboard", "false",
                             "--temp-dir", temp_dir, *common], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    nodes = [head]
    try:
        _wait_for_nodes(port, 1, env)
        nodes.append(subprocess.Popen([RAY, "start", "--address", f"127.0.0.1:{port}", *common], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        _wait_for_nodes(port, 2, env)
        yield f"127.0.0.1:{port}"
    finally:
        end_nodes(nodes)


def end_nodes(nodes) -> None:
    """Kill the `ray start --block` processes `nodes` and everything they started, by process id."""
    processes = [p for node in nodes for p in _tree(node.pid)]
    for proc in processes:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=30)


def _tree(pid):
    try:
        root = psutil.Process(pid)
        return [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _wait_for_nodes(port, count, env, timeout=120):
    code = (f"import ray; ray.init(address='127.0.0.1:{port}', log_to_driver=False); "
            "print(sum(n['Alive'] for n in ray.nodes()))")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [str(count)]:
            return
        time.sleep(2)
    raise TimeoutError(f"the Ray cluster did not reach {count} nodes")


def test_sweep_on_a_two_node_cluster_uses_both_nodes(two_node_cluster, tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text("""
study: cluster
dataset: digits
frameworks: [torch]
parameters: {lr: {type: float, low: 0.01, high: 0.3, log: true}}
fixed: {epochs: 3}
objectives: [{metric: val_accuracy, direction: maximize}]
""")
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--trials", "4",
                           "--parallel", "2", "--address", two_node_cluster, "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = optuna.load_study(study_name="cluster", storage=f"sqlite:///{tmp_path}/results/optuna.db").trials
    assert len(trials) == 4 and all(t.state.name == "COMPLETE" for t in trials)
    assert len({t.user_attrs["env"]["ray_node_id"] for t in trials}) == 2
