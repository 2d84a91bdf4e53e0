"""The hopper-holes plan shipped with the package (mpc/planning/shipped.py, docs/PLANNING.md).

The shipped file is re-verified here from its own contents on today's model and code: its
primal vector w is put into the NLP today's code builds for the task and options the file
names, and the trajectory the run tracks is read back out of w. Building that NLP takes a
few seconds (nosnoc); nothing is solved.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from mpc.planning.hopper_holes import HoleTerrain, HopperTask, hopper_options
from mpc.planning.plan_check import COMP_TOL, RESIDUAL_TOL, plan_failures, plan_figures
from mpc.planning.plan_hash import nlp_options, plan_hash
from mpc.planning.shipped import (DEFAULT_PLAN, SHIPPED_PLAN, check_shipped, expected_hash, make_shipped, read_plan,
                                  resolve_plan, warm_start_options)
from mpc.planning.terrain_scale import ScaleSchedule
from robots import get_robot

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shipped():
    """(arrays, task, options, model_hash, figures) of the shipped plan file."""
    arrays, task, options, stored = read_plan(SHIPPED_PLAN)
    return arrays, task, options, stored, plan_figures(arrays, task, options)


def test_shipped_plan_verifies_on_todays_model(shipped):
    arrays, task, options, stored, fig = shipped
    assert task == HopperTask()  # the run's task: three holes, target x = 3 m
    assert fig["equality_residual"] <= RESIDUAL_TOL  # the dynamics (collocation), continuity, clock, terminal
    assert fig["inequality_violation"] <= RESIDUAL_TOL and fig["bound_violation"] <= RESIDUAL_TOL
    assert fig["complementarity"] <= COMP_TOL == 1e-6
    assert fig["trajectory_mismatch"] <= 1e-9  # what the MPC tracks is what w solves
    assert abs(fig["final_x"] - 3.0) <= 0.05
    assert not fig["foot_in_hole"] and not fig["foot_in_hole_dense"]
    assert plan_failures(fig) == []
    # the holes stored for the run are the task's
    assert tuple(arrays["hole_centers"]) == task.terrain.centers
    assert float(arrays["hole_semi_x"]) == task.terrain.semi_x and float(arrays["hole_semi_z"]) == task.terrain.semi_z
    # made for today's hopper, task and NLP options
    assert stored == plan_hash(get_robot("hopper"), task, options) == expected_hash()


def test_shipped_plan_is_small():
    assert SHIPPED_PLAN.stat().st_size < 300_000


def test_verification_fails_a_changed_plan(shipped):
    arrays, task, options, _, _ = shipped
    rng = np.random.default_rng(0)
    noisy = dict(arrays, w=arrays["w"] * (1 + 1e-3 * rng.standard_normal(arrays["w"].size)))
    problems = plan_failures(plan_figures(noisy, task, options))
    assert any(p.startswith("equality_residual") for p in problems), problems
    moved = dict(arrays, q=arrays["q"] + 1e-6)  # w intact: only the tracked trajectory disagrees with it
    problems = plan_failures(plan_figures(moved, task, options))
    assert len(problems) == 1 and "differ from its w" in problems[0], problems


def test_a_tampered_hash_gives_the_clear_error(tmp_path, monkeypatch):
    with np.load(SHIPPED_PLAN) as d:
        data = {k: d[k] for k in d.files}
    data["model_hash"] = np.array("0123456789abcdef")
    np.savez(tmp_path / "tampered.npz", **data)
    with pytest.raises(ValueError, match=r"model hash 0123456789abcdef.*plan hopper-holes --warm-start"):
        check_shipped(tmp_path / "tampered.npz")
    # the run's resolution refuses it too, when there is no plan of the user's own
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("mpc.planning.shipped.SHIPPED_PLAN", tmp_path / "tampered.npz")
    with pytest.raises(ValueError, match="--warm-start"):
        resolve_plan(DEFAULT_PLAN)
    monkeypatch.setattr("mpc.planning.shipped.SHIPPED_PLAN", tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="missing"):
        resolve_plan(DEFAULT_PLAN)


def test_the_users_plan_wins_over_the_shipped_one(tmp_path, monkeypatch, capsys):
    from launch.run import _resolve_plan
    from launch.scenario import load_scenario

    monkeypatch.chdir(tmp_path)
    assert resolve_plan(DEFAULT_PLAN) == (SHIPPED_PLAN, "shipped")
    scenario = load_scenario("hopper-holes")  # validates without a plan of the user's
    assert scenario.controller_options["plan"] == str(DEFAULT_PLAN)
    # the run's processes get the file chosen, and the user is told which
    assert _resolve_plan(scenario).controller_options["plan"] == str(SHIPPED_PLAN)
    assert "shipped with the package" in capsys.readouterr().err
    with pytest.raises(ValueError, match="does not exist"):
        resolve_plan("elsewhere/plan.npz")  # only the default path falls back to the shipped plan
    DEFAULT_PLAN.parent.mkdir(parents=True)
    DEFAULT_PLAN.write_bytes(SHIPPED_PLAN.read_bytes())
    assert resolve_plan(str(DEFAULT_PLAN)) == (DEFAULT_PLAN, "file")
    assert _resolve_plan(scenario).controller_options["plan"] == str(DEFAULT_PLAN)
    assert capsys.readouterr().err.strip() == f"plan: {DEFAULT_PLAN}"


def test_the_hash_sees_the_model_the_task_and_the_nlp_options():
    hopper, task, options = get_robot("hopper"), HopperTask(), hopper_options()
    h = plan_hash(hopper, task, options)
    assert plan_hash(get_robot("hopper", m_body=4.0), task, options) != h
    assert plan_hash(get_robot("hopper", mu=0.7), task, options) != h
    assert plan_hash(hopper, dataclasses.replace(task, terrain=HoleTerrain(semi_x=0.3)), options) != h
    assert plan_hash(hopper, dataclasses.replace(task, q_target=(2.9, 0.4, 0.0, 0.0)), options) != h
    assert plan_hash(hopper, task, hopper_options(n_fe=2)) != h
    # what the planner does not read, and how the homotopy runs, leave it alone
    assert plan_hash(get_robot("hopper", k_contact=2e4), task, options) == h
    assert plan_hash(hopper, task, hopper_options(sigma_0=1e-3, linear_solver="spral")) == h
    # the terrain-scale steps and the warm start solve the NLP expected_hash() describes
    steps = hopper_options(**dict(ScaleSchedule().step_options))
    assert nlp_options(steps) == nlp_options(warm_start_options()) == nlp_options(options)


def test_make_shipped_round_trip_and_refusals(tmp_path):
    arrays, task, options, stored = read_plan(SHIPPED_PLAN)
    folder = tmp_path / "hopper-holes"
    folder.mkdir()
    np.savez(folder / "plan.npz", **arrays, model_hash=np.array(stored))
    summary = {"converged": True, "strategy": "scale", "planner_options": dataclasses.asdict(options),
               "terrain": {"centers": list(task.terrain.centers), "semi_x": task.terrain.semi_x,
                           "semi_z": task.terrain.semi_z, "target_x": task.q_target[0]}}
    (folder / "summary.json").write_text(json.dumps(summary))
    out = make_shipped(folder, tmp_path / "again.npz")
    assert out["model_hash"] == stored and plan_failures(out["verified"]) == []
    again, task2, options2, stored2 = read_plan(tmp_path / "again.npz")
    assert (task2, options2, stored2) == (task, options, stored)
    for key, value in arrays.items():
        np.testing.assert_array_equal(again[key], value)

    (folder / "summary.json").write_text(json.dumps(dict(summary, converged=False)))
    with pytest.raises(ValueError, match="did not converge"):
        make_shipped(folder, tmp_path / "no.npz")
    (folder / "summary.json").write_text(json.dumps(summary))
    np.savez(folder / "plan.npz", **arrays, model_hash=np.array("0123456789abcdef"))
    with pytest.raises(ValueError, match="made for model hash 0123456789abcdef"):
        make_shipped(folder, tmp_path / "no.npz")
    assert not (tmp_path / "no.npz").exists()


def test_the_run_path_needs_no_nosnoc(tmp_path):
    """nosnoc is a dev dependency: resolving, checking and reading the shipped plan must not import it."""
    code = ("import sys; sys.modules['nosnoc'] = None\n"
            "import mpc.wholebody.plan_transcription, mpc.planning.shipped as s\n"
            "assert s.resolve_plan(s.DEFAULT_PLAN)[1] == 'shipped'\n"
            "from mpc.planning.hopper_holes import terrain_from_plan; terrain_from_plan(s.SHIPPED_PLAN)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_package_declares_the_shipped_plan():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["mpc.planning"]
    relative = SHIPPED_PLAN.relative_to(ROOT / "mpc" / "planning").as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns)


def test_warm_start_and_ship_refuse_what_they_cannot_do(tmp_path):
    from launch.cli import main
    from mpc.planning.scenarios import run_scenario
    from mpc.planning.shipped import warm_start

    with pytest.raises(ValueError, match="hopper-holes only"):
        run_scenario("particle", out_dir=tmp_path, warm_start=SHIPPED_PLAN)
    with pytest.raises(ValueError, match="replaces the strategy"):
        run_scenario("hopper-holes", out_dir=tmp_path, warm_start=SHIPPED_PLAN, strategy="sigma")
    with pytest.raises(ValueError, match="does not exist"):
        warm_start(HopperTask(), tmp_path / "none.npz")
    assert main(["plan", "hopper-holes", "--ship", "--warm-start"]) == 1
    assert main(["plan", "hopper-holes", "--ship", "--out", str(tmp_path)]) == 1  # no plan there to ship
