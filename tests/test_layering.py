"""The packages import downward only: robots <- sim <- mpc, sim <- bridge, and launch (the CLI,
scenarios, run folders) on top of all of them. An upward import (bridge/__main__.py read
launch.scenario until issue 30 moved it to launch/child.py) ties a lower layer to the CLI.
Inside mpc the two MPCs, wholebody/ (planar) and centroidal/ (3D), are siblings over the acados
wiring (acados/) and the shared top-level modules (problem, reference, ipopt_ocp); only the
controller factory and the in-process loop see both. And the MPC core names no robot and no
scenario: robots bring their tuning as data, scenarios bring tasks."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "robots": {"robots"},
    "sim": {"robots", "sim"},
    "mpc": {"robots", "sim", "mpc"},
    "bridge": {"robots", "sim", "estimation", "bridge"},
    "estimation": {"robots", "estimation"},
}
PACKAGES = {"robots", "sim", "estimation", "mpc", "bridge", "launch", "bench"}


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


# inside mpc: a module's part is its subpackage (acados, wholebody, centroidal, planning), "top"
# for mpc/__init__.py, controllers.py and closed_loop.py (they may see every MPC), else "shared"
# (problem.py, reference.py, ipopt_ocp.py). What each constrained part may import from mpc:
MPC_TOP = {"controllers", "closed_loop"}
MPC_ALLOWED = {
    "shared": {"shared"},
    "acados": {"acados", "shared"},
    "wholebody": {"wholebody", "acados", "shared"},
    "centroidal": {"centroidal", "acados", "shared"},
}


def module_name(path: Path, root: Path) -> str:
    """Dotted name of the module at `path` (a package's __init__.py is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Dotted names of what module `name` (the file at `path`) imports, anywhere in the file,
    relative imports resolved against its package; `from M import a` gives M and M.a, as a may
    be a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return found


def mpc_part(module: str, subpackages: set[str]) -> str | None:
    """The part of mpc (see MPC_ALLOWED) a dotted module name belongs to; None outside mpc."""
    parts = module.split(".")
    if parts[0] != "mpc":
        return None
    if len(parts) == 1 or parts[1] in MPC_TOP:
        return "top"
    return parts[1] if parts[1] in subpackages else "shared"


def mpc_layer_violations(root: Path) -> list[str]:
    """Each module of root/mpc that imports a part of mpc its own part may not (MPC_ALLOWED)."""
    subpackages = {p.name for p in (root / "mpc").iterdir() if (p / "__init__.py").exists()}
    bad = []
    for path in sorted((root / "mpc").rglob("*.py")):
        name = module_name(path, root)
        allowed = MPC_ALLOWED.get(mpc_part(name, subpackages))
        if allowed is None:
            continue
        extra = sorted(m for m in imports_of(path, name) if mpc_part(m, subpackages) not in allowed | {None})
        if extra:
            bad.append(f"{path.relative_to(root)} imports {extra}")
    return bad


def test_the_mpcs_are_siblings_over_the_acados_wiring():
    bad = mpc_layer_violations(ROOT)
    assert not bad, "\n".join(bad)


def test_the_sibling_check_finds_crossings(tmp_path):
    """The check above sees a sibling import, a shared module reaching into an MPC, the acados
    wiring importing an MPC, and a shared module importing the factory; allowed imports pass."""
    files = {
        "mpc/__init__.py": "",
        "mpc/controllers.py": "from .wholebody.controller import make_mpc\nfrom .centroidal import controller\n",
        "mpc/problem.py": "import numpy as np\n",
        "mpc/reference.py": "from .wholebody.gaits import Gait\n",
        "mpc/ipopt_ocp.py": "from mpc import controllers\n",
        "mpc/acados/__init__.py": "",
        "mpc/acados/rti.py": "from ..problem import cost_features\nfrom .io import HorizonIO\n",
        "mpc/acados/io.py": "def f():\n    from mpc.wholebody import ocp\n",
        "mpc/wholebody/__init__.py": "",
        "mpc/wholebody/ocp.py": "from ..problem import OcpOptions\nfrom ..acados.rti import RtiSolver\nfrom . import tasks\n",
        "mpc/wholebody/tasks.py": "",
        "mpc/centroidal/__init__.py": "",
        "mpc/centroidal/controller.py": "from .. import reference\nfrom ..wholebody.ocp import ContactOcp\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    bad = mpc_layer_violations(tmp_path)
    assert bad == ["mpc/acados/io.py imports ['mpc.wholebody', 'mpc.wholebody.ocp']",
                   "mpc/centroidal/controller.py imports ['mpc.wholebody.ocp', 'mpc.wholebody.ocp.ContactOcp']",
                   "mpc/ipopt_ocp.py imports ['mpc', 'mpc.controllers']",
                   "mpc/reference.py imports ['mpc.wholebody.gaits', 'mpc.wholebody.gaits.Gait']"], bad


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
    """Does the module import mpc.planning (the offline planner and its scenarios)? Relative
    imports resolve against the module's package (a file outside the repository is read as a
    module of mpc/ itself)."""
    name = module_name(path, ROOT) if path.is_relative_to(ROOT) else f"mpc.{path.stem}"
    return any(m == "mpc.planning" or m.startswith("mpc.planning.") for m in imports_of(path, name))


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
