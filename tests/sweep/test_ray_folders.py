"""No folder of a local Ray's session is open to other users: Ray makes its temp folder and every folder under
it 0777 without the sticky bit, so the tool keeps that temp folder inside a 0700 folder of its own, which
no one else can enter (a real local Ray, started as a sweep starts it, with a task run so that its workers
and their folders exist)."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

START_LOCAL_RAY = """
import sys
import ray
from sensitivity import ray_cluster
from sensitivity.sweep import tuning
ray_cluster.init_ray(None)
ray.get(ray.remote(lambda: 1).remote())  # a worker, its logs and its runtime-env folders
print(ray_cluster._local_ray["temp_dir"], flush=True)
sys.stdin.read()  # until the test closes it
tuning.stop_ray()
"""


def exposed(root: Path) -> list:
    """Folders under `root` (and `root`) that another user can write to: world-writable without the sticky
    bit, with every folder from / down to them enterable by others (o+x)."""
    found = []
    for folder, subfolders, _ in os.walk(root):  # links are not followed
        path = Path(folder)
        mode = path.lstat().st_mode
        if not mode & stat.S_IWOTH or mode & stat.S_ISVTX:
            continue
        if all(p.stat().st_mode & stat.S_IXOTH for p in path.parents):
            found.append(f"{path} {stat.filemode(mode)}")
    return found


def world_writable(root: Path) -> list:
    return [f for f, _, _ in os.walk(root) if Path(f).lstat().st_mode & stat.S_IWOTH]


def test_no_folder_of_a_local_rays_session_can_be_written_by_another_user(tmp_path):
    driver = subprocess.Popen([sys.executable, "-c", START_LOCAL_RAY], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    started = []
    try:
        temp_dir = Path(driver.stdout.readline().strip())
        started = psutil.Process(driver.pid).children(recursive=True)
        assert temp_dir.name.startswith("ray-") and temp_dir.is_dir(), temp_dir
        folders = [f for f, _, _ in os.walk(temp_dir)]
        sessions = list(temp_dir.rglob("session_2*"))
        assert sessions and any((s / "sockets").is_dir() for s in sessions), folders  # Ray's files are in there
        print(f"{len(folders)} folders under {temp_dir} ({stat.filemode(temp_dir.stat().st_mode)}); "
              f"{len(world_writable(temp_dir))} world-writable, {len(exposed(temp_dir))} reachable by others")
        assert not exposed(temp_dir) and not world_writable(temp_dir), world_writable(temp_dir)
        assert stat.S_IMODE(temp_dir.stat().st_mode) == 0o700
    finally:
        driver.stdin.close()
        try:
            driver.wait(timeout=60)
        finally:
            for process in [psutil.Process(driver.pid), *started] if driver.poll() is None else started:
                try:
                    process.kill()  # by pid: only what this test started
                except psutil.NoSuchProcess:
                    pass
    assert driver.returncode == 0 and not temp_dir.exists()


def test_the_check_finds_a_world_writable_folder_that_others_can_reach():
    """The check itself: a 0777 folder under folders open to all is found; a sticky one, or one under a 0700
    folder, is not (in /tmp: pytest's own folders are private)."""
    base = Path(tempfile.mkdtemp(prefix="rayfolders-", dir="/tmp"))
    try:
        base.chmod(0o755)
        for name, mode in (("open", 0o777), ("sticky", 0o1777), ("private", 0o700), ("private/inner", 0o777)):
            (base / name).mkdir()
            (base / name).chmod(mode)
        assert exposed(base) == [f"{base / 'open'} drwxrwxrwx"]
        assert sorted(world_writable(base)) == sorted(str(base / n) for n in ("open", "sticky", "private/inner"))
    finally:
        shutil.rmtree(base)
