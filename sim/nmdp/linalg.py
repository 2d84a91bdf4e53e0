"""Dense LU with partial pivoting for the small (nv x nv) systems of one NMDP step (numba)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def lu_factor(A, piv, n):
    """Factor the leading n x n block of A in place (L unit-lower, U upper); piv: row swaps.

    Returns False when a pivot is below 1e-13 times the largest entry (numerically singular).
    """
    big = 0.0
    for i in range(n):
        for j in range(n):
            a = abs(A[i, j])
            if a > big:
                big = a
    if not big > 0.0 or not np.isfinite(big):
        return False
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                p = i
        if best <= 1e-13 * big:
            return False
        piv[k] = p
        if p != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = tmp
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]
    return True


@njit(cache=True)
def lu_solve(LU, piv, b, n):
    """Solve A x = b in place in b (length n) from `lu_factor`'s output."""
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]
