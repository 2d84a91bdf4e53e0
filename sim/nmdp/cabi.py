"""Call a C function `int f(void*, void*, void*)` by its address from numba-compiled code.

    status = call_ptr3(address, handle, in_ptr, out_ptr)      # inside @njit code

Same idea as `robots.ccall.call_flat` (addresses travel as plain int64, so numba's dispatch
stays on its fast path), with one more pointer argument and an int return: the dense QP
solver of `sim.nmdp.qp` takes its workspace handle first.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def call_ptr3(typingctx, address, a, b, c):
    """Numba intrinsic: `(int) ((int (*)(void*, void*, void*)) address)(a, b, c)`, all given as integers."""
    if not all(isinstance(x, types.Integer) for x in (address, a, b, c)):
        return None
    sig = types.int32(address, a, b, c)

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, i8p, i8p])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.inttoptr(x, i8p) for x in args[1:]])

    return sig, codegen
