"""Active-set polish of a relaxed FESD solution (Step representation).

The Scholtes homotopy drives the products alpha * lambda_n and (1 - alpha) * lambda_p to zero
only in the limit sigma -> 0, and on the hopper IPOPT stalls near sigma ~ 1e-4
(docs/PLANNING.md). Once a relaxed solution shows which side of every complementarity pair is
zero, the MPCC restricted to that active set is a smooth NLP (the "tightened" NLP of the MPCC
literature): fix the zero side by bounds, drop nothing else, solve once. A solution of it is
feasible for the MPCC with every complementarity product exactly zero.

FESD keeps the active set constant on each finite element (the cross complementarities pair
every alpha of an element with the lambdas of all its stage points and the last stage point of
the element before), so the classification is per (control interval, finite element, switching
function):

    "1" (c > 0 side):  alpha = 1 at every stage point, lambda_n = 0 (and at the previous end)
    "0" (c < 0 side):  alpha = 0,                       lambda_p = 0 (and at the previous end)
    "m" (sliding, c = 0): lambda_n = lambda_p = 0 (and at the previous end), alpha free

where c = lambda_p - lambda_n. A switch between elements then happens exactly at their common
boundary (c = 0 there), as in FESD's switch detection.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POSITIVE, NEGATIVE, SLIDING = 1, 0, 2
_LETTER = {POSITIVE: "1", NEGATIVE: "0", SLIDING: "m"}


@dataclass
class ActiveSet:
    """Per-element classification and the bounds/start point that impose it.

    classes: (N, n_fe, n_c) ints, POSITIVE / NEGATIVE / SLIDING.
    lbx, ubx: variable bounds with the zero sides fixed.  w: the start point with them applied.
    """

    classes: np.ndarray
    lbx: np.ndarray
    ubx: np.ndarray
    w: np.ndarray

    def table(self) -> str:
        """One line per control interval, one 'n_c letters' word per finite element (1/0/m)."""
        return "\n".join(
            f"{k:3d} " + " ".join("".join(_LETTER[int(c)] for c in fe) for fe in row)
            for k, row in enumerate(self.classes))

    def counts(self) -> dict[str, int]:
        """How many (element, switching function) pairs fall in each class."""
        return {name: int((self.classes == val).sum())
                for name, val in (("positive", POSITIVE), ("negative", NEGATIVE), ("sliding", SLIDING))}


def classify(prob, w: np.ndarray, *, n_intervals: int, n_fe: int, n_s: int,
             c_eps: float, alpha_eps: float, relaxed: frozenset[int] | set[int] = frozenset()) -> ActiveSet:
    """Classify every (interval, element, switching function) of nosnoc's Step problem at w.

    c = lambda_p - lambda_n at the element's stage points (units of the switching function).
    If c > c_eps at every stage point the pair is POSITIVE, if c < -c_eps NEGATIVE; otherwise
    the mean alpha decides: < alpha_eps NEGATIVE, > 1 - alpha_eps POSITIVE, else SLIDING.
    Control intervals in `relaxed` are classified but nothing in them is fixed: their pairs
    stay under the NLP's relaxation (see `solve._polish`).
    """
    if c_eps <= 0 or not 0 < alpha_eps < 0.5:
        raise ValueError(f"need c_eps > 0 and 0 < alpha_eps < 0.5, got c_eps={c_eps}, alpha_eps={alpha_eps}")
    w = np.array(w, dtype=float)
    lbx, ubx = np.array(prob.lbw, dtype=float), np.array(prob.ubw, dtype=float)

    def idx(table, k, j, r):
        return np.asarray(table[k][j][r][0], dtype=int)

    n_c = idx(prob.ind_alpha, 0, 0, 0).size
    classes = np.empty((n_intervals, n_fe, n_c), dtype=int)
    prev = None
    for k in range(n_intervals):
        for j in range(n_fe):
            ia = np.array([idx(prob.ind_alpha, k, j, r) for r in range(n_s)])   # n_s x n_c
            iln = [idx(prob.ind_lambda_n, k, j, r) for r in range(n_s)]
            ilp = [idx(prob.ind_lambda_p, k, j, r) for r in range(n_s)]
            if prev is not None:  # the previous element's last stage point enters the cross comps
                iln.append(idx(prob.ind_lambda_n, *prev, n_s - 1))
                ilp.append(idx(prob.ind_lambda_p, *prev, n_s - 1))
            iln, ilp = np.array(iln), np.array(ilp)
            c = w[ilp[:n_s]] - w[iln[:n_s]]
            alpha_mean = w[ia].mean(axis=0)
            for i in range(n_c):
                if c[:, i].min() > c_eps or (c[:, i].max() >= -c_eps and alpha_mean[i] > 1 - alpha_eps):
                    cls, fixed = POSITIVE, ((ia[:, i], 1.0), (iln[:, i], 0.0))
                elif c[:, i].max() < -c_eps or alpha_mean[i] < alpha_eps:
                    cls, fixed = NEGATIVE, ((ia[:, i], 0.0), (ilp[:, i], 0.0))
                else:
                    cls, fixed = SLIDING, ((iln[:, i], 0.0), (ilp[:, i], 0.0))
                classes[k, j, i] = cls
                if k in relaxed:
                    continue
                for where, value in fixed:
                    lbx[where] = ubx[where] = w[where] = value
            prev = (k, j)
    return ActiveSet(classes=classes, lbx=lbx, ubx=ubx, w=w)


def interval_of_variables(prob, n_intervals: int, n_fe: int) -> np.ndarray:
    """Control interval of every NLP variable of nosnoc's problem (-1: none), as an int array.

    nosnoc lays out the controls and speeds of time of all intervals first, then per finite
    element its length h followed by its stage variables, element after element.
    """
    owner = np.full(prob.w.numel(), -1, dtype=int)
    starts = [int(prob.ind_h[k * n_fe]) for k in range(n_intervals)] + [prob.w.numel()]
    for k in range(n_intervals):
        owner[starts[k]:starts[k + 1]] = k
        owner[np.asarray(prob.ind_u[k], dtype=int)] = k
        owner[np.asarray(prob.ind_sot[k], dtype=int)] = k
    return owner


def violated_intervals(violation: np.ndarray, rows: np.ndarray, cols: np.ndarray, owner: np.ndarray,
                       tol: float) -> set[int]:
    """Control intervals whose variables appear in a constraint row violated by more than tol.

    violation: per-row violation (max(lbg - g, g - ubg, 0)); rows, cols: the constraint
    Jacobian's sparsity triplets; owner: `interval_of_variables`.
    """
    bad_rows = np.flatnonzero(violation > tol)
    hit = owner[cols[np.isin(rows, bad_rows)]]
    return {int(k) for k in hit if k >= 0}
