"""The one place that makes acados (from the `comma-deps-acados` wheel) usable in-process.

Importing this module (or calling `acados_template()`) sets, for this process only:
- ACADOS_SOURCE_DIR = acados.DIR (the wheel's install prefix: lib/, include/, bin/t_renderer),
- ACADOS_PYTHON_INTERFACE_PATH = the wheel's acados_template folder,
- the shared libraries blasfeo, hpipm, qpOASES_e and acados preloaded with RTLD_GLOBAL, so that
  generated solver libraries find them without LD_LIBRARY_PATH,
and checks that casadi has IPOPT (the wheel ships a slim casadi without it; `make` reinstalls
the real one). No variable needs exporting by the user.

`cached_ocp_solver(ocp)` generates and compiles a solver once per content hash of the OCP,
in a cache folder, and later loads it without regenerating.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from robots.codegen import default_cache_dir

_PRELOAD = ("libblasfeo.so", "libhpipm.so", "libqpOASES_e.so.3.1", "libacados.so")
_STATE: dict[str, Any] = {}


class AcadosSetupError(RuntimeError):
    """acados or casadi is missing or incomplete; the message says how to fix it."""


def ensure_runtime() -> ModuleType:
    """Prepare the process for acados once; return the `acados_template` module."""
    if "template" in _STATE:
        return _STATE["template"]
    try:
        import acados  # the comma-deps-acados wheel
    except ImportError as exc:
        raise AcadosSetupError("acados is not installed: run `make test` (or pip install comma-deps-acados)") from exc
    import casadi

    if not casadi.has_nlpsol("ipopt"):
        raise AcadosSetupError(
            "casadi has no IPOPT: comma-deps-acados overwrote it with a slim build. Fix: "
            "`pip install --force-reinstall --no-deps casadi==3.8.2` (the Makefile does this)"
        )
    os.environ["ACADOS_SOURCE_DIR"] = acados.DIR
    os.environ["ACADOS_PYTHON_INTERFACE_PATH"] = acados.TEMPLATE_DIR
    for lib in _PRELOAD:
        path = os.path.join(acados.LIB_DIR, lib)
        if not os.path.exists(path):
            raise AcadosSetupError(f"acados library missing: {path}; reinstall comma-deps-acados")
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    parent = os.path.dirname(acados.TEMPLATE_DIR)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    import acados_template

    _STATE["template"] = acados_template
    return acados_template


def acados_template() -> ModuleType:
    """The `acados_template` module, with the runtime prepared (see module docstring)."""
    return ensure_runtime()


def _jsonable(obj: Any) -> Any:
    import casadi

    if isinstance(obj, (casadi.SX, casadi.MX, casadi.DM)):
        return str(obj)  # the full printed expression, stable across processes
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if hasattr(obj, "__dict__"):
        return {k: _jsonable(v) for k, v in sorted(vars(obj).items())}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def ocp_fingerprint(ocp: Any) -> str:
    """SHA-256 (16 hex digits) of everything that defines an AcadosOcp: model, cost,
    constraints, dimensions and solver options (not where it is exported)."""
    parts = {
        name: _jsonable(getattr(ocp, name))
        for name in ("model", "dims", "cost", "constraints", "solver_options")
    }
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cached_ocp_solver(ocp: Any, *, cache_dir: Path | str | None = None, verbose: bool = True) -> Any:
    """An `AcadosOcpSolver` for `ocp`, generated and compiled only if not cached yet.

    The solver lives in `<cache>/acados/<model name>-<fingerprint>/`; nothing is written to the
    current directory. Returns the solver; `solver.legmpc_built_now` tells whether it compiled.
    """
    template = ensure_runtime()
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = ocp_fingerprint(ocp)
    folder = (root / "acados" / f"{ocp.model.name}-{key}").resolve()
    json_file = folder / "ocp.json"
    done = folder / ".built"
    ocp.code_export_directory = str(folder / "c_generated_code")
    built_now = not done.exists()
    if built_now:
        folder.mkdir(parents=True, exist_ok=True)
        if verbose:
            print(f"[acados] generating and compiling solver {ocp.model.name!r} (one-time, cached in {folder})",
                  file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        chatter = io.StringIO()  # acados_template warns about untested casadi versions on stdout
        try:
            with contextlib.redirect_stdout(chatter):
                solver = template.AcadosOcpSolver(ocp, json_file=str(json_file), verbose=False)
        except Exception:
            sys.stderr.write(chatter.getvalue())
            raise
        done.write_text(f"{time.perf_counter() - t0:.3f}\n")
    else:
        # acados_template prints "acados was compiled without OpenMP." on every load: stderr, so
        # that stdout stays clean for --json
        with contextlib.redirect_stdout(sys.stderr):
            solver = template.AcadosOcpSolver(ocp, json_file=str(json_file), build=False, generate=False, verbose=False)
    solver.legmpc_built_now = built_now
    return solver
