"""Offline periodic reference gaits, found by contact-implicit trajectory optimization (IPOPT).

The gait problem is the MPC's own OCP (`ContactOcp`, same dynamics and smoothed
complementarity) over one period T, with a free initial state and periodicity
x_N = x_0 + (forward displacement vx T). For a hopping robot the period starts at the apex
(z = apex height, vertical speed 0); no contact schedule is given: the solver finds when the
foot lands and lifts off. The result is cached on disk by a hash of robot, task and options.

    gait = periodic_gait(model, task, options)     # Gait(t, x (N+1, nx), u (N, nu))
"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, replace

import numpy as np

from robots.codegen import default_cache_dir
from robots.model import RobotModel

from ..ipopt_ocp import TrackingCost, solve_ipopt
from ..problem import OcpOptions
from ..reference import Gait
from .ocp import ContactOcp
from .tasks import GaitTask


GAIT_COST_VERSION = 1  # bump when gait_cost or GaitTask.gait_constraints change


def gait_cost(ocp: ContactOcp, task: GaitTask, n: int) -> TrackingCost:
    """Effort-like cost of the gait problem: torques, joint velocities, forces, forward speed."""
    model = ocp.model
    nq = model.nq
    w = np.zeros(ocp.nx + ocp.nu)
    yref = np.zeros((n, ocp.nx + ocp.nu))
    w[nq:ocp.nx] = 0.01  # velocities
    if "x" in model.q_names:
        ix = nq + model.q_names.index("x")
        w[ix] = 1.0
        yref[:, ix] = task.vx
    w[ocp.nx: ocp.nx + ocp.n_tau] = 1e-3  # torques (N m)^2
    w[ocp.nx + ocp.n_tau:] = 1e-3  # contact variables
    return TrackingCost(w=w, w_e=np.zeros(ocp.nx), yref=yref, xref_e=np.zeros(ocp.nx), z_l1=1e3, z_l2=1e5)


def _key(model: RobotModel, task: GaitTask, options: OcpOptions, n: int) -> str:
    options = replace(options, n_stages=n)  # the MPC horizon does not change the gait
    ocp = ContactOcp(model, options)
    formulation = str(ocp.x_next) + str(ocp.comp)  # any change of dynamics or contact model re-solves
    # the task's constraints and initial guess read q0, the joint ranges and the guess pose: a
    # robot from outside the library may change them without changing its name or params
    guess = task.validate(model).apex_state(model).tolist()
    fields = {k: v for k, v in asdict(task).items() if k != "guess_pose"}  # the guess pose is in "guess"
    blob = json.dumps({"robot": model.name, "params": {k: str(v) for k, v in model.params.items()},
                       "task": fields, "options": asdict(options), "n": n, "formulation": formulation,
                       "costs": GAIT_COST_VERSION, "q0": model.q0.tolist(), "q_min": model.q_min.tolist(),
                       "q_max": model.q_max.tolist(), "guess": guess}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def periodic_gait(model: RobotModel, task: GaitTask, options: OcpOptions, *, use_cache: bool = True,
                  verbose: bool = True) -> Gait:
    """The periodic reference gait of `task` (cached in <cache>/gaits/), solved by IPOPT with a
    relaxation homotopy sigma = 100 s, 10 s, s (s = options.sigma) from a trivial guess."""
    task.validate(model)
    n = int(round(task.period / options.dt))
    path = default_cache_dir() / "gaits" / f"{model.name}-{_key(model, task, options, n)}.npz"
    if use_cache and path.exists():
        with np.load(path) as d:
            return Gait(float(d["dt"]), d["x"], d["u"], float(d["shift_x"]))
    if verbose:
        print(f"[gait] solving the periodic {model.name} gait (T={task.period} s, {n} stages, IPOPT); cached after",
              file=sys.stderr, flush=True)
    x_init = u_init = None
    sol = None
    total_cpu = 0.0
    for scale in (100.0, 10.0, 1.0):
        opts = replace(options, n_stages=n, sigma=options.sigma * scale, sigma_friction=options.sigma_friction * scale)
        ocp = ContactOcp(model, opts)
        cost = gait_cost(ocp, task, n)
        if x_init is None:
            x_init = np.tile(task.apex_state(model), (n + 1, 1))
            x_init[:, 0] = np.linspace(0.0, task.vx * task.period, n + 1)
        sol = solve_ipopt(ocp, cost, x_init=x_init, u_init=u_init,
                          extra_constraints=lambda X, U, _o=ocp: task.gait_constraints(_o, X, U), tol=1e-8)
        total_cpu += sol.cpu_s
        if verbose:
            print(f"[gait]   sigma x{scale:g}: {sol.status}, {sol.iterations} iterations, {sol.cpu_s:.1f} s",
                  file=sys.stderr, flush=True)
        x_init, u_init = sol.x, sol.u
    if not sol.success:
        raise RuntimeError(f"the {model.name} gait optimization did not converge ({sol.status}); "
                           "try another period or apex height")
    gait = Gait(options.dt, sol.x, sol.u, task.vx * task.period)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, dt=gait.dt, x=gait.x, u=gait.u, shift_x=gait.shift_x, cpu_s=total_cpu)
    return gait
