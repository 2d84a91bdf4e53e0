"""Plant names -> constructors, so scenarios and the CLI can pick a plant by name."""
from __future__ import annotations

from robots.model import RobotModel

PLANTS = ("ess", "nmdp", "hybrid", "mujoco")
PLANAR_ONLY = ("hybrid",)  # plants whose kernels assume nq == nv and one tangent per contact


def check_plant_for(name: str, model: RobotModel) -> None:
    """Raise ValueError (naming the plants that can) if plant `name` cannot run `model`."""
    if name in PLANAR_ONLY:
        from .protocol import require_planar

        require_planar(model, name)


# keywords make_plant (or the run) sets itself: not plant options a scenario may give
_SET_BY_RUN = ("model", "self", "verbose", "h_max", "plant_rate_hz")


def _plant_class(name: str):
    if name == "ess":
        from .ess.robot import EssPlant as cls
    elif name == "nmdp":
        from .nmdp import NmdpPlant as cls
    elif name == "hybrid":
        from .hybrid import HybridPlant as cls
    elif name == "mujoco":
        from .mujoco_plant import MujocoPlant as cls
    else:
        raise ValueError(f"unknown plant {name!r}; available plants: {', '.join(PLANTS)}")
    return cls


def check_plant_options(name: str, options: dict) -> None:
    """Raise ValueError naming an option plant `name` does not take (with the ones it does), or
    a number given as a string; the values themselves are checked by the plant when it is built."""
    import difflib
    import inspect

    params = inspect.signature(_plant_class(name).__init__).parameters
    valid = {k: p.default for k, p in params.items()
             if k not in _SET_BY_RUN and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    for key, value in options.items():
        if key not in valid:
            close = difflib.get_close_matches(key, list(valid), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"plant {name!r} has no option {key!r}; {hint}its options: {', '.join(sorted(valid))}")
        default = valid[key]
        if isinstance(default, (int, float)) and not isinstance(default, bool) and isinstance(value, str):
            raise ValueError(f"{key} must be a number (default {default}), got {value!r}: write it without quotes")


def make_plant(name: str, model: RobotModel, *, plant_rate_hz: float = 1000.0, **options):
    """Build plant `name` for `model`; the plant rate (Hz) bounds its integration step.

    ess: compliant contacts, Event-Selected-Systems integrator (sim.ess.EssPlant).
    nmdp: backward Euler with non-convex maximal dissipation (sim.nmdp.NmdpPlant); its largest
        step is the plant period.
    hybrid: rigid contacts, event-driven reference (sim.hybrid.HybridPlant).
    mujoco: MuJoCo on the robot's MJCF, its own soft contacts (sim.mujoco_plant.MujocoPlant).
    """
    cls = _plant_class(name)  # a ValueError names the plants for an unknown one
    if name == "ess":
        return cls(model, h_max=1.0 / plant_rate_hz, verbose=False, **options)
    if name == "nmdp":
        return cls(model, verbose=False, **{"max_step": 1.0 / plant_rate_hz, **options})
    if name == "mujoco":
        return cls(model, plant_rate_hz=plant_rate_hz, **options)
    return cls(model, **options)  # hybrid: event-driven, no step to bound
