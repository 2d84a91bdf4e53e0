"""Open-loop replay of a plan's torques on a compliant-contact model of the same robot.

This is a check of the plan, not a plant: the `RobotModel`'s M, h and B with a spring-damper
normal force at each contact (the robot's own stiffness and damping, e.g. 1e4 N/m and
100 N s/m for the hopper) and regularized Coulomb friction, integrated by a stiff ODE solver
(LSODA). The torques are the plan's piecewise-constant u_k on the physical control grid,
applied without feedback. Rigid (plan) and compliant (replay) contact differ - sinkage,
impact duration, elastic rebound - and a hopper is open-loop unstable, so the replay drifts
away; `ReplayResult` says how far it gets.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np
from scipy.integrate import solve_ivp

from robots.model import RobotModel


@dataclass
class ReplayResult:
    """Outcome of an open-loop replay (SI units).

    t, q, v: sampled trajectory; foot: (len(t) x 2) foot position.
    fell: the body dropped below `fall_height` or the knee below the ground.
    t_fall: time of the fall (nan if none).
    final_q: q at the end (or at the fall).
    max_tracking_error: max |q - q_plan| over the control nodes reached, per coordinate.
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    foot: np.ndarray
    fell: bool
    t_fall: float
    final_q: np.ndarray
    max_tracking_error: np.ndarray


def compliant_dynamics(model: RobotModel, *, friction_eps: float = 0.01) -> ca.Function:
    """CasADi Function (q, v, u) -> dv/dt of the robot on compliant flat ground, m/s^2 or rad/s^2.

    Normal force per contact: max(0, -k phi - d phi_dot) while phi < 0 (else 0); friction
    -mu f_n tanh(v_t / friction_eps) with friction_eps in m/s.
    """
    q, v = model.q, model.v
    u = ca.SX.sym("u", model.nu)
    gen = model.B @ u - model.bias
    for c in model.contacts:
        if c.stiffness <= 0:
            raise ValueError(f"{model.name}: contact {c.name!r} has stiffness 0; the replay needs a compliant contact")
        jn = ca.jacobian(c.gap, q)
        jt = ca.jacobian(c.point[0], q)
        gap_dot = jn @ v
        fn = ca.if_else(c.gap < 0, ca.fmax(0, -c.stiffness * c.gap - c.damping * gap_dot), 0)
        ft = -c.mu * fn * ca.tanh((jt @ v) / friction_eps)
        gen = gen + jn.T * fn + jt.T * ft
    acc = ca.solve(model.mass_matrix, gen)
    return ca.Function("compliant_acc", [q, v, u], [acc], ["q", "v", "u"], ["a"])


def replay_open_loop(model: RobotModel, t_grid: np.ndarray, u: np.ndarray, q0: np.ndarray, v0: np.ndarray, *,
                     q_plan: np.ndarray | None = None, fall_height: float = 0.1, samples_per_interval: int = 20,
                     friction_eps: float = 0.01) -> ReplayResult:
    """Integrate the robot from (q0, v0) under u[k] on [t_grid[k], t_grid[k+1]) (N m), open loop.

    Stops early if the body (z) drops below `fall_height` (m) or the knee/foot points go more
    than 5 cm below the ground. `q_plan` (N+1 x nq) at t_grid gives the tracking error.
    """
    t_grid = np.asarray(t_grid, dtype=float)
    u = np.asarray(u, dtype=float)
    if u.shape != (t_grid.size - 1, model.nu):
        raise ValueError(f"u has shape {u.shape}, expected ({t_grid.size - 1}, {model.nu}) for t_grid of {t_grid.size} nodes")
    acc = compliant_dynamics(model, friction_eps=friction_eps)
    poses = ca.Function("poses", [model.q], [model.body_poses])
    foot_fn = ca.Function("foot", [model.q], [model.contacts[0].point])
    nq = model.nq
    x = np.concatenate([np.asarray(q0, float), np.asarray(v0, float)])
    ts, xs = [t_grid[0]], [x.copy()]
    fell, t_fall = False, float("nan")

    def fallen(t, y):
        p = np.asarray(poses(y[:nq]))
        return min(y[1] - fall_height, p[:, 1].min() + 0.05, float(foot_fn(y[:nq])[1]) + 0.05)

    fallen.terminal = True
    fallen.direction = -1
    for k in range(t_grid.size - 1):
        uk = u[k]

        def rhs(t, y, uk=uk):
            return np.concatenate([y[nq:], np.asarray(acc(y[:nq], y[nq:], uk)).ravel()])

        t_eval = np.linspace(t_grid[k], t_grid[k + 1], samples_per_interval + 1)[1:]
        sol = solve_ivp(rhs, (t_grid[k], t_grid[k + 1]), x, method="LSODA", t_eval=t_eval, events=fallen,
                        rtol=1e-7, atol=1e-9, max_step=2e-3)
        ts.extend(np.asarray(sol.t).tolist())  # scipy returns a list when the integration fails
        xs.extend(np.asarray(sol.y).reshape(x.size, -1).T.tolist())
        if sol.status == 1 and sol.t_events[0].size:
            fell, t_fall = True, float(sol.t_events[0][0])
            ts.append(t_fall)
            xs.append(sol.y_events[0][0])
            break
        if sol.status < 0:
            raise RuntimeError(f"replay integration failed at t={t_grid[k]:.3f} s: {sol.message}")
        x = sol.y[:, -1]
    T = np.array(ts)
    X = np.array(xs)
    foot = np.array([np.asarray(foot_fn(qq)).ravel() for qq in X[:, :nq]])
    err = np.full(nq, np.nan)
    if q_plan is not None:
        q_plan = np.asarray(q_plan, dtype=float)
        reached = t_grid[t_grid <= T[-1] + 1e-12]
        q_at = np.array([np.interp(reached, T, X[:, i]) for i in range(nq)]).T
        err = np.max(np.abs(q_at - q_plan[: reached.size]), axis=0)
    return ReplayResult(t=T, q=X[:, :nq], v=X[:, nq:], foot=foot, fell=fell, t_fall=t_fall,
                        final_q=X[-1, :nq], max_tracking_error=err)
