"""A run folder's plots (docs/RUNS.md, "The plots"): trajectory.png, latency.png, phases.png.

trajectory.png tells the run's story: the base's position, its velocity against the task's
targets (dashed, from summary.json), its angles, the joints, each foot's normal force named
after the foot, and the torques. The push and the fall are marked on every panel. Joints and
torques get one distinct colour each, and legends sit outside the data.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sim.metrics import base_names, body_heights, fall_time, heading_rates

from .runfolder import WHOLE_TICK, misses_text, read_csv, steady, trajectory

SMOOTH_S = 0.2  # velocity panels: a moving mean over this window (s), so a gait's oscillation does not hide the mean


def write_plots(folder: Path) -> list[Path]:
    """trajectory.png, latency.png (histogram + CDF with the deadline) and phases.png of a run
    folder; the paths written ([] when the run ended before its first tick)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    traj = trajectory(folder)
    if traj["q"].ndim != 2 or not len(traj["q"]):  # the run ended before its first tick
        return []
    written = [_trajectory_png(folder, traj, plt), _latency_png(folder, plt)]
    phases = _phases_png(folder, plt)
    return written + ([phases] if phases else [])


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _robot(folder: Path):
    """The run's RobotModel, or None (a folder whose robot cannot be built any more)."""
    from robots import get_robot

    try:
        return get_robot(_read_json(folder / "scenario.json")["robot"])
    except (KeyError, ValueError, TypeError, ImportError):
        return None


def _smooth(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The trailing mean of y over the last SMOOTH_S s (shorter at the start): nothing moves
    before it happened."""
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    n = max(1, int(round(SMOOTH_S / dt)))
    total = np.concatenate(([0.0], np.cumsum(y)))
    k = np.arange(1, len(y) + 1)
    first = np.maximum(k - n, 0)
    return (total[k] - total[first]) / (k - first)


def _target(ax, value, colour, label: str) -> None:
    if value is not None:
        ax.axhline(value, color=colour, ls="--", lw=1.2, label=label)


def _trajectory_png(folder: Path, traj: dict, plt) -> Path:
    names = list(traj["q_names"])
    t, q = traj["t"], traj["q"]
    summary = _read_json(folder / "summary.json")
    target = {k: (summary.get(k) or {}).get("target") for k in ("vx_mps", "vy_mps", "yaw_rate_radps", "apex_height_m")}
    model = _robot(folder)
    floating = "base_qw" in names
    nu = len(traj["u_names"])
    panels = ["base (m)", "base velocity (m/s, rad/s)" if floating else "base velocity (m/s)",
              "base angles (rad)" if floating else "angles (rad)", "joints (rad)" if floating else None,
              "foot normal force (N)", "torque (N m)"]
    panels = [p for p in panels if p]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.1 * len(panels)), sharex=True)
    ax = dict(zip(panels, axes))
    if floating:
        for i, n in enumerate(("x", "y", "z")):
            ax["base (m)"].plot(t, q[:, i], label=f"base {n}")
        if len(t) > 1:
            tm, vx, vy, wz = heading_rates(t, q)
            vel = ax["base velocity (m/s, rad/s)"]
            for series, key, label, colour in ((vx, "vx_mps", "forward", "C0"), (vy, "vy_mps", "leftward", "C1"),
                                               (wz, "yaw_rate_radps", "yaw rate", "C2")):
                vel.plot(tm, _smooth(tm, series), color=colour, label=f"{label} (mean of the last {SMOOTH_S:g} s)")
                _target(vel, target[key], colour, f"{label} target")
        for i, n in enumerate(("roll", "pitch", "yaw")):
            ax["base angles (rad)"].plot(t, roll_pitch_yaw(q[:, 3:7])[:, i], label=n)
        _distinct(ax["joints (rad)"], len(names) - 7)
        for i, n in enumerate(names[7:]):
            ax["joints (rad)"].plot(t, q[:, 7 + i], label=n, lw=0.8)
    else:
        x_name, z_name = base_names(names)
        for n in (x_name, z_name):
            if n in names:
                ax["base (m)"].plot(t, q[:, names.index(n)], label=n)
        _target(ax["base (m)"], target["apex_height_m"], "C1", "apex height target")
        if x_name in names and len(t) > 1:
            vx = np.diff(q[:, names.index(x_name)]) / np.diff(t)
            tm = 0.5 * (t[1:] + t[:-1])
            ax["base velocity (m/s)"].plot(tm, _smooth(tm, vx), color="C0", label=f"forward (mean of the last {SMOOTH_S:g} s)")
            _target(ax["base velocity (m/s)"], target["vx_mps"], "C0", "forward target")
        angles = [n for n in names if n not in (x_name, z_name)]
        _distinct(ax["angles (rad)"], len(angles))
        for n in angles:
            ax["angles (rad)"].plot(t, q[:, names.index(n)], label=n, lw=0.8)
    force_ax = ax["foot normal force (N)"]
    if "force" in traj and traj["force"].ndim == 3:
        feet = [c.name for c in model.contacts] if model is not None and model.nc == traj["force"].shape[1] else \
            [f"contact {i}" for i in range(traj["force"].shape[1])]
        _distinct(force_ax, len(feet))
        for i, foot in enumerate(feet):
            force_ax.plot(t, traj["force"][:, i, 0], label=foot, lw=0.9)
    _distinct(ax["torque (N m)"], nu)
    for i, n in enumerate(traj["u_names"]):
        ax["torque (N m)"].plot(t, traj["tau"][:, i], label=str(n), lw=0.8)
    _mark_events(axes, t, q, names, model, summary)
    axes[-1].set_xlabel("simulated time (s)")
    for a, label in zip(axes, panels):
        a.set_ylabel(label, fontsize=8)
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     ncol=2 if len(a.get_legend_handles_labels()[0]) > 8 else 1)
    title = _read_json(folder / "scenario.json")
    fig.suptitle(f"{title.get('name', '')}: {title.get('robot', '')} on {title.get('plant', '')}, "
                 f"{title.get('controller', '')}", fontsize=10)
    fig.tight_layout()
    path = folder / "trajectory.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def roll_pitch_yaw(quat: np.ndarray) -> np.ndarray:
    """(n x 3) roll, pitch, yaw (rad; extrinsic x-y-z) of rows of quaternions (x, y, z, w), for plots."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_quat(quat).as_euler("xyz")


def _distinct(ax, n: int) -> None:
    """Give the axes' next n lines n distinct colours (tab20 beyond 10)."""
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    ax.set_prop_cycle(color=[cmap(i % cmap.N) for i in range(max(n, 1))])


def _mark_events(axes, t, q, names, model, summary: dict) -> None:
    """The push (grey) and the fall (red) as vertical lines on every panel, named on the first."""
    push_at = summary.get("push_at_s")
    if summary.get("push_ns") and push_at is not None:
        for i, a in enumerate(axes):
            a.axvline(push_at, color="0.4", ls=":", lw=1.5,
                      label=f"push {summary['push_ns']:g} N s along {summary.get('push_axis', 'x')}" if i == 0 else None)
    if model is not None:
        _, z_name = base_names(names)
        q0_z = model.q0[model.q_names.index(z_name)] if z_name in model.q_names else None
        fell = fall_time(t, q, names, q0_z, body_heights(model, q))
        if fell is not None:
            for i, a in enumerate(axes):
                a.axvline(fell, color="red", lw=1.5, label=f"fell at {fell:.2f} s" if i == 0 else None)


def _latency_png(folder: Path, plt) -> Path:
    ctrl = steady(read_csv(folder / "controller_ticks.csv"))  # the steady loop: tick 0's set-up apart
    plant = steady(read_csv(folder / "plant_ticks.csv"))
    summary = _read_json(folder / "plant_summary.json")
    deadline = summary.get("deadline_ms")
    tick_ms = ctrl.get("tick_ms", np.array([]))
    lat_ms = plant.get("latency_us", np.array([])) / 1e3
    fig, (h, c) = plt.subplots(1, 2, figsize=(11, 4))
    for data, label in ((tick_ms, "controller tick (compute)"), (lat_ms, "STATE->COMMAND at the plant")):
        d = data[np.isfinite(data)]
        if d.size:
            h.hist(d, bins=50, alpha=0.6, label=label)
            c.plot(np.sort(d), np.arange(1, d.size + 1) / d.size, label=label)
    for a in (h, c):
        if deadline:
            a.axvline(deadline, color="red", ls="--", label=f"deadline {deadline:.1f} ms")
        a.set_xlabel("ms")
    h.set_ylabel("ticks")
    h.set_title(f"latency histogram: {misses_text(summary)}", fontsize=8)
    c.set_title("CDF")
    c.set_ylabel("fraction of ticks")
    c.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    path = folder / "latency.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def phase_tree(phases: list[str]) -> list[tuple[str, int, str | None]]:
    """The controller's phases in drawing order, as (phase, depth, parent): each phase after its
    parent (mpc.acados.io.PHASE_PARENTS: acados's timers inside the call that ran them)."""
    from mpc.acados.io import PHASE_PARENTS

    parent = {p: PHASE_PARENTS.get(p) if PHASE_PARENTS.get(p) in phases else None for p in phases}
    out: list[tuple[str, int, str | None]] = []

    def visit(p: str, depth: int) -> None:
        out.append((p, depth, parent[p]))
        for child in phases:
            if parent[child] == p:
                visit(child, depth + 1)

    for p in phases:
        if parent[p] is None:
            visit(p, 0)
    return out


def _phases_png(folder: Path, plt) -> Path | None:
    """Each phase's mean time as a bar on the tick's timeline: top-level phases one after the
    other, a nested phase inside its parent, starting where it does; p99 faint behind."""
    ctrl = steady(read_csv(folder / "controller_ticks.csv"))
    phases = {k[:-3]: v for k, v in ctrl.items() if k.endswith("_ms") and k not in WHOLE_TICK}
    if not phases:
        return None
    tree = phase_tree(list(phases))
    mean = {p: float(np.nanmean(phases[p])) for p, _, _ in tree}
    p99 = {p: float(np.nanpercentile(phases[p], 99)) for p, _, _ in tree}
    start, clock = {}, 0.0
    for p, depth, parent in tree:
        if parent is None:
            start[p], clock = clock, clock + mean[p]
        else:
            start[p] = start[parent]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(tree) + 1.2))
    rows = list(range(len(tree)))[::-1]
    for y, (p, depth, _) in zip(rows, tree):
        colour = f"C{depth}"
        ax.barh(y, p99[p], left=start[p], color=colour, alpha=0.25)
        ax.barh(y, mean[p], left=start[p], color=colour)
        ax.text(start[p] + mean[p], y, f" {mean[p]:.3f}", va="center", fontsize=7)
    ax.set_yticks(rows, [("\u2003" * depth + "\u2514 " if depth else "") + p for p, depth, _ in tree], fontsize=8)
    ax.set_xlabel("ms into the tick (mean; faint: p99)")
    ax.set_title("controller time by phase, on the tick's timeline (\u2514: inside the phase above it)", fontsize=9)
    fig.tight_layout()
    path = folder / "phases.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
