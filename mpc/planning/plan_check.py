"""Re-verify a hopper-holes plan file against today's model and code (needs nosnoc).

The file's primal vector w is put into the NLP that today's code builds for the file's task
and options (`solve.check_primal`), and the trajectory the MPC tracks (t, q, v, t_grid, u)
is compared with the one read out of w. Then the task's own figures are taken from it: final
x, the foot against the holes, the clock.

    figures = plan_figures(arrays, task, options)   # arrays: a plan file's arrays, w included
    problems = plan_failures(figures)               # [] when the plan passes
"""
from __future__ import annotations

from typing import Mapping

import casadi as ca
import numpy as np

from robots import get_robot

from .hopper_holes import HopperTask, hopper_holes_ocp
from .ocp import PlannerOptions
from .scenarios import CONTACT_EPS, HOLE_TOL, _dense_hole_level

COMP_TOL = 1e-6  # largest complementarity product a verified plan may have
RESIDUAL_TOL = 1e-6  # largest NLP constraint or bound violation (units of each row)
ARRAY_TOL = 1e-9  # largest difference between the file's trajectory and the one in its w
FINAL_X_TOL = 0.05  # m: the final base x within this of the target
TRACKED = ("t", "q", "v", "t_grid", "u")  # what the MPC reads from a plan file


def plan_figures(arrays: Mapping[str, np.ndarray], task: HopperTask, options: PlannerOptions) -> dict:
    """Check figures of a plan (a plan file's arrays, w among them) on today's hopper:

    equality_residual, inequality_violation, bound_violation, complementarity: the NLP at w
        (`solve.check_primal`, relaxation at COMP_TOL);
    trajectory_mismatch: max |difference| between the file's t, q, v, t_grid, u and those
        read out of w (s, m, rad, N m);
    final_x, final_x_error: base x at the end and its distance to the task's target, m;
    clock_error: |t at the end - horizon|, s;
    hole_level_min: smallest ellipse level of the foot at the plan's points (>= 1 outside);
    hole_level_min_dense: the same on q interpolated linearly between the points (the
        constraints hold at the points only; docs/PLANNING.md, "Known limits");
    foot_in_hole: a point below 1 - HOLE_TOL;
    foot_over_opening_dense_m: on the interpolated q, how far (m) the foot's centre gets inside a
        hole's opening while within CONTACT_EPS of the ground (0 if never). A foot on an edge
        shows a little of it: q interpolated linearly moves a standing foot by a fraction of a mm;
    foot_in_hole_dense: that distance above the foot's radius, the rule by which a run's summary
        says the foot fell in (launch/runfolder.py, holes_metrics).
    Raises ValueError if the arrays lack w."""
    from .solve import check_primal

    if "w" not in arrays or np.asarray(arrays["w"]).size == 0:
        raise ValueError("the plan has no primal vector w to verify; make it with `python -m launch plan hopper-holes`")
    model = get_robot("hopper")
    plan, nlp = check_primal(hopper_holes_ocp(task, model), options, arrays["w"], sigma=COMP_TOL)
    mismatch = 0.0
    for key in TRACKED:
        a, b = np.asarray(arrays[key], dtype=float), np.asarray(getattr(plan, key), dtype=float)
        mismatch = max(mismatch, float(np.abs(a - b).max()) if a.shape == b.shape else float("inf"))
    foot_fn = ca.Function("foot", [model.q], [model.contacts[0].point])
    foot = np.asarray(foot_fn(plan.q.T)).T
    levels = np.array(task.terrain.levels(foot[:, 0], foot[:, 1]))
    level_min = float(levels.min()) if levels.size else float("inf")
    final_x = float(plan.q[-1, 0])
    over = _foot_over_opening(plan.q, foot_fn, task)
    return {
        **nlp,
        "trajectory_mismatch": mismatch,
        "final_x": final_x,
        "final_x_error": abs(final_x - task.q_target[0]),
        "clock_error": abs(float(plan.t[-1]) - task.horizon),
        "hole_level_min": level_min,
        "hole_level_min_dense": _dense_hole_level(plan, foot_fn, task),
        "foot_in_hole": bool(level_min < 1.0 - HOLE_TOL),
        "foot_over_opening_dense_m": over,
        "foot_in_hole_dense": bool(over > model.contacts[0].radius),
    }


def plan_failures(figures: Mapping[str, float]) -> list[str]:
    """One sentence per check of `plan_figures` that fails ([] for a plan that passes)."""
    out = []
    for key in ("equality_residual", "inequality_violation", "bound_violation"):
        if not figures[key] <= RESIDUAL_TOL:
            out.append(f"{key} {figures[key]:.2e} > {RESIDUAL_TOL:g}")
    if not figures["complementarity"] <= COMP_TOL:
        out.append(f"complementarity {figures['complementarity']:.2e} > {COMP_TOL:g}")
    if not figures["trajectory_mismatch"] <= ARRAY_TOL:
        out.append(f"the file's t, q, v, t_grid, u differ from its w by {figures['trajectory_mismatch']:.2e}")
    if not figures["final_x_error"] <= FINAL_X_TOL:
        out.append(f"final x {figures['final_x']:.3f} m is {figures['final_x_error']:.3f} m from the target "
                   f"(> {FINAL_X_TOL} m)")
    if not figures["clock_error"] <= RESIDUAL_TOL:
        out.append(f"the clock ends {figures['clock_error']:.2e} s off the horizon")
    if figures["foot_in_hole"]:
        out.append(f"the foot enters a hole's ellipse (level {figures['hole_level_min']:.6f} < 1 - {HOLE_TOL:g})")
    if figures["foot_in_hole_dense"]:
        out.append(f"between plan points the foot stands {1e3 * figures['foot_over_opening_dense_m']:.1f} mm inside "
                   "a hole's opening, more than its radius")
    return out


def _foot_over_opening(q: np.ndarray, foot_fn, task: HopperTask, sub: int = 10) -> float:
    """How far (m) the foot's centre gets inside a hole's opening (semi_x - |x - x_c|) while
    within CONTACT_EPS of the ground, on q interpolated linearly (sub points per step) between
    consecutive plan points; 0 if it never does."""
    if not task.terrain.centers:
        return 0.0
    s = np.linspace(0.0, 1.0, sub, endpoint=False)
    qs = (q[:-1, None, :] * (1 - s)[None, :, None] + q[1:, None, :] * s[None, :, None]).reshape(-1, q.shape[1])
    qs = np.vstack([qs, q[-1:]])
    feet = np.asarray(foot_fn(qs.T)).T
    inside = task.terrain.semi_x - np.min([np.abs(feet[:, 0] - xc) for xc in task.terrain.centers], axis=0)
    low = feet[:, 1] <= CONTACT_EPS
    return float(max(0.0, inside[low].max(initial=0.0)))
