"""The contact-implicit MPC controller (acados SQP-RTI), behind the controller interface.

    ctrl = ContactMpc(model, MpcOptions(vx=0.3, apex_height=0.45))
    command, phases = ctrl.compute(t, q, v, contact)   # feedback phase at the measured state
    phases2 = ctrl.prepare()                            # after the command is sent: shift + linearize
    info = ctrl.tick_info()                             # iterations, status, deadline, planned touchdown

Per tick: the measured state and the gait clock tau = t + offset go into stage 0, the QP is
solved (feedback), the first stage's torques are sent as feed-forward with the predicted next
joint positions/velocities as impedance set-points, with the plan's next stages as setpoints
that the plant follows through missed ticks (`command_horizon_s`). If the solver fails, the
previous plan's next stages are sent instead (the best command available) and `solver_ok` is
False, which the COMMAND's report flags (the plant counts the tick missed, cause `solver`); the
controller never blocks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from robots.model import RobotModel
from sim.command_plan import JointPlan
from sim.protocol import JointCommand, actuated_joints

from ..acados.rti import CostWeights, RtiOptions, RtiSolver
from ..acados.stage_pairs import StagePairs
from ..problem import OcpOptions, robot_options
from .ocp import ContactOcp
from .tasks import GaitTask, PlanTask

# tracking an offline plan (docs/MPC.md, "Tracking an offline plan"): the SQP-RTI iterations at
# the plan's start before the first tick (see __init__)
PLAN_PRESOLVE_ITERATIONS = 40
DEFAULT_VX = 0.3  # m/s, the forward speed of a walking or hopping task when none is given
TOUCHDOWN_LOAD = 0.2  # weights: a foot whose planned normal force exceeds this is in contact (touchdown records)


@dataclass(frozen=True)
class MpcOptions:
    """Everything the MPC controller is configured by (scenario `controller_options`, over the
    robot's `controller_defaults["mpc"]`: `mpc_options`).

    Task (`task`, see mpc.wholebody.tasks): vx (m/s), apex_height (m, hopping robots: one
    contact), period (s, reference gait), stand (stand still in q0; vx must be 0), guess_pose ({joint: rad} of the
    gait optimizer's initial guess); or plan, with plan_joint_ranges ({joint: [lower, upper]}, rad).
    OCP: dt (s per stage; equal to the control period so that the warm start shifts by one
    stage), n_stages, sigma, sigma_friction (relaxations, see mpc.wholebody.ocp).
    Solver: qp_iter_max, qp_tol, cond_n (partial condensing horizon), hpipm_mode.
    z_l1: L1 penalty on the complementarity slacks (in tracking-cost units). Too low and the
    QP buys "ghost" contact forces through the slacks (a foot pushing while in the air): at 100
    the quadruped fell that way on three plants; 1000 keeps them out (docs/MPC.md).
    Command: kp (N m/rad), kd (N m s/rad) of the joint impedance around the predicted next state.
    deadline_s: per-tick compute budget (s); a feedback that exceeds it counts as a miss.
    inject_delay_s: test hook, sleep this long inside the feedback (simulates a solver timeout).
    command_horizon_s: how far ahead each COMMAND carries the plan (s): its next stages, one per
    control period, which the plant follows through missed ticks (sim/command_plan.py); 0: one
    setpoint (the plain command).
    plan: path of an offline plan (plan.npz of `python -m launch plan`) to track instead of a
    periodic gait; its time axis is the plant's time (the plan starts at t = 0).
    plan_joint_ranges: the joint ranges the plan was made within, kept instead of the model's.
    """

    vx: float | None = None  # None: DEFAULT_VX, or 0 for a stand task
    apex_height: float | None = None
    period: float = 0.4
    dt: float = 0.01
    n_stages: int = 30
    sigma: float = 1e-4
    sigma_friction: float = 1e-3
    qp_iter_max: int = 50
    qp_tol: float = 1e-3
    cond_n: int | None = 10
    hpipm_mode: str = "BALANCE"
    kp: float = 5.0
    kd: float = 0.5
    z_l1: float = 100.0
    deadline_s: float = 0.009
    inject_delay_s: float = 0.0
    command_horizon_s: float = 0.15
    plan: str | None = None
    stand: bool = False
    guess_pose: tuple[tuple[str, float], ...] = ()
    plan_joint_ranges: tuple[tuple[str, float, float], ...] | None = None

    def __post_init__(self) -> None:  # the pose and the ranges as tuples ({joint: ...} in TOML and JSON)
        object.__setattr__(self, "guess_pose", GaitTask(guess_pose=self.guess_pose).guess_pose)
        if self.plan_joint_ranges is not None:
            object.__setattr__(self, "plan_joint_ranges", PlanTask("", self.plan_joint_ranges).joint_ranges)

    def validate(self) -> "MpcOptions":
        """Raise ValueError naming the bad field; return self."""
        if not (self.kp >= 0 and self.kd >= 0):
            raise ValueError(f"mpc kp and kd must be >= 0, got kp={self.kp}, kd={self.kd}")
        if not self.deadline_s > 0:
            raise ValueError(f"mpc deadline_s must be > 0 s, got {self.deadline_s}")
        if not (isinstance(self.command_horizon_s, (int, float)) and 0 <= self.command_horizon_s <= 1.0):
            raise ValueError(f"mpc command_horizon_s must be a number in [0, 1] s, got {self.command_horizon_s!r}")
        if not (isinstance(self.qp_iter_max, int) and self.qp_iter_max >= 1):
            raise ValueError(f"mpc qp_iter_max must be an integer >= 1, got {self.qp_iter_max!r}")
        if not self.z_l1 > 0:
            raise ValueError(f"mpc z_l1 (slack penalty) must be > 0, got {self.z_l1}")
        if self.plan_joint_ranges is not None and self.plan is None:
            raise ValueError("mpc plan_joint_ranges apply to a plan: give plan too, or remove them")
        if self.n_stages * self.dt < 0.1:
            raise ValueError(f"mpc horizon n_stages * dt = {self.n_stages * self.dt:.3f} s is too short; use >= 0.1 s")
        return self

    @property
    def task(self) -> GaitTask | PlanTask:
        """What the MPC is asked to do: a PlanTask with a plan, else a GaitTask (hop, walk, stand)."""
        if self.plan is not None:
            return PlanTask(self.plan, self.plan_joint_ranges)
        vx = self.vx if self.vx is not None else 0.0 if self.stand else DEFAULT_VX
        return GaitTask(vx=vx, apex_height=self.apex_height, period=self.period, stand=self.stand,
                        guess_pose=self.guess_pose)

    @property
    def ocp(self) -> OcpOptions:
        """The OCP discretization part."""
        return OcpOptions(dt=self.dt, n_stages=self.n_stages, sigma=self.sigma, sigma_friction=self.sigma_friction)


def default_weights(problem: ContactOcp) -> CostWeights:
    """Tracking weights: base height/pitch and joints tight, forward position loose (speed
    matters, not where the robot is), velocities moderate, torques and contact variables
    lightly regularised towards the gait."""
    m = problem.model
    nq = m.nq
    w_x = np.zeros(problem.nx)
    for i, name in enumerate(m.q_names):
        w_x[i] = {"x": 1.0, "z": 100.0, "pitch": 100.0}.get(name, 10.0)
        w_x[nq + i] = {"x": 10.0, "z": 1.0, "pitch": 1.0}.get(name, 0.1)
    w_u = np.full(problem.nu, 1e-3)
    return CostWeights(w_x=w_x, w_u=w_u)


class ContactMpc:
    """Contact-implicit MPC tracking its task's reference: a periodic gait or a plan (see module
    docstring and mpc.wholebody.tasks)."""

    name = "mpc"

    def __init__(self, model: RobotModel, options: MpcOptions = MpcOptions(), *, verbose: bool = True):
        options.validate()
        if not model.name.isidentifier():
            raise ValueError(f"robot name {model.name!r}: the MPC names its generated C code after the robot, so the "
                             "name must be a C identifier (letters, digits, '_'); name the model e.g. "
                             f"{''.join(c if c.isalnum() else '_' for c in model.name)!r}")
        task = options.task.for_model(model).validate(model)
        self.model, self.options, self.task = model, options, task
        self.problem = ContactOcp(model, options.ocp)
        # a periodic gait (self.gait) and its reference, or a plan re-solved on this MPC's model
        # (contact forces included; docs/MPC.md) and no gait
        self.gait, self.reference = task.reference(self.problem, verbose=verbose)
        weights = task.weights(model, replace(default_weights(self.problem), z_l1=options.z_l1))
        self.rti = RtiSolver(self.problem, self.reference, weights,
                             RtiOptions(qp_iter_max=options.qp_iter_max, qp_tol=options.qp_tol,
                                        cond_n=options.cond_n, hpipm_mode=options.hpipm_mode),
                             joint_limits=task.joint_limits(model), verbose=verbose)
        self.joints = actuated_joints(model)
        self.offset: float | None = None
        self._plan_x = self._plan_u = None  # the iterate of the last successful feedback (fallback plan)
        self._tick_ok = False
        self._fn_cols = self.problem.fn_columns  # a slice: a view, where a list index copies
        self._kp = np.full(len(self.joints), options.kp)
        self._kd = np.full(len(self.joints), options.kd)
        self._kp.flags.writeable = self._kd.flags.writeable = False  # sent by every command, never copied
        self._jq = np.asarray(self.joints, dtype=np.intp)  # positions (then velocities) of the actuated joints in x
        self._jv = self._jq + model.nq
        self._u_min = -model.u_max
        self._ref_touchdowns = None  # plant times (s) of the reference gait's touchdowns in one period
        self._fallback_k = 0
        self._info: dict = {}
        self._executed = None
        self._pairs = StagePairs(self.problem, lib_name=f"cimpc_pairs_{model.name}")
        # warm up (first-call allocations) so that the first real tick costs what every tick costs
        x_ref = self.reference.x_at(0.0)[0]
        self.rti.initialize(x_ref, 0.0)
        self.rti.prepare()
        self.rti.feedback(np.append(x_ref, 0.0))
        self._presolved = False
        if not task.periodic:
            # the first tick starts from iterations at the plan's own start (the robot starts
            # there; its clock is the plant's), not from one real-time iteration from the
            # reference: from the plan file's force-free reference that one iteration commanded
            # 24 N m against the plan's 6.7 and folded the leg; from the re-solved one the loop
            # also clears the holes without this, ending at x = 3.11 instead of 3.04 (docs/MPC.md)
            for _ in range(PLAN_PRESOLVE_ITERATIONS - 1):
                self.rti.prepare()
                self.rti.feedback(np.append(x_ref, 0.0))
            self.rti.prepare()
            self._presolved = True
        self.rti.take_stats()

    # -- phase ------------------------------------------------------------------------------
    def _sync_phase(self, t: float, x: np.ndarray) -> float:
        """Gait-clock offset whose reference state is closest to x (height, vertical speed, joints);
        0 for a plan (its clock is the plant's)."""
        if self.gait is None:
            return 0.0
        taus = np.linspace(0.0, self.gait.period, 200, endpoint=False)
        ref = self.reference.x_at(taus)
        nq = self.model.nq
        w = np.zeros(self.problem.nx)
        w[1], w[nq + 1] = 100.0, 1.0
        w[2:nq] = 1.0
        cost = ((ref - x) ** 2 * w)[:, 1:].sum(axis=1)
        return float(taus[np.argmin(cost)] - t)

    # -- controller interface ---------------------------------------------------------------
    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray) -> tuple[JointCommand, dict]:
        """Feedback phase at (t, q, v); returns the command and its phases (s)."""
        t0 = time.perf_counter()
        nq = self.model.nq
        x0 = np.empty(self.problem.nx + 1)  # (q, v, gait clock)
        x0[:nq], x0[nq:-1] = q, v
        x = x0[:-1]
        if self.offset is None:
            self.offset = self._sync_phase(t, x)
            if not self._presolved:
                self.rti.initialize(x, t + self.offset)
                self.rti.prepare()
            self.rti.take_stats()
        tau = x0[-1] = t + self.offset
        status = self.rti.feedback(x0)
        if self.options.inject_delay_s:
            time.sleep(self.options.inject_delay_s)
        stats = self.rti.take_stats()
        elapsed = time.perf_counter() - t0
        self._tick_ok = status in (0, 2)
        if self._tick_ok:
            xs, us = self.rti.iterate()
            self._plan_x, self._plan_u = xs, us = xs.copy(), us.copy()  # kept as the fallback plan
            u0, x1 = us[0], xs[1]
            self._fallback_k = 0
        elif self._plan_u is not None and self._fallback_k + 1 < len(self._plan_u):
            self._fallback_k += 1  # the previous plan's next stage: the best command we have
            u0, x1 = self._plan_u[self._fallback_k], self._plan_x[self._fallback_k + 1]
        else:
            u0 = np.clip(self.reference.u_at(tau)[0], self.problem.u_lb, self.problem.u_ub)
            x1 = np.append(self.reference.x_at(tau + self.options.dt)[0], tau)
        u_max = self.model.u_max
        cmd = JointCommand(np.minimum(np.maximum(u0[: self.problem.n_tau], self._u_min), u_max),  # np.clip: ~4 us
                           x1[self._jq], x1[self._jv], self._kp, self._kd)
        k = min(1 + int(round(self.options.command_horizon_s / self.options.dt)),
                len(self._plan_u) - self._fallback_k if self._plan_u is not None else 1)
        if k > 1 and (self._tick_ok or self._fallback_k):  # the plan's next stages, one per period
            j0 = self._fallback_k
            us_k, xs_k = self._plan_u[j0:j0 + k], self._plan_x[j0 + 1:j0 + 1 + k]
            cmd = JointPlan(self.options.dt * np.arange(k),
                            np.minimum(np.maximum(us_k[:, : self.problem.n_tau], self._u_min), u_max),
                            xs_k[:, self._jq], xs_k[:, self._jv], self._kp, self._kd)
        self._executed = (x, u0)
        self._info = {"status": int(status), "sqp_iter": stats["sqp_iter"], "qp_iter": stats["qp_iter"],
                      "deadline_s": self.options.deadline_s,
                      "slack_s": self.options.deadline_s - elapsed,
                      "gait_clock_s": tau}
        phases = {"feedback": elapsed, "fb_tot": stats["time_tot"], "fb_qp": stats["time_qp"]}
        return cmd, phases

    @property
    def solver_ok(self) -> bool:
        """False when this tick's QP failed and the command is a fallback."""
        return self._tick_ok

    def prepare(self) -> dict:
        """Shift the plan one stage (after a failed QP: restart from the reference) and run the
        preparation phase; returns its phases (s)."""
        t0 = time.perf_counter()
        x, u0 = self._executed
        if self._tick_ok:  # the iterate was read in compute()
            xs, us = self._plan_x, self._plan_u
            t_plan = self._planned_touchdown(xs, us)
            self._info["touchdown_vs_ref_s"] = self._touchdown_vs_reference(t_plan, xs[0, -1])
            self.rti.shift()  # the iterate of this tick's feedback (xs, us)
        else:
            t_plan = self._info["touchdown_vs_ref_s"] = float("nan")
            self.rti.restart(x, self._info["gait_clock_s"] + self.options.dt)
        self._info["touchdown_plan_s"] = t_plan
        # the stage just sent: its largest |a b| and which pair (ocp.PAIR_NAMES) with its a, b
        self._info.update(self._pairs.worst(x, u0))
        self.rti.prepare()
        stats = self.rti.take_stats()
        return {"prepare": time.perf_counter() - t0, "prep_time_tot": stats["time_tot"],
                "prep_time_lin": stats["time_lin"]}

    def _planned_touchdown(self, xs: np.ndarray, us: np.ndarray) -> float:
        """Gait-clock-free planned time (s, plant time) of the plan's next touchdown (the first
        stage where some foot's load goes from below TOUCHDOWN_LOAD to above it), or nan."""
        if self.offset is None:
            return float("nan")
        onset = self._load_onsets(us)
        i = int(onset.argmax())  # flat, stage-major: the first hit is the earliest stage
        if not onset.flat[i]:
            return float("nan")
        return float(xs[0, -1] - self.offset + (i // self.model.nc + 2) * self.options.dt)

    def _load_onsets(self, us: np.ndarray) -> np.ndarray:
        """(stages - 1) x contacts: does contact i's normal force (weights) rise from at most
        TOUCHDOWN_LOAD at stage k to above it at stage k + 1? The touchdown rule of the plan
        and of the reference alike."""
        loaded = us[:, self._fn_cols] > TOUCHDOWN_LOAD
        return loaded[1:] > loaded[:-1]

    def _touchdown_vs_reference(self, t_plan: float, tau: float) -> float:
        """Planned touchdown time minus the nearest touchdown (of any foot) of the reference gait
        (s), both in plant time and by the rule of `_planned_touchdown` (the reference's forces
        on the stage grid of the gait clock): 0 means the plan keeps the reference's schedule.
        nan when there is no planned touchdown or when tracking a plan."""
        if self.gait is None or not np.isfinite(t_plan):
            return float("nan")
        period, dt = self.gait.period, self.options.dt
        if self._ref_touchdowns is None:  # once: the reference's touchdowns over one period
            n = max(1, int(round(period / dt)))
            onset = np.flatnonzero(self._load_onsets(self.reference.u_at(tau + dt * np.arange(n + 1))).any(axis=1))
            self._ref_touchdowns = (tau - self.offset + (onset + 2) * dt).tolist()
        # a few touchdowns per period: plain Python beats numpy's per-call cost here
        d = [(t_plan - t_ref + 0.5 * period) % period - 0.5 * period for t_ref in self._ref_touchdowns]
        return min(d, key=abs) if d else float("nan")

    def tick_info(self) -> dict:
        """Non-time per-tick record: solver status, iterations, deadline, slack, planned touchdown."""
        return dict(self._info)

    def predicted_q(self) -> np.ndarray | None:
        """The configurations (stages x nq; m, rad) of this tick's plan, None after a failed QP
        (the run folder's controller_horizon.npz; the animation draws them as a ghost)."""
        return self._plan_x[:, : self.model.nq].copy() if self._tick_ok and self._plan_x is not None else None


def mpc_options(model: RobotModel, **options) -> MpcOptions:
    """MpcOptions from scenario options (unknown keys raise ValueError listing the valid ones):
    MpcOptions' defaults, then the robot's `controller_defaults["mpc"]` (its tuning), then `options`."""
    return replace(MpcOptions(), **robot_options(model, "mpc", MpcOptions, options))


def make_mpc(model: RobotModel, **options) -> ContactMpc:
    """ContactMpc from scenario options, resolved by `mpc_options`."""
    return ContactMpc(model, mpc_options(model, **options))
