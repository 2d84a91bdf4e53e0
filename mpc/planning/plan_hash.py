"""The model hash of a hopper-holes plan: which robot, task and NLP a plan file was made for.

A converged plan stays valid while the problem it solves is unchanged, so the hash covers
exactly what the planner reads:

- the robot, through the values of what the planner takes from it (M(q), h(q, v), B, the
  foot's point and friction coefficient, the knee point, gravity) at fixed sample states,
  rounded to 1e-9: the printed form of CasADi expressions changes with the CasADi version and
  with the order in which a model builds them, their values do not. Parameters the planner
  does not read (the compliant plants' contact stiffness and damping, the drawn foot radius)
  are left out;
- the task (`HopperTask`: start, target, horizon, grid, limits, the holes);
- the `PlannerOptions` that define the NLP (discretization, bounds, cost terms), not those
  that only steer the homotopy or IPOPT (`HOMOTOPY_FIELDS`): a warm-started plan
  (`plan hopper-holes --warm-start`, another sigma schedule) solves the same NLP as one made
  from scratch and gets the same hash.

    plan_hash(get_robot("hopper"), HopperTask(), hopper_options())   # 16 hex digits
"""
from __future__ import annotations

import dataclasses
import hashlib
import json

import casadi as ca
import numpy as np

from robots.model import RobotModel

from .hopper_holes import HopperTask, knee_point
from .ocp import PlannerOptions

HASH_VERSION = 1  # raise when what the hash covers changes
ROUND_DECIMALS = 9  # model values are rounded to 1e-9 (SI units) before hashing
N_SAMPLES = 4
# PlannerOptions fields that steer the homotopy and IPOPT, not the NLP a plan solves
HOMOTOPY_FIELDS = frozenset({
    "sigma_0", "homotopy_slope", "superlinear", "comp_tol", "max_homotopy", "ipopt_max_iter", "ipopt_tol",
    "linear_solver", "heartbeat_s", "init", "ipopt_extra", "first_nlp_max_iter", "clock_switch_sigma", "rho_sot",
    "alpha_init", "polish_below", "polish_c_eps", "polish_rounds", "polish_violation", "stop_on_failure",
})


def sample_states(model: RobotModel, n: int = N_SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """n fixed (q, v) pairs about the model's q0 (n x nq, n x nv; m, rad, m/s, rad/s), the
    same on every machine (sines of integers, no random generator)."""
    i = np.arange(n)[:, None]
    q = np.asarray(model.q0)[None, :] + 0.3 * np.sin(1.7 * (i + 1) + np.arange(model.nq)[None, :])
    v = 0.8 * np.cos(2.3 * (i + 1) + np.arange(model.nv)[None, :])
    return q, v


def model_fingerprint(model: RobotModel, contact: str = "foot") -> dict:
    """What the planner reads from `model`, as JSON-ready numbers: M, h, the foot point and
    the knee point at `sample_states`, B, the contact's mu and gravity (rounded to 1e-9)."""
    names = [c.name for c in model.contacts]
    if contact not in names:
        raise ValueError(f"{model.name}: no contact named {contact!r} to fingerprint; contacts are {names}")
    c = model.contacts[names.index(contact)]
    f = ca.Function("fingerprint", [model.q, model.v], [model.mass_matrix, model.bias, c.point, knee_point(model)])
    qs, vs = sample_states(model)
    values = [[np.asarray(out, dtype=float).ravel() for out in f(q, v)] for q, v in zip(qs, vs)]
    return {
        "name": model.name,
        "samples": [[_rounded(a) for a in outs] for outs in values],
        "B": _rounded(model.B), "mu": _rounded(c.mu), "gravity": _rounded(model.gravity),
    }


def nlp_options(options: PlannerOptions) -> dict:
    """The fields of `options` that define the NLP (all but `HOMOTOPY_FIELDS`), JSON-ready."""
    return {k: v for k, v in dataclasses.asdict(options).items() if k not in HOMOTOPY_FIELDS}


def task_dict(task: HopperTask) -> dict:
    """The task as JSON-ready values (tuples as lists, the terrain as a nested dict)."""
    return json.loads(json.dumps(dataclasses.asdict(task)))


def plan_hash(model: RobotModel, task: HopperTask, options: PlannerOptions) -> str:
    """SHA-256 (16 hex digits) of the model's fingerprint, the task and the NLP's options:
    equal hashes mean the same NLP (module docstring)."""
    blob = json.dumps({"version": HASH_VERSION, "model": model_fingerprint(model), "task": task_dict(task),
                       "options": nlp_options(options)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _rounded(a):
    """Rounded to ROUND_DECIMALS, -0.0 made 0.0; a list for arrays, a float for scalars."""
    r = np.round(np.asarray(a, dtype=float), ROUND_DECIMALS) + 0.0
    return r.tolist()
