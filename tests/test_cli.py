"""The command line: `python -m launch` as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launch", *args], capture_output=True, text=True, timeout=300)


def test_help_lists_commands():
    out = run("--help")
    assert out.returncode == 0
    for cmd in ("robots", "demo", "bench"):
        assert cmd in out.stdout


def test_robots_json_lists_the_five_robots():
    out = run("robots", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    table = {r["name"]: (r["nq"], r["nv"], r["nu"], r["ncontacts"]) for r in rows}
    assert table == {
        "point_mass": (1, 1, 1, 1),
        "hopper1d": (1, 1, 0, 1),
        "plate_springs": (3, 3, 0, 4),
        "hopper": (4, 4, 2, 1),
        "quadruped": (11, 11, 8, 4),
        "block": (3, 3, 0, 2),
    }


def test_robots_table_is_human_readable():
    out = run("robots")
    assert out.returncode == 0 and "quadruped" in out.stdout and "ncontacts" in out.stdout


@pytest.mark.parametrize("args", [("bench", "no-such-bench"), ("no-such-command",)])
def test_bad_command_line_fails_with_a_message(args):
    out = run(*args)
    assert out.returncode != 0
    assert "no-such" in out.stderr


@pytest.mark.parametrize("changes, match", [
    ({"push_ns": 1.0, "push_axis": "y"}, "push_axis must be one of"),
    ({"push_ns": 1.0, "push_at_s": 12.0}, "push_at_s must be inside the run"),
    ({"push_ns": 500.0}, "push_ns must be an impulse"),
])
def test_bad_push_settings_are_named(changes, match):
    from launch.scenario import load_scenario

    with pytest.raises(ValueError, match=match):
        load_scenario("hopper").with_overrides(**changes).validate()


def test_push_velocity_axes():
    import numpy as np

    from robots import get_robot
    from sim.protocol import pushed_velocity

    m = get_robot("hopper")
    v0 = np.zeros(m.nv)
    vx = pushed_velocity(m, m.q0, v0, 1.0)
    vz = pushed_velocity(m, m.q0, v0, 1.0, "z")
    assert vx[m.q_names.index("x")] > 0 and vz[m.q_names.index("z")] > 0
    with pytest.raises(ValueError, match="push axis"):
        pushed_velocity(m, m.q0, v0, 1.0, "pitch")
    with pytest.raises(ValueError, match="base coordinate 'x'"):
        pushed_velocity(get_robot("hopper1d"), np.array([0.5]), np.zeros(1), 1.0)
