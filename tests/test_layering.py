"""The packages import downward only: robots <- sim <- mpc, sim <- bridge, and launch (the CLI,
scenarios, run folders) on top of all of them. An upward import (bridge/__main__.py read
launch.scenario until issue 30 moved it to launch/child.py) ties a lower layer to the CLI.
And the MPC core names no robot and no scenario: robots bring their tuning as data, scenarios
bring tasks."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "robots": {"robots"},
    "sim": {"robots", "sim"},
    "mpc": {"robots", "sim", "mpc"},
    "bridge": {"robots", "sim", "bridge"},
}
PACKAGES = {"robots", "sim", "mpc", "bridge", "launch", "bench"}


def imported_packages(path: Path) -> set[str]:
    """Top-level project packages a module imports (absolute imports, anywhere in the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & PACKAGES


def test_lower_layers_never_import_upward():
    bad = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            extra = imported_packages(path) - allowed
            if extra:
                bad.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert not bad, "\n".join(bad)


# the robots and scenarios the core must not name (whole words of identifiers and of string
# literals; comments and docstrings may, to say where a number was measured)
ROBOT_NAMES = {"hopper", "hopper1d", "quadruped", "go1", "a1", "solo12"}
SCENARIO_NAMES = {p.stem for p in (ROOT / "launch" / "scenarios").glob("*.toml")} - ROBOT_NAMES


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def named_in_code(path: Path) -> list[str]:
    """(line: what) for each robot or scenario name in the module's code: identifiers, imported
    modules and string literals other than docstrings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        texts = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            texts.append(node.value)
            scenario = [n for n in SCENARIO_NAMES if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", node.value)]
            if scenario:
                hits.append(f"{node.lineno}: scenario {scenario[0]!r} in {node.value!r}")
        for attr in ("id", "attr", "name", "arg", "asname", "module"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                texts.append(value)
        for text in texts:
            words = set(re.split(r"[^a-z0-9]+", text.lower())) & ROBOT_NAMES
            if words:
                hits.append(f"{getattr(node, 'lineno', '?')}: robot {sorted(words)[0]!r} in {text!r}")
    return hits


def imports_the_planner(path: Path) -> bool:
    """Does the module import mpc.planning (the offline planner and its scenarios)?"""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            module = ("mpc." if node.level == 1 else "") + (node.module or "")
            if node.level <= 1 and (module == "mpc.planning" or module.startswith("mpc.planning.")):
                return True
            if node.level == 1 and node.module is None and any(a.name == "planning" for a in node.names):
                return True
        elif isinstance(node, ast.Import) and any(a.name.startswith("mpc.planning") for a in node.names):
            return True
    return False


def mpc_core() -> list[Path]:
    """The MPC core: mpc/ without mpc/planning/ (the offline planner, whose modules are its
    scenarios: hopper_holes, particle, the shipped plan)."""
    return [p for p in sorted((ROOT / "mpc").rglob("*.py")) if "planning" not in p.relative_to(ROOT / "mpc").parts]


def test_the_mpc_core_names_no_robot_and_no_scenario():
    bad = [f"{path.relative_to(ROOT)}:{hit}" for path in mpc_core() for hit in named_in_code(path)]
    bad += [f"{path.relative_to(ROOT)} imports mpc.planning" for path in mpc_core() if imports_the_planner(path)]
    assert not bad, "\n".join(bad)


def test_the_name_check_finds_names(tmp_path):
    """The check above sees a robot in a string, an identifier and an import, and a scenario."""
    path = tmp_path / "m.py"
    path.write_text('"""The hopper: a docstring may name it."""\nfrom .planning.hopper_holes import x  # hopper\n'
                    'def f(go1_params):\n    return TABLE["quadruped"], "hopper-holes"\n')
    text = "\n".join(named_in_code(path))
    for word in ("'hopper' in 'planning.hopper_holes'", "'go1' in 'go1_params'", "'quadruped' in 'quadruped'",
                 "scenario 'hopper-holes'"):
        assert word in text, (word, text)
    assert "docstring" not in text and imports_the_planner(path)
