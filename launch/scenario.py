"""Scenarios: what a closed-loop run is (robot, plant, controller, rates, duration, seed).

Named scenarios live in launch/scenarios/<name>.toml; `load_scenario` also takes a path.
Command-line overrides are applied with `with_overrides`, validated once, and the final
scenario is saved into the run folder (scenario.json).

`robot` is a robot name (`python -m launch robots`: built-in or an installed package's entry
point) or an import path "package.module:build" (docs/ROBOTS.md). The run's plant and
controller are child processes started in the same folder with the same environment: the
module must be importable from there (the current folder or PYTHONPATH), not only through
sys.path changes made inside a Python script, and a name given to `register_robot` in this
process is unknown to them (use its import path).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path


SCENARIO_DIR = Path(__file__).parent / "scenarios"


# Each Scenario field's unit and meaning, for `python -m launch scenarios` and docs/SCENARIOS.md
# (launch/scenario_table.py); a field without an entry fails there and in tests/test_cli.py.
FIELD_DOCS: dict[str, tuple[str, str]] = {
    "name": ("", "the scenario's name (run folders are named after it)"),
    "robot": ("", "a shipped robot (python -m launch robots) or module:function returning a RobotModel"),
    "plant": ("", "ess, nmdp, hybrid, mujoco or a baseline plant"),
    "controller": ("", "pd (stand) or mpc (the contact-implicit MPC)"),
    "mode": ("", "lockstep (simulated time, the plant waits) or realtime (wall clock, deadlines)"),
    "duration_s": ("s", "simulated time of the run"),
    "control_rate_hz": ("Hz", "STATE/COMMAND exchanges per second"),
    "plant_rate_hz": ("Hz", "the plant's joint-impedance and largest integration rate"),
    "hold_ticks": ("ticks", "how long the last setpoint is held after a missed tick, past any plan it carries"),
    "seed": ("", "seed of sensor noise and chaos draws"),
    "drop_m": ("m", "start this far above the nominal height"),
    "push_ns": ("N s", "impulse on the base (0: none)"),
    "push_axis": ("", "x, y (horizontal) or z (vertical)"),
    "push_at_s": ("s", "when the push comes (empty: mid-run)"),
    "start_pose": ("", "a pose of the robot's params['poses'] to start from (empty: nominal q0)"),
    "mass_scale": ("", "plant model error: multiplies every mass"),
    "inertia_scale": ("", "plant model error: multiplies every rotational inertia"),
    "friction_mu": ("", "plant model error: the friction coefficient (empty: the robot's)"),
    "ground_stiffness_scale": ("", "plant model error: multiplies the contact stiffness"),
    "command_latency_ticks": ("ticks", "every command reaches the plant this many ticks late"),
    "sensor_noise_q": ("m, rad", "standard deviation of noise on the q the controller sees"),
    "sensor_noise_v": ("m/s, rad/s", "standard deviation of noise on the v the controller sees"),
    "rt_priority": ("", "realtime only: SCHED_FIFO priority of both processes (0: normal scheduler)"),
    "stall_ms": ("ms", "chaos: the controller stalls this long before answering (sim/chaos.py)"),
    "stall_prob": ("", "chaos: the fraction of ticks a stall starts at"),
    "transport_delay_ms": ("ms", "chaos: each COMMAND spends this long more in transit"),
    "sensors": ("", "what STATE carries: full (the true state) or hardware (encoders, IMU, foot forces; the controller estimates its base state: docs/ESTIMATION.md)"),
    "sensor_noise_scale": ("", "hardware sensors: multiplies every noise and bias of the robot's sensor data (0: exact)"),
    "controller_options": ("", "the controller's options ([controller_options] table; docs/MPC.md)"),
    "plant_options": ("", "the plant's options ([plant_options] table)"),
}


@dataclass(frozen=True)
class Scenario:
    """A closed-loop run. Rates in Hz, times in s, drop_m in m (start height above nominal),
    push_ns: impulse on the base, N s (0 = none), along push_axis ("x", "y" horizontal, "z"
    vertical) at push_at_s (None: mid-run). start_pose: "" starts from the robot's nominal q0;
    a name of the robot's params["poses"] (e.g. "lying" for the 3D quadrupeds) starts from
    those joint angles, the base level and resting on its lowest contact.

    Plant-side model errors (launch/model_errors.py; the controller's model stays nominal):
    mass_scale and inertia_scale multiply the plant robot's masses and rotational inertias,
    friction_mu replaces its friction coefficient (None: the robot's own), ground_stiffness_scale
    multiplies its contact stiffness; command_latency_ticks delays every command by that many
    control ticks; sensor_noise_q (m, rad) and sensor_noise_v (m/s, rad/s) are the standard
    deviations of Gaussian noise on the q and v the controller sees, drawn from `seed`.
    rt_priority: in realtime mode, both processes run under the SCHED_FIFO scheduler at this
    priority (1-99) as a robot's control processes do; 0 leaves them to the normal scheduler. A
    process that may not (no CAP_SYS_NICE) says so in its log and runs normally.

    Chaos (sim/chaos.py): the controller stalls stall_ms (ms) before answering on a fraction
    stall_prob of ticks, drawn from `seed`, and each COMMAND spends transport_delay_ms (ms) more
    in transit; really in realtime, simulated (deterministically) in lockstep.

    sensors: "full" sends the controller the plant's true state; "hardware" sends what the
    robot's sensors give (sim/sensors.py, docs/ESTIMATION.md), noise scaled by
    sensor_noise_scale and drawn from `seed`, and the controller runs on its estimator's state."""

    name: str
    robot: str
    plant: str = "ess"
    controller: str = "pd"
    mode: str = "lockstep"
    duration_s: float = 5.0
    control_rate_hz: float = 100.0
    plant_rate_hz: float = 1000.0
    hold_ticks: int = 3
    seed: int = 0
    drop_m: float = 0.0
    push_ns: float = 0.0
    push_axis: str = "x"
    push_at_s: float | None = None
    start_pose: str = ""
    mass_scale: float = 1.0
    inertia_scale: float = 1.0
    friction_mu: float | None = None
    ground_stiffness_scale: float = 1.0
    command_latency_ticks: int = 0
    sensor_noise_q: float = 0.0
    sensor_noise_v: float = 0.0
    rt_priority: int = 0
    stall_ms: float = 0.0
    stall_prob: float = 0.0
    transport_delay_ms: float = 0.0
    sensors: str = "full"
    sensor_noise_scale: float = 1.0
    controller_options: dict = field(default_factory=dict)
    plant_options: dict = field(default_factory=dict)

    def initial_configuration(self, model) -> "np.ndarray":
        """q (nq) the run starts from: start_pose's (or the nominal q0), raised by drop_m along
        the base height ("base_z" for a floating base, else "z", if the robot has one)."""
        import numpy as np

        if self.start_pose:
            poses = dict(model.params.get("poses", {}))
            if self.start_pose not in poses:
                raise ValueError(f"scenario {self.name!r}: start_pose {self.start_pose!r} is not a pose of "
                                 f"{model.name}; its poses: {sorted(poses) or 'none'} ('' for the nominal q0)")
            if not model.floating_base:
                raise ValueError(f"scenario {self.name!r}: start_pose needs a floating-base robot")
            from robots.floating import resting_configuration

            q0 = resting_configuration(model, poses[self.start_pose])
        else:
            q0 = np.array(model.q0, dtype=float)
        height = "base_z" if model.floating_base else "z"
        if height in model.q_names:
            q0[model.q_names.index(height)] += self.drop_m
        return q0

    def validate(self) -> "Scenario":
        """Raise ValueError naming the bad field and the fix; return self."""
        from mpc.controllers import CONTROLLERS
        from sim.registry import PLANTS, check_plant_options

        _check_types(self)
        _check_robot(self.name, self.robot)
        if self.plant not in PLANTS:
            raise ValueError(f"scenario {self.name!r}: unknown plant {self.plant!r}; available: {', '.join(PLANTS)}")
        if ":" in str(self.controller):  # your own: importable, callable (it is built in its own process)
            from mpc.controllers import controller_factory

            try:
                controller_factory(self.controller)
            except ValueError as err:
                raise ValueError(f"scenario {self.name!r}: {err}") from None
        elif self.controller not in CONTROLLERS:
            raise ValueError(f"scenario {self.name!r}: unknown controller {self.controller!r}; "
                             f"available: {', '.join(CONTROLLERS)}, or an import path 'package.module:make'")
        try:
            check_plant_options(self.plant, self.plant_options)
        except ValueError as err:
            raise ValueError(f"scenario {self.name!r}: [plant_options] {err}") from None
        if self.mode not in ("lockstep", "realtime"):
            raise ValueError(f"scenario {self.name!r}: mode must be 'lockstep' or 'realtime', got {self.mode!r}")
        if not self.duration_s > 0:
            raise ValueError(f"scenario {self.name!r}: duration_s must be > 0, got {self.duration_s}")
        if not (abs(self.push_ns) < 100.0):
            raise ValueError(f"scenario {self.name!r}: push_ns must be an impulse in (-100, 100) N s, "
                             f"got {self.push_ns}")
        from sim.protocol import PUSH_AXES

        if self.push_axis not in PUSH_AXES:
            raise ValueError(f"scenario {self.name!r}: push_axis must be one of {PUSH_AXES}, got {self.push_axis!r}")
        if ":" not in self.robot:  # a known robot: built here (cached), so that the run's processes cannot fail on it
            from robots import get_robot
            from sim.registry import check_plant_for

            model = get_robot(self.robot)
            try:
                check_plant_for(self.plant, model)
            except ValueError as err:
                raise ValueError(f"scenario {self.name!r}: {err}") from None
            if self.push_ns and not model.floating_base and self.push_axis not in model.q_names:
                raise ValueError(f"scenario {self.name!r}: {model.name} is planar (x-z): it cannot be pushed along "
                                 f"{self.push_axis!r}; use push_axis 'x' or 'z'")
        if self.push_at_s is not None and not 0 < self.push_at_s < self.duration_s:
            raise ValueError(f"scenario {self.name!r}: push_at_s must be inside the run (0, {self.duration_s}) s, "
                             f"got {self.push_at_s}")
        if not (isinstance(self.rt_priority, int) and not isinstance(self.rt_priority, bool)
                and 0 <= self.rt_priority <= 99):
            raise ValueError(f"scenario {self.name!r}: rt_priority must be an integer in [0, 99] (0: the normal "
                             f"scheduler), got {self.rt_priority!r}")
        for name, high in (("stall_ms", 10_000.0), ("transport_delay_ms", 10_000.0), ("stall_prob", 1.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
                raise ValueError(f"scenario {self.name!r}: {name} must be a number in [0, {high:g}], got {value!r}")
        from bridge.protocol import SENSOR_SETS

        if self.sensors not in SENSOR_SETS:
            raise ValueError(f"scenario {self.name!r}: sensors must be one of {', '.join(SENSOR_SETS)}, "
                             f"got {self.sensors!r}")
        if not self.sensor_noise_scale >= 0:
            raise ValueError(f"scenario {self.name!r}: sensor_noise_scale must be >= 0, got {self.sensor_noise_scale}")
        if not 0 < self.control_rate_hz <= self.plant_rate_hz:
            raise ValueError(f"scenario {self.name!r}: need 0 < control_rate_hz <= plant_rate_hz")
        _check_model_errors(self)
        plan = self.controller_options.get("plan")
        if plan is not None:  # checked here, before the run: the controller's child process would only die on it
            from mpc.planning.shipped import resolve_plan

            try:
                resolve_plan(plan)
            except ValueError as err:
                raise ValueError(f"scenario {self.name!r}: {err}") from None
        from .preflight import check_robot_for

        check_robot_for(self)  # what the scenario needs of its robot (start pose, 3D MPC), before any process
        if self.sensors == "hardware":
            from robots import get_robot

            if not get_robot(self.robot).floating_base:
                raise ValueError(f"scenario {self.name!r}: sensors = 'hardware' needs a floating-base robot (an IMU on "
                                 f"its base and an estimator for it); {self.robot!r} is planar: --set sensors=full")
        return self

    @property
    def push_time_s(self) -> float | None:
        """When the push is applied (s of simulated time: push_at_s, else mid-run); None without a push."""
        if not self.push_ns:
            return None
        return self.push_at_s if self.push_at_s is not None else 0.5 * self.duration_s

    def with_overrides(self, **changes) -> "Scenario":
        """A copy with the given fields replaced (None values are ignored)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown scenario fields {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        """The scenario as JSON (what the run folder stores and the child processes read)."""
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Scenario":
        """Inverse of to_json."""
        return cls(**json.loads(text))


def _check_types(sc: Scenario) -> None:
    """Raise ValueError naming the first field whose value has the wrong type (a TOML string
    "3" where a number belongs, a number where a name belongs), with the fix."""
    for f in dataclasses.fields(Scenario):
        value, kind = getattr(sc, f.name), str(f.type)
        unit = FIELD_DOCS.get(f.name, ("", ""))[0]
        unit = f" ({unit})" if unit else ""
        if kind == "str":
            ok, want = isinstance(value, str), "a name in quotes"
        elif kind == "int":
            ok, want = isinstance(value, int) and not isinstance(value, bool), f"a whole number{unit}"
        elif kind.startswith("float"):
            ok = _is_number(value) or (value is None and "None" in kind)
            want = f"a finite number{unit}" + (" or left out" if "None" in kind else "")
        elif kind == "dict":
            ok, want = isinstance(value, dict), f"a table [{f.name}] of KEY = VALUE lines"
        else:
            continue
        if ok:
            continue
        fix = ""
        if isinstance(value, str) and kind != "str":
            fix = f": write it without quotes, e.g. {f.name} = {f.default if f.default is not dataclasses.MISSING else 1}"
        elif kind == "str":
            fix = f": write it in quotes, e.g. {f.name} = \"{value}\""
        raise ValueError(f"scenario {sc.name!r}: {f.name} must be {want}, got {value!r}{fix}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_model_errors(sc: Scenario) -> None:
    """Raise ValueError naming a bad model-error field (launch/model_errors.py) and its range."""
    from .model_errors import COMPLIANT_PLANTS, MAX_LATENCY_TICKS, MAX_SCALE, plant_robot_params

    for name in ("mass_scale", "inertia_scale", "ground_stiffness_scale"):
        value = getattr(sc, name)
        if not (_is_number(value) and 0 < value <= MAX_SCALE):
            raise ValueError(f"scenario {sc.name!r}: {name} must be a factor in (0, {MAX_SCALE}] (1 = nominal), "
                             f"got {value!r}")
    if sc.friction_mu is not None and not (_is_number(sc.friction_mu) and sc.friction_mu >= 0):
        raise ValueError(f"scenario {sc.name!r}: friction_mu must be a friction coefficient >= 0 "
                         f"(or None for the robot's own), got {sc.friction_mu!r}")
    latency = sc.command_latency_ticks
    if not (isinstance(latency, int) and not isinstance(latency, bool) and 0 <= latency <= MAX_LATENCY_TICKS):
        raise ValueError(f"scenario {sc.name!r}: command_latency_ticks must be a whole number of control ticks in "
                         f"[0, {MAX_LATENCY_TICKS}], got {latency!r}")
    for name in ("sensor_noise_q", "sensor_noise_v"):
        value = getattr(sc, name)
        if not (_is_number(value) and value >= 0):
            raise ValueError(f"scenario {sc.name!r}: {name} must be a standard deviation >= 0, got {value!r}")
    if sc.ground_stiffness_scale != 1.0 and sc.plant not in COMPLIANT_PLANTS:
        raise ValueError(f"scenario {sc.name!r}: ground_stiffness_scale changes the compliant contacts of the "
                         f"{', '.join(COMPLIANT_PLANTS)} plant; plant {sc.plant!r} has its own contact model "
                         "(rigid, or MuJoCo's soft contact): leave ground_stiffness_scale at 1")
    try:
        plant_robot_params(sc)  # the robot must have the parameters the errors change
    except ValueError as err:
        raise ValueError(f"scenario {sc.name!r}: {err}") from None


def _check_robot(scenario: str, robot: str) -> None:
    """Raise ValueError (prefixed with the scenario's name) unless the run's child processes can
    build `robot`: a known name, or an import path whose module imports and whose builder
    returns a RobotModel (built here once; get_robot caches it)."""
    from robots import get_robot
    from robots.registry import check_robot, is_import_path, robot_source

    try:
        check_robot(robot)
        if is_import_path(robot):
            get_robot(robot)
        elif robot_source(robot) == "registered":
            raise ValueError(f"robot {robot!r} was registered with register_robot in this process only; the run's "
                             "plant and controller processes cannot see it: give its import path "
                             "'package.module:build' instead (or declare it in the entry-point group legmpc.robots)")
    except ValueError as exc:
        raise ValueError(f"scenario {scenario!r}: {exc}") from exc


def scenario_names() -> list[str]:
    """Names of the scenarios shipped in launch/scenarios/."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def load_scenario(name_or_path: str) -> Scenario:
    """Load a named scenario or a TOML file; raise ValueError with the available names."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.toml"
    if not path.exists():
        raise ValueError(f"no scenario {name_or_path!r}; named scenarios: {', '.join(scenario_names())} "
                         "(or pass a path to a .toml file)")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    data.setdefault("name", path.stem)
    fields = [f.name for f in dataclasses.fields(Scenario)]
    for key in data:
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"{path}: unknown field {key!r}; {hint}the fields are listed by "
                             "`python -m launch scenarios` (docs/SCENARIOS.md)")
    try:
        return Scenario(**data).validate()
    except ValueError as exc:  # the file is what the user edits: name it, not the scenario
        message = str(exc)
        prefix = f"scenario {data['name']!r}: "
        raise ValueError(f"{path}: {message.removeprefix(prefix)}") from None
