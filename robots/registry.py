"""Robot names and import paths -> builders. `get_robot(...)` is the one way to obtain a model.

A robot is named in one of three ways, looked up in this order:

1. a name registered in this process: the built-in robots (the table below, their one source
   of truth) and any `register_robot(name, builder)`;
2. a name declared by an installed package in the entry-point group `legmpc.robots`
   (in that package's pyproject.toml: `[project.entry-points."legmpc.robots"]`
   `my_biped = "my_package.my_biped:build"`), discovered lazily, the first time a name is not
   found in (1) or the list of robots is asked for;
3. an import path `package.module:build`: `build` is imported from `package.module` (which
   must be importable: on sys.path, e.g. the current directory or PYTHONPATH).

A builder is a callable returning a `RobotModel`; keyword params of `get_robot` are passed to it.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import re
from functools import lru_cache
from typing import Callable

from .model import RobotModel

ENTRY_POINT_GROUP = "legmpc.robots"

# the built-in robots: name -> "module:callable" (imported on first use)
_BUILTIN = {
    "point_mass": "robots.library.point_mass:build",
    "hopper1d": "robots.library.hopper1d:build",
    "plate_springs": "robots.library.plate_springs:build",
    "hopper": "robots.library.hopper:build",
    "quadruped": "robots.library.quadruped:build",
    "block": "robots.library.block:build",
    "go1": "robots.library.quadrupeds3d:go1",
    "a1": "robots.library.quadrupeds3d:a1",
    "solo12": "robots.library.quadrupeds3d:solo12",
    "go2": "robots.library.quadrupeds3d:go2",
    "anymal_c": "robots.library.quadrupeds3d:anymal_c",
    "box3d": "robots.library.box3d:build",
}
_REGISTERED: dict[str, Callable[..., RobotModel] | str] = dict(_BUILTIN)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_entry_points: dict[str, importlib.metadata.EntryPoint] | None = None  # discovered once, lazily


def register_robot(name: str, builder: Callable[..., RobotModel] | str, *, replace: bool = False) -> None:
    """Make `get_robot(name)` build with `builder` (a callable returning a RobotModel, or an
    import path "package.module:build") in this process.

    Names are letters, digits, '_', '-', '.' (no ':', which marks import paths). Registering a
    name that exists raises ValueError unless replace=True.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"register_robot: robot name {name!r} must be letters, digits, '_', '-' or '.', "
                         "starting with a letter (':' is reserved for import paths like 'my_module:build')")
    if isinstance(builder, str):
        if not _PATH.match(builder):
            raise ValueError(f"register_robot({name!r}): {builder!r} is not an import path 'package.module:build'")
    elif not callable(builder):
        raise ValueError(f"register_robot({name!r}): the builder must be callable (a function returning a "
                         f"RobotModel) or an import path 'package.module:build', got {type(builder).__name__}")
    if name in _REGISTERED and not replace:
        raise ValueError(f"register_robot: robot {name!r} is already registered; pass replace=True to replace it")
    _REGISTERED[name] = builder
    _cached.cache_clear()


def entry_point_robots() -> dict[str, importlib.metadata.EntryPoint]:
    """Robots that installed packages declare in the entry-point group `legmpc.robots` (name ->
    entry point, not loaded). Read once per process; `refresh_entry_points()` reads again."""
    global _entry_points
    if _entry_points is None:
        found: dict[str, importlib.metadata.EntryPoint] = {}
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            found.setdefault(ep.name, ep)  # the first distribution on sys.path wins, like imports
        _entry_points = found
    return _entry_points


def refresh_entry_points() -> None:
    """Forget the discovered entry points (after installing a package in a running process)."""
    global _entry_points
    _entry_points = None
    _cached.cache_clear()


def robot_names() -> tuple[str, ...]:
    """Names of all robots: built-in and registered ones (in registration order), then the
    entry-point robots not shadowed by them (sorted)."""
    names = list(_REGISTERED)
    names += sorted(n for n in entry_point_robots() if n not in _REGISTERED)
    return tuple(names)


def robot_source(name: str) -> str:
    """Where robot `name` comes from: "built-in", "registered", "entry point <value> (<dist>)",
    or "import path" for a 'module:build' string."""
    if name in _REGISTERED:
        return "built-in" if _REGISTERED[name] == _BUILTIN.get(name) else "registered"
    ep = entry_point_robots().get(name)
    if ep is not None:
        dist = getattr(ep, "dist", None)
        return f"entry point {ep.value}" + (f" ({dist.name})" if dist is not None else "")
    if is_import_path(name):
        return "import path"
    raise ValueError(_unknown(name))


def is_import_path(spec: str) -> bool:
    """Is `spec` of the form 'package.module:callable'?"""
    return isinstance(spec, str) and ":" in spec


def get_robot(name: str, **params) -> RobotModel:
    """Build (or return the cached) `RobotModel` called `name`: a registered name, an
    entry-point name (group `legmpc.robots`) or an import path 'package.module:build'.

    Keyword params override the robot's published/default parameters, e.g.
    `get_robot("plate_springs", n_springs=20)`. Unknown names, unimportable modules, missing or
    non-callable attributes and builders that return something else than a RobotModel raise a
    ValueError naming the string and the fix.
    """
    if not isinstance(name, str):
        raise ValueError(f"robot must be a name or an import path 'package.module:build' (a string), got {name!r}")
    if not is_import_path(name) and name not in _REGISTERED and name not in entry_point_robots():
        raise ValueError(_unknown(name))
    return _cached(name, tuple(sorted(params.items())))


def check_robot(name: str) -> None:
    """Raise the ValueError `get_robot(name)` would raise for an unknown name or a malformed
    import path, without importing or building anything (for validating scenarios)."""
    if not isinstance(name, str):
        raise ValueError(f"robot must be a name or an import path 'package.module:build' (a string), got {name!r}")
    if is_import_path(name):
        if not _PATH.match(name):
            raise ValueError(_bad_path(name))
    elif name not in _REGISTERED and name not in entry_point_robots():
        raise ValueError(_unknown(name))


def _unknown(name: str) -> str:
    names = robot_names()
    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (f"unknown robot {name!r}; available robots: {', '.join(names)}.{hint} "
            "(or give your own robot as an import path 'package.module:build', or register it with "
            f"robots.register_robot or the entry-point group {ENTRY_POINT_GROUP!r})")


def _bad_path(spec: str) -> str:
    return (f"robot {spec!r} is not an import path of the form 'package.module:build' "
            "(a dotted module name, one ':', then the name of a function returning a RobotModel)")


@lru_cache(maxsize=64)
def _cached(name: str, params: tuple) -> RobotModel:
    if is_import_path(name):
        builder, origin = _load_path(name, what=f"robot {name!r}"), f"robot {name!r}"
    elif name in _REGISTERED:
        entry = _REGISTERED[name]
        if isinstance(entry, str):
            builder, origin = _load_path(entry, what=f"robot {name!r} ({entry})"), f"robot {name!r} ({entry})"
        else:
            builder, origin = entry, f"robot {name!r}"
    else:
        ep = entry_point_robots()[name]
        origin = f"robot {name!r} (entry point {ep.value!r} in group {ENTRY_POINT_GROUP!r})"
        builder = _load_entry_point(ep, origin)
    model = builder(**dict(params))
    if not isinstance(model, RobotModel):
        raise ValueError(f"{origin}: the builder returned {type(model).__name__}, not a robots.RobotModel; "
                         "make it return one (e.g. robots.planar.build_planar_robot(tree, q0=...))")
    return model


def _load_path(spec: str, *, what: str) -> Callable[..., RobotModel]:
    """Import 'package.module:attr' and return the callable, or raise a ValueError saying why."""
    if not _PATH.match(spec):
        raise ValueError(_bad_path(spec))
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ValueError(f"{what}: module {module_name!r} is not importable (no module named {exc.name!r}); "
                             "run from the folder that holds it, or add that folder to PYTHONPATH "
                             "(child processes of `launch run` inherit both)") from exc
        raise ValueError(f"{what}: importing module {module_name!r} failed: {exc}; install the missing "
                         "package or fix the module's imports") from exc
    except Exception as exc:
        raise ValueError(f"{what}: importing module {module_name!r} failed: {type(exc).__name__}: {exc}; "
                         "fix the module") from exc
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n, v in vars(module).items() if not n.startswith("_") and callable(v)
                            and getattr(v, "__module__", None) == module_name)  # defined there, not imported
            raise ValueError(f"{what}: module {module_name!r} has no attribute {attr!r}; define it "
                             f"(a function returning a RobotModel) or name an existing one: {', '.join(public) or 'none'}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{what}: {spec!r} is a {type(obj).__name__}, not callable; it must name a function "
                         "returning a RobotModel (e.g. def build(**params): ...)")
    return obj


def _load_entry_point(ep: importlib.metadata.EntryPoint, origin: str) -> Callable[..., RobotModel]:
    try:
        obj = ep.load()
    except Exception as exc:
        raise ValueError(f"{origin}: cannot be loaded: {type(exc).__name__}: {exc}; fix or reinstall the package "
                         "that declares it") from exc
    if not callable(obj):
        raise ValueError(f"{origin}: {ep.value!r} is a {type(obj).__name__}, not callable; it must name a function "
                         "returning a RobotModel")
    return obj
