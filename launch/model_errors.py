"""Plant-side model errors of a scenario: the plant differs from the model the controller uses.

A scenario's error fields (launch/scenario.py) act in two places, the same in `launch run`
(two processes over the bridge) and in a sweep's in-process episodes (launch/episode.py):

- the plant's robot: `plant_robot(scenario)` builds the robot with changed parameters through
  its builder (`get_robot(name, **params)`): mass_scale multiplies every mass parameter (`m`,
  `m_*`, kg), inertia_scale every rotational inertia (`I`, `I_*`, kg m^2), friction_mu replaces
  `mu`, ground_stiffness_scale multiplies `k_contact` (N/m; the damping stays; compliant plants
  only, COMPLIANT_PLANTS). The built-in
  hopper and quadruped name their parameters so; a robot without the parameter an error needs
  is refused with the parameter's name. The controller is always built from the nominal robot.
- between plant and controller: `with_model_errors(controller, scenario)` wraps the controller
  so that it sees q and v with Gaussian noise (std sensor_noise_q in m or rad, sensor_noise_v
  in m/s or rad/s, drawn from a generator seeded with the scenario's seed) and so that the
  command it computes at tick k is applied at tick k + command_latency_ticks (until the first
  delayed command is due, the plant applies the first one, as if the controller had been
  running before the start).
"""
from __future__ import annotations

import copy

import numpy as np

MAX_SCALE = 10.0  # largest mass, inertia or stiffness factor a scenario may ask for
MAX_LATENCY_TICKS = 100  # longest command delay, control ticks
# plants whose contact law uses the robot's contact stiffness (ground_stiffness_scale acts there only:
# the hybrid and NMDP plants are rigid, MuJoCo keeps its own soft contact)
COMPLIANT_PLANTS = ("ess",)


def _is_mass(key: str) -> bool:
    return key == "m" or key.startswith("m_")


def _is_inertia(key: str) -> bool:
    return key == "I" or key.startswith("I_")


def plant_robot_params(scenario) -> dict:
    """Builder parameters (name -> value, SI units) that give the plant's robot the scenario's
    model errors; {} when there are none. Raises ValueError naming the error field whose robot
    parameter the robot does not have."""
    errors = {"mass_scale": scenario.mass_scale != 1.0, "inertia_scale": scenario.inertia_scale != 1.0,
              "friction_mu": scenario.friction_mu is not None,
              "ground_stiffness_scale": scenario.ground_stiffness_scale != 1.0}
    if not any(errors.values()):
        return {}
    from robots import get_robot

    nominal = dict(get_robot(scenario.robot).params)
    changes: dict = {}
    wanted = {"mass_scale": ([k for k in nominal if _is_mass(k)], "mass parameters m or m_*"),
              "inertia_scale": ([k for k in nominal if _is_inertia(k)], "inertia parameters I or I_*"),
              "friction_mu": (["mu"] if "mu" in nominal else [], "a friction parameter mu"),
              "ground_stiffness_scale": (["k_contact"] if "k_contact" in nominal else [],
                                         "a contact stiffness parameter k_contact")}
    for field, active in errors.items():
        if not active:
            continue
        keys, what = wanted[field]
        if not keys:
            raise ValueError(f"{field}: robot {scenario.robot!r} has no {what} (its parameters: "
                             f"{', '.join(sorted(nominal)) or 'none'}); leave {field} nominal for this robot")
        for key in keys:
            if field == "friction_mu":
                changes[key] = float(scenario.friction_mu)
            else:
                changes[key] = float(nominal[key]) * float(getattr(scenario, field))
    return changes


def plant_robot(scenario):
    """The RobotModel the scenario's plant simulates: the nominal robot with the scenario's
    mass, inertia, friction and ground-stiffness errors (the nominal one without errors)."""
    from robots import get_robot

    return get_robot(scenario.robot, **plant_robot_params(scenario))


class ModelErrorController:
    """A controller seen through sensor noise and command latency (module docstring).

    compute(t, q, v, contact) passes noisy q, v to the wrapped controller and returns the
    command it computed `latency_ticks` calls earlier with this call's phases; every other
    attribute (prepare, tick_info, predicted_q, model) is the wrapped controller's."""

    def __init__(self, controller, *, latency_ticks: int = 0, noise_q: float = 0.0, noise_v: float = 0.0,
                 seed: int = 0):
        self.inner = controller
        self.latency_ticks = int(latency_ticks)
        self.noise_q, self.noise_v = float(noise_q), float(noise_v)
        self.rng = np.random.default_rng(seed)
        self._sent: list = []  # commands computed, oldest first, not yet applied

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def compute(self, t: float, q: np.ndarray, v: np.ndarray, contact: np.ndarray):
        """The wrapped controller's command of `latency_ticks` ticks ago (the first one until
        then), computed from this tick's q and v plus noise; phases of this tick (s)."""
        if self.noise_q:
            q = q + self.rng.normal(0.0, self.noise_q, q.shape)
        if self.noise_v:
            v = v + self.rng.normal(0.0, self.noise_v, v.shape)
        cmd, phases = self.inner.compute(t, q, v, contact)
        if not self.latency_ticks:
            return cmd, phases
        self._sent.append(copy.deepcopy(cmd))  # a controller may reuse its command's arrays
        if len(self._sent) > self.latency_ticks:
            return self._sent.pop(0), phases
        return self._sent[0], phases


def with_model_errors(controller, scenario):
    """`controller` wrapped in ModelErrorController for the scenario's latency and sensor noise,
    or itself when the scenario has neither."""
    if not (scenario.command_latency_ticks or scenario.sensor_noise_q or scenario.sensor_noise_v):
        return controller
    return ModelErrorController(controller, latency_ticks=scenario.command_latency_ticks,
                                noise_q=scenario.sensor_noise_q, noise_v=scenario.sensor_noise_v, seed=scenario.seed)
