"""Call a generated flat C function `(const double* in, double* out)` by its address from numba.

    call_flat(address, x.ctypes.data, out.ctypes.data)     # inside @njit code

Passing addresses as plain int64 (e.g. in an array) keeps numba's dispatch on its fast path:
ctypes function objects as arguments cost ~30 us per call to type-check, an int64 costs nothing.
`carray(f64_pointer(address), shape)` views a float64 buffer by its address the same way.

`drop_stale_cache(dispatcher, prefix, files)`: numba's disk cache checks only a function's own
file, so a module whose cached functions inline code of other modules (this intrinsic, a shared
kernel) calls it at import with those modules' files.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def call_flat(typingctx, address, in_ptr, out_ptr):
    """Numba intrinsic: call the C function at `address` with two pointers given as integers."""
    if not all(isinstance(a, types.Integer) for a in (address, in_ptr, out_ptr)):
        return None
    sig = types.void(address, in_ptr, out_ptr)

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i8p])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        builder.call(fn, [builder.inttoptr(args[1], i8p), builder.inttoptr(args[2], i8p)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def f64_pointer(typingctx, address):
    """Numba intrinsic: the integer `address` as a float64 pointer, for `numba.carray(pointer,
    shape)`: a view of a buffer the caller keeps alive (e.g. MuJoCo's mjData arrays)."""
    if not isinstance(address, types.Integer):
        return None
    ptr = types.CPointer(types.float64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(ptr))

    return ptr(address), codegen


def drop_stale_cache(dispatcher, prefix: str, dependencies: list[str]) -> None:
    """Delete numba's cached machine code of the module `dispatcher` lives in (files named
    `prefix*` in its cache folder) when any file of `dependencies` changed since it was cached.

    Numba checks only the source file of a cached function, not the modules whose functions it
    inlines: an edit of the integrator kernel would otherwise leave stale plants in the cache.
    A stamp file beside the cache holds the SHA-256 of the dependencies' sources."""
    cache = getattr(dispatcher, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    if folder is None:
        return
    digest = hashlib.sha256(b"".join(Path(f).read_bytes() for f in dependencies)).hexdigest()
    stamp = Path(folder) / f"{prefix}deps-sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest:
            return
        for old in Path(folder).glob(f"{prefix}*.nb[ic]"):
            old.unlink(missing_ok=True)
        Path(folder).mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only cache folder: numba then compiles in memory anyway
        pass
