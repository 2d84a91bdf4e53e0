"""Call a generated flat C function `(const double* in, double* out)` by its address from numba.

    call_flat(address, x.ctypes.data, out.ctypes.data)     # inside @njit code

Passing addresses as plain int64 (e.g. in an array) keeps numba's dispatch on its fast path:
ctypes function objects as arguments cost ~30 us per call to type-check, an int64 costs nothing.
"""
from __future__ import annotations

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
