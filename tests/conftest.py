"""Shared fixtures: robots and their compiled functions, built once per test session."""
from __future__ import annotations

import json

import numpy as np
import pytest

from robots import get_robot, numeric, robot_names


@pytest.fixture(scope="session", params=robot_names())
def robot(request):
    """(model, compiled functions) for every registered robot."""
    model = get_robot(request.param)
    return model, numeric(model)


def random_state(model, rng: np.random.Generator, scale: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """A random (q, v) around the model's nominal configuration (a floating base's quaternion
    made unit)."""
    q = model.q0 + rng.normal(scale=scale, size=model.nq)
    if model.floating_base:
        q[3:7] /= np.linalg.norm(q[3:7])
    v = rng.normal(scale=1.0, size=model.nv)
    return q, v


# a controller process: the PD hopper over the bridge, at the endpoint given as its argument
PD_HOPPER_CLIENT = """
import sys
from bridge.client import ClientOptions, ControllerClient
from mpc.controllers import make_controller
from robots import get_robot
ControllerClient(sys.argv[1], make_controller("pd", get_robot("hopper")), ClientOptions()).run()
"""


def start_pd_hopper_client(endpoint: str, server, timeout_s: float = 60.0):
    """Start PD_HOPPER_CLIENT as its own process against `endpoint` and wait until `server`
    (a PlantServer running in another thread) has its HELLO; returns the Popen."""
    import os
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", PD_HOPPER_CLIENT, endpoint],
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    deadline = time.monotonic() + timeout_s
    hellos = server.counts["hellos"]
    while server.counts["hellos"] <= hellos and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


@pytest.fixture()
def synthetic_run(tmp_path):
    """A run folder (the files launch/runfolder.py reads) with 1 s of the hopper moving forward and
    swinging its hip, a late tick at 0.5 s."""
    model = get_robot("hopper")
    t = np.arange(0.0, 1.0 + 1e-9, 0.01)
    q = np.tile(model.q0, (len(t), 1))
    q[:, 0] = 0.5 * t
    q[:, 2] += 0.4 * np.sin(2 * np.pi * t)
    force = np.zeros((len(t), model.nc, 2))
    force[:, 0, 0] = 60.0
    np.savez(tmp_path / "trajectory.npz", t=t, q=q, v=np.zeros_like(q), tau=np.zeros((len(t), model.nu)),
             contact=np.ones((len(t), model.nc), bool), force=force, q_names=np.array(model.q_names),
             u_names=np.array(model.u_names))
    (tmp_path / "scenario.json").write_text(json.dumps({"name": "synthetic", "robot": "hopper", "plant": "ess",
                                                        "controller": "pd"}))
    missed = np.zeros(len(t), int)
    missed[50] = 1
    rows = "\n".join(f"{k},{m}" for k, m in enumerate(missed))
    (tmp_path / "plant_ticks.csv").write_text("tick,missed\n" + rows + "\n")
    return tmp_path


@pytest.fixture()
def slow_hopper(tmp_path):
    """A hopper scenario file whose MPC sleeps 10 ms every tick (an episode of d s of simulated time
    takes at least d s of wall time, whatever the machine), for tests that must catch a sweep in
    the middle."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "launch/scenarios/hopper.toml").read_text()
    path = tmp_path / "slow-hopper.toml"
    path.write_text(text.replace('name = "hopper"', 'name = "slow-hopper"') + "inject_delay_s = 0.01\n")
    return path
