"""Fast whole-horizon access to an `AcadosOcpSolver` (one C call per operation).

The acados Python interface costs ~8 us per call and stage; shifting a 30-stage warm start
through it takes ~1 ms, as long as the solve itself. `HorizonIO` does the same through
`mpc/acados/io.c`, compiled once against the acados wheel's headers (cached like robot code).

    io = HorizonIO(solver, n_stages, nx, nu)
    xs, us = io.get()            # (N+1, nx), (N, nu) copies
    io.set(xs, us); io.set_shifted(xs, us, dt); io.shift(dt); io.set_x0(x0); io.stats() -> dict
    io.x0[:] = x0; status = io.rti_phase(2, set_x0=True, read=True)   # feedback; iterate in io.xs, io.us
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from robots.codegen import compile_shared

_SOURCE = Path(__file__).with_name("io.c")
_LIB: dict[str, ctypes.CDLL] = {}
STAT_NAMES = ("time_tot", "time_lin", "time_qp", "time_sim", "time_reg", "sqp_iter", "qp_iter")
# The MPC controllers' tick phases (controller_ticks.csv, "<phase>_ms") that run inside another:
# acados's own timers inside the Python-timed call that ran them (launch/plots.py draws them nested)
PHASE_PARENTS = {"fb_tot": "feedback", "fb_qp": "fb_tot", "prep_time_tot": "prepare", "prep_time_lin": "prep_time_tot"}


def _library() -> ctypes.CDLL:
    if "lib" not in _LIB:
        import acados

        from .runtime import ensure_runtime

        ensure_runtime()  # preloads libacados with RTLD_GLOBAL
        lib_dir = os.path.join(acados.DIR, "lib")
        inc = os.path.join(acados.DIR, "include")
        includes = [f"-I{d}" for d in (inc, os.path.join(inc, "blasfeo", "include"), os.path.join(inc, "hpipm", "include"))]
        so, _, _ = compile_shared(_SOURCE.read_text(), lib_name="acados_io", verbose=False,
                                  extra_args=(*includes, f"-L{lib_dir}", "-lacados", f"-Wl,-rpath,{lib_dir}"))
        lib = ctypes.CDLL(str(so))
        vp, i = ctypes.c_void_p, ctypes.c_int
        lib.legmpc_get_xu.argtypes = lib.legmpc_set_xu.argtypes = [vp, vp, vp, i, i, i, vp, vp]
        lib.legmpc_set_xu_shifted.argtypes = lib.legmpc_shift.argtypes = [vp, vp, vp, i, i, i, vp, vp, ctypes.c_double]
        lib.legmpc_set_x0.argtypes = [vp, vp, vp, vp]
        lib.legmpc_stats.argtypes = [vp, vp, i, vp]
        lib.legmpc_rti_phase.argtypes = [vp, vp, vp, vp, vp, vp, i, vp, i, vp, i, i, i, vp, vp]
        lib.legmpc_rti_phase.restype = i
        _LIB["lib"] = lib
    return _LIB["lib"]


class HorizonIO:
    """Bulk get/set of the iterate, the initial state and the timing statistics of one solver.

    Its buffers have fixed addresses (handed to C as plain integers: numpy's `.ctypes.data`
    costs microseconds per call): `xs`, `us` (the iterate read by `rti_phase(..., read=True)`,
    overwritten by the next read), `x0` (stage 0's state for `rti_phase`), `last_stats`."""

    def __init__(self, solver, n_stages: int, nx: int, nu: int, *, rti: bool = True):
        self.lib = _library()
        self.solver = solver  # keeps the solver (and its memory) alive
        self.n, self.nx, self.nu = n_stages, nx, nu
        self._ptr = (solver.nlp_config, solver.nlp_dims, solver.nlp_out)
        self._phase_ptr = (solver.nlp_config, solver.nlp_dims, solver.nlp_opts, solver.nlp_solver, solver.nlp_in,
                           solver.nlp_out)
        self.xs = np.zeros((n_stages + 1, nx))
        self.us = np.zeros((n_stages, nu))
        self.x0 = np.zeros(nx)
        self.last_stats = np.zeros(len(STAT_NAMES))
        self._xs_p, self._us_p = self.xs.ctypes.data, self.us.ctypes.data
        self._x0_p, self._stats_p = self.x0.ctypes.data, self.last_stats.ctypes.data
        self._qp_row = 2 if rti else 6  # where acados keeps QP iterations in its statistics

    def get(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the current iterate: states (N+1, nx) and controls (N, nu)."""
        self.lib.legmpc_get_xu(*self._ptr, self.n, self.nx, self.nu, self._xs_p, self._us_p)
        return self.xs.copy(), self.us.copy()

    def _checked(self, xs: np.ndarray, us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xs = np.ascontiguousarray(xs, dtype=np.float64)
        us = np.ascontiguousarray(us, dtype=np.float64)
        if xs.shape != self.xs.shape or us.shape != self.us.shape:
            raise ValueError(f"HorizonIO: expected xs {self.xs.shape} and us {self.us.shape}, "
                             f"got {xs.shape} and {us.shape}")
        return xs, us

    def set(self, xs: np.ndarray, us: np.ndarray) -> None:
        """Overwrite the iterate (the next solve's initial guess)."""
        xs, us = self._checked(xs, us)
        self.lib.legmpc_set_xu(*self._ptr, self.n, self.nx, self.nu, xs.ctypes.data, us.ctypes.data)

    def set_shifted(self, xs: np.ndarray, us: np.ndarray, dt: float) -> None:
        """Overwrite the iterate with (xs, us) moved one stage earlier; the last stage repeats
        the last row, its clock (the last state entry) advanced by dt (s)."""
        xs, us = self._checked(xs, us)
        self.lib.legmpc_set_xu_shifted(*self._ptr, self.n, self.nx, self.nu, xs.ctypes.data, us.ctypes.data, dt)

    def shift(self, dt: float) -> None:
        """Move the solver's own iterate one stage earlier, as set_shifted does (in one C call,
        through the buffers `xs`, `us`)."""
        self.lib.legmpc_shift(*self._ptr, self.n, self.nx, self.nu, self._xs_p, self._us_p, dt)

    def set_x0(self, x0: np.ndarray) -> None:
        """Fix stage 0's state to x0 (nx)."""
        x0 = np.ascontiguousarray(x0, dtype=np.float64)
        self.lib.legmpc_set_x0(self.solver.nlp_config, self.solver.nlp_dims, self.solver.nlp_in, x0.ctypes.data)

    def rti_phase(self, phase: int, set_x0: bool = False, read: bool = False) -> int:
        """Run one SQP-RTI phase (1 preparation, 2 feedback) in one C call: with set_x0, stage 0
        is fixed to the buffer `x0` first; with read, the iterate is read into `xs`, `us` after.
        Returns the acados status; the call's statistics are in `last_stats` (STAT_NAMES)."""
        return self.lib.legmpc_rti_phase(*self._phase_ptr, phase, self._x0_p if set_x0 else None, self._qp_row,
                                         self._stats_p, self.n, self.nx, self.nu,
                                         self._xs_p if read else None, self._us_p)

    def stats(self) -> dict:
        """Times (s), SQP iterations and total QP iterations of the last solver call."""
        self.lib.legmpc_stats(self.solver.nlp_config, self.solver.nlp_solver, self._qp_row, self._stats_p)
        return dict(zip(STAT_NAMES, self.last_stats.tolist()))
