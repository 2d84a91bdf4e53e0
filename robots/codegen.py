"""Compile CasADi Functions to a shared C library, cached by a hash of the generated source.

Each function gets a flat C entry point `void <name>_flat(const double* in, double* out)`:
`in` is all inputs concatenated (each a dense column vector), `out` all outputs concatenated,
each output dense and row-major (C order). That signature is callable from ctypes and from
numba-compiled loops (pass `arr.ctypes.data`) with no Python in between, at ~tens of ns.

The cache key is the SHA-256 of the generated C source, the compiler command, the CasADi
version and the host's CPU (the code is compiled for it: -march=native), so a library is rebuilt
exactly when the model, the toolchain or the machine changes. The cache
folder is `$LEGMPC_CACHE_DIR` or `~/.cache/legmpc`; writes are atomic (compile to a temporary
name, then rename), so concurrent processes never load a half-written library.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import casadi as ca
import numpy as np

# -march=native: the host's vector and fused multiply-add instructions (a go1 ESS step 10 % faster);
# the cache key holds the host's CPU (`host_cpu`), so a cache copied to another machine recompiles
CFLAGS = ("-O2", "-march=native", "-fPIC", "-shared", "-fno-math-errno")
_LOADED: dict[Path, ctypes.CDLL] = {}
_HOST_CPU: list[str] = []


def host_cpu() -> str:
    """What -march=native compiles for: the machine type and, on Linux, the CPU's model name and
    instruction-set flags (/proc/cpuinfo's first processor); part of every cache key."""
    if not _HOST_CPU:
        import platform

        ident = [platform.machine()]
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    key = line.split(":", 1)[0].strip()
                    if key in ("model name", "flags", "Features", "CPU part", "vendor_id"):
                        ident.append(line.strip())
                    elif not line.strip() and len(ident) > 1:  # the first processor's block ends
                        break
        except OSError:
            ident.append(platform.processor())
        _HOST_CPU.append("\n".join(ident))
    return _HOST_CPU[0]


def default_cache_dir() -> Path:
    """The code-generation cache folder: $LEGMPC_CACHE_DIR, else ~/.cache/legmpc."""
    env = os.environ.get("LEGMPC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "legmpc"


@dataclass(frozen=True, eq=False)
class CompiledFunction:
    """One compiled function: flat float64 input -> flat float64 output.

    in_sizes: length of each input vector; out_shapes: (rows, cols) of each output, row-major.
    cfunc: the ctypes function `(void* in, void* out) -> None`, usable inside numba @njit code.
    address: the raw function pointer, for other foreign callers.
    """

    name: str
    in_names: tuple[str, ...]
    in_sizes: tuple[int, ...]
    out_names: tuple[str, ...]
    out_shapes: tuple[tuple[int, int], ...]
    cfunc: ctypes._CFuncPtr
    address: int

    @property
    def n_in(self) -> int:
        """Total length of the flat input."""
        return int(sum(self.in_sizes))

    @property
    def n_out(self) -> int:
        """Total length of the flat output."""
        return int(sum(r * c for r, c in self.out_shapes))

    def call_flat(self, flat_in: np.ndarray, flat_out: np.ndarray | None = None) -> np.ndarray:
        """Evaluate on a contiguous float64 input of length n_in; fill and return `flat_out`.

        No checks beyond dtype/contiguity: validate once at set-up, then call this.
        """
        if flat_out is None:
            flat_out = np.empty(self.n_out)
        self.cfunc(flat_in.ctypes.data, flat_out.ctypes.data)
        return flat_out

    def __call__(self, *args: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        """Evaluate with one array per input; returns one array per output (a tuple if several).

        An output with one column comes back 1-D; callers that know it is a matrix reshape it.
        """
        if len(args) != len(self.in_sizes):
            raise TypeError(f"{self.name}() takes {len(self.in_sizes)} inputs {self.in_names}, got {len(args)}")
        flat_in = np.ascontiguousarray(np.concatenate([np.ravel(a) for a in args]), dtype=np.float64)
        if flat_in.size != self.n_in:
            sizes = [np.size(a) for a in args]
            raise ValueError(f"{self.name}(): input sizes {sizes} do not match {dict(zip(self.in_names, self.in_sizes))}")
        flat_out = self.call_flat(flat_in)
        outs, k = [], 0
        for r, c in self.out_shapes:
            block = flat_out[k : k + r * c]
            outs.append(block.reshape(r) if c == 1 else block.reshape(r, c))
            k += r * c
        return outs[0] if len(outs) == 1 else tuple(outs)


@dataclass(frozen=True, eq=False)
class CompiledLibrary:
    """A loaded shared library of compiled functions.

    path: the .so file; built_now: True when this call compiled it (False = cache hit);
    build_s: compile time in seconds (0 on a cache hit); functions: name -> CompiledFunction.
    """

    path: Path
    built_now: bool
    build_s: float
    functions: dict[str, CompiledFunction]

    def __getitem__(self, name: str) -> CompiledFunction:
        return self.functions[name]


def _row_major_dense(f: ca.Function) -> ca.Function:
    """Same function with dense vector inputs and dense, row-major (transposed) outputs."""
    ins = []
    for i in range(f.n_in()):
        sp = f.sparsity_in(i)
        if sp.size2() != 1:
            raise ValueError(f"{f.name()}: input {f.name_in(i)} must be a column vector, has shape {sp.shape}")
        ins.append(ca.SX.sym(f.name_in(i), sp.size1()))
    outs = f.call(ins)
    outs = [ca.densify(ca.SX(o).T) for o in outs]
    # common-subexpression elimination: ~1/3 fewer instructions for Lagrangian expressions
    return ca.Function(f.name(), ins, outs, f.name_in(), f.name_out(), {"cse": True})


def _flat_wrapper(g: ca.Function) -> str:
    lines = [
        f"CASADI_SYMBOL_EXPORT void {g.name()}_flat(const casadi_real* in, casadi_real* out) {{",
        f"  const casadi_real* arg[{max(g.sz_arg(), 1)}] = {{0}};",
        f"  casadi_real* res[{max(g.sz_res(), 1)}] = {{0}};",
        f"  casadi_int iw[{g.sz_iw() + 1}];",
        f"  casadi_real w[{g.sz_w() + 1}];",
    ]
    k = 0
    for i in range(g.n_in()):
        lines.append(f"  arg[{i}] = in + {k};")
        k += g.sparsity_in(i).numel()
    k = 0
    for i in range(g.n_out()):
        lines.append(f"  res[{i}] = out + {k};")
        k += g.sparsity_out(i).numel()
    lines += [f"  {g.name()}(arg, res, iw, w, 0);", "}", ""]
    return "\n".join(lines)


def generate_source(functions: Sequence[ca.Function]) -> tuple[str, list[ca.Function]]:
    """C source of the functions plus their flat wrappers; also returns the wrapped Functions."""
    names = [f.name() for f in functions]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate function names {names}")
    wrapped = [_row_major_dense(f) for f in functions]
    cg = ca.CodeGenerator("generated.c", {"with_header": False, "casadi_real": "double"})
    for g in wrapped:
        cg.add(g)
    source = cg.dump() + "\n/* flat entry points: inputs and outputs concatenated, outputs row-major */\n"
    source += "".join(_flat_wrapper(g) for g in wrapped)
    return source, wrapped


def compile_shared(source: str, *, lib_name: str, cache_dir: Path | str | None = None, verbose: bool = True,
                   extra_args: Sequence[str] = (), what: str = "") -> tuple[Path, bool, float]:
    """Compile C `source` into a shared library once, cached by a hash of source, compiler and
    flags; returns (path of lib.so, built_now, build seconds). extra_args: more gcc arguments
    (include folders, libraries)."""
    compiler = shutil.which(os.environ.get("CC", "gcc"))
    if compiler is None:
        raise RuntimeError("no C compiler found: install gcc (Debian: apt-get install gcc) or set CC")
    key = hashlib.sha256("\n".join([source, compiler, *CFLAGS, *extra_args, ca.__version__, host_cpu()]).encode()
                         ).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = folder / f"{lib_name}-{key}"
    so_path = entry / "lib.so"
    built_now, build_s = False, 0.0
    if not so_path.exists():
        entry.mkdir(parents=True, exist_ok=True)
        c_path = entry / "generated.c"
        c_path.write_text(source)
        if verbose:
            print(f"[codegen] compiling {lib_name} ({what + ', ' if what else ''}{len(source) // 1024} KiB of C) "
                  f"with {Path(compiler).name}; one-time, cached in {entry}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=entry)
        os.close(fd)
        proc = subprocess.run([compiler, *CFLAGS, "-o", tmp, str(c_path), *extra_args, "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"compiling {c_path} failed:\n{proc.stderr[-4000:]}")
        os.replace(tmp, so_path)
        build_s = time.perf_counter() - t0
        built_now = True
    return so_path, built_now, build_s


def compile_functions(
    functions: Sequence[ca.Function],
    *,
    lib_name: str,
    cache_dir: Path | str | None = None,
    verbose: bool = True,
) -> CompiledLibrary:
    """Generate C for `functions`, compile it with gcc once, and load it.

    Args:
        functions: CasADi Functions with column-vector inputs (names must be unique).
        lib_name: a readable prefix for the cache entry, e.g. "hopper".
        cache_dir: where compiled libraries live (default: `default_cache_dir()`).
        verbose: print a line to stderr when compiling (the slow, one-time path).
    Returns:
        The loaded library; `built_now` tells whether it was compiled by this call.
    """
    source, wrapped = generate_source(functions)
    so_path, built_now, build_s = compile_shared(source, lib_name=lib_name, cache_dir=cache_dir, verbose=verbose,
                                                 what=f"{len(functions)} functions")
    lib = _LOADED.get(so_path) or ctypes.CDLL(str(so_path))
    _LOADED[so_path] = lib
    out: dict[str, CompiledFunction] = {}
    for g in wrapped:
        cfunc = getattr(lib, f"{g.name()}_flat")
        cfunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        cfunc.restype = None
        out[g.name()] = CompiledFunction(
            name=g.name(),
            in_names=tuple(g.name_in()),
            in_sizes=tuple(g.sparsity_in(i).numel() for i in range(g.n_in())),
            out_names=tuple(g.name_out()),
            # outputs were transposed for row-major storage: report the original shapes
            out_shapes=tuple((g.sparsity_out(i).size2(), g.sparsity_out(i).size1()) for i in range(g.n_out())),
            cfunc=cfunc,
            address=ctypes.cast(cfunc, ctypes.c_void_p).value,
        )
    return CompiledLibrary(path=so_path, built_now=built_now, build_s=build_s, functions=out)
