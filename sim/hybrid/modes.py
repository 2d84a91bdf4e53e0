"""Contact modes at one state: constraint rows, plastic impact, contact forces, mode selection.

Notation (seed 001, Sections 2.4-2.7). A mode J is a set of active contacts. Its constraint
matrix A_J stacks the normal rows Jn_i (gap velocity) of every i in J and, for contacts that
stick (friction model "stick" and mu_i > 0, the paper's Assumption A12), the tangential rows
Jt_i. Rows that are linearly dependent on earlier ones (e.g. the second sticking corner of a
block lying flat) are dropped: the paper drops "one of the redundant tangential constraints".

- Plastic impact into J (eq. 31-33): v+ = v- + M^-1 A^T P with A v+ = target (0, or -e times
  the incoming normal speed with restitution e); P = G^-1 (target - A v-), G = A M^-1 A^T.
- Contact force in J (eq. 21): lam = G^-1 (-(A M^-1 (tau - h) + dA/dt v)).
- Pseudo-impulse (eq. 73-76): P^_J = eps * lam_J(q, v+_J), the impulse the contacts would
  impart against the continuous forces during an impact of duration eps. It is used only in
  the mode-selection predicate, never applied to the velocities.
- Impulse-velocity predicate (eq. 61-65, with 76): J is the post-impact mode iff every i in J
  has a non-negative effective impulse and every i in scope S but not in J would get a
  negative one in J + {i}, where the effective impulse is max(P_i, P_i + P^_i) (the
  pseudo-impulse can keep contacts that the plain impulse would break, never break ones it
  keeps).
- Force-acceleration predicate (eq. 43-46): K is the mode after liftoff iff every i in K has
  lam_i >= 0 and every i in S \\ K has lam_{K+i, i} < 0, judged by the trend (sign just after
  the event) when the force is zero to tolerance. Sticking members must also be inside their
  Coulomb cones |ft| <= mu fn (else they slide, see below); impacts stick regardless (A12).
Small scopes enumerate all 2^|S| candidates (Section 4.4); larger ones take a Lemke LCP
solution of the frictionless normal problem as the candidate, check the exact predicate,
and repair it by single-contact flips.

Complementarity of the contacts left out. Both predicates also require that a contact of S
left out of the mode does not go into the ground: its normal velocity after the impact
(impulse-velocity) or its gap acceleration in the mode (force-acceleration) is >= 0 to
tolerance. Without friction this follows from the predicates (the LCP is a P-matrix one);
with sticking contacts it does not: a sticking foot can make the second foot need a pulling
impulse to stop, while left out it sinks (a Painleve-like case, where the plant
cycled touchdown -> Zeno -> lift-off thousands of times per step).

Friction-consistent selection (`consistent_impact_mode`, `consistent_liftoff_mode`): when no
candidate with the current sticking contacts satisfies the predicate, sticking contacts of S
are made sliding (normal row only), the fewest that make a candidate consistent; among equal
counts the one whose remaining sticking contacts are deepest inside their Coulomb cones. They
are tried with kinetic friction first (sliding the way their velocity, or at rest the way
opposite to the friction force they needed, points) and then frictionless. All of S sliding
frictionless is the frictionless problem, which has a solution whenever the normal rows are
independent. Impulses of sliding contacts are normal only (the impact map uses A, not F).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace
from itertools import combinations, product
from typing import Iterable

import numpy as np

from .kernels import constraint_rows, force_rows, kinetic_margin, model_terms, solve_mode
from .lcp import lemke

Mode = frozenset  # of contact indices


@dataclass
class Rows:
    """Independent constraint rows of a mode: contact index, kind (0 normal, 1 tangential);
    dropped_t lists the sticking contacts whose tangential row was dependent (dropped)."""

    c: np.ndarray
    k: np.ndarray
    dropped_t: tuple = ()

    @property
    def m(self) -> int:
        """Number of rows."""
        return int(self.c.shape[0])

    def normal_row(self, i: int) -> int:
        """Row index of contact i's normal row, or -1 if it was dropped (dependent)."""
        hits = np.flatnonzero((self.c == i) & (self.k == 0))
        return int(hits[0]) if hits.size else -1


@dataclass
class Impact:
    """A plastic (or restitutive) impact into one candidate mode: v+ (nv), the per-contact normal
    impulse P (nc, N s; 0 outside the mode) and the pseudo-impulse P^ (nc, N s)."""

    v_plus: np.ndarray
    P: np.ndarray
    P_hat: np.ndarray

    def effective(self, i: int) -> float:
        """Effective normal impulse of contact i for mode selection, N s."""
        return max(self.P[i], self.P[i] + self.P_hat[i])


@dataclass
class Snapshot:
    """Everything mode selection needs at one configuration q with velocity v and joint force tau.

    addr/nv/nc: compiled robot functions; stick: (nc) bool, contacts with a tangential row;
    tau: generalized applied force (nv, N or N m); eps: pseudo-impulse duration (s);
    tol_p: impulse tolerance (N s); tol_f: force tolerance (N); tol_v: normal speed (m/s) a
    contact left out of the mode may still approach at; rank_tol: relative tolerance of the
    row-dependency test; mu: (nc) friction coefficients (None: cones not compared);
    slide_mu: (nc) mu_i sign(vt_i) of each sliding contact (its kinetic friction, see kernels.py;
    0: frictionless sliding; None: all 0).
    """

    addr: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    stick: np.ndarray
    nv: int
    nc: int
    eps: float = 0.0
    tol_p: float = 1e-12
    tol_f: float = 1e-9
    tol_v: float = 1e-8
    rank_tol: float = 1e-9
    mu: np.ndarray | None = None
    slide_mu: np.ndarray | None = None
    painleve_margin: float = 0.1
    _terms: tuple = field(default=None, repr=False)  # type: ignore[assignment]
    _rows: dict = field(default_factory=dict, repr=False)
    _impacts: dict = field(default_factory=dict, repr=False)

    def with_stick(self, stick: np.ndarray, slide_mu: np.ndarray | None = None) -> "Snapshot":
        """The same snapshot with another set of sticking contacts and kinetic friction of the
        sliding ones (model terms shared)."""
        slide_mu = self.slide_mu if slide_mu is None else slide_mu
        return replace(self, stick=np.array(stick, dtype=bool), slide_mu=slide_mu, _terms=self.terms(),
                       _rows={}, _impacts={})

    def kinetic_margin(self, J: Iterable[int]) -> float:
        """kernels.kinetic_margin of mode J at the snapshot (1 without kinetic friction)."""
        rows = self.rows(J)
        return float(kinetic_margin(self.addr, self.q, rows.c, rows.k, self.row_slide(rows), self.nv, self.nc))

    def row_slide(self, rows: Rows) -> np.ndarray:
        """Kinetic friction slide_mu per row of `rows` (normal rows of sliding contacts)."""
        out = np.zeros(rows.m)
        if self.slide_mu is not None:
            for r in range(rows.m):
                if rows.k[r] == 0 and not self.stick[rows.c[r]]:
                    out[r] = self.slide_mu[rows.c[r]]
        return out

    def cone_excess(self, J: Iterable[int], v: np.ndarray | None = None) -> float:
        """Largest |ft| - mu fn (N) over the sticking rows of mode J at velocity v (the load of
        a dropped parallel tangential row is shared by the kept one); -inf without cones."""
        rows = self.rows(J)
        if self.mu is None or not np.any(rows.k == 1):
            return -np.inf
        fn, ft = self.forces_nt(J, v)
        shared = sum(self.mu[j] * fn[j] for j in rows.dropped_t)
        return max(abs(ft[c]) - self.mu[c] * fn[c] - shared for c, k in zip(rows.c, rows.k) if k == 1)

    @property
    def M_scale(self) -> float:
        """A mass scale (kg, the largest entry of M) turning velocity and acceleration
        violations into impulses and forces."""
        return float(np.abs(self.terms()[0]).max())

    def terms(self, v: np.ndarray | None = None) -> tuple:
        """(M, h, Jn, Jt, an, at) at (q, v) (v defaults to the snapshot's)."""
        if v is None:
            if self._terms is None:
                self._terms = model_terms(self.addr, self.q, self.v, self.nv, self.nc)
            return self._terms
        return model_terms(self.addr, self.q, v, self.nv, self.nc)

    def rows(self, J: Iterable[int]) -> Rows:
        """Independent rows of mode J: normal rows first (ascending contact), then tangential."""
        J = Mode(J)
        if J in self._rows:
            return self._rows[J]
        M, _, Jn, Jt, _, _ = self.terms()
        cand = [(i, 0) for i in sorted(J)] + [(i, 1) for i in sorted(J) if self.stick[i]]
        L = np.linalg.cholesky(np.linalg.inv(M))  # rows compared in the M^-1 metric
        basis: list[np.ndarray] = []
        kept, dropped_t = [], []
        for i, kind in cand:
            row = (Jn[i] if kind == 0 else Jt[i]) @ L
            norm0 = np.linalg.norm(row)
            r = row.copy()
            for b in basis:
                r -= (r @ b) * b
            if norm0 > 0 and np.linalg.norm(r) > self.rank_tol * norm0:
                basis.append(r / np.linalg.norm(r))
                kept.append((i, kind))
            elif kind == 1:
                dropped_t.append(i)
        rows = Rows(np.array([i for i, _ in kept], dtype=np.int64), np.array([k for _, k in kept], dtype=np.int64),
                    tuple(dropped_t))
        self._rows[J] = rows
        return rows

    def forces(self, J: Iterable[int], v: np.ndarray | None = None, q: np.ndarray | None = None) -> np.ndarray:
        """Normal contact forces (nc, N) of mode J at (q, v); 0 outside J."""
        return self.forces_nt(J, v, q)[0]

    def forces_nt(self, J: Iterable[int], v: np.ndarray | None = None,
                  q: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(normal, tangential) contact forces (nc each, N) of mode J at (q, v); 0 outside J
        and for dropped (dependent) rows."""
        rows = self.rows(J)
        if q is None:
            M, h, Jn, Jt, an, at = self.terms(v)
        else:
            M, h, Jn, Jt, an, at = model_terms(self.addr, q, self.v if v is None else v, self.nv, self.nc)
        A, c = constraint_rows(Jn, Jt, an, at, rows.c, rows.k)
        slide = self.row_slide(rows)
        _, lam = solve_mode(M, self.tau - h, A, c, force_rows(A, Jt, rows.c, slide))
        fn, ft = np.zeros(self.nc), np.zeros(self.nc)
        for r in range(rows.m):
            (fn if rows.k[r] == 0 else ft)[rows.c[r]] = lam[r]
            if slide[r] != 0.0:
                ft[rows.c[r]] = -slide[r] * lam[r]  # kinetic friction of a sliding contact
        return fn, ft

    def accelerations(self, J: Iterable[int], v: np.ndarray) -> np.ndarray:
        """Accelerations (nv) of mode J at (q, v)."""
        rows = self.rows(J)
        M, h, Jn, Jt, an, at = self.terms(v)
        A, c = constraint_rows(Jn, Jt, an, at, rows.c, rows.k)
        a, _ = solve_mode(M, self.tau - h, A, c, force_rows(A, Jt, rows.c, self.row_slide(rows)))
        return a

    def impact(self, J: Iterable[int], restitution: float = 0.0) -> Impact:
        """Impact from the snapshot's velocity into mode J (see the module docstring)."""
        J = Mode(J)
        key = (J, restitution)
        if key in self._impacts:
            return self._impacts[key]
        rows = self.rows(J)
        M, _, Jn, Jt, an, at = self.terms()
        A, _ = constraint_rows(Jn, Jt, an, at, rows.c, rows.k)
        P = np.zeros(self.nc)
        v_plus = self.v.copy()
        if rows.m:
            target = np.zeros(rows.m)
            if restitution > 0:
                for r in range(rows.m):
                    if rows.k[r] == 0:
                        target[r] = -restitution * min(Jn[rows.c[r]] @ self.v, 0.0)
            MinvAT = np.linalg.solve(M, A.T)
            G = A @ MinvAT
            Prow = np.linalg.solve(G, target - A @ self.v)
            v_plus = self.v + MinvAT @ Prow
            for r in range(rows.m):
                if rows.k[r] == 0:
                    P[rows.c[r]] = Prow[r]
        P_hat = self.eps * self.forces(J, v_plus) if self.eps > 0 and rows.m else np.zeros(self.nc)
        imp = Impact(v_plus, P, P_hat)
        self._impacts[key] = imp
        return imp


# ---------------------------------------------------------------------------------------
# impulse-velocity (touchdown) mode selection


def iv_violation(snap: Snapshot, S: Mode, J: Mode, restitution: float) -> float:
    """How far candidate J is from satisfying the impulse-velocity predicate over scope S
    (0 = satisfied; otherwise the largest violation, N s)."""
    worst = 0.0
    imp = snap.impact(J, restitution)
    rows = snap.rows(J)
    for i in J:
        if rows.normal_row(i) < 0:
            continue  # dependent normal row: carries no impulse of its own
        worst = max(worst, -imp.effective(i) - snap.tol_p)
    _, _, Jn, _, _, _ = snap.terms()
    for i in S - J:
        # left out: must not approach after the impact (complementarity), and
        worst = max(worst, snap.M_scale * (-(Jn[i] @ imp.v_plus) - snap.tol_v))
        alt = snap.impact(J | {i}, restitution)
        if snap.rows(J | {i}).normal_row(i) < 0:
            continue
        # joining would take a negative impulse (the paper's predicate)
        worst = max(worst, alt.effective(i) + snap.tol_p)
    return max(worst, 0.0)


def select_impact_mode(snap: Snapshot, S: Mode, restitution: float = 0.0, enumerate_max: int = 8,
                       stats: dict | None = None) -> Mode:
    """Post-impact mode J within scope S (active + impacting contacts) by the predicate
    (enumeration for |S| <= enumerate_max, else Lemke + repair); the least violating candidate
    if none satisfies it (counted in stats['predicate_fallbacks'])."""
    stats = stats if stats is not None else {}
    J, viol = _impact_mode(snap, S, restitution, enumerate_max, stats)
    if viol > 0.0:
        stats["predicate_fallbacks"] = stats.get("predicate_fallbacks", 0) + 1
    return J


def consistent_impact_mode(snap: Snapshot, S: Mode, restitution: float = 0.0, enumerate_max: int = 8,
                           stats: dict | None = None) -> tuple[Mode, Mode, Snapshot]:
    """(J, sliding, snapshot): the post-impact mode within S, the sticking contacts that must
    slide for it to be consistent (see the module docstring), and the snapshot with those
    contacts sliding (its impact(J) is the impact map to apply)."""
    stats = stats if stats is not None else {}

    def select(sn: Snapshot):
        J, viol = _impact_mode(sn, S, restitution, enumerate_max, stats)
        return J, viol, lambda: sn.cone_excess(J, sn.impact(J, restitution).v_plus)

    return _with_friction(snap, S, select, stats)


def _impact_mode(snap: Snapshot, S: Mode, restitution: float, enumerate_max: int, stats: dict):
    if len(S) <= enumerate_max:
        return _enumerate(S, lambda J: iv_violation(snap, S, J, restitution))
    stats["lcp_solves"] = stats.get("lcp_solves", 0) + 1
    cand = _lcp_candidate(snap, S, restitution)
    return _repair(S, cand, lambda J: iv_violation(snap, S, J, restitution))


def _lcp_candidate(snap: Snapshot, S: Mode, restitution: float) -> Mode:
    """Support of the frictionless normal-impulse LCP solutions, plain and with the pseudo-impulse."""
    idx = sorted(S)
    M, h, Jn, _, an, _ = snap.terms()
    N = Jn[idx]
    Minv = np.linalg.inv(M)
    W = N @ Minv @ N.T
    vn = N @ snap.v
    q = vn + restitution * np.minimum(vn, 0.0)
    chosen = set()
    for qq in (q, q + snap.eps * (N @ Minv @ (snap.tau - h) + an[idx])) if snap.eps > 0 else (q,):
        z = lemke(W, qq)
        if z is None:
            continue
        w = W @ z + qq
        scale = max(1e-300, np.abs(z).max(initial=0.0))
        chosen |= {idx[k] for k in range(len(idx)) if z[k] > 1e-12 * max(1.0, scale)
                   or abs(w[k]) <= 1e-12 * max(1.0, np.abs(qq).max())}
    return Mode(chosen)


# ---------------------------------------------------------------------------------------
# force-acceleration (liftoff) mode selection


def fa_violation(snap: Snapshot, S: Mode, K: Mode, nudge: float) -> float:
    """How far candidate K is from satisfying the force-acceleration predicate over scope S (N)."""
    worst = 0.0
    lam = _trending_forces(snap, K, nudge)
    for i in K:
        if snap.rows(K).normal_row(i) >= 0:
            worst = max(worst, -lam[i] - snap.tol_f)
    # sticking members inside their Coulomb cones (a contact on the boundary counts as inside;
    # the flow's slip guard takes it from there)
    worst = max(worst, snap.cone_excess(K) - snap.tol_f)
    out = S - K
    if out:
        _, _, Jn, _, an, _ = snap.terms()
        acc = Jn @ snap.accelerations(K, snap.v) + an
    for i in out:
        # left out: its gap must not accelerate into the ground (complementarity), and
        tol_a = snap.tol_f / snap.M_scale + 1e-9 * (abs(an[i]) + 1.0)
        worst = max(worst, snap.M_scale * (-acc[i] - tol_a))
        if snap.rows(K | {i}).normal_row(i) < 0:
            continue
        # joining would take a pulling force (the paper's predicate)
        alt = _trending_forces(snap, K | {i}, nudge)
        worst = max(worst, alt[i] + snap.tol_f)
    return max(worst, 0.0)


def _trending_forces(snap: Snapshot, K: Mode, nudge: float) -> np.ndarray:
    """Forces of mode K at the snapshot; a force within tolerance of zero is replaced by its value
    a short time `nudge` (s) later along K's own flow (its trend, Definition 1 of seed 001)."""
    lam = snap.forces(K)
    small = [i for i in K if abs(lam[i]) <= snap.tol_f]
    if small and nudge > 0:
        a = snap.accelerations(K, snap.v)
        q2 = snap.q + nudge * snap.v + 0.5 * nudge**2 * a
        v2 = snap.v + nudge * a
        later = snap.forces(K, v=v2, q=q2)
        for i in small:
            lam[i] = later[i] if abs(later[i]) > 0 else lam[i]
    return lam


def select_liftoff_mode(snap: Snapshot, S: Mode, enumerate_max: int = 8, nudge: float = 1e-6,
                        stats: dict | None = None) -> Mode:
    """Mode K within scope S (active + touching-at-rest contacts) that satisfies the
    force-acceleration predicate (enumeration, or greedy repair from S beyond enumerate_max);
    the least violating candidate if none does (counted in stats['predicate_fallbacks'])."""
    stats = stats if stats is not None else {}
    K, viol = _liftoff_mode(snap, S, enumerate_max, nudge)
    if viol > 0.0:
        stats["predicate_fallbacks"] = stats.get("predicate_fallbacks", 0) + 1
    return K


def consistent_liftoff_mode(snap: Snapshot, S: Mode, enumerate_max: int = 8, nudge: float = 1e-6,
                            stats: dict | None = None) -> tuple[Mode, Mode, Snapshot]:
    """(K, sliding, snapshot): the mode within S by the force-acceleration predicate, the
    sticking contacts that must slide for it to be consistent, and the snapshot with those
    contacts sliding."""
    stats = stats if stats is not None else {}

    def select(sn: Snapshot):
        K, viol = _liftoff_mode(sn, S, enumerate_max, nudge)
        return K, viol, lambda: sn.cone_excess(K)

    return _with_friction(snap, S, select, stats)


def _liftoff_mode(snap: Snapshot, S: Mode, enumerate_max: int, nudge: float):
    if len(S) <= enumerate_max:
        return _enumerate(S, lambda K: fa_violation(snap, S, K, nudge))
    lam = _trending_forces(snap, S, nudge)
    cand = Mode(i for i in S if lam[i] >= -snap.tol_f)
    return _repair(S, cand, lambda K: fa_violation(snap, S, K, nudge))


# ---------------------------------------------------------------------------------------


def _with_friction(snap: Snapshot, S: Mode, select, stats: dict) -> tuple[Mode, Mode, Snapshot]:
    """Run `select(snapshot) -> (mode, violation, cone_excess())` with the current sticking
    contacts; if its mode violates the predicate, with the fewest sticking contacts of S made
    sliding that give a consistent mode (ties: the smallest cone excess), first with kinetic
    friction against the direction they will slide in, then frictionless. Falls back to the
    least violating candidate seen (counted in stats['predicate_fallbacks'])."""
    J, viol, _ = select(snap)
    if viol == 0.0:
        return J, Mode(), snap
    best = (viol, J, Mode(), snap)
    sticking = [i for i in sorted(S) if snap.stick[i]]
    directions = _slide_directions(snap, S, J, sticking) if snap.mu is not None else None
    _, _, _, Jt, _, _ = snap.terms()
    vt = Jt @ snap.v
    for kinetic in ((True, False) if directions is not None else (False,)):
        for size in range(1, len(sticking) + 1):
            found = []
            for slide in combinations(sticking, size):
                stick = snap.stick.copy()
                stick[list(slide)] = False
                # contacts at rest may slide either way: the first direction their acceleration
                # then agrees with (a direction it contradicts would stop at once)
                at_rest = [i for i in slide if abs(vt[i]) <= snap.tol_v] if kinetic else []
                for flips in product((1.0, -1.0), repeat=len(at_rest)):
                    slide_mu = np.zeros(snap.nc) if snap.slide_mu is None else snap.slide_mu.copy()
                    for i in slide:
                        slide_mu[i] = snap.mu[i] * directions[i] if kinetic else 0.0
                    for i, f in zip(at_rest, flips):
                        slide_mu[i] *= f
                    sn = snap.with_stick(stick, slide_mu)
                    try:
                        Js, vs, excess = select(sn)
                    except np.linalg.LinAlgError:  # a kinetic force problem exactly singular
                        continue
                    if kinetic and sn.kinetic_margin(Js) < snap.painleve_margin:
                        continue  # near the Painleve singularity: frictionless sliding instead
                    if vs == 0.0 and _accelerates_as_assumed(sn, Js, [i for i in at_rest if i in Js]):
                        found.append((excess(), sorted(slide), Js, Mode(slide), sn))
                        break
                    if 0.0 < vs < best[0]:
                        best = (vs, Js, Mode(slide), sn)
            if found:
                stats["friction_slides"] = stats.get("friction_slides", 0) + 1
                _, _, Js, slide, sn = min(found, key=lambda f: (f[0], f[1]))
                return Js, slide, sn
    stats["predicate_fallbacks"] = stats.get("predicate_fallbacks", 0) + 1
    _, J, slide, sn = best
    return J, slide, sn


def _accelerates_as_assumed(snap: Snapshot, J: Mode, contacts: list) -> bool:
    """Whether each sliding contact in `contacts` (at rest) accelerates along the direction its
    kinetic friction assumes (sign(slide_mu_i) at_i >= 0) in mode J."""
    if not contacts:
        return True
    _, _, _, Jt, _, at = snap.terms()
    acc = Jt @ snap.accelerations(J, snap.v) + at
    return all(np.sign(snap.slide_mu[i]) * acc[i] >= -1e-9 * (1.0 + abs(at[i])) for i in contacts)


def _slide_directions(snap: Snapshot, S: Mode, J: Mode, sticking: list) -> np.ndarray:
    """sign(vt) (nc) each sticking contact of S would slide with: that of its tangential velocity,
    or, at rest, opposite to the sticking friction force it needs in mode J (in S if not in J)."""
    _, _, _, Jt, _, _ = snap.terms()
    vt = Jt @ snap.v
    ft_J = snap.forces_nt(J)[1] if J else np.zeros(snap.nc)
    ft_S = snap.forces_nt(S)[1]
    out = np.zeros(snap.nc)
    for i in sticking:
        if abs(vt[i]) > snap.tol_v:
            out[i] = np.sign(vt[i])
        else:
            f = ft_J[i] if i in J and ft_J[i] != 0.0 else ft_S[i]
            out[i] = -np.sign(f)
    return out


def _enumerate(S: Mode, violation) -> tuple[Mode, float]:
    """(candidate, 0) for the candidate subset of S with zero violation (largest first), else the
    least violating candidate and its violation."""
    best, best_v = None, np.inf
    idx = sorted(S)
    for size in range(len(idx), -1, -1):
        for J in combinations(idx, size):
            J = Mode(J)
            viol = violation(J)
            if viol == 0.0:
                return J, 0.0
            if viol < best_v:
                best, best_v = J, viol
    return (best, best_v) if best is not None else (Mode(), 0.0)


def _repair(S: Mode, cand: Mode, violation, max_rounds: int = 50) -> tuple[Mode, float]:
    """Single-contact flips from `cand` while they reduce the predicate violation; (mode, violation)."""
    J, viol = cand, violation(cand)
    for _ in range(max_rounds):
        if viol == 0.0:
            return J, 0.0
        best, best_v = None, viol
        for i in sorted(S):
            Jf = J - {i} if i in J else J | {i}
            vf = violation(Jf)
            if vf < best_v:
                best, best_v = Jf, vf
        if best is None:
            break
        J, viol = best, best_v
    return J, viol
