"""docs/ROBOTS.md, "Bring your own robot", run exactly as written: the example module it shows
is the file it names, its Python blocks run in order, and every shell step (each command; a
command ending in '&' runs in the background for the next one) runs from a folder laid out like
the repository's root. The biped must stand (PD and MPC) and stay upright (MPC walk) on every
plant the doc names.

The only liberties taken: `python` is this interpreter, a background command's successor starts
once it printed "ready ..." (what the doc tells the reader to wait for), the ZeroMQ port 5555 becomes a free
port (the machine is shared), the repository is appended to PYTHONPATH (so that this checkout,
not another installed copy, runs), and runs land in a tmp folder.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ROBOTS.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)
STAND_BAND_M = 0.05  # standing: the base stays within this of its nominal height
UPRIGHT_PITCH = 0.6  # rad: upright means |pitch| below this for the whole run ...
UPRIGHT_Z = 0.75  # ... and the base above this fraction of its nominal height


def doc_blocks(lang: str) -> list[tuple[str, str]]:
    """(info string, body) of the doc's fenced blocks in language `lang`, in order."""
    return [(info.strip(), body) for kind, info, body in FENCE.findall(DOC.read_text()) if kind == lang]


def shell_steps() -> list[list[str]]:
    """The doc's shell commands, grouped: a command ending in '&' goes with the next one."""
    steps, pending = [], []
    for _, body in doc_blocks("sh"):
        for line in body.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pending.append(line)
            if not line.endswith("&"):
                steps.append(pending)
                pending = []
    assert not pending, f"a background command without a foreground one after it: {pending}"
    return steps


@pytest.fixture(scope="module")
def biped(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from robots import get_robot

        yield get_robot("my_biped:build")
    finally:
        sys.path.remove(str(ROOT / "examples"))


def test_the_doc_shows_the_example_module_verbatim():
    files = [(info, body) for info, body in doc_blocks("python") if info.startswith("file=")]
    assert [info for info, _ in files] == ["file=examples/my_biped.py"]
    assert files[0][1] == (ROOT / "examples" / "my_biped.py").read_text()
    assert len(files[0][1].splitlines()) <= 40, "the point of the example: a robot in about 30 lines"


def test_python_steps_stand_on_every_plant(monkeypatch, capsys):
    """Sections 2 and 3: check the model, then 10 s of PD stand on ess, nmdp and hybrid."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "robots_doc"}
    code = [body for info, body in doc_blocks("python") if not info.startswith("file=")]
    assert len(code) == 2
    for i, body in enumerate(code):
        exec(compile(body, f"{DOC}:python block {i + 1}", "exec"), namespace)
    model, stand = namespace["model"], namespace["stand"]
    assert model.q_names == ("x", "z", "pitch", "l_hip", "l_knee", "r_hip", "r_knee") and model.nu == 4
    assert set(stand) == {"ess", "nmdp", "hybrid"}
    z0 = model.q0[1]
    bad = {p: v for p, v in stand.items()
           if not (v[0] >= 10.0 - 1e-6 and abs(v[1] - z0) < STAND_BAND_M and abs(v[2] - z0) < STAND_BAND_M)}
    assert not bad, f"not standing 10 s within {STAND_BAND_M} m of {z0:.3f} m: {bad}"
    assert "hybrid: 10.0 s, base height" in capsys.readouterr().out


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def command(line: str, env: dict, endpoint: str) -> tuple[list[str], dict]:
    """argv and environment of one doc command ('VAR=value python ...')."""
    argv = shlex.split(line.rstrip("&").replace("tcp://127.0.0.1:5555", endpoint))
    env = dict(env)
    while "=" in argv[0] and not argv[0].startswith("-"):
        key, value = argv.pop(0).split("=", 1)
        env[key] = value if key != "PYTHONPATH" else os.pathsep.join([value, str(ROOT), env.get("PYTHONPATH", "")])
    assert argv[0] == "python", f"doc commands run python, not {argv[0]!r}"
    return [sys.executable, *argv[1:]], env


def check_trajectory(folder: Path, model, *, duration_s: float, standing: bool, what: str) -> dict:
    """The run reached duration_s upright (and, standing, near q0's height); returns figures."""
    with np.load(folder / "trajectory.npz") as data:
        t, q = data["t"], data["q"]
    z, pitch, x = q[:, 1], q[:, 2], q[:, 0]
    z0 = model.q0[1]
    figures = {"t_end": float(t[-1]), "z_min": float(z.min()), "z_max": float(z.max()),
               "pitch_min": float(pitch.min()), "pitch_max": float(pitch.max()),
               "vx": float((x[-1] - x[len(x) // 3]) / (t[-1] - t[len(t) // 3]))}
    print(what, json.dumps(figures))
    assert t[-1] >= duration_s - 0.02, f"{what}: ended at t = {t[-1]:.3f} s of {duration_s}"
    assert np.all(np.abs(pitch) < UPRIGHT_PITCH) and np.all(z > UPRIGHT_Z * z0), f"{what}: not upright: {figures}"
    if standing:
        assert np.all(np.abs(z - z0) < STAND_BAND_M), f"{what}: base left {z0:.3f} +- {STAND_BAND_M} m: {figures}"
    return figures


@pytest.mark.parametrize("step", shell_steps(), ids=lambda s: s[0].rstrip(" &").replace("PYTHONPATH=examples python -m ", ""))
def test_shell_steps(step, tmp_path, biped):
    """Sections 4-6, one command (or background + foreground pair) at a time."""
    for name in ("examples", "bridge"):  # the repository's layout, runs in tmp
        (tmp_path / name).symlink_to(ROOT / name)
    base_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    endpoint = free_endpoint()
    background = []
    try:
        for line in step:
            argv, env = command(line, base_env, endpoint)
            if line.endswith("&"):
                proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
                background.append((line, proc))
                said = proc.stdout.readline()
                while not said.startswith("ready"):  # the doc: wait until it prints `ready ENDPOINT`
                    assert said, f"{line}\nexited before ready: {proc.communicate()}"
                    said = proc.stdout.readline()
                continue
            out = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1800)
            assert out.returncode == 0, f"{line}\nexit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
            argv_doc = shlex.split(line)
            if "run" in argv_doc and "launch" in argv_doc:
                run_dir = re.search(r"^run folder: (.+)$", out.stdout, re.M)
                assert run_dir, out.stdout
                folder = tmp_path / run_dir.group(1).strip()
                summary = json.loads((folder / "summary.json").read_text())
                scenario = json.loads((folder / "scenario.json").read_text())
                assert summary["exit_codes"] == [0, 0] and not summary["fell"], summary
                assert (folder / "animation.mp4").stat().st_size > 0  # written after every CLI run
                assert (folder / "run.mcap").stat().st_size > 0
                assert "my_biped" in scenario["robot"]
                standing = scenario["controller"] == "pd" or scenario["controller_options"].get("stand", False)
                check_trajectory(folder, biped, duration_s=scenario["duration_s"], standing=standing, what=line)
        for line, proc in background:
            stdout, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, f"{line}\nexit {proc.returncode}\n{stdout[-3000:]}\n{stderr[-3000:]}"
            argv_doc = shlex.split(line.rstrip("&"))
            if "serve-plant" in argv_doc:
                log_dir = tmp_path / argv_doc[argv_doc.index("--log-dir") + 1]
                duration = float(argv_doc[argv_doc.index("--duration") + 1])
                check_trajectory(log_dir, biped, duration_s=duration, standing=True, what=line)
    finally:
        for _, proc in background:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
