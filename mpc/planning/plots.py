"""Figures of a plan: robot frames over the terrain (the paper's Fig. 7), torques over physical
time (Fig. 8), and the clock / speed of time (Fig. 6, bottom). PNG files, matplotlib Agg."""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np

from robots.model import RobotModel

from .solve import Plan


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_frames(model: RobotModel, plan: Plan, path, *, terrain=None, every: int = 1, replay=None) -> Path:
    """Strip of robot frames at the control nodes over the terrain with its holes (Fig. 7).

    `terrain` (a hopper_holes.HoleTerrain, or None for flat ground) draws its holes; `every`
    keeps one frame in `every` nodes; `replay` (a ReplayResult) adds its foot path.
    Writes `path` (PNG) and returns it.
    """
    plt = _pyplot()
    poses_fn = ca.Function("poses", [model.q], [model.body_poses])
    foot_fn = ca.Function("foot", [model.q], [model.contacts[0].point])
    p = model.params
    fig, ax = plt.subplots(figsize=(12, 3.6))
    xs = plan.q[:, 0]
    x_lo, x_hi = min(-0.3, xs.min() - 0.3), max(3.3, xs.max() + 0.3)
    ax.fill_between([x_lo, x_hi], [-0.12, -0.12], [0, 0], color="0.85", zorder=0)
    ax.plot([x_lo, x_hi], [0, 0], color="0.3", lw=1.5, zorder=1)
    th = np.linspace(np.pi, 2 * np.pi, 80)
    hole_centers = () if terrain is None else terrain.centers
    semi_x, semi_z = (0.0, 0.0) if terrain is None else (terrain.semi_x, terrain.semi_z)
    for i, xc in enumerate(hole_centers):
        ax.fill(xc + semi_x * np.cos(th), semi_z * np.sin(th), color="white", zorder=2,
                label="hole (keep-out ellipse)" if i == 0 else None)
        ax.plot(xc + semi_x * np.cos(np.linspace(0, 2 * np.pi, 120)), semi_z * np.sin(np.linspace(0, 2 * np.pi, 120)),
                color="tab:red", lw=0.8, ls="--", zorder=3)
    foot_path = np.array([np.asarray(foot_fn(q)).ravel() for q in plan.q])
    ax.plot(foot_path[:, 0], foot_path[:, 1], color="tab:orange", lw=1.0, label="foot (plan)", zorder=4)
    ax.plot(plan.q[:, 0], plan.q[:, 1], color="tab:blue", lw=0.8, alpha=0.6, label="hip (plan)", zorder=4)
    if replay is not None:
        ax.plot(replay.foot[:, 0], replay.foot[:, 1], color="tab:purple", lw=0.8, ls=":", label="foot (open-loop replay)",
                zorder=4)
    cmap = plt.get_cmap("viridis")
    n = plan.q_grid.shape[0]
    head = p.get("l_base_hip", 0.043) + p.get("l_head", 0.05)
    for k in range(0, n, max(1, every)):
        q = plan.q_grid[k]
        poses = np.asarray(poses_fn(q))
        foot = np.asarray(foot_fn(q)).ravel()
        hip = poses[0, :2]
        knee = poses[model.body_names.index("shank"), :2] if "shank" in model.body_names else poses[-1, :2]
        col = cmap(k / max(1, n - 1))
        ax.plot([hip[0], hip[0]], [hip[1], hip[1] + head], color=col, lw=3, solid_capstyle="round", zorder=5)
        ax.plot([hip[0], knee[0], foot[0]], [hip[1], knee[1], foot[1]], color=col, lw=2, marker="o", ms=2.5, zorder=5)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, plan.t_grid[-1]))
    fig.colorbar(sm, ax=ax, pad=0.01, label="physical time t [s]")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(-0.12, 0.75)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.set_title(f"{plan.name}: frames at the {n} control nodes (converged={plan.converged}, "
                 f"complementarity {plan.complementarity:.1e})")
    ax.legend(loc="upper left", fontsize=7, ncol=4)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_torques(plan: Plan, path, *, names=("hip", "knee"), u_max: float | None = None) -> Path:
    """Piecewise-constant torques u_k over physical time t (Fig. 8), N m. Writes and returns `path`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    t = plan.t_grid
    for i in range(plan.u.shape[1]):
        ax.step(t, np.append(plan.u[:, i], plan.u[-1, i]), where="post",
                label=f"u_{names[i] if i < len(names) else i}")
    if u_max is not None:
        for sgn in (1, -1):
            ax.axhline(sgn * u_max, color="0.5", ls="--", lw=0.8)
    ax.set_xlabel("physical time t [s]")
    ax.set_ylabel("torque [N m]")
    ax.set_title(f"{plan.name}: optimal torques (cost {plan.cost:.4g} N^2 m^2 s)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_clock(plan: Plan, path) -> Path:
    """Clock t(tau), frozen intervals and speed of time s_k over numerical time (Fig. 6 bottom)."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 4.2), sharex=True)
    a1.plot(plan.tau, plan.t, color="tab:blue", label="clock t(tau)")
    frozen = plan.mode.astype(bool)
    a1.scatter(plan.tau[frozen], plan.t[frozen], s=6, color="tab:red", label="auxiliary dynamics (time frozen)", zorder=3)
    a1.set_ylabel("t [s]")
    a1.legend(fontsize=8)
    a1.grid(alpha=0.3)
    tau_nodes = np.linspace(0, plan.tau[-1], plan.s.size + 1)
    a2.step(tau_nodes, np.append(plan.s, plan.s[-1]), where="post", color="tab:green")
    a2.set_ylabel("speed of time s_k")
    a2.set_xlabel("numerical time tau [s]")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
