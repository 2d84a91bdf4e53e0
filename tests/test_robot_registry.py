"""A user's own robot reaches get_robot: import paths, register_robot, the `legmpc.robots`
entry-point group (a real *.dist-info folder found by importlib.metadata), scenarios and the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import robots.registry as registry
from robots import RobotModel, get_robot, register_robot, robot_names

ROOT = Path(__file__).resolve().parents[1]

# a user module: a two-link robot built with the planar API, plus the ways to get a builder wrong
USER_MODULE = textwrap.dedent('''
    from robots.planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

    def build(mass=2.0):
        tree = PlanarTree("{robot}", (
            Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), mass),
            Body("leg", "base", (0.0, 0.0), (Joint("hip", "hinge", actuated=True, u_max=10.0, range=(-1.0, 0.5)),),
                 0.5, com=(0.0, -0.1), inertia=0.002),
        ), (PointContact("foot", "leg", (0.0, -0.2), mu=0.5, stiffness=1e4, damping=50.0),))
        return build_planar_robot(tree, q0=[0.0, 0.2, 0.0])

    NOT_CALLABLE = 3

    def returns_a_dict():
        return {{"name": "not a model"}}
''')


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A fresh, uniquely named module in a tmp folder on sys.path; yields its name."""
    name = f"user_robot_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE.format(robot=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_import_path_builds_the_users_robot_with_params(user_module):
    model = get_robot(f"{user_module}:build")
    assert isinstance(model, RobotModel) and model.name == user_module
    assert (model.nq, model.nu, model.nc) == (3, 1, 1)
    assert list(model.q_min) == [float("-inf"), float("-inf"), -1.0] and model.q_max[2] == 0.5
    assert get_robot(f"{user_module}:build") is model  # cached like a named robot
    heavy = get_robot(f"{user_module}:build", mass=5.0)
    assert heavy.params == {} and heavy is not model


@pytest.mark.parametrize("spec, match", [
    ("no_such_module_xyz:build", r"robot 'no_such_module_xyz:build': module 'no_such_module_xyz' is not importable"
                                 r".*PYTHONPATH"),
    ("{m}:missing", r"module '{m}' has no attribute 'missing'; define it .*build"),
    ("{m}:NOT_CALLABLE", r"'{m}:NOT_CALLABLE' is a int, not callable"),
    ("{m}:returns_a_dict", r"robot '{m}:returns_a_dict': the builder returned dict, not a robots.RobotModel"),
    ("{m}:", r"is not an import path of the form 'package.module:build'"),
    ("a b:build", r"is not an import path"),
])
def test_bad_import_paths_name_the_string_and_the_fix(user_module, spec, match):
    spec, match = spec.format(m=user_module), match.format(m=user_module)
    with pytest.raises(ValueError, match=match):
        get_robot(spec)


def test_a_module_that_fails_to_import_is_not_called_missing(tmp_path, monkeypatch):
    name = f"broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("import numpy\nimport not_installed_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=rf"importing module '{name}' failed: .*not_installed_dependency_xyz"):
        get_robot(f"{name}:build")


def test_register_robot(user_module, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))  # undone after the test
    builder = __import__(user_module).build
    register_robot("my_leg", builder)
    assert "my_leg" in robot_names() and registry.robot_source("my_leg") == "registered"
    assert get_robot("my_leg").name == user_module
    with pytest.raises(ValueError, match="'my_leg' is already registered; pass replace=True"):
        register_robot("my_leg", builder)
    register_robot("my_leg", f"{user_module}:build", replace=True)  # an import path, imported on use
    assert get_robot("my_leg", mass=3.0).nq == 3
    with pytest.raises(ValueError, match="must be callable"):
        register_robot("other", 42)
    with pytest.raises(ValueError, match="':' is reserved for import paths"):
        register_robot("a:b", builder)
    registry._cached.cache_clear()


def write_distribution(folder: Path, dist: str, entry_points: dict[str, str]) -> None:
    """A minimal installed distribution: <dist>-1.0.dist-info/{METADATA, entry_points.txt}."""
    info = folder / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"[{registry.ENTRY_POINT_GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def installed(tmp_path, user_module, monkeypatch):
    """An installed package (dist-info on sys.path) declaring one good and one broken robot."""
    tag = uuid.uuid4().hex[:6]
    good, broken = f"ep_leg_{tag}", f"ep_broken_{tag}"
    write_distribution(tmp_path, f"legmpc_user_robots_{tag}",
                       {good: f"{user_module}:build", broken: f"no_such_pkg_{tag}.robot:build"})
    registry.refresh_entry_points()
    yield tmp_path, good, broken
    monkeypatch.undo()  # tmp_path leaves sys.path before the entry points are read again
    registry.refresh_entry_points()


def test_entry_point_robots_are_discovered_lazily_and_built(installed, user_module):
    _, good, broken = installed
    names = robot_names()
    assert good in names and broken in names
    assert names[:6] == ("point_mass", "hopper1d", "plate_springs", "hopper", "quadruped", "block")
    assert registry.robot_source(good).startswith(f"entry point {user_module}:build")
    assert get_robot(good).name == user_module
    with pytest.raises(ValueError, match=rf"robot '{broken}' \(entry point 'no_such_pkg_\w+.robot:build' in group "
                                         r"'legmpc.robots'\): cannot be loaded: ModuleNotFoundError"):
        get_robot(broken)


def test_launch_robots_lists_entry_points_and_survives_a_broken_one(installed, user_module):
    folder, good, broken = installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(folder)])}
    out = subprocess.run([sys.executable, "-m", "launch", "robots", "--json"], capture_output=True, text=True,
                         env=env, cwd=folder, timeout=300)
    assert out.returncode == 1, "a broken robot is an error, after the table"
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert (rows[good]["nq"], rows[good]["nu"], rows[good]["ncontacts"]) == (3, 1, 1)
    assert rows["hopper"]["source"] == "built-in" and rows["hopper"]["nq"] == 4
    assert rows[broken]["nq"] is None and "cannot be loaded" in rows[broken]["error"]
    assert f"error: robot '{broken}'" in out.stderr and "Traceback" not in out.stderr
    table = subprocess.run([sys.executable, "-m", "launch", "robots", f"{user_module}:build"], capture_output=True,
                           text=True, env=env, cwd=folder, timeout=300)
    assert good in table.stdout and "import path" in table.stdout and "entry point" in table.stdout


def test_scenarios_take_import_paths_and_name_what_is_wrong(user_module, monkeypatch):
    from launch.scenario import load_scenario

    sc = load_scenario("hopper-pd").with_overrides(robot=f"{user_module}:build").validate()
    assert sc.robot == f"{user_module}:build"
    with pytest.raises(ValueError, match=r"scenario 'hopper-pd': robot 'nowhere_xyz:build': module 'nowhere_xyz' "
                                         r"is not importable"):
        load_scenario("hopper-pd").with_overrides(robot="nowhere_xyz:build").validate()
    with pytest.raises(ValueError, match=r"scenario 'hopper-pd': unknown robot 'hoper'"):
        load_scenario("hopper-pd").with_overrides(robot="hoper").validate()
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    register_robot("only_here", __import__(user_module).build)
    with pytest.raises(ValueError, match="registered with register_robot in this process only.*import path"):
        load_scenario("hopper-pd").with_overrides(robot="only_here").validate()
