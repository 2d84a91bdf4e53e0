"""Robot names -> builders. `get_robot("hopper")` is the one way to obtain a model."""
from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Callable

from .library import block, hopper, hopper1d, plate_springs, point_mass, quadruped
from .model import RobotModel

_BUILDERS: dict[str, Callable[..., RobotModel]] = {
    "point_mass": point_mass.build,
    "hopper1d": hopper1d.build,
    "plate_springs": plate_springs.build,
    "hopper": hopper.build,
    "quadruped": quadruped.build,
    "block": block.build,
}


def robot_names() -> tuple[str, ...]:
    """Names of all registered robots, in a stable order."""
    return tuple(_BUILDERS)


def get_robot(name: str, **params) -> RobotModel:
    """Build (or return the cached) `RobotModel` called `name`.

    Keyword params override the robot's published/default parameters, e.g.
    `get_robot("plate_springs", n_springs=20)`. Unknown names raise a ValueError that lists
    the available robots.
    """
    if name not in _BUILDERS:
        close = difflib.get_close_matches(str(name), _BUILDERS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown robot {name!r}; available robots: {', '.join(_BUILDERS)}.{hint}")
    return _cached(name, tuple(sorted(params.items())))


@lru_cache(maxsize=64)
def _cached(name: str, params: tuple) -> RobotModel:
    return _BUILDERS[name](**dict(params))
