"""ESS benchmarks (issue: ESS plant simulator). Each returns a dict of figures and writes a PNG.

ess-order   order test of seed 000, Table 1, against the exact solution (slope of RMS vs 1/eps)
ess-hopper  1-D hopper calibration: eps at which our RMS error equals MuJoCo's, and run times
ess-plate   plate on N springs: runtime against N, marginal cost per contact, ours vs MuJoCo
sim-rtf     real-time factor of the ESS plant (hopper, quadruped) at a 1 ms command period

MuJoCo is timed with `mujoco.rollout` (its C loop, no Python per step) on the same model;
ours with the compiled kernel. Figures are medians over repeats after a warm-up; the JIT
compile time of the first call is reported separately.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from robots import get_robot

from .timing import first_call, png_path, timed

DT = 0.002  # s, MuJoCo's step in the paper's calibration; our largest step
T_END = 2.0  # s
OURS_TOL = dict(rtol=1e-8, atol=1e-10, method="dopri5")  # tight tolerances: the order-5 method


def _progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- MuJoCo helpers
def mujoco_hopper1d_xml(model) -> str:
    """MJCF of the 1-D hopper with the leg spring as MuJoCo's affine actuator clamped to
    forces >= 0: force = max(0, k (L0 - z)), exactly the model's stance law (no contact)."""
    p = model.params
    k, L0 = p["k"], p["L0"]
    return f"""<mujoco model="hopper1d_spring">
  <option timestep="{DT!r}" gravity="0 0 {-p['g']!r}"/>
  <worldbody>
    <body name="mass"><joint name="z" type="slide" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="{p['m']!r}" diaginertia="1 1 1"/></body>
  </worldbody>
  <actuator><general joint="z" gaintype="fixed" gainprm="0" biastype="affine" biasprm="{k * L0!r} {-k!r} 0"
    forcelimited="true" forcerange="0 1e12"/></actuator>
</mujoco>"""


class MujocoRollout:
    """Open-loop MuJoCo rollouts from (q0, v0) with its C loop; returns qpos and qvel per step."""

    def __init__(self, xml: str, dt: float = DT):
        import mujoco
        from mujoco import rollout

        self._mujoco, self._rollout = mujoco, rollout
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.model.opt.timestep = dt
        self.data = mujoco.MjData(self.model)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.state0 = np.empty(mujoco.mj_stateSize(self.model, self.spec))

    def run(self, q0, v0, nstep: int) -> tuple[np.ndarray, np.ndarray]:
        """(qpos, qvel) after each of nstep steps, arrays nstep x nq and nstep x nv."""
        mj, m, d = self._mujoco, self.model, self.data
        mj.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = q0, v0
        mj.mj_getState(m, d, self.state0, self.spec)
        states, _ = self._rollout.rollout(m, d, self.state0[None], nstep=nstep)
        s = states[0]
        return s[:, 1:1 + m.nq], s[:, 1 + m.nq:1 + m.nq + m.nv]


def _rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


# --------------------------------------------------------------------------- ess-order
def bench_ess_order(args) -> dict:
    """RMS error of the order test against 1/eps; slope fitted over eps in [1e-4, 1e-1]."""
    from sim.ess.order_test import rms_error

    eps = np.logspace(-5, -0.5, 19)
    jit_s = first_call(lambda: rms_error(1e-2))
    rms = [rms_error(float(e), rtol=1e-12, atol=1e-12, h_max=0.01) for e in eps]
    mid = (eps >= 1e-4 - 1e-12) & (eps <= 1e-1 + 1e-12)
    slope = float(np.polyfit(np.log10(1 / eps[mid]), -np.log10(np.array(rms)[mid]), 1)[0])
    png = png_path("ess-order")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(1 / eps, rms, "o-", color="tab:red", label="ESS (ours)")
    fit = 10 ** np.polyval(np.polyfit(np.log10(1 / eps[mid]), np.log10(np.array(rms)[mid]), 1), np.log10(1 / eps))
    ax.loglog(1 / eps, fit, "--", color="tab:blue", label=f"fit on eps in [1e-4, 1e-1]: slope {slope:.2f}")
    ax.axvspan(1e1, 1e4, color="0.9")
    ax.set_xlabel("1 / eps")
    ax.set_ylabel("RMS error vs exact")
    ax.set_title("ESS order test (seed 000, Table 1)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return {"slope": slope, "eps": eps.tolist(), "rms": rms, "fit_range": [1e-4, 1e-1], "jit_s": jit_s, "png": png}


# --------------------------------------------------------------------------- ess-hopper
def hopper_calibration(repeats: int = 20) -> dict:
    """Find eps where our RMS error equals MuJoCo's on the 1-D hopper; time both there."""
    from sim.ess.exact import hopper1d_exact
    from sim.ess.integrator import LivenessError
    from sim.ess.robot import EssPlant

    model = get_robot("hopper1d")
    p = model.params
    n = int(round(T_END / DT))
    times = DT * np.arange(1, n + 1)
    z_ex, v_ex = hopper1d_exact(times, z0=2.0 * p["L0"], m=p["m"], k=p["k"], g=p["g"], L0=p["L0"])
    exact = np.stack([z_ex, v_ex], axis=1)

    mj = MujocoRollout(mujoco_hopper1d_xml(model))
    qpos, qvel = mj.run([2.0], [0.0], n)
    traj_mj = np.concatenate([qpos, qvel], axis=1)
    rms_mj = _rms(traj_mj, exact)

    def ours(eps: float):
        plant = EssPlant(model, eps=eps, h_max=DT, liftoff="gap", on_violation="raise", verbose=False, **OURS_TOL)
        return plant, (lambda: (plant.reset([2.0]), plant.advance(T_END, times))[1])

    def error_at(eps: float) -> float:
        """Our RMS error; inf where the band is so wide that crossings stop being projections
        (a liveness failure, or the exact-location fallback taking over)."""
        plant, run = ours(eps)
        try:
            traj = run()
        except LivenessError:
            return np.inf
        return np.inf if plant.stats["exact_crossings"] else _rms(traj, exact)

    jit_s = first_call(ours(1e-3)[1])
    lo, hi = np.log(1e-7), np.log(1.0)
    for _ in range(60):  # bisection on log(eps): our error grows with eps
        if hi - lo < 1e-3:
            break
        mid = 0.5 * (lo + hi)
        if error_at(float(np.exp(mid))) < rms_mj:
            lo = mid
        else:
            hi = mid
    eps = float(np.exp(lo))
    plant, run = ours(eps)
    traj = run()
    rms_ours = _rms(traj, exact)
    t_ours = timed(run, repeats)
    t_mj = timed(lambda: mj.run([2.0], [0.0], n), repeats)
    return {"eps": eps, "rms_ours": rms_ours, "rms_mujoco": rms_mj, "time_ours_s": t_ours["median"],
            "time_mujoco_s": t_mj["median"], "ratio": t_ours["median"] / t_mj["median"],
            "time_ours_minmax_s": [t_ours["min"], t_ours["max"]], "time_mujoco_minmax_s": [t_mj["min"], t_mj["max"]],
            "repeats": repeats, "jit_s": jit_s, "projections": plant.stats["projections"],
            "_plot": (times, exact, traj, traj_mj)}


def bench_ess_hopper(args) -> dict:
    """The 1-D hopper calibration with its trajectory/residual PNG."""
    res = hopper_calibration(repeats=max(20, args.repeats or 20))
    times, exact, traj, traj_mj = res.pop("_plot")
    png = png_path("ess-hopper")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, label in enumerate(("height z (m)", "velocity (m/s)")):
        axes[0, col].plot(times, exact[:, col], ":", color="0.4", label="exact")
        axes[0, col].plot(times, traj_mj[:, col], "--", color="tab:blue", label="MuJoCo")
        axes[0, col].plot(times, traj[:, col], color="tab:red", lw=1, label=f"ESS eps={res['eps']:.3g}")
        axes[0, col].set_ylabel(label)
        axes[1, col].plot(times, traj_mj[:, col] - exact[:, col], "--", color="tab:blue")
        axes[1, col].plot(times, traj[:, col] - exact[:, col], color="tab:red", lw=1)
        axes[1, col].set_ylabel("residual")
        axes[1, col].set_xlabel("t (s)")
    axes[0, 0].legend()
    fig.suptitle(f"1-D hopper calibration: equal RMS {res['rms_mujoco']:.3g}; time ours/MuJoCo = {res['ratio']:.2f}")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    res["png"] = png
    return res


# --------------------------------------------------------------------------- ess-plate
def bench_ess_plate(args) -> dict:
    """Median runtime vs number of springs N for ours and MuJoCo; marginal cost = slope."""
    from sim.ess.robot import EssPlant

    full = bool(getattr(args, "full", False))
    counts = list(range(2, 101)) if full else [2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    starts = 120 if full else max(20, args.repeats or 20)
    _progress("calibrating eps on the 1-D hopper")
    calibration = hopper_calibration(repeats=3)
    eps, jit_s = calibration["eps"], calibration["jit_s"]  # the kernel is compiled there
    rng = np.random.default_rng(0)
    inits = np.stack([np.zeros(starts), rng.uniform(2, 3, starts), rng.uniform(-0.1, 0.1, starts)], axis=1)
    n = int(round(T_END / DT))
    times = DT * np.arange(1, n + 1)
    med_ours, med_mj = [], []
    for N in counts:
        model = get_robot("plate_springs", n_springs=N)
        plant = EssPlant(model, eps=eps, h_max=DT, liftoff="gap", verbose=False, **OURS_TOL)
        mj = MujocoRollout(model.mjcf)
        run = lambda q0: (plant.reset(q0), plant.advance(T_END, times))  # noqa: E731
        ours_t, mj_t = [], []
        for q0 in inits:
            ours_t.append(timed(lambda: run(q0), 1, warmup=0)["median"])
            mj_t.append(timed(lambda: mj.run(q0, np.zeros(3), n), 1, warmup=0)["median"])
        med_ours.append(float(np.median(ours_t)))
        med_mj.append(float(np.median(mj_t)))
        _progress(f"N={N:3d}: ours {med_ours[-1] * 1e3:.2f} ms, MuJoCo {med_mj[-1] * 1e3:.2f} ms (median of {starts})")
    marg_ours = float(np.polyfit(counts, med_ours, 1)[0])
    marg_mj = float(np.polyfit(counts, med_mj, 1)[0])
    png = png_path("ess-plate")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(counts, np.array(med_ours) * 1e3, "o-", color="tab:red", label=f"ESS (ours): {marg_ours * 1e6:.1f} us/contact")
    ax.plot(counts, np.array(med_mj) * 1e3, "s--", color="tab:blue", label=f"MuJoCo: {marg_mj * 1e6:.1f} us/contact")
    ax.set_xlabel("number of spring contacts N")
    ax.set_ylabel(f"median runtime of a {T_END:g} s drop (ms)")
    ax.set_title("Plate on N springs: marginal cost per contact")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return {"n_contacts": counts, "median_s_ours": med_ours, "median_s_mujoco": med_mj,
            "marginal_ours_s": marg_ours, "marginal_mujoco_s": marg_mj, "ratio": marg_ours / marg_mj,
            "starts_per_n": starts, "eps": eps, "jit_s": jit_s, "png": png}


# --------------------------------------------------------------------------- sim-rtf
class PlantRun:
    """One sim-rtf configuration: the ESS plant with a new joint command every `period` s (PD
    around the nominal pose, 2 Hz sinusoidal references) for `seconds`.

    The plant is built as the bridge server builds it (`sim.registry.make_plant("ess", model,
    plant_rate_hz=1/period)`, plus `options`). `steps()` runs it as the server does: one
    `step(command, period)` call per tick, returning a fresh PlantState. `rollout()`: the same
    ticks, packed beforehand, in one compiled call (`EssPlant.rollout`): the floor without Python
    per tick."""

    def __init__(self, name: str, *, period: float = 1e-3, seconds: float = 1.0, **options):
        from sim.protocol import JointCommand, pack_command
        from sim.registry import make_plant

        model = get_robot(name)
        self.model, self.period, self.seconds = model, period, seconds
        self.plant = make_plant("ess", model, plant_rate_hz=1.0 / period, **options)
        j, nu = self.plant._joints, model.nu
        self.ticks = int(round(seconds / period))
        kp, kd = np.full(nu, 40.0), np.full(nu, 1.0)
        self.commands = [
            JointCommand(np.zeros(nu), model.q0[j] + 0.1 * np.sin(2 * np.pi * 2.0 * k * period + np.arange(nu)),
                         np.zeros(nu), kp, kd)
            for k in range(self.ticks)
        ]
        self.packed = np.stack([pack_command(c, model) for c in self.commands])
        self.samples = {"steps": [], "rollout": []}
        self.jit_s = first_call(self.rollout) + first_call(self.steps)
        self.rollout()  # warm-up
        self.steps()
        self._steps0 = self.plant.stats["steps"]

    def steps(self) -> None:
        """The plant protocol, one Python call per tick, as bridge/server.py does."""
        self.plant.reset(self.model.q0)
        for c in self.commands:
            self.plant.step(c, self.period)

    def rollout(self) -> None:
        """The same ticks in one compiled call (commands packed beforehand)."""
        self.plant.reset(self.model.q0)
        self.plant.rollout(self.packed, self.period)

    def sample(self) -> None:
        """Time one run of each kind."""
        for kind in ("steps", "rollout"):
            t0 = time.perf_counter()
            getattr(self, kind)()
            self.samples[kind].append(time.perf_counter() - t0)

    def result(self) -> dict:
        """rtf (simulated s per wall s): median, and from the slowest/fastest run (rtf_min/max)."""
        sec, opts = self.seconds, self.plant.options
        t, r = np.array(self.samples["steps"]), np.array(self.samples["rollout"])
        n = len(t)
        return {"rtf": sec / np.median(t), "rtf_min": sec / t.max(), "rtf_max": sec / t.min(),
                "us_per_tick": np.median(t) / self.ticks * 1e6,
                "rtf_rollout": sec / np.median(r), "rtf_rollout_min": sec / r.max(), "rtf_rollout_max": sec / r.min(),
                "us_per_tick_rollout": np.median(r) / self.ticks * 1e6,
                "method": opts["method"], "rtol": opts["rtol"], "atol": opts["atol"], "h_max": opts["h_max"],
                "period_s": self.period, "sim_s": sec, "repeats": n, "jit_s": self.jit_s,
                "steps_per_tick": (self.plant.stats["steps"] - self._steps0) / (2 * n * self.ticks)}


def bench_sim_rtf(args) -> dict:
    """Real-time factor of the ESS plant for the hopper and the quadruped at 1 ms (the server's
    plant and call pattern) with its defaults (ros23); of ros21 (the same solution without the
    third stage that ros23's error estimate needs: two f per tick instead of three, less accurate
    through impacts: docs/ESS.md); and of explicit dopri5 (rtol 1e-4) for scale. The
    configurations' repeats are interleaved (run 1 of each, then run 2 of each, ...), so that a
    slow phase of the machine hits all of them alike."""
    import os

    reps = max(20, args.repeats or 20)
    configs = {(group, name): PlantRun(name, **({} if group == "default" else {"method": group}))
               for group in ("default", "ros21", "dopri5") for name in ("hopper", "quadruped")}
    for r in range(reps):
        for key, run in configs.items():
            if key[0] != "dopri5" or r % 4 == 0:  # dopri5, for scale only: a quarter of the repeats
                run.sample()
        print(f"[sim-rtf] repeat {r + 1}/{reps}", file=sys.stderr, flush=True)
    res = {name: configs["default", name].result() for name in ("hopper", "quadruped")}
    for group in ("ros21", "dopri5"):
        res[group] = {name: configs[group, name].result() for name in ("hopper", "quadruped")}
    res["load_avg_1min"] = os.getloadavg()[0]
    return res
