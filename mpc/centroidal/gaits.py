"""Offline periodic gaits of the 3D contact-implicit OCP (IPOPT), the MPC's references.

The gait problem is the MPC's own OCP (`CentroidalOcp`) over one period T with a free initial
state. Its cost asks for a heading-frame velocity (vx, vy, m/s) and yaw rate (rad/s) at the
standing height; its constraints fix the gauge (x, y, yaw = 0 at the start) and make the
motion periodic in the cost features (everything but position and heading: the period ends
where it began, moved and turned). A straight gait is also left-right symmetric over half a
period (the state half a period on is the mirror image of the first: trot, pace and pronk
qualify; no footfall is given). The initial guess is a trot-like motion (diagonal feet
alternate, lifted 5 cm in the air) that the optimizer is free to change; a stand task starts from
standing still. Results are cached by a hash of the body, task and options.

    gait = periodic_gait3d(ocp, Gait3dTask(vx=0.5))   # mpc.reference.Gait of features (for the reference)
"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass, replace

import casadi as ca
import numpy as np

from robots.codegen import default_cache_dir

from ..reference import Gait
from ..ipopt_ocp import TrackingCost, solve_ipopt
from .ocp import FEATURE_FEET, FEATURE_HEIGHT, FEATURE_VX, FEATURE_VY, FEATURE_YAW_RATE, CentroidalOcp
from .tuning import feature_weights

GAIT3D_VERSION = 4  # bump when the cost, constraints or guess below change
MAX_SPEED = 1.5  # m/s
MAX_YAW_RATE = 2.0  # rad/s


@dataclass(frozen=True)
class Gait3dTask:
    """What a 3D robot is asked to do: heading-frame velocity vx, vy (m/s), yaw rate (rad/s),
    period of the reference gait (s); stand: stay on all feet (balance), no velocity."""

    vx: float = 0.0
    vy: float = 0.0
    yaw_rate: float = 0.0
    period: float = 0.4
    stand: bool = False

    @property
    def targets(self) -> dict:
        """What a run is measured against: vx, vy (m/s), yaw_rate (rad/s)."""
        return {"vx": self.vx, "vy": self.vy, "yaw_rate": self.yaw_rate}

    def terrain(self):
        """The ground the task is on: None (flat)."""
        return None

    def validate(self) -> "Gait3dTask":
        """Raise ValueError naming the bad field and the fix; return self."""
        for name, limit in (("vx", MAX_SPEED), ("vy", MAX_SPEED), ("yaw_rate", MAX_YAW_RATE)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and abs(value) <= limit):
                raise ValueError(f"task {name} must be a number in [-{limit}, {limit}], got {value!r}")
        if not (isinstance(self.period, (int, float)) and 0.2 <= self.period <= 1.0):
            raise ValueError(f"task period must be in [0.2, 1.0] s, got {self.period!r}")
        if self.stand and (self.vx or self.vy or self.yaw_rate):
            raise ValueError("a stand (balance) task has no velocity: set vx = vy = yaw_rate = 0 or stand = false")
        return self


def _mirror_features(ocp: CentroidalOcp, yx):
    """The cost features of the left-right mirror image of a state's features yx."""
    nc, mirror = ocp.nc, ocp.srb.mirror
    flip = ca.DM([1, -1, 1])
    head = ca.vertcat(yx[0], -yx[1], yx[2], yx[3], -yx[4], yx[5], -yx[6], yx[7], -yx[8])
    feet = [flip * yx[9 + 3 * mirror[i]: 12 + 3 * mirror[i]] for i in range(nc)]
    return ca.vertcat(head, *feet)


def _constraints(ocp: CentroidalOcp, task: Gait3dTask, n: int):
    feats = ca.Function("yx", [ocp.x], [ocp.cost_x])

    def extra(X, U):
        g, lb, ub = [X[0][[0, 1, 5]]], [np.zeros(3)], [np.zeros(3)]  # gauge: x = y = yaw = 0
        g += [feats(X[n]) - feats(X[0]), X[n][5] - X[0][5]]
        lb += [np.zeros(ocp.cost_x.numel()), [task.yaw_rate * task.period]]
        ub += [np.zeros(ocp.cost_x.numel()), [task.yaw_rate * task.period]]
        if not task.stand and task.yaw_rate == 0 and task.vy == 0 and n % 2 == 0:
            g += [feats(X[n // 2]) - _mirror_features(ocp, feats(X[0]))]
            lb += [np.zeros(ocp.cost_x.numel())]
            ub += [np.zeros(ocp.cost_x.numel())]
        return g, lb, ub

    return extra


def _trot_guess(ocp: CentroidalOcp, task: Gait3dTask, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Diagonal feet alternate half periods; swing feet rise 5 cm and move at twice the body."""
    srb, lay, dt = ocp.srb, ocp.layout, ocp.options.dt
    x0 = ocp.standing_state()
    xs = np.tile(x0, (n + 1, 1))
    us = np.tile(ocp.standing_control(), (n, 1))
    t = dt * np.arange(n + 1)
    vel = np.array([task.vx, task.vy, 0.0])
    xs[:, 0:3] += np.outer(t, vel)
    xs[:, 6:9] = vel
    if task.stand:
        return xs, us
    feet = srb.feet_nominal
    first = [i for i in range(srb.nc) if feet[i, 0] * feet[i, 1] > 0]  # one diagonal pair
    half = n // 2
    for i in range(srb.nc):
        sl = lay.foot(i)
        swing = slice(0, half) if i in first else slice(half, n)
        phase = np.zeros(n)
        phase[swing] = 1.0
        s = np.concatenate([[0.0], np.cumsum(phase)]) / max(1, phase.sum())  # 0 -> 1 over the swing
        start = xs[0, sl].copy()
        start[:2] -= 0.25 * vel[:2] * task.period
        xs[:, sl] = start + np.outer(s, np.append(vel[:2] * task.period, 0.0))
        xs[:, sl.start + 2] = 0.05 * np.sin(np.pi * s) * (phase.sum() > 0)
        us[:, lay.foot_velocity(i)] = np.diff(xs[:, sl], axis=0) / dt
        us[:, lay.edges(i)] = (1.0 - phase)[:, None] / (4 * 2)
    return xs, us


def _key(ocp: CentroidalOcp, task: Gait3dTask, n: int) -> str:
    """Cache key: the body, task, discretization (not the MPC's horizon), formulation and bounds."""
    blob = json.dumps({"srb": {k: np.asarray(v).tolist() if not isinstance(v, str) else v
                               for k, v in asdict(ocp.srb).items()},
                       "task": asdict(task), "options": asdict(replace(ocp.options, n_stages=n)), "n": n,
                       "formulation": str(ocp.x_next) + str(ocp.h) + str(ocp.cost_x),
                       "bounds": [ocp.u_lb.tolist(), ocp.u_ub.tolist(), ocp.h_lb.tolist(), ocp.h_ub.tolist()],
                       "version": GAIT3D_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def periodic_gait3d(ocp: CentroidalOcp, task: Gait3dTask, *, use_cache: bool = True, verbose: bool = True,
                    full: bool = False):
    """One period of the task's gait (cached in <cache>/gaits3d/): a `mpc.reference.Gait` of the
    cost features (x: ocp.cost_x per stage, u: ocp.cost_u), what the MPC's reference is fitted
    to. full=True returns (Gait of features, states (N+1, nx), controls (N, nu))."""
    task.validate()
    dt = ocp.options.dt
    n = int(round(task.period / dt))
    ocp = CentroidalOcp(ocp.srb, replace(ocp.options, n_stages=n))  # the gait's stages: all dt long
    path = default_cache_dir() / "gaits3d" / f"{ocp.srb.name}-{_key(ocp, task, n)}.npz"
    if not (use_cache and path.exists()):
        if verbose:
            print(f"[gait3d] solving the periodic {ocp.srb.name} gait (vx={task.vx}, vy={task.vy}, "
                  f"yaw rate={task.yaw_rate}, T={task.period} s, {n} stages, IPOPT); cached after",
                  file=sys.stderr, flush=True)
        x_init, u_init = _trot_guess(ocp, task, n)
        sol, cpu = None, 0.0
        for scale in (100.0, 10.0, 1.0):
            opts = replace(ocp.options, n_stages=n, sigma=ocp.options.sigma * scale)
            stage_ocp = CentroidalOcp(ocp.srb, opts)
            w_x, w_u = feature_weights(stage_ocp)
            yref = np.zeros((n, w_x.size + w_u.size))
            yref[:, FEATURE_HEIGHT] = ocp.srb.height
            yref[:, FEATURE_VX], yref[:, FEATURE_VY], yref[:, FEATURE_YAW_RATE] = task.vx, task.vy, task.yaw_rate
            yref[:, FEATURE_FEET: FEATURE_FEET + 3 * ocp.nc] = ocp.srb.feet_nominal.ravel()
            cost = TrackingCost(w=np.concatenate([w_x, w_u]), w_e=np.zeros(w_x.size), yref=yref,
                                xref_e=np.zeros(w_x.size), z_l1=1e3, z_l2=1e5)
            sol = solve_ipopt(stage_ocp, cost, x_init=x_init, u_init=u_init,
                              extra_constraints=_constraints(stage_ocp, task, n), tol=1e-8)
            cpu += sol.cpu_s
            if verbose:
                print(f"[gait3d]   sigma x{scale:g}: {sol.status}, {sol.iterations} iterations, {sol.cpu_s:.1f} s",
                      file=sys.stderr, flush=True)
            x_init, u_init = sol.x, sol.u
        if not sol.success:
            raise RuntimeError(f"the {ocp.srb.name} gait optimization did not converge ({sol.status}); "
                               "try another period or speed")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, x=sol.x, u=sol.u, cpu_s=cpu)
    with np.load(path) as d:
        xs, us = d["x"], d["u"]
    yx = np.array([np.asarray(ocp.features(x, us[min(k, len(us) - 1)])[0]).ravel() for k, x in enumerate(xs)])
    yu = np.array([np.asarray(ocp.features(xs[k], u)[1]).ravel() for k, u in enumerate(us)])
    gait = Gait(dt, yx, yu, 0.0)
    return (gait, xs, us) if full else gait
