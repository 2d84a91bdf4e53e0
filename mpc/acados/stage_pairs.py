"""The complementarity of the stage an MPC just sent: its largest pair product |a b|.

    pairs = StagePairs(problem, lib_name="cimpc_pairs_hopper")
    pairs.worst(x, u0) -> {"complementarity": |a b|, "complementarity_pair": k, "complementarity_a": a, ...}

The problem's `pairs(x, u) -> (a, b)` is compiled to C once (about 1 us a call instead of about
60 us in CasADi); a handful of pairs, so plain Python beats numpy's per-call cost for the max.
"""
from __future__ import annotations

import numpy as np


class StagePairs:
    """Compiled pair function of a problem (`pairs`, nx + nu inputs) and its buffers."""

    def __init__(self, problem, *, lib_name: str):
        from robots.codegen import compile_functions

        self._fn = compile_functions([problem.pairs], lib_name=lib_name, verbose=False).functions["pairs"]
        self.nx = problem.nx
        self.n = problem.pairs.size1_out(0)
        self._in = np.zeros(problem.nx + problem.nu)
        self._out = np.zeros(2 * self.n)

    def values(self, x: np.ndarray, u: np.ndarray) -> list:
        """The pairs of stage (x, u) as one list: every a, then every b (the problem's order)."""
        self._in[: self.nx], self._in[self.nx:] = x, u
        return self._fn.call_flat(self._in, self._out).tolist()

    def worst(self, x: np.ndarray, u: np.ndarray) -> dict:
        """The largest |a b| over the pairs of stage (x, u), which pair (index into the problem's
        pair list) and its a and b."""
        return self.worst_of(self.values(x, u))

    def worst_of(self, ab: list) -> dict:
        """`worst` of pair values already computed (`values`)."""
        n = self.n
        prods = [abs(a * b) for a, b in zip(ab[:n], ab[n:])]
        k = max(range(n), key=prods.__getitem__)
        return {"complementarity": prods[k], "complementarity_pair": k, "complementarity_a": ab[k],
                "complementarity_b": ab[n + k]}
