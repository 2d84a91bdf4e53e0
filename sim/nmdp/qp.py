"""Small dense QPs solved by qpOASES (the embedded active-set solver in the acados wheel),
callable from numba, warm-started from the previous solution's active set.

    qp = DenseQp(n=8, ng=4)                      # one workspace per problem size
    x, iters, status = qp.solve(H, g, lb, ub, C, lg, ug)

solves  min 0.5 x^T H x + g^T x  s.t.  lb <= x <= ub,  lg <= C x <= ug  (H symmetric positive
definite, n <= NV_MAX, 1 <= ng <= NC_MAX).

Compiled loops call the same solver without Python: `call_ptr3(qp.solve_address, qp.handle,
in_ptr, out_ptr)` with

    in  = [H (n n, row-major), g (n), lb (n), ub (n), C (ng n, row-major), lg (ng), ug (ng),
           warm (1), y (n + ng)]
    out = [x (n), y (n + ng), working-set changes, status]

`warm` = 1 starts the active-set method from the working set that the duals y of an earlier
solution imply (qpOASES's `QProblem_initW` with yOpt, as acados's dense qpOASES interface does);
0 is a cold start. `out`'s y are this solution's duals, to pass back as the next warm start. The
caller owns the warm-start data, so a solve depends only on its inputs: a plant that resets its
copies replays bit for bit. A warm start that fails is retried cold. Status 0 is success;
otherwise qpOASES's returnValue (e.g. 64: the working-set change limit `max_wsr`).

Why an active-set solver: the NMDP plant solves a sequence of small QPs whose active set rarely
changes from one to the next. Warm-started, qpOASES needs 0.4-0.9 working-set changes per QP on
go1 (docs/NMDP.md), where an interior-point method (HPIPM, also in the wheel) spends ~12 iterations.

The shim below (a few lines of C over qpOASES_e's documented API) is compiled once with gcc
against the headers and `libqpOASES_e.so` shipped in the acados wheel, cached by a hash of its
source like the robots' generated code.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from robots.codegen import default_cache_dir

NV_MAX, NC_MAX = 287, 709  # QPOASES_NVMAX / QPOASES_NCMAX of the acados wheel's qpOASES_e (Constants.h)
STATUS_TEXT = {0: "success", 64: "working-set change limit reached (RET_MAX_NWSR_REACHED)"}

_SOURCE = r"""
#include <stdlib.h>
#include <string.h>
#include "qpOASES_e/QProblem.h"

typedef struct {
    int nv, nc, max_wsr;
    QProblem *qp;
    void *mem;
    double *data; /* H, g, lb, ub, C, lg, ug: qpOASES may keep pointers into them */
} nmdp_qp;

void *nmdp_qp_new(int nv, int nc, int max_wsr) {
    nmdp_qp *h = (nmdp_qp *) calloc(1, sizeof(nmdp_qp));
    if (!h) return 0;
    h->nv = nv;
    h->nc = nc;
    h->max_wsr = max_wsr;
    h->mem = calloc(1, QProblem_calculateMemorySize(nv, nc));
    h->data = (double *) calloc(nv * nv + 3 * nv + nc * nv + 2 * nc, sizeof(double));
    if (!h->mem || !h->data) {
        free(h->mem);
        free(h->data);
        free(h);
        return 0;
    }
    QProblem_assignMemory(nv, nc, &h->qp, h->mem);
    return h;
}

void nmdp_qp_free(void *handle) {
    nmdp_qp *h = (nmdp_qp *) handle;
    if (!h) return;
    free(h->mem);
    free(h->data);
    free(h);
}

static returnValue solve(nmdp_qp *h, const double *y0, int *nwsr) {
    int n = h->nv, m = h->nc;
    double *H = h->data, *g = H + n * n, *lb = g + n, *ub = lb + n, *C = ub + n, *lg = C + n * m, *ug = lg + m;
    QProblemCON(h->qp, n, m, HST_POSDEF);
    QProblem_setPrintLevel(h->qp, PL_NONE);
    *nwsr = h->max_wsr;
    return QProblem_initW(h->qp, H, g, C, lb, ub, lg, ug, nwsr, 0, 0, y0, 0, 0, 0);
}

int nmdp_qp_solve(void *handle, const double *in, double *out) {
    nmdp_qp *h = (nmdp_qp *) handle;
    int n = h->nv, m = h->nc, n_data = n * n + 3 * n + m * n + 2 * m;
    const double *y0 = in + n_data + 1;
    int nwsr = 0, total = 0;
    memcpy(h->data, in, sizeof(double) * n_data);
    returnValue r = solve(h, in[n_data] != 0.0 ? y0 : 0, &nwsr);
    total = nwsr;
    if (r != SUCCESSFUL_RETURN && in[n_data] != 0.0) { /* a stale working set: start cold */
        memcpy(h->data, in, sizeof(double) * n_data);
        r = solve(h, 0, &nwsr);
        total += nwsr;
    }
    QProblem_getPrimalSolution(h->qp, out);
    QProblem_getDualSolution(h->qp, out + n);
    out[2 * n + m] = (double) total;
    out[2 * n + m + 1] = (double) r;
    return (int) r;
}
"""

_LIB: dict[str, ctypes.CDLL] = {}


def _acados_dirs() -> tuple[str, str]:
    """(include dir, lib dir) of the acados wheel, or a RuntimeError saying how to get it."""
    try:
        import acados
    except ImportError as exc:  # pragma: no cover - the project depends on it
        raise RuntimeError("sim.nmdp needs qpOASES_e from the acados wheel: pip install comma-deps-acados") from exc
    include = os.path.join(acados.DIR, "include")
    lib = acados.LIB_DIR
    if not os.path.exists(os.path.join(lib, "libqpOASES_e.so")):
        raise RuntimeError(f"libqpOASES_e.so not found in {lib}; reinstall comma-deps-acados")
    return include, lib


def load_library(cache_dir: Path | str | None = None, verbose: bool = True) -> ctypes.CDLL:
    """Compile (once, cached by source hash) and load the qpOASES shim; returns the ctypes library."""
    include, libdir = _acados_dirs()
    compiler = shutil.which(os.environ.get("CC", "gcc"))
    if compiler is None:
        raise RuntimeError("no C compiler found: install gcc (Debian: apt-get install gcc) or set CC")
    flags = ["-O2", "-fPIC", "-shared", f"-I{include}", f"-L{libdir}", "-lqpOASES_e",
             f"-Wl,--disable-new-dtags,-rpath,{libdir}", "-lm"]
    key = hashlib.sha256("\n".join([_SOURCE, compiler, *flags]).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = folder / f"nmdp-qpoases-{key}"
    so_path = entry / "lib.so"
    if str(so_path) in _LIB:
        return _LIB[str(so_path)]
    if not so_path.exists():
        entry.mkdir(parents=True, exist_ok=True)
        c_path = entry / "nmdp_qp.c"
        c_path.write_text(_SOURCE)
        if verbose:
            import sys
            print(f"[codegen] compiling the qpOASES dense-QP shim; one-time, cached in {entry}", file=sys.stderr,
                  flush=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=entry)
        os.close(fd)
        proc = subprocess.run([compiler, str(c_path), "-o", tmp, *flags], capture_output=True, text=True)
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"compiling {c_path} failed:\n{proc.stderr[-4000:]}")
        os.replace(tmp, so_path)
    lib = ctypes.CDLL(str(so_path))
    lib.nmdp_qp_new.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.nmdp_qp_new.restype = ctypes.c_void_p
    lib.nmdp_qp_free.argtypes = [ctypes.c_void_p]
    lib.nmdp_qp_free.restype = None
    lib.nmdp_qp_solve.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.nmdp_qp_solve.restype = ctypes.c_int
    _LIB[str(so_path)] = lib
    return lib


class DenseQp:
    """A qpOASES workspace for dense QPs with n variables (all boxed) and ng general constraints.

    Attributes:
        handle: the workspace pointer (int), first argument of the C solve function.
        solve_address: address of `int nmdp_qp_solve(void* handle, const double* in, double* out)`.
        n_in, n_out: lengths of the flat input and output (see the module docstring).
        n_data: where `in`'s warm-start flag sits (its problem data come first).
    """

    def __init__(self, n: int, ng: int, *, max_wsr: int = 1000, cache_dir: Path | str | None = None,
                 verbose: bool = True):
        if not (1 <= n <= NV_MAX and 1 <= ng <= NC_MAX):
            raise ValueError(f"DenseQp: need 1 <= n <= {NV_MAX} and 1 <= ng <= {NC_MAX} (qpOASES_e's limits), "
                             f"got n={n}, ng={ng}")
        if max_wsr < 1:
            raise ValueError(f"DenseQp: max_wsr must be >= 1, got {max_wsr}")
        self._lib = load_library(cache_dir, verbose)
        self.n, self.ng = int(n), int(ng)
        self.handle = int(self._lib.nmdp_qp_new(self.n, self.ng, int(max_wsr)) or 0)
        if not self.handle:
            raise MemoryError("DenseQp: qpOASES workspace allocation failed")
        self.solve_address = ctypes.cast(self._lib.nmdp_qp_solve, ctypes.c_void_p).value
        self.n_data = n * n + 3 * n + ng * n + 2 * ng
        self.n_in = self.n_data + 1 + n + ng
        self.n_out = 2 * n + ng + 2
        self.duals = np.zeros(n + ng)

    def solve(self, H, g, lb, ub, C, lg, ug, y_warm=None) -> tuple[np.ndarray, int, int]:
        """Solve the QP of the module docstring, warm-started from the duals `y_warm` (n + ng) if
        given; returns (x, working-set changes, qpOASES status) and keeps this solution's duals
        in `self.duals` (the next solve's warm start)."""
        n, ng = self.n, self.ng
        warm = np.zeros(1 + n + ng)
        if y_warm is not None:
            warm[0] = 1.0
            warm[1:] = np.ravel(y_warm)
        flat = np.ascontiguousarray(np.concatenate([np.asarray(H, float).reshape(-1), np.ravel(g), np.ravel(lb),
                                                    np.ravel(ub), np.asarray(C, float).reshape(-1), np.ravel(lg),
                                                    np.ravel(ug), warm]), dtype=np.float64)
        if flat.size != self.n_in:
            raise ValueError(f"DenseQp.solve: inputs have {flat.size} numbers, expected {self.n_in}")
        out = np.zeros(self.n_out)
        status = self._lib.nmdp_qp_solve(self.handle, flat.ctypes.data, out.ctypes.data)
        self.duals = out[n:2 * n + ng].copy()
        return out[:n].copy(), int(out[2 * n + ng]), int(status)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", 0), 0
        if handle and getattr(self, "_lib", None) is not None:
            self._lib.nmdp_qp_free(handle)
