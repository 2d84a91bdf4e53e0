"""Calling the robot's generated C functions from numba by address.

`robots.numeric(model).raw[name].address` is a plain integer; passing integers (one int64
array of addresses) into @njit kernels keeps numba's dispatch cheap and lets one compiled
kernel serve every robot. Inside a kernel: `cfun(addr[F_MASS], x.ctypes.data, out.ctypes.data)`.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

# slots of the address table (see `address_table`)
F_MASS, F_BIAS, F_JAC, F_BIASACC, F_GAP, F_POINTS, F_ENERGY = range(7)
_NAMES = ("mass_matrix", "bias", "contact_jacobians", "contact_bias_acc", "contact_gap", "contact_points", "energy")


@intrinsic
def cfun(typingctx, address, in_ptr, out_ptr):
    """Numba intrinsic: call `void f(const double* in, double* out)` at integer `address`."""
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


def address_table(fns) -> np.ndarray:
    """int64 array of the C entry points a kernel needs, in the F_* slot order.

    `fns` is a `robots.NumericRobot`; keep it alive as long as the table is used (it owns
    the loaded library).
    """
    return np.array([fns.raw[name].address for name in _NAMES], dtype=np.int64)
