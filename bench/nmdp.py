"""NMDP benchmark (issue 6): nmdp-stability.

The planar quadruped tracks a joint-space reference with the joint PD inside the plant (a
stable PD: the law is evaluated at the end of each step) for 5 s: 1 s standing, then a trot
ramped in over 0.5 s (period 1 s, duty factor 0.6, stride 0.12 m, foot lift 0.04 m; each
foot's path is a Cartesian stance line and swing arc turned into hip/knee angles by two-link
inverse kinematics, so the reference is purely joint space). Each method ("pgm", "zopgm",
"mdp") runs it at plant steps dt in {1, 2, 5, 10, 20, 50} ms, one primary step per command
(command k holds the reference at the end of step k).

Figures per method (lists over dt):
- stable: no failed step, no NaN, no contact deeper than 2 cm, |torso pitch| <= 0.5 rad;
- pitch_max_rad, x_final_m (torso x at 5 s), penetration_max_mm;
- iters_mean: PGM outer iterations (QP solves) per primary step (mdp: its one QP);
- min_dt_ms: the smallest substep Algorithm 2 used; halvings: how many halvings;
- us_per_step: wall time per primary step of the compiled rollout (warm), and its ratio to
  one MuJoCo step of the exported quadruped MJCF (`mujoco.rollout`, the MJCF's own 1 ms step,
  implicitfast, the robot settling on its four feet from the standing pose).
pgm_fixed_step: the same first-order PGM with Algorithm 2 switched off (adaptive=False), to
show where a fixed step stops converging. Contact stiffness 2e5 N/m with a force limit of 3 x
weight (the plant's default when these figures were measured; today's default is 30 x weight at
a stiffness 1.5 F / 1 cm, docs/NMDP.md) for every method.
One PNG (torso pitch and x against time, per method and dt) goes under runs/bench/.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from robots import get_robot, numeric

from .timing import png_path

DT_MS = (1, 2, 5, 10, 20, 50)
METHODS = ("pgm", "zopgm", "mdp")
T_END = 5.0  # s
STIFFNESS = 2e5  # N/m
PENETRATION_LIMIT = 0.02  # m
PITCH_LIMIT = 0.5  # rad


def _progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class TrotGait:
    """A joint-space standing-then-trotting reference for the planar quadruped.

    period (s), duty (stance fraction), stride (m, foot travel per stance), lift (m, swing
    height, sin^2 profile: zero vertical speed at lift-off and touchdown), x_fraction (part of
    the swing that moves the foot forward; the rest descends vertically), stand (s, standing
    before the trot), ramp (s, amplitude ramp), kp (N m/rad) and kd (N m s/rad) of the PD.
    """

    period: float = 1.0
    duty: float = 0.6
    stride: float = 0.12
    lift: float = 0.04
    x_fraction: float = 0.6
    stand: float = 1.0
    ramp: float = 0.5
    kp: float = 100.0
    kd: float = 3.0


LEG_PHASE = {"fl": 0.0, "fr": 0.5, "hl": 0.5, "hr": 0.0}  # trot: diagonal pairs in phase


def leg_ik(fx: float, fz: float, l1: float, l2: float) -> tuple[float, float]:
    """(hip, knee) angles (rad, knee bent backward: knee < 0) putting the foot at (fx, fz) m
    relative to the hip, in the torso frame (angles about +y as in robots/library/quadruped.py)."""
    c = (fx * fx + fz * fz - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    knee = -math.acos(min(1.0, max(-1.0, c)))
    hip = math.atan2(-fx, -fz) - math.atan2(l2 * math.sin(knee), l1 + l2 * math.cos(knee))
    return hip, knee


def trot_reference(model, t: float, gait: TrotGait = TrotGait()) -> np.ndarray:
    """Desired actuated joint angles (nu, rad) at time t (s), in the order of model.u_names."""
    p = model.params
    l1, l2 = p["l_thigh"], p["l_calf"]
    height = l1 * math.cos(p["hip0"]) + l2 * math.cos(p["hip0"] + p["knee0"])
    amp = min(1.0, max(0.0, (t - gait.stand) / gait.ramp))
    out = {}
    for leg, offset in LEG_PHASE.items():
        fx, fz = 0.0, -height
        if t >= gait.stand:
            ph = ((t - gait.stand) / gait.period + offset) % 1.0
            if ph < gait.duty:  # stance: the foot moves backward under the hip
                fx = gait.stride * (0.5 - ph / gait.duty)
            else:
                u = (ph - gait.duty) / (1.0 - gait.duty)
                ux = min(1.0, u / gait.x_fraction)
                fx = gait.stride * (-0.5 + 0.5 * (1.0 - math.cos(math.pi * ux)))
                fz = -height + gait.lift * math.sin(math.pi * u) ** 2
            fx, fz = amp * fx, -height + amp * (fz + height)
        out[f"{leg}_hip"], out[f"{leg}_knee"] = leg_ik(fx, fz, l1, l2)
    return np.array([out[name] for name in model.u_names])


def trot_commands(model, dt: float, duration: float = T_END, gait: TrotGait = TrotGait()) -> np.ndarray:
    """Packed commands (n x 5 nu: tau_ff, q_des, v_des, kp, kd) for steps of dt s; command k
    holds the reference at the end of step k (t = (k + 1) dt) and its velocity (central difference)."""
    n, nu = int(round(duration / dt)), model.nu
    out = np.zeros((n, 5 * nu))
    h = 1e-4
    for k in range(n):
        t1 = (k + 1) * dt
        out[k, nu:2 * nu] = trot_reference(model, t1, gait)
        out[k, 2 * nu:3 * nu] = (trot_reference(model, t1 + h, gait) - trot_reference(model, t1 - h, gait)) / (2 * h)
    out[:, 3 * nu:4 * nu] = gait.kp
    out[:, 4 * nu:] = gait.kd
    return out


def run_case(plant, commands: np.ndarray, dt: float, fns, repeats: int = 1) -> dict:
    """Roll the plant out from the model's standing pose; returns trajectories and figures."""
    from sim.nmdp.kernel import S_HALVINGS, S_ITERS, S_MIN_DT

    model = plant.model
    walls = []
    for _ in range(max(1, repeats)):
        plant.reset(model.q0)
        t0 = time.perf_counter()
        res = plant.rollout(commands, dt)
        walls.append(time.perf_counter() - t0)
    n = res["steps"]
    q = res["q"][:n]
    st = res["stats"][:n]
    gaps = np.array([fns.contact_gap(x) for x in q]) if n else np.zeros((0, model.nc))
    finite = bool(np.isfinite(q).all())
    pen = float(max(0.0, -gaps.min())) if n and finite else math.inf
    pitch = float(np.abs(q[:, 2]).max()) if n and finite else math.inf
    completed = res["status"] == 0 and n == commands.shape[0]
    stable = completed and finite and pen <= PENETRATION_LIMIT and pitch <= PITCH_LIMIT
    return {
        "t": dt * np.arange(1, n + 1), "x": q[:, 0] if n else np.zeros(0), "pitch": q[:, 2] if n else np.zeros(0),
        "stable": bool(stable), "completed": bool(completed), "status": res["status_text"],
        "pitch_max_rad": pitch, "x_final_m": float(q[-1, 0]) if n else math.nan,
        "penetration_max_mm": 1e3 * pen, "iters_mean": float(st[:, S_ITERS].mean()) if n else math.nan,
        "min_dt_ms": 1e3 * float(st[:, S_MIN_DT].min()) if n else math.nan,
        "halvings": int(st[:, S_HALVINGS].sum()), "us_per_step": 1e6 * float(np.median(walls)) / max(n, 1),
    }


def mujoco_us_per_step(model, nstep: int = 1000, repeats: int = 5) -> float:
    """Median microseconds of one MuJoCo step of the model's MJCF, timed through mujoco.rollout."""
    import mujoco
    from mujoco import rollout

    m = mujoco.MjModel.from_xml_string(model.mjcf)
    d = mujoco.MjData(m)
    d.qpos[:] = model.q0
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, state0, spec)
    rollout.rollout(m, d, state0[None], nstep=nstep)  # warm-up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rollout.rollout(m, d, state0[None], nstep=nstep)
        samples.append(time.perf_counter() - t0)
    return 1e6 * float(np.median(samples)) / nstep


def _plot(traj: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(METHODS), figsize=(5 * len(METHODS), 7), sharex=True)
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(DT_MS)))
    for col, method in enumerate(METHODS):
        for color, dt_ms in zip(colors, DT_MS):
            r = traj[method][dt_ms]
            tag = "" if r["stable"] else " (unstable)"
            axes[0, col].plot(r["t"], r["pitch"], color=color, lw=1, label=f"{dt_ms} ms{tag}")
            axes[1, col].plot(r["t"], r["x"], color=color, lw=1)
        axes[0, col].set_title(method)
        axes[0, col].set_ylim(-0.15, 0.15)
        axes[1, col].set_xlabel("t (s)")
        axes[0, col].legend(fontsize=7, loc="upper left")
    axes[0, 0].set_ylabel("torso pitch (rad)")
    axes[1, 0].set_ylabel("torso x (m)")
    fig.suptitle("NMDP vs linearised MDP: quadruped standing then trotting, joint PD, 5 s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_nmdp_stability(args) -> dict:
    """Quadruped trot for 5 s at dt in DT_MS for pgm, zopgm and mdp; figures, MuJoCo ratio, PNG."""
    from sim.nmdp import NmdpPlant

    model = get_robot("quadruped")
    fns = numeric(model, verbose=False)
    repeats = max(1, getattr(args, "repeats", None) or 1)
    mj_us = mujoco_us_per_step(model)
    # 3 weights: the force limit docs/NMDP.md's figures were measured with
    force_limit = 3.0 * float(np.max(np.diag(fns.mass_matrix(model.q0)))) * model.gravity
    result: dict = {"dt_ms": list(DT_MS)}
    traj: dict = {}
    for method in METHODS:
        plant = NmdpPlant(model, method=method, stiffness=STIFFNESS, force_limit=force_limit, verbose=False)
        plant.reset(model.q0)
        plant.rollout(trot_commands(model, 0.01, duration=0.05), 0.01)  # JIT warm-up, outside the timing
        rows = {}
        for dt_ms in DT_MS:
            dt = dt_ms * 1e-3
            _progress(f"nmdp-stability: {method} at {dt_ms} ms")
            rows[dt_ms] = run_case(plant, trot_commands(model, dt), dt, fns, repeats=repeats)
        traj[method] = rows
        keys = ("stable", "pitch_max_rad", "x_final_m", "iters_mean", "min_dt_ms", "us_per_step",
                "penetration_max_mm", "halvings", "status")
        result[method] = {k: [rows[d][k] for d in DT_MS] for k in keys}
        result[method]["us_per_step_vs_mujoco"] = [rows[d]["us_per_step"] / mj_us for d in DT_MS]
    result["mujoco_us_per_step"] = mj_us
    # the same first-order PGM without Algorithm 2: where does a fixed step stop converging?
    fixed = NmdpPlant(model, method="pgm", stiffness=STIFFNESS, force_limit=force_limit, adaptive=False,
                      verbose=False)
    rows = {}
    for dt_ms in DT_MS:
        _progress(f"nmdp-stability: pgm without step halving at {dt_ms} ms")
        rows[dt_ms] = run_case(fixed, trot_commands(model, dt_ms * 1e-3), dt_ms * 1e-3, fns)
    result["pgm_fixed_step"] = {k: [rows[d][k] for d in DT_MS] for k in ("completed", "stable", "x_final_m", "status")}
    pgm_x = np.array(result["pgm"]["x_final_m"])
    mdp_x = np.array(result["mdp"]["x_final_m"])
    mdp_drift = [float(abs(x - mdp_x[0]) / abs(mdp_x[0])) for x in mdp_x]
    mdp_fail = [d for d, s, dr in zip(DT_MS, result["mdp"]["stable"], mdp_drift) if not s or dr > 0.2]
    result["summary"] = {
        "pgm_stable_all_dt": bool(all(result["pgm"]["stable"])),
        "pgm_x_final_spread_rel": float((pgm_x.max() - pgm_x.min()) / abs(pgm_x.mean())),
        "mdp_x_final_drift_rel": mdp_drift,  # |x_final(dt) - x_final(1 ms)| / |x_final(1 ms)|
        "mdp_first_failing_dt_ms": mdp_fail[0] if mdp_fail else None,
        "zopgm_over_pgm_iters": [z / p for z, p in zip(result["zopgm"]["iters_mean"], result["pgm"]["iters_mean"])],
        "stiffness_N_per_m": STIFFNESS,
        "sim_s": T_END,
    }
    path = png_path("nmdp-stability")
    _plot(traj, path)
    result["png"] = path
    return _finite_or_none(result)


def _finite_or_none(obj):
    """The result with NaN/inf floats (runs that failed before producing a value) as None, so
    that the JSON output is standard JSON."""
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
