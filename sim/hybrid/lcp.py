"""A small Lemke solver for the linear complementarity problem (LCP).

    find z >= 0 with w = W z + q >= 0 and z . w = 0.

Complementary pivoting with the covering vector d = 1 and an artificial variable z0
(Lemke 1965; Cottle, Pang & Stone, The Linear Complementarity Problem, Sec. 4.4). For the
P-matrices of independent frictionless contacts (W = Jn M^-1 Jn^T positive definite) it
terminates with the unique solution. Used by the hybrid simulator's mode selection when
there are too many contacts in scope to enumerate the candidate modes.
"""
from __future__ import annotations

import numpy as np


def lemke(W: np.ndarray, q: np.ndarray, *, max_pivots: int | None = None, tol: float = 1e-12) -> np.ndarray | None:
    """Solution z (n) of LCP(W, q), or None on ray termination / pivot limit.

    W: (n x n) matrix; q: (n); units follow the caller (impulses in N s for the impact LCP).
    """
    W = np.asarray(W, dtype=float)
    q = np.asarray(q, dtype=float)
    n = q.shape[0]
    if W.shape != (n, n):
        raise ValueError(f"lemke: W has shape {W.shape}, expected ({n}, {n})")
    if n == 0 or np.all(q >= 0.0):
        return np.zeros(n)
    max_pivots = max_pivots or 50 * (n + 1)
    # tableau columns: w (0..n-1), z (n..2n-1), z0 (2n), rhs (2n+1)
    T = np.zeros((n, 2 * n + 2))
    T[:, :n] = np.eye(n)
    T[:, n:2 * n] = -W
    T[:, 2 * n] = -1.0
    T[:, -1] = q
    basis = list(range(n))
    z0 = 2 * n
    scale = max(1.0, float(np.abs(T[:, :-1]).max()))

    def pivot(row: int, col: int) -> None:
        T[row] /= T[row, col]
        for i in range(n):
            if i != row and T[i, col] != 0.0:
                T[i] -= T[i, col] * T[row]

    row = int(np.argmin(q))
    pivot(row, z0)
    leaving = basis[row]
    basis[row] = z0
    entering = leaving + n  # complement of w_i is z_i
    for _ in range(max_pivots):
        col = T[:, entering]
        candidates = [i for i in range(n) if col[i] > tol * scale]
        if not candidates:
            return None  # secondary ray
        ratios = np.array([T[i, -1] / col[i] for i in candidates])
        best = ratios.min()
        ties = [candidates[k] for k in range(len(candidates)) if ratios[k] <= best + tol * max(1.0, abs(best))]
        row = next((i for i in ties if basis[i] == z0), min(ties, key=lambda i: basis[i]))
        pivot(row, entering)
        leaving = basis[row]
        basis[row] = entering
        if leaving == z0:
            break
        entering = leaving + n if leaving < n else leaving - n
    else:
        return None
    z = np.zeros(n)
    for i, b in enumerate(basis):
        if n <= b < 2 * n:
            z[b - n] = max(T[i, -1], 0.0)
    return z
