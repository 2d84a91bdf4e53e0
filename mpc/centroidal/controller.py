"""The 3D contact-implicit MPC controller: acados SQP-RTI on the single rigid body every tick.

    ctrl = CentroidalMpc(get_robot("go1"), Mpc3dOptions(vx=0.5))
    command, phases = ctrl.compute(t, q, v, contact)     # feedback phase, then the whole-body layer
    ctrl.prepare()                                       # shift the plan, linearize for the next tick

Each tick: the measured robot becomes the OCP's state (`srb_state`, compiled), the RTI
feedback phase solves one QP of `CentroidalOcp` (contact timing and forces decided by the
optimizer; the reference is the offline periodic gait of the same OCP, as heading-invariant
features, `mpc.centroidal.gaits`), and the compiled whole-body layer turns the plan's next
stages into joint targets and feed-forward torques (`mpc.centroidal.wholebody`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from robots.model import RobotModel
from sim.command_plan import JointPlan
from sim.protocol import JointCommand

from ..acados.rti import CostWeights, RtiOptions, RtiSolver
from ..acados.stage_pairs import StagePairs
from ..problem import OcpOptions, robot_options
from ..reference import FourierReference
from .gaits import Gait3dTask, periodic_gait3d
from .ocp import FEATURE_VX, FEATURE_VY, FEATURE_YAW_RATE, CentroidalOcp
from .srb import SingleRigidBody
from .tuning import derived_gains, feature_weights, joint_damping
from .wholebody import build_layer

PRESOLVE_ITERATIONS = 10  # RTI iterations at the standing start before the first tick
# a plan whose first stage fails the physics check on this many ticks in a row is dropped: the
# solver restarts from the measured stance, as after a failed QP (a real-time iteration that
# has left the basin of sound plans does not find its way back by itself)
RESTART_AFTER_INCONSISTENT = 3


# the default horizon: 5 stages of 10 ms (the tick executes the first), 6 of 25 ms, 4 of 50 ms: 0.4 s
# in 15 stages, the QP of a 0.15 s uniform horizon (docs/MPC.md, "Horizon")
DEFAULT_STAGE_DTS = (0.01,) * 5 + (0.025,) * 6 + (0.05,) * 4
HPIPM_MODES = ("SPEED_ABS", "SPEED", "BALANCE", "ROBUST")
REPLACED_OPTIONS = {"n_stages": "stage_dts (one length per stage, s)",
                    "dt": "stage_dts (its first entry is the control period, s)"}


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Mpc3dOptions:
    """Everything the 3D MPC is configured by (scenario `controller_options`).

    Task: vx, vy (m/s, heading frame), yaw_rate (rad/s), period (s, reference gait), stand
    (balance on all feet). ramp_s: the reference's velocities rise from 0 over this time (s).
    OCP: stage_dts (s, one per stage; the first is the control period, the tick executes it),
    sigma (gap/force relaxation, m x weights), terminal_factor (terminal weight, x the stage
    weights).
    Solver: qp_iter_max, hpipm_mode, cond_n (partial condensing horizon), z_l1 / z_l2 (slack
    penalties; z_l1 1e3 let the QP buy loaded feet that slide, executed-stage complementarity
    p99 0.5; 1e4 sagged the turning base to 0.17 m; 3e3 keeps both: docs/MPC.md).
    Command: kp (N m/rad), kd (N m s/rad) of the joint impedance around the planned joints;
    None: derived from the robot (`tuning.derived_gains`; kd per joint, `tuning.joint_damping`).
    deadline_s: per-tick compute budget (s); None: 0.9 of the control period, the plant's.
    command_horizon_s: how far ahead each COMMAND carries the plan (s): setpoints every control
    period from now to this (sim/command_plan.py), which the plant follows through missed ticks;
    0: one setpoint (the plain command).
    """

    vx: float = 0.0
    vy: float = 0.0
    yaw_rate: float = 0.0
    period: float = 0.4
    stand: bool = False
    ramp_s: float = 0.5
    stage_dts: tuple = DEFAULT_STAGE_DTS
    sigma: float = 1e-5
    terminal_factor: float = 1.0
    qp_iter_max: int = 12
    hpipm_mode: str = "SPEED"  # 3 s lockstep trot: solve p50/p99 2.9/3.9 ms against BALANCE's 3.7/5.1, same gait
    cond_n: int | None = None
    z_l1: float = 3e3
    z_l2: float = 1e4
    lift_price: float = 1.0
    first_stage_price: float = 1.0
    kp: float | None = None
    kd: float | None = None
    deadline_s: float | None = None
    command_horizon_s: float = 0.15

    def validate(self) -> "Mpc3dOptions":
        """Raise ValueError naming the bad field and the fix; return self."""
        if not isinstance(self.stand, bool):
            raise ValueError(f"mpc stand must be true or false, got {self.stand!r}")
        self.task.validate()
        rules = (("kp", 0.0, False, True), ("kd", 0.0, True, True), ("ramp_s", 0.0, True, False),
                 ("terminal_factor", 0.0, True, False), ("sigma", 0.0, False, False), ("z_l1", 0.0, False, False),
                 ("z_l2", 0.0, False, False), ("lift_price", 0.0, False, False),
                 ("first_stage_price", 0.0, False, False), ("deadline_s", 0.0, False, True),
                 ("command_horizon_s", 0.0, True, False))
        for name, low, closed, may_be_none in rules:
            value = getattr(self, name)
            if value is None and may_be_none:
                continue
            if not (_is_number(value) and np.isfinite(value) and (value >= low if closed else value > low)):
                raise ValueError(f"mpc {name} must be a finite number {'>=' if closed else '>'} {low:g}, got {value!r}")
        if not (_is_int(self.qp_iter_max) and 1 <= self.qp_iter_max <= 500):
            raise ValueError(f"mpc qp_iter_max must be an integer in [1, 500], got {self.qp_iter_max!r}")
        if self.hpipm_mode not in HPIPM_MODES:
            raise ValueError(f"mpc hpipm_mode must be one of {', '.join(HPIPM_MODES)}, got {self.hpipm_mode!r}")
        dts = self.stage_dts
        if not (isinstance(dts, (tuple, list)) and 3 <= len(dts) <= 100
                and all(_is_number(d) and np.isfinite(d) and 0.001 <= d <= 0.2 for d in dts)):
            shown = repr(dts) if len(repr(dts)) <= 120 else repr(dts)[:117] + "..."
            raise ValueError(f"mpc stage_dts must be 3 to 100 stage lengths in [0.001, 0.2] s (the first is the "
                             f"control period), got {shown}")
        if min(dts) < dts[0]:
            raise ValueError(f"mpc stage_dts: no stage may be shorter than the first (the control period, "
                             f"{dts[0]:g} s), got {min(dts):g} s")
        if len(dts) < 3 or any(d != dts[0] for d in dts[:3]):
            raise ValueError(f"mpc stage_dts: the first three stages must be the control period ({dts[0]:g} s): the "
                             f"joints are sent to stages 1 and 2, one and two ticks ahead; got {tuple(dts[:3])}")
        if self.command_horizon_s > sum(dts) - 2 * dts[0]:
            raise ValueError(f"mpc command_horizon_s must be at most the plan's horizon less two control periods "
                             f"({sum(dts) - 2 * dts[0]:g} s), got {self.command_horizon_s!r}")
        if self.cond_n is not None and not (_is_int(self.cond_n) and 1 <= self.cond_n <= len(dts)):
            raise ValueError(f"mpc cond_n (partial condensing horizon) must be none or an integer in "
                             f"[1, {len(dts)}], got {self.cond_n!r}")
        self.ocp.validate()
        return self

    @property
    def deadline(self) -> float:
        """The per-tick compute budget, s: deadline_s, or 0.9 of the control period (the plant's)."""
        return float(self.deadline_s) if self.deadline_s is not None else 0.9 * self.dt

    @property
    def dt(self) -> float:
        """The first stage's length, s: the control period."""
        return float(self.stage_dts[0])

    @property
    def n_stages(self) -> int:
        """Number of stages."""
        return len(self.stage_dts)

    @property
    def horizon_s(self) -> float:
        """The horizon's length, s."""
        return float(sum(self.stage_dts))

    @property
    def task(self) -> Gait3dTask:
        """The locomotion task part."""
        return Gait3dTask(vx=self.vx, vy=self.vy, yaw_rate=self.yaw_rate, period=self.period, stand=self.stand)

    @property
    def ocp(self) -> OcpOptions:
        """The OCP discretization part (stage lengths: `stage_dts`)."""
        return OcpOptions(dt=self.dt, n_stages=self.n_stages, sigma=self.sigma)


@dataclass(frozen=True)
class RampedReference:
    """A reference whose velocity features rise from 0 to the gait's over ramp_s seconds of the
    gait clock (a smoothstep): the robot starts from standing still."""

    base: FourierReference
    ramp_s: float
    velocity_rows: tuple  # indices of the ramped features in x

    def _scale(self, tau, lib):
        if self.ramp_s <= 0:
            return 1.0
        s = tau / self.ramp_s
        s = ca.fmin(ca.fmax(s, 0.0), 1.0) if lib is ca else np.clip(s, 0.0, 1.0)
        return s * s * (3 - 2 * s)

    def x(self, tau):
        """Reference features at gait time tau (SX)."""
        ref = self.base.x(tau)
        scale = ca.SX.ones(ref.numel())
        for i in self.velocity_rows:
            scale[i] = self._scale(tau, ca)
        return ref * scale

    def u(self, tau):
        """Reference control features at gait time tau (SX)."""
        return self.base.u(tau)

    def x_at(self, t) -> np.ndarray:
        """Numeric reference features at times t, (len(t), ny)."""
        t = np.atleast_1d(np.asarray(t, float))
        ref = self.base.x_at(t)
        ref[:, list(self.velocity_rows)] *= self._scale(t, np)[:, None]
        return ref

    def u_at(self, t) -> np.ndarray:
        """Numeric reference control features at times t."""
        return self.base.u_at(t)


class CentroidalMpc:
    """Contact-implicit MPC of a floating-base 3D robot (module docstring)."""

    name = "mpc"

    def __init__(self, model: RobotModel, options: Mpc3dOptions | None = None, *, verbose: bool = True):
        options = options if options is not None else mpc3d_options(model)
        options.validate()
        if not model.name.isidentifier():
            raise ValueError(f"robot name {model.name!r}: the MPC names its generated C code after the robot, so the "
                             "name must be a C identifier (letters, digits, '_')")
        from robots.codegen import compile_functions

        self.srb = SingleRigidBody.from_model(model)
        if options.kp is None:
            options = replace(options, kp=derived_gains(model, self.srb)["kp"])
        self.model, self.options = model, options
        self.problem = CentroidalOcp(self.srb, options.ocp, stage_dts=options.stage_dts)
        self.check = PlanCheck.of(self.srb)
        self.gait = periodic_gait3d(self.problem, options.task, verbose=verbose)
        base = FourierReference.fit(self.gait)
        self.reference = RampedReference(base, options.ramp_s, (FEATURE_VX, FEATURE_VY, FEATURE_YAW_RATE))
        w_x, w_u = feature_weights(self.problem)
        weights = CostWeights(w_x=w_x, w_u=w_u, terminal_factor=options.terminal_factor, z_l1=options.z_l1,
                              z_l2=options.z_l2, soft_scale=self.problem.soft_scale(options.lift_price),
                              first_stage_price=options.first_stage_price)
        self.rti = RtiSolver(self.problem, self.reference, weights,
                             RtiOptions(qp_iter_max=options.qp_iter_max, hpipm_mode=options.hpipm_mode, qp_tol=1e-3,
                                        cond_n=options.cond_n),
                             verbose=verbose)
        lib = compile_functions(build_layer(model, self.problem), lib_name=f"wholebody_{model.name}", verbose=verbose)
        self._srb_state = lib.functions["srb_state"]
        self._command = lib.functions["joint_command"]
        nx, nu = self.problem.nx, self.problem.nu
        self._in_state = np.zeros(model.nq + model.nv)
        self._in_cmd = np.zeros(model.nq + model.nv + 2 * nx + nu)
        self._out_cmd = np.zeros(3 * model.nu)
        self._pairs = StagePairs(self.problem, lib_name=f"srb_pairs_{model.name}")
        self._kp = np.full(model.nu, float(options.kp))
        # kd None: each joint damped by its own inertia (tuning.joint_damping)
        self._kd = joint_damping(model, options.kp) if options.kd is None else np.full(model.nu, float(options.kd))
        self._kp.flags.writeable = self._kd.flags.writeable = False
        self._setpoints = 1 + int(round(options.command_horizon_s / options.dt))
        self.offset: float | None = None
        self._yaw: float | None = None  # the last measured yaw, unwrapped (continuous)
        self._info: dict = {}
        self._executed = None
        self._plan_x = self._plan_u = None
        self._tick_ok = False
        self._fallback_k = 0
        self._inconsistent_run = 0  # ticks in a row whose first stage failed the plan check
        self.restarts = 0
        # presolve at the nominal stance (the scenario's start): the first tick starts from a
        # converged-ish plan, not from one iteration away from a guess
        x_stand = self._measured(model.q0, np.zeros(model.nv))
        self._yaw = None
        self._guess(x_stand, 0.0)
        for _ in range(PRESOLVE_ITERATIONS):
            self.rti.prepare()
            self.rti.feedback(np.append(x_stand, 0.0))
        self.rti.prepare()
        self.rti.take_stats()

    def _measured(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The OCP state of the measured robot, its yaw unwrapped: the measurement's yaw (atan2,
        in (-pi, pi]) moved by whole turns to the one nearest the last tick's, so that the plan's
        continuous yaw never meets a jump of 2 pi."""
        nq = self.model.nq
        self._in_state[:nq], self._in_state[nq:] = q, v
        x = self._srb_state.call_flat(self._in_state).copy()
        if self._yaw is not None:
            x[5] += 2.0 * np.pi * np.round((self._yaw - x[5]) / (2.0 * np.pi))
        self._yaw = float(x[5])
        return x

    def _move_plan_to(self, x: np.ndarray) -> None:
        """Move and turn the presolved plan (made at the origin, heading 0) to the measured
        robot's place and heading, then linearize there again. The OCP is invariant under both
        (controls live in the heading frame), so the plan stays a solution: a robot that starts
        elsewhere or facing elsewhere meets no jump at its first tick."""
        xs, us = self.rti.io.get()
        turn = x[5] - xs[0, 5]
        if abs(turn) < 1e-12 and np.allclose(xs[0, 0:2], x[0:2], atol=1e-12):
            return
        c, s = np.cos(turn), np.sin(turn)
        R = np.array([[c, -s], [s, c]])
        origin = xs[0, 0:2].copy()
        xs[:, 0:2] = (xs[:, 0:2] - origin) @ R.T + x[0:2]
        for i in range(self.problem.nc):
            sl = self.problem.layout.foot(i)
            xs[:, sl.start:sl.start + 2] = (xs[:, sl.start:sl.start + 2] - origin) @ R.T + x[0:2]
        xs[:, 5] += turn
        xs[:, 6:8] = xs[:, 6:8] @ R.T
        self.rti.io.set(xs, us)
        self.rti.prepare()
        self.rti.take_stats()

    def _guess(self, x0: np.ndarray, tau0: float) -> None:
        """The horizon's guess: x0 held (feet still, the weight shared), clock from tau0."""
        n = self.options.n_stages
        xs = np.tile(np.append(x0, 0.0), (n + 1, 1))
        xs[:, -1] = tau0 + self.rti.grid
        us = np.tile(self.problem.standing_control(), (n, 1))
        self.rti.io.set(xs, us)

    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray) -> tuple[JointCommand, dict]:
        """Feedback phase at (t, q, v), the plan's first stage checked against physics
        (`PlanCheck`, corrected where it fails), then the whole-body layer; returns the command
        and its phases (s)."""
        t0 = time.perf_counter()
        x = self._measured(q, v)
        if self.offset is None:
            self.offset = -t  # the gait clock starts at the first tick
            self._move_plan_to(x)
        tau = t + self.offset
        status = self.rti.feedback(np.append(x, tau))
        stats = self.rti.take_stats()
        t1 = time.perf_counter()
        self._tick_ok = status in (0, 2)
        if self._tick_ok:
            xs, us = self.rti.iterate()
            self._plan_x, self._plan_u = xs.copy(), us.copy()
            self._fallback_k = 0
        elif self._plan_u is not None and self._fallback_k + 2 < len(self._plan_u):
            self._fallback_k += 1  # the previous plan's next stage
        k = self._fallback_k
        nq, nv, nx = self.model.nq, self.model.nv, self.problem.nx
        if self._plan_x is None:  # no plan yet (a failed first tick): hold the stance
            xs = np.tile(np.append(x, tau), (3, 1))
            us = self.problem.standing_control()[None, :]
        else:
            xs, us = self._plan_x[k:], self._plan_u[k:]
        u0 = us[0].copy()
        x1, x2 = xs[1, :nx], xs[2, :nx]
        pairs = self._pairs.values(x, u0)
        comp = self._pairs.worst_of(pairs)
        bad = self.check.failures(pairs, x[14::3])  # feet heights now: z of each foot point
        self._inconsistent_run = self._inconsistent_run + 1 if bad else 0
        if bad:
            x1, x2 = x1.copy(), x2.copy()
            self.check.correct(u0, bad, self.problem.layout, x, (x1, x2))
        buf = self._in_cmd
        buf[:nq], buf[nq:nq + nv] = q, v
        o = nq + nv
        buf[o:o + nx], buf[o + nx:o + 2 * nx], buf[o + 2 * nx:] = x1, x2, u0
        out = self._command.call_flat(buf, self._out_cmd)
        nu = self.model.nu
        tau_cmd = np.clip(out[2 * nu:], -self.model.u_max, self.model.u_max)
        cmd = JointCommand(tau_cmd, out[:nu].copy(), out[nu:2 * nu].copy(), self._kp, self._kd)
        if self._setpoints > 1 and self._plan_x is not None:
            cmd = self._plan_command(cmd, xs, us)
        elapsed = time.perf_counter() - t0
        self._executed = (x, u0)
        self._info = {"status": int(status), "sqp_iter": stats["sqp_iter"], "qp_iter": stats["qp_iter"],
                      "qp_capped": int(stats["qp_iter"] >= self.options.qp_iter_max),
                      "deadline_s": self.options.deadline, "slack_s": self.options.deadline - elapsed,
                      "gait_clock_s": tau, "horizon_s": self.options.horizon_s,
                      "plan_inconsistent": int(bool(bad)), **comp}
        return cmd, {"feedback": t1 - t0, "fb_tot": stats["time_tot"], "fb_qp": stats["time_qp"],
                     "wholebody": time.perf_counter() - t1}

    @property
    def solver_ok(self) -> bool:
        """False when this tick's QP failed and the command is a fallback (the previous plan)."""
        return self._tick_ok

    def _plan_command(self, first: JointCommand, xs: np.ndarray, us: np.ndarray) -> JointPlan:
        """The tick's command and the plan's next setpoints, one per control period out to
        command_horizon_s (sim/command_plan.py): the plan read at those times (states linearly
        between stages, controls held over their stage) through the whole-body layer, each from
        the measured q, v (the layer's torque terms and IK start) as the first."""
        dt, k = self.options.dt, self._setpoints
        clock = xs[:, -1]
        times = clock[0] + dt * np.arange(1, k + 2)  # the states one and two periods after each setpoint
        idx = np.clip(np.searchsorted(clock, times, side="right") - 1, 0, len(clock) - 2)
        w = np.clip((times - clock[idx]) / (clock[idx + 1] - clock[idx]), 0.0, 1.0)[:, None]
        x_at = xs[idx] * (1 - w) + xs[idx + 1] * w
        u_idx = np.clip(np.searchsorted(clock, clock[0] + dt * np.arange(k) + 1e-9, side="right") - 1, 0, len(us) - 1)
        nu, nx, nq, nv = self.model.nu, self.problem.nx, self.model.nq, self.model.nv
        rows = np.empty((3, k, nu))
        rows[:, 0] = first.tau_ff, first.q_des, first.v_des
        buf, o = self._in_cmd, nq + nv
        for j in range(1, k):
            buf[o:o + nx], buf[o + nx:o + 2 * nx], buf[o + 2 * nx:] = x_at[j - 1, :nx], x_at[j, :nx], us[u_idx[j]]
            out = self._command.call_flat(buf, self._out_cmd)
            rows[0, j] = np.clip(out[2 * nu:], -self.model.u_max, self.model.u_max)
            rows[1, j], rows[2, j] = out[:nu], out[nu:2 * nu]
        return JointPlan(dt * np.arange(k), rows[0], rows[1], rows[2], self._kp, self._kd)

    def prepare(self) -> dict:
        """Shift the plan (after a failed QP, or RESTART_AFTER_INCONSISTENT inconsistent first
        stages in a row: restart from the measured stance) and run the preparation phase;
        returns its phases (s)."""
        t0 = time.perf_counter()
        x, _ = self._executed
        unsound = self._inconsistent_run >= RESTART_AFTER_INCONSISTENT
        restart = unsound or not self._tick_ok
        if restart:
            if unsound:  # the plan judged unsound is not a fallback either
                self._inconsistent_run = 0
                self._plan_x = self._plan_u = None
            self.restarts += 1
            self.rti.solver.reset()
            self._guess(x, self._info["gait_clock_s"] + self.options.dt)
        else:
            self.rti.shift()
        self._info["plan_restart"] = int(restart)
        self.rti.prepare()
        stats = self.rti.take_stats()
        return {"prepare": time.perf_counter() - t0, "prep_time_tot": stats["time_tot"],
                "prep_time_lin": stats["time_lin"]}

    def tick_info(self) -> dict:
        """Non-time per-tick record: solver status, iterations (qp_capped: the QP stopped at its
        iteration cap), deadline, slack, horizon (s), the plan check (plan_inconsistent:
        the first stage failed `PlanCheck` and was corrected; plan_restart: the plan was dropped
        after this tick, `prepare`, after a failed QP or RESTART_AFTER_INCONSISTENT failed checks)
        and the first stage's largest complementarity product as planned (before any correction)."""
        return dict(self._info)

    def predicted_q(self) -> None:
        """The reduced model's plan has no joint configurations: None (no ghost in the animation)."""
        return None


@dataclass(frozen=True)
class PlanCheck:
    """The physics check of the stage a tick sends (the solver's status is never the only word).

    A foot is loaded when its planned normal force exceeds `loaded` (weights, m g). A loaded foot
    must be on the ground at the stage's end (gap <= `gap_max`, m) and not slide (planned
    horizontal speed <= `slip_max`, m/s). Thresholds scale with the robot: 5 % of its weight,
    2 % of its standing height (go1: 5 mm), 3 % of sqrt(g h0) (go1: 4.8 cm/s).
    A failing foot is corrected before the stage is sent, by what the foot can do now:
      "air"    loaded, off the ground now and at the stage's end: it gets no force (it swings on)
      "lift"   loaded, on the ground now, planned to rise: it stays where it is and pushes
      "slip"   loaded, planned to slide: it stays where it is and pushes."""

    loaded: float
    gap_max: float
    slip_max: float
    nc: int

    @classmethod
    def of(cls, srb: SingleRigidBody) -> "PlanCheck":
        """The check's thresholds for a body."""
        return cls(0.05, 0.02 * srb.height, 0.03 * np.sqrt(srb.gravity * srb.height), srb.nc)

    def failures(self, pairs: list, heights) -> list:
        """[(foot, "air" | "lift" | "slip"), ...] of the stage whose pair values are `pairs`
        (`StagePairs.values`: gaps at the stage's end (nc), slip speeds (nc), then fz twice
        (weights)) from feet at `heights` (m, now)."""
        n = self.nc
        out = []
        for i in range(n):
            if pairs[2 * n + i] > self.loaded:
                if pairs[i] > self.gap_max:
                    out.append((i, "air" if heights[i] > self.gap_max else "lift"))
                elif pairs[n + i] > self.slip_max:
                    out.append((i, "slip"))
        return out

    def correct(self, u: np.ndarray, failures: list, layout, x_now: np.ndarray, targets: tuple) -> None:
        """Correct in place the control u and the planned states the joints are sent to
        (`targets`: stages 1 and 2) (class docstring): a foot held still gets its measured point
        (x_now) as its target in both stages, and no velocity."""
        for i, kind in failures:
            if kind == "air":
                u[layout.edges(i)] = 0.0
            else:
                u[layout.foot_velocity(i)] = 0.0
                for target in targets:
                    target[layout.foot(i)] = x_now[layout.foot(i)]


def mpc3d_options(model: RobotModel | None = None, **options) -> Mpc3dOptions:
    """Mpc3dOptions from scenario options over the robot's `controller_defaults["mpc"]` (its
    data) over the defaults, validated (unknown keys raise ValueError listing the valid ones).
    kp and kd not given anywhere stay None: the controller derives them from the robot."""
    defaults = dict(model.controller_defaults.get("mpc", {})) if model is not None else {}
    for given, source in ((options, "the scenario"), (defaults, f"{getattr(model, 'name', '')}'s "
                                                                "controller_defaults['mpc']")):
        for old_name, new_name in REPLACED_OPTIONS.items():
            if old_name in given:
                raise ValueError(f"mpc option {old_name!r} (from {source}) is replaced by {new_name} for a 3D "
                                 f"robot, e.g. stage_dts = [0.01, 0.01, 0.01, 0.01, 0.01, 0.025, 0.025, 0.05, 0.05] "
                                 f"(docs/MPC.md)")
    merged = robot_options(model, "mpc", Mpc3dOptions, options, label=" for a 3D robot")
    if isinstance(merged.get("stage_dts"), list):
        merged["stage_dts"] = tuple(merged["stage_dts"])
    try:
        return replace(Mpc3dOptions(), **merged).validate()
    except ValueError as err:  # name the robot when the bad field is its own data
        robot_fields = [k for k in defaults if k not in options]
        if any(str(err).startswith((f"mpc {k} ", f"mpc {k}:")) for k in robot_fields):
            raise ValueError(f"{err} (from {model.name}'s controller_defaults['mpc'])") from None
        raise


def make_mpc3d(model: RobotModel, **options) -> CentroidalMpc:
    """CentroidalMpc from scenario options (`mpc3d_options`)."""
    return CentroidalMpc(model, mpc3d_options(model, **options))
