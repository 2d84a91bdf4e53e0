"""Small dense QPs solved by HPIPM (acados's interior-point QP solver), callable from numba.

    qp = DenseQp(n=8, ng=4)                      # one workspace per problem size
    x, iters, status = qp.solve(H, g, lb, ub, C, lg, ug)

solves  min 0.5 x^T H x + g^T x  s.t.  lb <= x <= ub,  lg <= C x <= ug  (H symmetric PSD).

Compiled loops call the same solver without Python: `call_ptr3(qp.solve_address, qp.handle,
in_ptr, out_ptr)` with `in` = [H (n n, row-major), g (n), lb (n), ub (n), C (ng n, row-major),
lg (ng), ug (ng)] and `out` = [x (n), IPM iterations, HPIPM status]. Status 0 is success,
1 the iteration limit, 2 the minimal step, 3 NaN, 4 inconsistent problem.

The shim below (a few lines of C over HPIPM's documented dense-QP API) is compiled once with
gcc against the headers and `libhpipm.so` shipped in the acados wheel, cached by a hash of
its source like the robots' generated code.
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

STATUS_TEXT = {0: "success", 1: "iteration limit", 2: "minimal step length", 3: "NaN in the solution",
               4: "inconsistent problem"}

_SOURCE = r"""
#include <stdlib.h>
#include "hpipm_d_dense_qp_dim.h"
#include "hpipm_d_dense_qp.h"
#include "hpipm_d_dense_qp_sol.h"
#include "hpipm_d_dense_qp_ipm.h"

typedef struct {
    int nv, ng;
    struct d_dense_qp_dim dim;
    struct d_dense_qp qp;
    struct d_dense_qp_sol sol;
    struct d_dense_qp_ipm_arg arg;
    struct d_dense_qp_ipm_ws ws;
    int *idxb;
    double *ccm;
    void *mem[5];
} nmdp_qp;

void *nmdp_qp_new(int nv, int ng, int iter_max, double tol) {
    nmdp_qp *h = (nmdp_qp *) calloc(1, sizeof(nmdp_qp));
    if (!h) return 0;
    h->nv = nv;
    h->ng = ng;
    h->mem[0] = malloc(d_dense_qp_dim_memsize());
    d_dense_qp_dim_create(&h->dim, h->mem[0]);
    d_dense_qp_dim_set_all(nv, 0, nv, ng, 0, 0, &h->dim);
    h->mem[1] = malloc(d_dense_qp_memsize(&h->dim));
    d_dense_qp_create(&h->dim, &h->qp, h->mem[1]);
    h->mem[2] = malloc(d_dense_qp_sol_memsize(&h->dim));
    d_dense_qp_sol_create(&h->dim, &h->sol, h->mem[2]);
    h->mem[3] = malloc(d_dense_qp_ipm_arg_memsize(&h->dim));
    d_dense_qp_ipm_arg_create(&h->dim, &h->arg, h->mem[3]);
    d_dense_qp_ipm_arg_set_default(ROBUST, &h->arg);
    d_dense_qp_ipm_arg_set_iter_max(&iter_max, &h->arg);
    d_dense_qp_ipm_arg_set_tol_stat(&tol, &h->arg);
    d_dense_qp_ipm_arg_set_tol_eq(&tol, &h->arg);
    d_dense_qp_ipm_arg_set_tol_ineq(&tol, &h->arg);
    d_dense_qp_ipm_arg_set_tol_comp(&tol, &h->arg);
    h->mem[4] = malloc(d_dense_qp_ipm_ws_memsize(&h->dim, &h->arg));
    d_dense_qp_ipm_ws_create(&h->dim, &h->arg, &h->ws, h->mem[4]);
    h->idxb = (int *) malloc(sizeof(int) * (nv > 0 ? nv : 1));
    for (int i = 0; i < nv; i++) h->idxb[i] = i;
    d_dense_qp_set_idxb(h->idxb, &h->qp);
    h->ccm = (double *) malloc(sizeof(double) * (nv * ng > 0 ? nv * ng : 1));
    return h;
}

void nmdp_qp_free(void *handle) {
    nmdp_qp *h = (nmdp_qp *) handle;
    if (!h) return;
    for (int i = 0; i < 5; i++) free(h->mem[i]);
    free(h->idxb);
    free(h->ccm);
    free(h);
}

int nmdp_qp_solve(void *handle, const double *in, double *out) {
    nmdp_qp *h = (nmdp_qp *) handle;
    int n = h->nv, m = h->ng;
    double *H = (double *) in, *g = H + n * n, *lb = g + n, *ub = lb + n, *C = ub + n;
    double *lg = C + n * m, *ug = lg + m;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) h->ccm[j * m + i] = C[i * n + j]; /* HPIPM wants C column-major */
    d_dense_qp_set_H(H, &h->qp); /* symmetric: row- and column-major agree */
    d_dense_qp_set_g(g, &h->qp);
    d_dense_qp_set_lb(lb, &h->qp);
    d_dense_qp_set_ub(ub, &h->qp);
    d_dense_qp_set_C(h->ccm, &h->qp);
    d_dense_qp_set_lg(lg, &h->qp);
    d_dense_qp_set_ug(ug, &h->qp);
    d_dense_qp_ipm_solve(&h->qp, &h->sol, &h->arg, &h->ws);
    int status = 0, iter = 0;
    d_dense_qp_ipm_get_status(&h->ws, &status);
    d_dense_qp_ipm_get_iter(&h->ws, &iter);
    d_dense_qp_sol_get_v(&h->sol, out);
    out[n] = (double) iter;
    out[n + 1] = (double) status;
    return status;
}
"""

_LIB: dict[str, ctypes.CDLL] = {}


def _acados_dirs() -> tuple[str, str]:
    """(include dir, lib dir) of the acados wheel, or a RuntimeError saying how to get it."""
    try:
        import acados
    except ImportError as exc:  # pragma: no cover - the project depends on it
        raise RuntimeError("sim.nmdp needs HPIPM from the acados wheel: pip install comma-deps-acados") from exc
    include = os.path.join(acados.DIR, "include")
    lib = acados.LIB_DIR
    if not os.path.exists(os.path.join(lib, "libhpipm.so")):
        raise RuntimeError(f"libhpipm.so not found in {lib}; reinstall comma-deps-acados")
    return include, lib


def load_library(cache_dir: Path | str | None = None, verbose: bool = True) -> ctypes.CDLL:
    """Compile (once, cached by source hash) and load the HPIPM shim; returns the ctypes library."""
    include, libdir = _acados_dirs()
    compiler = shutil.which(os.environ.get("CC", "gcc"))
    if compiler is None:
        raise RuntimeError("no C compiler found: install gcc (Debian: apt-get install gcc) or set CC")
    flags = ["-O2", "-fPIC", "-shared", f"-I{include}/hpipm/include", f"-I{include}/blasfeo/include",
             f"-L{libdir}", "-lhpipm", "-lblasfeo", f"-Wl,--disable-new-dtags,-rpath,{libdir}", "-lm"]
    key = hashlib.sha256("\n".join([_SOURCE, compiler, *flags]).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = folder / f"nmdp-hpipm-{key}"
    so_path = entry / "lib.so"
    if str(so_path) in _LIB:
        return _LIB[str(so_path)]
    if not so_path.exists():
        entry.mkdir(parents=True, exist_ok=True)
        c_path = entry / "nmdp_qp.c"
        c_path.write_text(_SOURCE)
        if verbose:
            import sys
            print(f"[codegen] compiling the HPIPM dense-QP shim; one-time, cached in {entry}", file=sys.stderr,
                  flush=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=entry)
        os.close(fd)
        proc = subprocess.run([compiler, str(c_path), "-o", tmp, *flags], capture_output=True, text=True)
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"compiling {c_path} failed:\n{proc.stderr[-4000:]}")
        os.replace(tmp, so_path)
    lib = ctypes.CDLL(str(so_path))
    lib.nmdp_qp_new.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double]
    lib.nmdp_qp_new.restype = ctypes.c_void_p
    lib.nmdp_qp_free.argtypes = [ctypes.c_void_p]
    lib.nmdp_qp_free.restype = None
    lib.nmdp_qp_solve.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.nmdp_qp_solve.restype = ctypes.c_int
    _LIB[str(so_path)] = lib
    return lib


class DenseQp:
    """An HPIPM workspace for dense QPs with n variables (all boxed) and ng general constraints.

    Attributes:
        handle: the workspace pointer (int), first argument of the C solve function.
        solve_address: address of `int nmdp_qp_solve(void* handle, const double* in, double* out)`.
        n_in, n_out: lengths of the flat input and output (see the module docstring).
    """

    def __init__(self, n: int, ng: int, *, iter_max: int = 50, tol: float = 1e-10,
                 cache_dir: Path | str | None = None, verbose: bool = True):
        if n < 1 or ng < 0:
            raise ValueError(f"DenseQp: need n >= 1 and ng >= 0, got n={n}, ng={ng}")
        self._lib = load_library(cache_dir, verbose)
        self.n, self.ng = int(n), int(ng)
        self.handle = int(self._lib.nmdp_qp_new(self.n, self.ng, int(iter_max), float(tol)))
        if not self.handle:
            raise MemoryError("DenseQp: HPIPM workspace allocation failed")
        self.solve_address = ctypes.cast(self._lib.nmdp_qp_solve, ctypes.c_void_p).value
        self.n_in = n * n + 3 * n + ng * n + 2 * ng
        self.n_out = n + 2

    def solve(self, H, g, lb, ub, C=None, lg=None, ug=None) -> tuple[np.ndarray, int, int]:
        """Solve the QP of the module docstring; returns (x, IPM iterations, HPIPM status)."""
        n, ng = self.n, self.ng
        C = np.zeros((ng, n)) if C is None else np.asarray(C, float).reshape(ng, n)
        lg = np.zeros(ng) if lg is None else lg
        ug = np.zeros(ng) if ug is None else ug
        flat = np.ascontiguousarray(np.concatenate([np.asarray(H, float).reshape(-1), np.ravel(g), np.ravel(lb),
                                                    np.ravel(ub), C.reshape(-1), np.ravel(lg), np.ravel(ug)]),
                                    dtype=np.float64)
        if flat.size != self.n_in:
            raise ValueError(f"DenseQp.solve: inputs have {flat.size} numbers, expected {self.n_in}")
        out = np.zeros(self.n_out)
        status = self._lib.nmdp_qp_solve(self.handle, flat.ctypes.data, out.ctypes.data)
        return out[:n].copy(), int(out[n]), int(status)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", 0), 0
        if handle and getattr(self, "_lib", None) is not None:
            self._lib.nmdp_qp_free(handle)
