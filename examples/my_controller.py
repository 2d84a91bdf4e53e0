"""Your own controller under `launch run`, with the full run folder (tables, plots, MCAP, video):

    .venv/bin/python -m launch run hopper-pd --controller examples.my_controller:make
    .venv/bin/python -m launch run go1-stand --controller examples.my_controller:make --set controller_options.kp=80

`launch run` imports 'examples.my_controller' and calls make(model, **controller_options) in the
controller process (run from the folder that holds your module, or install it). The controller
it returns needs `compute(t, q, v, contact) -> (command, phases)`; `prepare()` (work after the
command is sent), `tick_info()` (a dict logged per tick), `solver_ok` (False: the command is a
fallback) and `model` are optional (mpc/controllers.py, "Interface"). This one holds every joint
at its nominal angle with a PD law (3D robots: plus the stance's gravity feed-forward).
"""
from __future__ import annotations

import time

import numpy as np

from mpc.controllers import stance_feedforward
from sim.protocol import JointCommand, actuated_positions


class HoldPose:
    """Joint PD towards the robot's nominal pose (q0), plus the stance's gravity torques for a
    floating base."""

    def __init__(self, model, kp: float = 40.0, kd: float = 1.0):
        if not (kp >= 0 and kd >= 0):
            raise ValueError(f"my_controller: kp and kd must be >= 0, got {kp}, {kd}")
        self.model = model
        joints = actuated_positions(model)
        nu = model.nu
        tau_ff = stance_feedforward(model, model.q0) if model.floating_base else np.zeros(nu)
        self.command = JointCommand(tau_ff, model.q0[joints].copy(), np.zeros(nu), np.full(nu, float(kp)),
                                    np.full(nu, float(kd)))

    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray):
        """The same command every tick; its time as the one phase ("compute", s)."""
        t0 = time.perf_counter()
        return self.command, {"compute": time.perf_counter() - t0}


def make(model, **options) -> HoldPose:
    """The controller for `model`; options: kp (N m/rad), kd (N m s/rad)."""
    return HoldPose(model, **options)
