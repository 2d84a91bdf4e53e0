"""Controllers that run in the controller process and answer each STATE with a COMMAND.

Interface (what `bridge.client.ControllerClient` calls):
    ctrl = make_controller(name, model, **options)
    command, timing = ctrl.compute(t, q, v, contact)
    timing2 = ctrl.prepare()          # optional: work done after the command is sent
    info = ctrl.tick_info()           # optional: non-time per-tick record (iterations, status...)
`command` is a JointCommand; `timing` a dict of named phases in seconds (the per-phase
breakdown that `launch profile` tables and plots; the MPC reports acados's phases there).
Controllers: "pd" (StandPD, below) and "mpc" (mpc.mpc_controller.ContactMpc).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from robots.model import RobotModel
from sim.protocol import JointCommand, actuated_joints


@dataclass(frozen=True)
class PDOptions:
    """Joint PD stand controller: stiffness kp (N m/rad), damping kd (N m s/rad), and the
    posture to hold (default: the robot's nominal q0), with gravity feed-forward."""

    kp: float = 40.0
    kd: float = 1.0
    gravity_feedforward: bool = True


class StandPD:
    """Hold the nominal posture with a joint PD plus static gravity torques.

    The feed-forward B^T h(q0, 0) is the joint torque that would hold q0 against gravity if
    the body were fixed in the air; on the ground the PD absorbs the difference.
    """

    name = "pd"

    def __init__(self, model: RobotModel, options: PDOptions = PDOptions()):
        if options.kp < 0 or options.kd < 0:
            raise ValueError(f"pd controller: kp and kd must be >= 0, got kp={options.kp}, kd={options.kd}")
        from robots import numeric

        self.model = model
        self.options = options
        j = actuated_joints(model)
        nu = model.nu
        self._q_des = model.q0[j].copy()
        tau_g = model.B.T @ numeric(model, verbose=False).bias(model.q0, np.zeros(model.nv))
        self._command = JointCommand(
            np.clip(tau_g, -model.u_max, model.u_max) if options.gravity_feedforward else np.zeros(nu),
            self._q_des, np.zeros(nu), np.full(nu, options.kp), np.full(nu, options.kd))

    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray) -> tuple[JointCommand, dict]:
        """The (constant) stand command; timing has one phase, "compute"."""
        t0 = time.perf_counter()
        cmd = self._command
        return cmd, {"compute": time.perf_counter() - t0}


def _mpc(model: RobotModel, **options):
    from .mpc_controller import make_mpc  # imports acados only when the MPC is asked for

    return make_mpc(model, **options)


CONTROLLERS = {"pd": StandPD, "mpc": _mpc}


def make_controller(name: str, model: RobotModel, **options):
    """Build the controller called `name` for `model` (options: its dataclass's fields)."""
    if name not in CONTROLLERS:
        raise ValueError(f"unknown controller {name!r}; available: {', '.join(CONTROLLERS)}")
    if name == "pd":
        return StandPD(model, PDOptions(**options))
    return CONTROLLERS[name](model, **options)
