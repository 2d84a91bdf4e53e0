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
