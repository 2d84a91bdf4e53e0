"""What the MPC is asked to do: task objects, with validation that names the bad field.

    GaitTask(vx=0.3, apex_height=0.45, period=0.4)   one contact: hop at apex z (m) and speed vx (m/s)
    GaitTask(vx=0.3, period=0.4)                     two or more contacts: a periodic gait (a trot) at vx
    GaitTask(stand=True)                             any legged robot: stand (balance) still in its q0
    PlanTask("plan.npz", joint_ranges=(("hip", -1.2, 1.2),))   track an offline plan over its terrain

A task gives the MPC (`mpc.wholebody.controller.ContactMpc`) what it tracks (`reference`), the joint
ranges it keeps (`joint_limits`), its tracking weights (`weights`) and what a run is measured
against (`targets`, `terrain`). `MpcOptions.task` builds one from a scenario's controller options.

GaitTask: `period` (s) is the length of one cycle of the offline reference gait; it is the only
timing information given: when the feet touch down inside it is decided by the optimizer. The
task's kind follows from the robot's structure, not from its name (`task_kind`): a floating
planar base (coordinates named "x" and "z") with actuators and one contact hops ("hop": the
gait starts at the apex, apex_height applies); with two or more contacts it walks ("gait"). A
stand task (stand=True, any kind) pins the reference to the robot's nominal pose q0: the gait
problem then only finds the contact forces and torques that hold it. The joint ranges the gait
and the MPC keep are the model's own (`RobotModel.q_min`, `q_max`, set by the robot's builder).
`guess_pose` (joint name -> rad) sets joints of the gait optimizer's initial guess (a robot
whose q0 lies outside its joint ranges needs one; robots/library/hopper.py).

PlanTask: the plan file (plan.npz of `python -m launch plan`) carries the trajectory and the
terrain it avoids (`mpc.wholebody.terrain`); `joint_ranges` are the ranges the plan was made
within, kept instead of the model's own.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from robots.model import RobotModel

from .terrain import HoleTerrain, terrain_from_plan

MAX_SPEED = 2.0  # m/s, the largest commanded forward speed we accept
PITCH_LIMIT = 0.3  # rad: |pitch| of a pitching base over the gait (the planar quadruped's number)
Z_MIN_FRACTION = 0.5  # the gait keeps the base above this fraction of its nominal height q0[z]
# hop apex heights, as multiples of the nominal base height q0[z]: [0.36, 0.7] m and 0.45 m for
# a base whose q0[z] is 0.4 m (the foot just touching)
APEX_RANGE = (0.9, 1.75)
APEX_DEFAULT = 1.125
FAR = 1e6  # the bound used for the open side of a one-sided joint range (m or rad: never active)
# tracking a plan: the forward position's weight (10: with the plan re-solved on the MPC's model,
# 10 cleared the three holes of the shipped plan and 30 fell; docs/MPC.md)
PLAN_X_WEIGHT = 10.0


def _pairs(value, width: int, what: str) -> tuple:
    """A {joint: number or [lo, hi]} mapping (TOML, JSON) or a sequence of tuples, as a tuple of
    (joint, number...) tuples of `width`; ValueError naming `what` otherwise."""
    out = []
    try:
        items = value.items() if isinstance(value, Mapping) else [(row[0], row[1:]) for row in value]
        for name, numbers in items:
            numbers = tuple(np.atleast_1d(np.asarray(numbers, dtype=float)).tolist())
            if not isinstance(name, str) or len(numbers) != width - 1 or not np.all(np.isfinite(numbers)):
                raise ValueError
            out.append((name, *numbers))
    except (TypeError, ValueError, IndexError):
        raise ValueError(f"{what} must map joint names to {'an angle' if width == 2 else '[lower, upper]'} "
                         f"(rad), got {value!r}") from None
    return tuple(out)


def _joint_index(model: RobotModel, name: str, what: str) -> int:
    if name not in model.q_names:
        raise ValueError(f"{what} names {name!r}, not a coordinate of {model.name!r}: {list(model.q_names)}")
    return model.q_names.index(name)


def task_kind(model: RobotModel) -> str:
    """"hop" (floating planar base, actuators, one contact) or "gait" (two or more contacts).

    Raises ValueError naming what the robot lacks for a locomotion task."""
    missing = [n for n in ("x", "z") if n not in model.q_names]
    if missing:
        raise ValueError(f"robot {model.name!r} has no floating planar base: the MPC's locomotion task needs "
                         f"coordinates named 'x' and 'z' (slide_x, slide_z joints of the root body), missing "
                         f"{missing}; q = {model.q_names}")
    if model.nu == 0:
        raise ValueError(f"robot {model.name!r} has no actuators: the MPC has nothing to command")
    if model.nc == 0:
        raise ValueError(f"robot {model.name!r} has no contacts: a locomotion task needs feet")
    return "hop" if model.nc == 1 else "gait"


@dataclass(frozen=True)
class GaitTask:
    """Track a periodic reference gait. vx: commanded forward speed, m/s (|vx| <= 2).
    apex_height: base height at the apex of each hop, m (robots that hop, i.e. one contact; None
    for robots that walk; None for a hopping robot means APEX_DEFAULT x its nominal height).
    period: reference gait period, s. stand: stand still in the nominal pose q0 (vx must be 0,
    no apex_height). guess_pose: (joint, rad) pairs of the gait optimizer's initial guess."""

    vx: float = 0.0
    apex_height: float | None = None
    period: float = 0.4
    stand: bool = False
    guess_pose: tuple[tuple[str, float], ...] = ()

    periodic = True  # the reference repeats: the MPC syncs its clock to the measured state

    def __post_init__(self) -> None:
        object.__setattr__(self, "guess_pose", _pairs(self.guess_pose, 2, "guess_pose"))

    def for_model(self, model: RobotModel) -> "GaitTask":
        """This task with the robot's defaults filled in (a hopping robot's apex height)."""
        if self.apex_height is None and task_kind(model) == "hop" and not self.stand:
            return replace(self, apex_height=round(APEX_DEFAULT * _z0(model), 6))
        return self

    def validate(self, model: RobotModel) -> "GaitTask":
        """Raise ValueError naming the bad field and the fix; return self."""
        kind = task_kind(model)
        if not (np.isfinite(self.vx) and abs(self.vx) <= MAX_SPEED):
            raise ValueError(f"task vx must be a speed in [-{MAX_SPEED}, {MAX_SPEED}] m/s, got {self.vx}")
        if not (np.isfinite(self.period) and 0.1 <= self.period <= 2.0):
            raise ValueError(f"task period must be in [0.1, 2.0] s, got {self.period}")
        if self.stand:
            if self.vx != 0 or self.apex_height is not None:
                raise ValueError(f"a stand task keeps {model.name!r} still in its q0: set vx = 0 and no apex_height "
                                 f"(got vx={self.vx}, apex_height={self.apex_height})")
        elif kind == "hop":
            lo, hi = (round(f * _z0(model), 6) for f in APEX_RANGE)
            if self.apex_height is None or not (lo <= self.apex_height <= hi):
                raise ValueError(f"{model.name} task apex_height must be in [{lo:g}, {hi:g}] m (base height at the "
                                 f"top of a hop), got {self.apex_height}")
        elif self.apex_height is not None:
            raise ValueError(f"apex_height only applies to hopping robots (one contact); remove it for {model.name!r}")
        for name, _ in self.guess_pose:
            _joint_index(model, name, "guess_pose")
        return self

    @property
    def targets(self) -> dict:
        """What a run is measured against: "vx" (m/s) and, for a hop, "apex_height" (m)."""
        return {"vx": self.vx} if self.apex_height is None else {"apex_height": self.apex_height, "vx": self.vx}

    def terrain(self) -> HoleTerrain | None:
        """None: a gait runs on flat ground."""
        return None

    def reference(self, problem, *, verbose: bool = True):
        """(gait, reference): the periodic gait on `problem`'s model
        (`mpc.wholebody.gaits.periodic_gait`, cached) and its Fourier series."""
        from ..reference import FourierReference
        from .gaits import periodic_gait  # mpc.wholebody.gaits builds on this module

        gait = periodic_gait(problem.model, self, problem.options, verbose=verbose)
        return gait, FourierReference.fit(gait)

    def weights(self, model: RobotModel, weights):
        """The MPC's tracking weights for this task: `weights` as they are."""
        return weights

    def joint_limits(self, model: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices in q, lower, upper) of the joint ranges this task keeps: the model's finite
        q_min/q_max (m or rad; an open side becomes +-FAR)."""
        finite = np.isfinite(model.q_min) | np.isfinite(model.q_max)
        idx = np.flatnonzero(finite)
        lo = np.where(np.isfinite(model.q_min), model.q_min, -FAR)[idx]
        hi = np.where(np.isfinite(model.q_max), model.q_max, FAR)[idx]
        return idx.astype(int), lo.astype(float), hi.astype(float)

    def apex_state(self, model: RobotModel) -> np.ndarray:
        """A trivial initial-guess state: nominal pose (a hopping robot at the apex), joints at
        guess_pose, moving forward at vx."""
        q = model.q0.copy()
        if self.stand:
            return np.concatenate([q, np.zeros(model.nv)])
        if task_kind(model) == "hop":
            q[model.q_names.index("z")] = self.apex_height
        for name, angle in self.guess_pose:
            q[_joint_index(model, name, "guess_pose")] = angle
        v = np.zeros(model.nv)
        v[model.q_names.index("x")] = self.vx
        return np.concatenate([q, v])

    def gait_constraints(self, ocp, X: list, U: list) -> tuple[list, list, list]:
        """Periodicity, start pose and joint ranges of the gait problem, as (g, lbg, ubg)."""
        model = ocp.model
        nq = model.nq
        n = len(U)
        ix, iz = model.q_names.index("x"), model.q_names.index("z")
        g, lb, ub = [], [], []
        shift = np.zeros(ocp.nx)
        shift[ix] = self.vx * self.period
        g += [X[n] - X[0] - shift, X[0][ix]]  # periodic, starting at x = 0
        lb += [np.zeros(ocp.nx), 0.0]
        ub += [np.zeros(ocp.nx), 0.0]
        if self.stand:  # every stage at rest in q0 (x = 0): only forces and torques are free
            for k in range(n + 1):
                g += [X[k]]
                lb += [np.concatenate([model.q0, np.zeros(model.nv)])]
                ub += [np.concatenate([model.q0, np.zeros(model.nv)])]
        elif task_kind(model) == "hop":
            g += [X[0][iz], X[0][nq + iz]]  # at the apex: z = apex height, vertical speed 0
            lb += [self.apex_height, 0.0]
            ub += [self.apex_height, 0.0]
        idx, lo, hi = self.joint_limits(model)
        for k in range(1, n + 1):
            g += [X[k][list(idx)], X[k][iz]]
            lb += [lo, Z_MIN_FRACTION * model.q0[iz]]
            ub += [hi, np.inf]
        if "pitch" in model.q_names:
            ipitch = model.q_names.index("pitch")
            g += [ca.vertcat(*[X[k][ipitch] for k in range(n + 1)])]
            lb += [np.full(n + 1, -PITCH_LIMIT)]
            ub += [np.full(n + 1, PITCH_LIMIT)]
        return g, lb, ub


def _z0(model: RobotModel) -> float:
    return float(model.q0[model.q_names.index("z")])


@dataclass(frozen=True)
class PlanTask:
    """Track an offline plan: `plan`, the path of its file (plan.npz of `python -m launch plan`;
    its time axis is the plant's, starting at t = 0), whose terrain it keeps out of;
    joint_ranges: (joint, lower, upper) in rad, the ranges the plan was made within, kept
    instead of the model's own (None: the model's)."""

    plan: str
    joint_ranges: tuple[tuple[str, float, float], ...] | None = None

    periodic = False  # the reference's clock is the plant's: no phase to sync

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", str(self.plan))
        if self.joint_ranges is not None:
            ranges = _pairs(self.joint_ranges, 3, "plan_joint_ranges")
            bad = [r for r in ranges if not r[1] <= r[2]]
            if bad:
                raise ValueError(f"plan_joint_ranges must be [lower, upper] with lower <= upper, got {bad}")
            object.__setattr__(self, "joint_ranges", ranges)

    def for_model(self, model: RobotModel) -> "PlanTask":
        """This task (a plan has no defaults to fill in)."""
        return self

    def validate(self, model: RobotModel) -> "PlanTask":
        """Raise ValueError unless `model` can track a plan (`task_kind`), the plan file exists
        and the joint ranges name joints of `model`; return self."""
        from .plan_transcription import require_plan_file

        task_kind(model)
        require_plan_file(self.plan)
        for name, *_ in self.joint_ranges or ():
            _joint_index(model, name, "plan_joint_ranges")
        return self

    @property
    def targets(self) -> dict:
        """{}: a plan has no apex or speed target."""
        return {}

    def terrain(self) -> HoleTerrain | None:
        """The holes the plan file avoids, None for a plan over flat ground."""
        return terrain_from_plan(self.plan, required=False)

    def reference(self, problem, *, verbose: bool = True):
        """(None, reference): the plan re-solved on `problem`'s model, its holes as constraints
        (`mpc.wholebody.plan_transcription.transcribe_plan`, cached)."""
        from robots.codegen import default_cache_dir

        from .plan_transcription import transcribe_plan

        return None, transcribe_plan(problem, self.plan, cache=default_cache_dir() / "plans", verbose=verbose)

    def joint_limits(self, model: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices in q, lower, upper) of joint_ranges (rad), or the model's own (GaitTask's)."""
        if self.joint_ranges is None:
            return GaitTask().joint_limits(model)
        idx = np.array([_joint_index(model, name, "plan_joint_ranges") for name, *_ in self.joint_ranges], dtype=int)
        lo, hi = (np.array([r[i] for r in self.joint_ranges], dtype=float) for i in (1, 2))
        return idx, lo, hi

    def weights(self, model: RobotModel, weights):
        """`weights` with the forward position's at PLAN_X_WEIGHT: where the feet land matters."""
        w_x = weights.w_x.copy()
        w_x[model.q_names.index("x")] = PLAN_X_WEIGHT
        return replace(weights, w_x=w_x)
