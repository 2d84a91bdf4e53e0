"""An offline plan re-solved on the MPC's own model, as the reference the MPC tracks.

Why: a time-freezing plan (mpc.planning) is exact for rigid contact and carries no contact
forces; the MPC predicts with its own smoothed, compliant contact model (mpc.wholebody.ocp). Tracked
directly, the plan's take-offs and landings are off by centimetres, enough to land in a hole
(docs/MPC.md). So the plan is first re-solved with IPOPT on the MPC's problem over the whole plan
(stages of the MPC's dt), tracking the plan's states and torques, with the plan's holes as
constraints widened by `hole_margin`: a trajectory of the MPC's model, contact forces included,
close to the plan.

    ref = transcribe_plan(problem, "runs/plans/<scenario>/plan.npz")   # TrajectoryReference

The plan file must exist: a scenario that names a default plan path resolves it first (to the
plan shipped with the package while the user has made none: launch/run.py, launch/scenario.py,
`mpc.planning.shipped.resolve_plan`).
"""
from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import casadi as ca
import numpy as np

from ..ipopt_ocp import TrackingCost, solve_ipopt
from ..reference import TrajectoryReference
from .ocp import ContactOcp
from .terrain import terrain_from_plan

# m added to the holes' horizontal semi-axes (a landing short by this much stays out). 0.06 cleared
# all three holes or fell into the third depending on rounding in the plant; 0.10 clears them in
# 10 of 10 realtime runs and under sensor noise (docs/MPC.md, "Tracking an offline plan")
HOLE_MARGIN = 0.10
# tracking weights of the re-solve: positions (x, z tight), velocities, then controls
W_Q = {"x": 100.0, "z": 100.0}
W_Q_OTHER, W_V_BASE, W_V_OTHER, W_U = 10.0, 1.0, 0.1, 1e-3


def require_plan_file(path) -> Path:
    """`path` as a Path if the plan file exists; ValueError naming the command that makes plans
    otherwise."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"mpc plan {str(path)!r} does not exist; make a plan with `python -m launch plan <scenario>` "
                         "(docs/PLANNING.md)")
    return p


def plan_samples(problem: ContactOcp, path) -> TrajectoryReference:
    """The plan file's own reference (dense t, q, v; torques per control interval; contact
    variables zero): what `transcribe_plan` tracks."""
    path = require_plan_file(path)
    with np.load(path) as d:
        t, q, v, t_grid, u = (d[k] for k in ("t", "q", "v", "t_grid", "u"))
    if q.shape[1] != problem.model.nq or u.shape[1] != problem.n_tau:
        raise ValueError(f"mpc plan {str(path)!r} is for a robot with nq={q.shape[1]}, nu={u.shape[1]}, "
                         f"not {problem.model.name}")
    us = np.hstack([u, np.zeros((u.shape[0], problem.nu - problem.n_tau))])
    return TrajectoryReference.from_samples(t, np.hstack([q, v]), t_grid, us)


def transcribe_plan(problem: ContactOcp, path, *, hole_margin: float = HOLE_MARGIN, cache: Path | None = None,
                    verbose: bool = True) -> TrajectoryReference:
    """Re-solve the plan file at `path` on `problem`'s model (module docstring); returns the
    reference (states, torques and contact forces at the MPC's stages, s of plant time).

    Stages: the plan's duration / dt, plus 10 held at its end. Holes: those stored in the plan
    file (none if it has none), semi-axis + hole_margin (m). cache: folder for the result, keyed
    by the plan file's bytes and these settings (None: no cache). Raises RuntimeError if IPOPT
    does not converge."""
    if hole_margin < 0:
        raise ValueError(f"hole_margin must be >= 0 m, got {hole_margin}")
    path = require_plan_file(path)
    plan = plan_samples(problem, path)
    dt = problem.options.dt
    key = hashlib.sha256(Path(path).read_bytes() + repr((problem.model.name, dt, problem.options, hole_margin,
                                                          W_Q, W_Q_OTHER, W_V_BASE, W_V_OTHER, W_U)).encode())
    cached = None if cache is None else Path(cache) / f"plan-{key.hexdigest()[:16]}.npz"
    if cached is not None and cached.exists():
        with np.load(cached) as d:
            return TrajectoryReference.from_samples(d["t"], d["x"], d["t"], d["u"])
    n = int(np.ceil(plan.t[-1] / dt - 1e-9)) + 10
    ocp = ContactOcp(problem.model, replace(problem.options, n_stages=n))
    taus = dt * np.arange(n + 1)
    xr, ur = plan.x_at(taus), plan.u_at(taus[:-1])
    nq = problem.model.nq
    w_x = np.array([W_Q.get(name, W_Q_OTHER) for name in problem.model.q_names]
                   + [W_V_BASE if name in W_Q else W_V_OTHER for name in problem.model.q_names])
    cost = TrackingCost(w=np.concatenate([w_x, np.full(ocp.nu, W_U)]), w_e=10.0 * w_x,
                        yref=np.column_stack([xr[:-1], ur]), xref_e=xr[-1], z_l1=1000.0, z_l2=1e4, stage_scale=dt)
    terrain = terrain_from_plan(path, required=False)
    foot = ca.Function("foot", [problem.model.q], [problem.model.contacts[0].point])

    def keep_out(X, U):
        wider = replace(terrain, semi_x=terrain.semi_x + hole_margin)
        g = []
        for k in range(1, n + 1):
            p = foot(X[k][:nq])
            g += wider.levels(p[0], p[1])
        return g, [1.0] * len(g), [np.inf] * len(g)

    u_init = np.clip(np.column_stack([ur[:, :ocp.n_tau], np.zeros((n, ocp.nu - ocp.n_tau))]), ocp.u_lb, ocp.u_ub)
    if verbose:
        print(f"[mpc] re-solving the plan on the MPC's model ({n} stages, IPOPT; ~40 s for a 3 s plan)",
              file=sys.stderr, flush=True)
    sol = solve_ipopt(ocp, cost, x0=xr[0], x_init=xr, u_init=u_init, extra_constraints=keep_out if terrain and terrain.centers else None,
                      tol=1e-6, max_iter=3000)
    if not sol.success:
        raise RuntimeError(f"re-solving the plan {str(path)!r} on the MPC's model failed: IPOPT {sol.status}")
    if verbose:
        print(f"[mpc] plan re-solved: {sol.iterations} iterations, {sol.cpu_s:.1f} s CPU; largest deviation from "
              f"the plan {np.abs(sol.x[:, :nq] - xr[:, :nq]).max():.3f} (m or rad)", file=sys.stderr, flush=True)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp.npz")
        np.savez(tmp, t=taus, x=sol.x, u=sol.u)
        tmp.replace(cached)
    return TrajectoryReference.from_samples(taus, sol.x, taus, sol.u)

