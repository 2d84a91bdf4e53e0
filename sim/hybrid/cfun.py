"""Calling the robot's generated C functions from numba by address.

`robots.numeric(model).raw[name].address` is a plain integer; passing integers (one int64
array of addresses) into @njit kernels keeps numba's dispatch cheap and lets one compiled
kernel serve every robot. Inside a kernel: `cfun(addr[F_MASS], x.ctypes.data, out.ctypes.data)`.
"""
from __future__ import annotations

import numpy as np

from robots.ccall import call_flat

# slots of the address table (see `address_table`)
F_MASS, F_BIAS, F_JAC, F_BIASACC, F_GAP, F_POINTS, F_ENERGY = range(7)
_NAMES = ("mass_matrix", "bias", "contact_jacobians", "contact_bias_acc", "contact_gap", "contact_points", "energy")


cfun = call_flat  # the project's one call-by-address intrinsic (robots/ccall.py)


def address_table(fns) -> np.ndarray:
    """int64 array of the C entry points a kernel needs, in the F_* slot order.

    `fns` is a `robots.NumericRobot`; keep it alive as long as the table is used (it owns
    the loaded library).
    """
    return np.array([fns.raw[name].address for name in _NAMES], dtype=np.int64)
