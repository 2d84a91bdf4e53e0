"""Controllers that run in the controller process and answer each STATE with a COMMAND.

Interface (what `bridge.client.ControllerClient` calls):
    ctrl = make_controller(name, model, **options)
    command, timing = ctrl.compute(t, q, v, contact)
    timing2 = ctrl.prepare()          # optional: work done after the command is sent
    info = ctrl.tick_info()           # optional: non-time per-tick record (iterations, status...)
    ctrl.solver_ok                    # optional: False when this tick's command is a fallback
    ctrl.model                        # the RobotModel it controls
`t` is the simulated time (s), `q` (nq) and `v` (nv) the state as STATE gives it (docs/PROTOCOL.md),
`contact` (nc) bools. `command` is a sim.protocol.JointCommand (one setpoint: tau_ff, q_des, v_des,
kp, kd, each nu long) or a sim.command_plan.JointPlan (K setpoints at stated times, which the plant
follows through missed ticks); `timing` a dict of named phases in seconds (the per-phase
breakdown that `launch profile` tables and plots; the MPC reports acados's phases there).
Controllers: "pd" (StandPD, below), "mpc" (mpc.wholebody.controller.ContactMpc for planar robots,
mpc.centroidal.controller.CentroidalMpc for floating-base 3D robots), and your own as an import
path 'package.module:make' (the robots' convention): `make(model, **options)` returns the
controller (examples/my_controller.py; `launch run SCENARIO --controller examples.my_controller:make`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from robots.model import RobotModel
from sim.protocol import JointCommand, actuated_positions


@dataclass(frozen=True)
class PDOptions:
    """Joint PD stand controller: stiffness kp (N m/rad), damping kd (N m s/rad), gravity
    feed-forward on or off, and rise_s (s): 0 holds the nominal posture q0 from the first tick;
    > 0 moves the joint targets from the joint angles of the first STATE to q0's in rise_s
    (a smoothstep), then holds (stand up from lying)."""

    kp: float = 40.0
    kd: float = 1.0
    gravity_feedforward: bool = True
    rise_s: float = 0.0


def stance_feedforward(model: RobotModel, q: np.ndarray) -> np.ndarray:
    """Joint torques (nu, N m) that hold a floating-base robot static at q on all its feet: the
    minimum-norm contact forces f that carry the base's share of h(q, 0) (J_base^T f = h_base),
    then tau = h_joints - J_joints^T f."""
    from robots import numeric

    fns = numeric(model, verbose=False)
    h = fns.bias(q, np.zeros(model.nv))
    Jn, Jt = fns.contact_jacobians(q)
    J = np.vstack([Jn, Jt])  # every foot's z, x, y velocity rows
    f = np.linalg.lstsq(J[:, :6].T, h[:6], rcond=None)[0]
    return h[6:] - J[:, 6:].T @ f


class StandPD:
    """Hold the nominal posture with a joint PD plus a static feed-forward (PDOptions).

    The feed-forward is B^T h(q0, 0) for planar robots: the joint torque that would hold q0
    against gravity if the body were fixed in the air (on the ground the PD absorbs the
    difference). For a floating base it is `stance_feedforward`: the torques that carry the
    body on all feet at q0.
    """

    name = "pd"

    def __init__(self, model: RobotModel, options: PDOptions = PDOptions()):
        if options.kp < 0 or options.kd < 0:
            raise ValueError(f"pd controller: kp and kd must be >= 0, got kp={options.kp}, kd={options.kd}")
        if not (np.isfinite(options.rise_s) and options.rise_s >= 0):
            raise ValueError(f"pd controller: rise_s must be a finite number of seconds >= 0, got {options.rise_s}")
        from robots import numeric

        self.model = model
        self.options = options
        nu = model.nu
        self._joints_q = actuated_positions(model)
        self._q_des = model.q0[self._joints_q].copy()
        if model.floating_base:
            tau_g = stance_feedforward(model, model.q0)
        else:
            tau_g = model.B.T @ numeric(model, verbose=False).bias(model.q0, np.zeros(model.nv))
        self._tau_ff = np.clip(tau_g, -model.u_max, model.u_max) if options.gravity_feedforward else np.zeros(nu)
        self._command = JointCommand(self._tau_ff, self._q_des, np.zeros(nu), np.full(nu, options.kp),
                                     np.full(nu, options.kd))
        self._start: tuple[float, np.ndarray] | None = None  # (t, joint angles) of the first STATE

    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray) -> tuple[JointCommand, dict]:
        """The stand command (ramped over rise_s from the first STATE's joints); timing has one
        phase, "compute"."""
        t0 = time.perf_counter()
        cmd = self._command
        rise = self.options.rise_s
        if rise > 0:
            if self._start is None:
                self._start = (t, q[self._joints_q].copy())
            t_start, q_start = self._start
            s = min(1.0, max(0.0, (t - t_start) / rise))
            if s < 1.0:
                smooth, rate = s * s * (3 - 2 * s), 6 * s * (1 - s) / rise
                gap = self._q_des - q_start
                cmd = JointCommand(smooth * self._tau_ff, q_start + smooth * gap, rate * gap, cmd.kp, cmd.kd)
        return cmd, {"compute": time.perf_counter() - t0}


def _mpc(model: RobotModel, **options):
    """The contact-implicit MPC: whole-body for planar robots (mpc.wholebody), on the single
    rigid body for floating-base 3D robots (mpc.centroidal)."""
    if model.floating_base:  # imports acados only when the MPC is asked for
        from .centroidal.controller import make_mpc3d

        return make_mpc3d(model, **options)
    from .wholebody.controller import make_mpc

    return make_mpc(model, **options)


CONTROLLERS = {"pd": StandPD, "mpc": _mpc}


def pd_options(model: RobotModel, **options) -> PDOptions:
    """PDOptions: the defaults, then (floating-base robots) the gains derived from the robot
    (`mpc.centroidal.tuning.derived_gains`: go1 60 and 2, anymal_c about 450 and 21), then the
    robot's own `controller_defaults["pd"]`, then `options` (the scenario's)."""
    from .problem import robot_options

    given = robot_options(model, "pd", PDOptions, options)
    derived = {}
    if model.floating_base and model.nc and model.nu:
        from .centroidal.tuning import derived_gains

        try:
            derived = derived_gains(model)
        except ValueError:  # a body the 3D MPC cannot model (e.g. asymmetric feet): PDOptions' gains
            derived = {}
    return PDOptions(**{**derived, **given})


def controller_factory(name: str):
    """The function an import path 'package.module:make' names (make(model, **options) returns a
    controller); ValueError naming the path and the fix."""
    import importlib
    import re

    if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", name):
        raise ValueError(f"controller {name!r}: use 'pd', 'mpc' or an import path 'package.module:make' (a dotted "
                         "module, one ':', a function name)")
    module, _, attr = name.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except ImportError as err:
        raise ValueError(f"controller {name!r}: cannot import {module!r} ({err}); run from the folder that holds "
                         "it, or install it") from None
    except AttributeError:
        raise ValueError(f"controller {name!r}: module {module!r} has no {attr!r}") from None
    if not callable(factory):
        raise ValueError(f"controller {name!r}: {attr!r} is not callable; it must be make(model, **options)")
    return factory


def make_controller(name: str, model: RobotModel, **options):
    """Build the controller called `name` for `model` (options: its dataclass's fields; for an
    import path, the keyword arguments of its make(model, **options)). A controller of an import
    path must have `compute` (module docstring); its `model` is set to `model` if it has none."""
    if ":" in name:
        ctrl = controller_factory(name)(model, **options)
        if not callable(getattr(ctrl, "compute", None)):
            raise ValueError(f"controller {name!r}: make() returned {type(ctrl).__name__}, which has no "
                             "compute(t, q, v, contact) (mpc/controllers.py says what a controller has)")
        if getattr(ctrl, "model", None) is None:
            ctrl.model = model
        return ctrl
    if name not in CONTROLLERS:
        raise ValueError(f"unknown controller {name!r}; available: {', '.join(CONTROLLERS)}, or an import path "
                         "'package.module:make'")
    if name == "pd":
        return StandPD(model, pd_options(model, **options))
    return CONTROLLERS[name](model, **options)
