"""The compiled plants' check of a command's five fields (the ESS and MuJoCo steps inline it).

`fields_ok` is `sim.protocol.packed_commands_ok` for the fields as they arrive, unpacked: the
plants' fast path runs it inside their compiled step, and a command it refuses goes through
`pack_command`, whose ValueError names the bad field.
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True)
def fields_ok(tau_ff, q_des, v_des, kp, kd, nu):
    """True if each of a command's fields (tau_ff, q_des, v_des, kp, kd) has nu entries, all
    finite, and the gains kp, kd are >= 0."""
    for x in (tau_ff, q_des, v_des, kp, kd):
        if x.shape[0] != nu:
            return False
        for j in range(nu):
            if not math.isfinite(x[j]):
                return False
    for j in range(nu):
        if kp[j] < 0.0 or kd[j] < 0.0:
            return False
    return True
