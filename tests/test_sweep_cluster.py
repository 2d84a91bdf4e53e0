"""A real two-node Ray cluster on this machine: a head node and a second node, one CPU each,
each with its own temp dir and ports. A sweep through --address runs on both nodes, and a
worker killed mid-sweep (SIGKILL) costs nothing: Ray retries its episode and every row arrives
exactly once.

Teardown stops this cluster's processes only (by pid: the processes whose command line names
the cluster's temp dirs, and their children). `ray stop` would also stop every other Ray
session on the machine."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest


pytest.importorskip("ray")
RAY = str(Path(sys.executable).parent / "ray")
ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process (from /proc)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[int(d)] = (ppid, cmd)
    return out


def _cluster_pids(marks: list[str]) -> set[int]:
    """The processes whose command line contains one of `marks` (the cluster's temp dirs), and
    all their descendants; never this process or its parent."""
    table = _processes()
    me = {os.getpid(), os.getppid()}
    found = {p for p, (_, cmd) in table.items() if p not in me and any(m in cmd for m in marks)}
    grew = True
    while grew:
        kids = {p for p, (pp, _) in table.items() if pp in found and p not in found and p not in me}
        found |= kids
        grew = bool(kids)
    return found


def _stop(pids: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() and
                                                                            "Z" not in _state(p) for p in pids):
            time.sleep(0.2)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.fixture(scope="module")
def cluster():
    """(address, env) of a head node and a second node, one CPU each, stopped afterwards."""
    dirs = [tempfile.mkdtemp(prefix="lmc-h", dir="/tmp"), tempfile.mkdtemp(prefix="lmc-w", dir="/tmp")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus", "1", "--disable-usage-stats", "--node-ip-address", "127.0.0.1",
              "--object-store-memory", str(80 * 2**20)]
    try:
        for args in ([RAY, "start", "--head", "--port", str(port), "--temp-dir", dirs[0], "--include-dashboard",
                      "false", "--dashboard-port", str(_free_port()), "--resources", '{"head_node": 1}'],
                     [RAY, "start", "--address", address, "--temp-dir", dirs[1], "--resources",
                      '{"second_node": 1}']):
            out = subprocess.run([*args, *common, "--dashboard-agent-listen-port", str(_free_port())], env=env,
                                 capture_output=True, text=True, timeout=120, cwd=dirs[0])
            assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        yield address, env, dirs
    finally:
        _stop(_cluster_pids(dirs))
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def _sweep(cluster, folder: Path, toml: Path, *args: str) -> subprocess.Popen:
    address, env, _ = cluster
    return subprocess.Popen([sys.executable, "-m", "launch", "sweep", str(toml), "--duration", "0.5",
                             "--address", address, "--json", *args], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _journal(folder: Path, summary: dict) -> list[dict]:
    lines = (folder / summary["sweep_dir"] / "episodes.csv").read_text().splitlines()
    header = lines[0].split(",")
    return [dict(zip(header, line.split(","))) for line in lines[1:] if line]


def test_a_sweep_through_address_runs_on_both_nodes(cluster, tmp_path, slow_hopper):
    proc = _sweep(cluster, tmp_path, slow_hopper, "--vary", "push=0:1:3", "--seeds", "2")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    summary = json.loads(stdout)
    assert summary["episodes_completed"] == 6 and summary["this_invocation"]["cpus"] == 2
    rows = _journal(tmp_path, summary)
    assert sorted(int(r["episode"]) for r in rows) == list(range(6))
    assert len({r["node_id"] for r in rows}) == 2, "both nodes ran episodes"
    assert summary["nodes"] == 2 and all(r["host"] for r in rows)
    assert len(summary["code_versions"]) == 1, "both nodes run this checkout"


def test_a_worker_killed_mid_sweep_is_retried_and_every_row_arrives_once(cluster, tmp_path, slow_hopper):
    _, _, dirs = cluster
    proc = _sweep(cluster, tmp_path, slow_hopper, "--vary", "push=0:1:4", "--seeds", "2")
    victim = None
    deadline = time.monotonic() + 180
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        running = [p for p in _cluster_pids(dirs) if _processes().get(p, (0, ""))[1].startswith("ray::run_sweep_episode")]
        if running:
            victim = running[0]
            os.kill(victim, signal.SIGKILL)
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=300)
    assert victim is not None, "no episode was seen running: " + stderr[-2000:]
    assert proc.returncode == 0 and stdout.strip(), f"exit {proc.returncode}: {stderr[-3000:]}"
    summary = json.loads(stdout)
    assert summary["lost"] == {} and summary["episodes_completed"] == 8 and summary["errors"] == 0
    rows = _journal(tmp_path, summary)
    assert sorted(int(r["episode"]) for r in rows) == list(range(8)), "every episode exactly once"
    # killed within its first task (the worker's warm-up takes seconds): the episode it was
    # running came back from Ray's retry in another process
    assert str(victim) not in {r["pid"] for r in rows}


def test_ctrl_c_on_a_cluster_ends_the_running_episodes(cluster, tmp_path, slow_hopper):
    _, _, dirs = cluster
    proc = _sweep(cluster, tmp_path, slow_hopper, "--vary", "push=0:1:10", "--seeds", "2")

    def running() -> list[int]:
        return [p for p in _cluster_pids(dirs) if _processes().get(p, (0, ""))[1].startswith("ray::run_sweep_episode")]

    deadline = time.monotonic() + 180
    while not running() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert running(), "no episode was seen running"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    assert json.loads(stdout)["interrupted"]
    deadline = time.monotonic() + 30  # the driver is gone: Ray ends its job's tasks on every node
    while running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(), "episodes kept running after Ctrl-C"
