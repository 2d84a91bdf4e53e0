"""The packages import downward only: robots <- sim <- mpc, sim <- bridge, and launch (the CLI,
scenarios, run folders) on top of all of them. An upward import (bridge/__main__.py read
launch.scenario until issue 30 moved it to launch/child.py) ties a lower layer to the CLI."""
from __future__ import annotations

import ast
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
