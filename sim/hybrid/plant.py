"""Event-driven rigid-contact simulator (seed 001's self-manipulation hybrid system) as a plant.

    plant = HybridPlant(get_robot("block"), pseudo_impulse=0.0)
    state = plant.reset(q0, v0)
    state = plant.step(JointCommand.zero(model.nu), 0.01)   # any dt; events inside are exact
    plant.events, plant.stats

Execution (Section 4.4 of seed 001): in the current mode J (set of active contacts) integrate
the index-reduced constrained dynamics with DOP853 (scipy's solve_ivp; the right-hand side is
a numba kernel over the robot's generated C functions) until a guard:
- touchdown: the gap of an inactive contact crosses zero while approaching (terminal event);
- liftoff: the normal force of an active contact crosses zero downward (terminal event).
At a touchdown the post-impact mode comes from the impulse-velocity predicate over the active
plus impacting contacts, with the pseudo-impulse in the predicate only, and the plastic
impact map into it is applied; at a liftoff the force-acceleration predicate picks the new
mode. After every segment the state is projected back onto the mode's constraints
(post-stabilization of the index-reduced DAE). Zeno protection: when impact times accumulate
(a run of geometrically shrinking intervals whose extrapolated remaining time is below
`zeno_horizon`, or two impacts closer than `zeno_min_interval`), the execution is completed
into the mode of the accumulating contacts (plastic impact into it), as the Zeno limit
(Corollary 1 of seed 001) prescribes; a hard cap on transitions per step guarantees return.
Friction (Coulomb; seed 001's Assumption A12 for impacts): an active contact with mu > 0 sticks
(normal and tangential rows); when its tangential force leaves the cone |ft| <= mu fn (a third
kind of guard, "slip") it slides (normal row only) with kinetic friction -mu fn sign(vt) in its
force (kernels.py); when its sliding speed reaches zero (a fourth guard, "stop") it sticks
again, anchored there, and slips at once if the cone still does not hold. A contact that starts
sliding from rest takes the direction its acceleration agrees with (else the opposite one, else
it slides without friction). Where kinetic friction would bring the mode's force problem within
options.painleve_margin of singular (the Painleve paradox; kernels.kinetic_margin, a fifth
guard "painleve") the sliding contacts slide without friction: the physical resolution, an
impact without a collision, is not modelled. Impacts stick (A12); contacts already sliding take
a normal impulse only. Mode selection is friction-consistent (sim/hybrid/modes.py): a contact left out of the new
mode may not approach (impact) or accelerate into (lift-off) the ground, sticking members of a
lift-off mode must be inside their cones, and when no mode with the current sticking contacts
satisfies this, the fewest of them slide. A resting contact that moves along the ground joins
sliding.
The joint impedance law of the plant protocol is evaluated continuously inside the flow.
Ties: a guard that starts a segment at zero (an inactive contact touching at an
approach speed below velocity_tol that the force-acceleration predicate lifts, or an active
contact at exactly zero force, e.g. a thrust equal to the weight, or a sticking contact exactly
on its Coulomb cone) is watched gap_tol (tol_f) past zero until it clears 2 gap_tol (2 tol_f);
at zero it fired at the segment's start forever.
Invariants (sim/invariants.py): step() never raises for a physics failure (no consistent mode,
the transition cap, an integrator failure): the last good state comes back with
PlantState.violation set and is held until reset; bad commands still raise ValueError.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.integrate import solve_ivp

from robots import numeric
from robots.model import RobotModel
from sim.invariants import Invariants, LatchedViolation
from sim.protocol import JointCommand, PlantState, actuated_joints, checked_dt, checked_reset, require_planar

from .cfun import address_table
from .kernels import contact_gaps, contact_points, joint_torque, kinetic_margin, mode_rhs, \
    model_terms, project_state, tangential_speeds
from .modes import Mode, Snapshot, consistent_impact_mode, consistent_liftoff_mode
from .options import HybridOptions


@dataclass
class HybridEvent:
    """One discrete transition.

    t: time, s. kind: "touchdown", "liftoff", "slip" (stick to slide), "stick" (slide to stick),
    "zeno" (completion) or "reset".
    contacts: the contacts that triggered it. mode_before / mode_after: active contact sets
    (sorted tuples of contact indices). v_minus / v_plus: generalized velocity before / after.
    impulse: normal impulse per contact (nc, N s; zeros for liftoffs). q: configuration.
    """

    t: float
    kind: str
    contacts: tuple
    mode_before: tuple
    mode_after: tuple
    v_minus: np.ndarray
    v_plus: np.ndarray
    impulse: np.ndarray
    q: np.ndarray

    @property
    def changed_mode(self) -> bool:
        """Whether the active contact set changed."""
        return self.mode_before != self.mode_after


class HybridPlant(LatchedViolation):
    """Event-driven rigid-body simulator with unilateral contacts, implementing the plant protocol.

    Args:
        model: a planar RobotModel (contacts are its rigid unilateral constraints).
        options: HybridOptions; keyword overrides (e.g. pseudo_impulse=0.0, restitution=0.5)
            replace its fields and are validated here, once.
    Attributes:
        events: list of HybridEvent since the last reset.
        stats: counters (touchdowns, liftoffs, slips, sticks, zeno completions, mode changes,
            segments, rhs evaluations, predicate fallbacks, LCP solves, friction slides (modes
            made consistent by sliding), impact cone violations).
    """

    def __init__(self, model: RobotModel, *, options: HybridOptions | None = None, **overrides) -> None:
        require_planar(model, "hybrid")
        self.model = model
        try:
            self.options = replace(options or HybridOptions(), **overrides)
        except TypeError as exc:
            raise ValueError(f"HybridPlant: unknown option ({exc}); see HybridOptions") from exc
        self.fns = numeric(model, verbose=False)
        self.addr = address_table(self.fns)
        self.joints = actuated_joints(model)
        self.u_max = np.array(model.u_max, dtype=float)
        self.nq, self.nv, self.nc = model.nq, model.nv, model.nc
        stick = [c.mu > 0 and self.options.friction == "stick" for c in model.contacts]
        self.stick = np.array(stick, dtype=bool)
        self._mu = np.array([c.mu for c in model.contacts], dtype=float)
        self._cmd = JointCommand.zero(model.nu).validated(model)
        self._t: float | None = None
        self.invariants = Invariants(model, self.options.penetration_limit_m)
        self.events: list[HybridEvent] = []
        self.stats: dict = {}

    # ------------------------------------------------------------------ protocol

    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q in m/rad, v in m/s, rad/s, t in s) and return it. Contacts touching the
        ground start active if their forces say so (force-acceleration predicate); touching
        contacts that approach get a plastic impact first. Raises ValueError on bad input or a
        penetrating configuration."""
        q, v, t = checked_reset(self.model, q, v, t)
        gaps = contact_gaps(self.addr, q, self.nc)
        bad = np.flatnonzero(gaps < -max(self.options.gap_tol, 1e-9))
        if bad.size:
            names = ", ".join(f"{self.model.contacts[i].name} (gap {gaps[i]:.3g} m)" for i in bad)
            raise ValueError(f"{self.model.name}: q penetrates the ground at {names}; start on or above it")
        self._t, self._q, self._v = float(t), q, v
        self._mode: Mode = Mode()
        self._sliding: set[int] = set()
        self._slip_dir: dict[int, float] = {}  # sign(vt) of each sliding contact; 0: frictionless
        self._set_mode(Mode())
        self.events = []
        self.stats = {k: 0 for k in ("touchdowns", "liftoffs", "slips", "zeno", "mode_changes", "segments",
                                     "rhs_evals", "predicate_fallbacks", "lcp_solves", "impact_cone_violations",
                                     "friction_slides", "sticks", "painleve")}
        self._impact_times: list[float] = []
        self._clear_violation()
        self._resolve("reset")
        return self._checked(self.state())

    def step(self, command: JointCommand, dt: float) -> PlantState:
        """Advance dt seconds under `command` (held; impedance law evaluated continuously)."""
        if self._t is None:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        dt = checked_dt(self.model, dt)
        cmd = command.validated(self.model)
        if self.violation:  # the physics failed earlier: hold the last good state until reset
            return self._held_state()
        changed = any(not np.array_equal(getattr(cmd, f), getattr(self._cmd, f))
                      for f in ("tau_ff", "q_des", "v_des", "kp", "kd"))
        self._cmd = cmd
        try:
            if changed:
                self._resolve("command")  # e.g. a thrust above the weight lifts a contact at once
            state = self.advance(self._t + float(dt))
        except (RuntimeError, ArithmeticError, np.linalg.LinAlgError, ValueError) as exc:
            # a physics failure (no consistent mode, the integrator failed, a singular system):
            # never raised mid-run; the last good state is returned with the reason
            return self._violated(f"hybrid plant failed at t={self._t:.6g} s: {str(exc).splitlines()[0]}")
        return self._checked(state)

    def advance(self, t_end: float) -> PlantState:
        """Integrate to time t_end (s) under the current command; returns the state there."""
        transitions, stalled, t_last = 0, 0, self._t
        while self._t < t_end:
            event = self._segment(t_end)
            if event is None:
                break
            transitions += 1
            stalled = stalled + 1 if self._t <= t_last else 0
            t_last = self._t
            if transitions > self.options.max_transitions_per_step or stalled > 50:
                why = "events repeat without time advancing" if stalled > 50 else \
                    f"more than {self.options.max_transitions_per_step} transitions in one step"
                raise RuntimeError(
                    f"{self.model.name}: {why} at t={self._t:.9g} s (mode {sorted(self._mode)}, last guard "
                    f"{event[0]} of contact {event[1]}): the contact problem has no consistent mode here; "
                    "raise max_transitions_per_step or zeno_horizon if it is an accumulation of impacts")
            self._resolve(event[0])
        return self.state()

    def state(self) -> PlantState:
        """The current PlantState (copies): contact = active mode, force = (normal, tangential) in N."""
        tau, gen = self._torque(self._q, self._v)
        force = np.zeros((self.nc, 2))
        if self._rows_c.size:
            _, lam = mode_rhs(self.addr, np.concatenate([self._q, self._v]), self.joints, self.u_max,
                              *self._cmd_arrays(), self._rows_c, self._rows_k, self._rows_slide, self.nv, self.nc)
            for r in range(self._rows_c.size):
                force[self._rows_c[r], self._rows_k[r]] = lam[r]
                if self._rows_slide[r] != 0.0:  # kinetic friction of a sliding contact
                    force[self._rows_c[r], 1] = -self._rows_slide[r] * lam[r]
        contact = np.zeros(self.nc, dtype=bool)
        contact[list(self._mode)] = True
        return PlantState(self._t, self._q.copy(), self._v.copy(), contact, force, tau, self.violation)

    @property
    def mode(self) -> tuple:
        """The active contact set (sorted contact indices)."""
        return tuple(sorted(self._mode))

    def energy(self) -> float:
        """Total mechanical energy T + V of the current state, J."""
        T, V = self.fns.energy(self._q, self._v)
        return T + V

    # ------------------------------------------------------------------ internals

    def _cmd_arrays(self) -> tuple:
        c = self._cmd
        return c.tau_ff, c.q_des, c.v_des, c.kp, c.kd

    def _torque(self, q, v):
        return joint_torque(q, v, self.joints, self.u_max, *self._cmd_arrays(), self.nv)

    def _snapshot(self, q=None, v=None) -> Snapshot:
        q = self._q if q is None else q
        v = self._v if v is None else v
        _, gen = self._torque(q, v)
        M, h, *_ = model_terms(self.addr, q, v, self.nv, self.nc)
        scale_f = float(np.abs(h).max() + np.abs(gen).max()) + 1e-12
        scale_p = float(np.abs(M @ v).max()) + 1e-3 * scale_f
        return Snapshot(self.addr, q.copy(), v.copy(), gen, self._stick_mask(), self.nv, self.nc,
                        eps=self.options.pseudo_impulse, tol_p=1e-10 * scale_p, tol_f=1e-9 * scale_f,
                        tol_v=self.options.velocity_tol, mu=self._mu, slide_mu=self._slide_mu(),
                        painleve_margin=self.options.painleve_margin)

    def _slide_mu(self) -> np.ndarray:
        """mu_i sign(vt_i) (nc) of the sliding contacts (their kinetic friction), 0 elsewhere."""
        out = np.zeros(self.nc)
        for i in self._sliding:
            out[i] = self._mu[i] * self._slip_dir.get(i, 0.0)
        return out

    def _slide(self, contacts, snap: Snapshot | None = None, directions: dict | None = None) -> None:
        """Mark `contacts` sliding, with the direction of their kinetic friction from `snap`'s
        slide_mu or from `directions` (contact -> sign of vt; 0 frictionless)."""
        for i in contacts:
            self._sliding.add(i)
            if directions is not None:
                self._slip_dir[i] = float(directions[i])
            elif snap is not None and snap.slide_mu is not None:
                self._slip_dir[i] = float(np.sign(snap.slide_mu[i]))
            else:
                self._slip_dir[i] = 0.0

    def _settle_slide_directions(self) -> None:
        """A contact that starts sliding at zero tangential speed must then accelerate the way its
        kinetic friction assumes (s at >= 0, s the friction's sign of vt). If it does not, the
        opposite direction is tried, and if neither holds (a Painleve-like tangential problem)
        it slides without friction. Without this the plant cycled stick -> slip -> stop at one
        instant ~10,000 times (the biped's walk)."""
        tol, tried = self.options.velocity_tol, {}
        for _ in range(2 * len(self._slip_dir) + 1):
            starting = [i for i, d in self._slip_dir.items() if d != 0.0]
            if not starting:
                return
            vt = tangential_speeds(self.addr, self._q, self._v, self.nv, self.nc)
            starting = [i for i in starting if abs(vt[i]) <= tol]
            if not starting:
                return
            x = np.concatenate([self._q, self._v])
            xdot, _ = mode_rhs(self.addr, x, self.joints, self.u_max, *self._cmd_arrays(), self._rows_c,
                               self._rows_k, self._rows_slide, self.nv, self.nc)
            _, _, _, Jt, _, at = model_terms(self.addr, self._q, self._v, self.nv, self.nc)
            acc = Jt @ xdot[self.nv:] + at
            wrong = [i for i in starting if self._slip_dir[i] * acc[i] < -1e-9 * (1.0 + abs(at[i]))]
            if not wrong:
                return
            i = wrong[0]
            tried.setdefault(i, set())
            tried[i].add(self._slip_dir[i])
            self._slip_dir[i] = -self._slip_dir[i] if -self._slip_dir[i] not in tried[i] else 0.0
            self._set_mode(self._mode)

    def _drop_kinetic_friction(self) -> None:
        """Near the Painleve singularity (options.painleve_margin) the sliding contacts of the
        mode slide without friction."""
        self._slip_dir = dict.fromkeys(self._slip_dir, 0.0)
        self._rows_slide = np.zeros(self._rows_c.size)
        self.stats["painleve"] += 1

    def _set_mode(self, J: Mode, snap: Snapshot | None = None) -> None:
        """Make J the active mode: independent rows, anchors and friction-cone groups of the
        sticking rows, kinetic friction of the sliding ones, projection onto the constraints."""
        self._mode = Mode(J)
        self._sliding &= set(J)
        self._slip_dir = {i: d for i, d in self._slip_dir.items() if i in self._sliding}
        if self._slip_dir:  # a sliding contact follows its velocity (e.g. reversed by an impact)
            vt = tangential_speeds(self.addr, self._q, self._v, self.nv, self.nc)
            for i, d in self._slip_dir.items():
                if d != 0.0 and abs(vt[i]) > self.options.velocity_tol:
                    self._slip_dir[i] = float(np.sign(vt[i]))
        self._cones: list[tuple[int, np.ndarray, np.ndarray]] = []
        if not J:
            self._rows_c = np.zeros(0, dtype=np.int64)
            self._rows_k = np.zeros(0, dtype=np.int64)
            self._rows_slide = np.zeros(0)
            self._anchors = np.zeros(0)
            return
        snap = self._snapshot() if snap is None or snap.stick.tolist() != self._stick_mask().tolist() else snap
        rows = snap.rows(J)
        self._rows_c, self._rows_k = rows.c.copy(), rows.k.copy()
        slide_mu = self._slide_mu()
        self._rows_slide = np.array([slide_mu[c] if k == 0 else 0.0 for c, k in zip(self._rows_c, self._rows_k)])
        if np.any(self._rows_slide != 0.0) and kinetic_margin(
                self.addr, self._q, self._rows_c, self._rows_k, self._rows_slide, self.nv, self.nc) \
                <= self.options.painleve_margin * (1.0 + 1e-6):
            self._drop_kinetic_friction()
        pts = contact_points(self.addr, self._q, self.nc)
        self._anchors = np.array([pts[c, 0] if k == 1 else 0.0 for c, k in zip(self._rows_c, self._rows_k)])
        # Coulomb cone of each kept tangential row: its own normal force plus those of sticking
        # contacts whose (parallel) tangential rows were dropped as redundant share the load.
        _, _, _, Jt, _, _ = snap.terms()
        normal_row = {int(c): r for r, (c, k) in enumerate(zip(self._rows_c, self._rows_k)) if k == 0}
        for r, (c, k) in enumerate(zip(self._rows_c, self._rows_k)):
            if k != 1:
                continue
            group = [int(c)] + [j for j in rows.dropped_t
                                if abs(abs(Jt[j] @ Jt[c]) - np.linalg.norm(Jt[j]) * np.linalg.norm(Jt[c]))
                                <= 1e-9 * np.linalg.norm(Jt[j]) * np.linalg.norm(Jt[c])]
            group = [j for j in group if j in normal_row]
            self._cones.append((r, np.array([normal_row[j] for j in group], dtype=np.int64),
                                np.array([self.model.contacts[j].mu for j in group])))
        self._project()

    def _stick_mask(self) -> np.ndarray:
        stick = self.stick.copy()
        stick[list(self._sliding)] = False
        return stick

    def _cone_margins(self, lam: np.ndarray) -> list[tuple[int, float, float]]:
        """(contact, mu fn - ft, mu fn + ft) per sticking row for mode forces `lam` (N)."""
        out = []
        for r, nrows, mus in self._cones:
            cap = float(mus @ lam[nrows])
            out.append((int(self._rows_c[r]), cap - lam[r], cap + lam[r]))
        return out

    def _project(self) -> None:
        if self._rows_c.size:
            self._q, self._v = project_state(self.addr, self._q, self._v, self._rows_c, self._rows_k,
                                             self._anchors, self.nv, self.nc, 3)

    def _segment(self, t_end: float):
        """Integrate the current mode to t_end or the first guard; returns (kind, index) or None."""
        self.stats["segments"] += 1
        nv, nc = self.nv, self.nc
        args = (self.joints, self.u_max, *self._cmd_arrays(), self._rows_c, self._rows_k, self._rows_slide, nv, nc)
        cache = {"key": None}

        def evaluate(x):
            key = x.tobytes()
            if cache["key"] != key:
                self.stats["rhs_evals"] += 1
                try:
                    xdot, lam = mode_rhs(self.addr, np.ascontiguousarray(x), *args)
                except np.linalg.LinAlgError:
                    # a trial stage beyond a singular force problem (kinetic friction past the
                    # Painleve point): nan makes DOP853 reject the step and retry a shorter one,
                    # which stops at the painleve guard instead
                    xdot, lam = np.full(2 * nv, np.nan), np.full(self._rows_c.size, np.nan)
                # derivatives below 1e-150 are zero: their squares underflow in DOP853's error
                # norm (0/0 = nan), which then fails with "Required step size is less than
                # spacing between numbers" (plant fuzz: a hopper dropped from 4e-295 m)
                xdot[np.abs(xdot) < 1e-150] = 0.0
                cache.update(key=key, xdot=xdot, lam=lam, gaps=None, vt=None)
            return cache

        def rhs(t, x):
            return evaluate(x)["xdot"]

        def gap_of(x):
            c = evaluate(x)
            if c["gaps"] is None:
                c["gaps"] = contact_gaps(self.addr, np.ascontiguousarray(x[:nv]), nc)
            return c["gaps"]

        def vt_of(x):
            c = evaluate(x)
            if c["vt"] is None:
                c["vt"] = tangential_speeds(self.addr, np.ascontiguousarray(x[:nv]), np.ascontiguousarray(x[nv:]),
                                            nv, nc)
            return c["vt"]

        events, labels = [], []
        # A contact out of the mode that starts touching (|gap| <= gap_tol: it just lifted off, or
        # touches at an approach speed below velocity_tol while the force-acceleration predicate
        # lifts it) has its touchdown guard gap_tol below its starting gap until it clears the
        # ground by 2 gap_tol (a "clear" event ends the segment; the next one watches gap 0 again).
        # At gap 0 the guard fired again at once whenever rounding or a vanishing approach dipped
        # the gap below zero, and the plant repeated the same event forever ("events repeat
        # without time advancing (mode [], last guard touchdown ...)"); a contact that
        # sinks instead still crosses it, gap_tol deep, and is resolved as touching.
        tol = self.options.gap_tol
        gaps0 = contact_gaps(self.addr, self._q, nc)
        for i in range(nc):
            if i not in self._mode:
                grazing = abs(gaps0[i]) <= tol
                level = min(gaps0[i], 0.0) - tol if grazing else 0.0
                ev = (lambda i, lv: lambda t, x: gap_of(x)[i] - lv)(i, level)
                ev.terminal, ev.direction = True, -1
                events.append(ev)
                labels.append(("touchdown", i))
                if grazing:
                    ev = (lambda i: lambda t, x: gap_of(x)[i] - 2.0 * tol)(i)
                    ev.terminal, ev.direction = True, 1
                    events.append(ev)
                    labels.append(("clear", i))
        # Likewise a stance contact whose normal force starts at zero (a tie: a thrust equal to the
        # weight, or the predicate kept a contact whose force just vanished) has its lift-off guard
        # tol_f below its starting force until the force clears 2 tol_f: at 0 the guard fired at
        # once, forever ("events repeat without time advancing (mode [0], last guard liftoff ...)").
        x0 = np.concatenate([self._q, self._v])
        lam0 = evaluate(x0)["lam"] if self._rows_c.size else np.zeros(0)
        ftol = None
        for r in range(self._rows_c.size):
            if self._rows_k[r] == 0:
                level = 0.0
                if ftol is None and abs(lam0[r]) <= 1e-6 * (1.0 + float(np.abs(lam0).max())):
                    ftol = self._snapshot().tol_f
                tied = ftol is not None and abs(lam0[r]) <= ftol
                if tied:
                    level = min(float(lam0[r]), 0.0) - ftol
                ev = (lambda r, lv: lambda t, x: evaluate(x)["lam"][r] - lv)(r, level)
                ev.terminal, ev.direction = True, -1
                events.append(ev)
                labels.append(("liftoff", int(self._rows_c[r])))
                if tied:
                    ev = (lambda r, lv: lambda t, x: evaluate(x)["lam"][r] - lv)(r, 2.0 * ftol)
                    ev.terminal, ev.direction = True, 1
                    events.append(ev)
                    labels.append(("clear", int(self._rows_c[r])))
        # and a slip guard (a Coulomb cone margin) that starts at zero: its margin is watched tol_f
        # past zero until it clears 2 tol_f ("... last guard slip of contact 0", plant fuzz)
        for r, nrows, mus in self._cones:
            for sign in (-1.0, 1.0):
                margin = (lambda r, nrows, mus, sign: lambda x: float(mus @ evaluate(x)["lam"][nrows])
                          + sign * evaluate(x)["lam"][r])(r, nrows, mus, sign)
                m0 = margin(x0)
                if ftol is None and abs(m0) <= 1e-6 * (1.0 + float(np.abs(lam0).max())):
                    ftol = self._snapshot().tol_f
                tied = ftol is not None and abs(m0) <= ftol
                level = min(m0, 0.0) - ftol if tied else 0.0
                ev = (lambda margin, lv: lambda t, x: margin(x) - lv)(margin, level)
                ev.terminal, ev.direction = True, -1
                events.append(ev)
                labels.append(("slip", int(self._rows_c[r])))
                if tied:
                    ev = (lambda margin, lv: lambda t, x: margin(x) - lv)(margin, 2.0 * ftol)
                    ev.terminal, ev.direction = True, 1
                    events.append(ev)
                    labels.append(("clear", int(self._rows_c[r])))
        # a contact sliding with kinetic friction stops when its tangential speed s vt reaches 0
        # (s = sign of vt when it started sliding); the resolve then re-sticks it if its cone
        # holds. Started at s vt = 0 (it just slipped), the guard waits velocity_tol below zero
        # until s vt clears 2 velocity_tol, as the others do.
        vtol = self.options.velocity_tol
        for r in range(self._rows_c.size):
            if self._rows_slide[r] == 0.0:
                continue
            c, d = int(self._rows_c[r]), float(np.sign(self._rows_slide[r]))
            g0 = d * vt_of(x0)[c]
            tied = g0 <= vtol
            level = min(g0, 0.0) - vtol if tied else 0.0
            ev = (lambda c, d, lv: lambda t, x: d * vt_of(x)[c] - lv)(c, d, level)
            ev.terminal, ev.direction = True, -1
            events.append(ev)
            labels.append(("stop", c))
            if tied:
                ev = (lambda c, d: lambda t, x: d * vt_of(x)[c] - 2.0 * vtol)(c, d)
                ev.terminal, ev.direction = True, 1
                events.append(ev)
                labels.append(("clear", c))
        # kinetic friction that nears the Painleve singularity is dropped (_set_mode does it when
        # this guard ends the segment)
        if np.any(self._rows_slide != 0.0):
            rows = (self._rows_c, self._rows_k, self._rows_slide)
            ev = lambda t, x: kinetic_margin(self.addr, np.ascontiguousarray(x[:nv]), *rows, nv, nc) \
                - self.options.painleve_margin  # noqa: E731
            ev.terminal, ev.direction = True, -1
            events.append(ev)
            labels.append(("painleve", -1))
        sol = solve_ivp(rhs, (self._t, t_end), x0, method="DOP853", rtol=self.options.rtol,
                        atol=self.options.atol, max_step=self.options.max_step, events=events or None,
                        first_step=self._first_step(evaluate(x0)["xdot"], t_end))
        if sol.status < 0:
            raise RuntimeError(f"{self.model.name}: integration failed at t={sol.t[-1]:.9g} s: {sol.message}")
        x = sol.y[:, -1]
        self._t = float(sol.t[-1]) if sol.status == 1 else float(t_end)
        self._q, self._v = x[:nv].copy(), x[nv:].copy()
        self._project()
        if sol.status != 1:
            return None
        hits = [labels[k] for k in range(len(events)) if sol.t_events[k].size]
        return hits[0] if hits else None

    def _first_step(self, xdot: np.ndarray, t_end: float) -> float | None:
        """A first step short enough not to jump over a whole excursion of a contact that starts
        at zero gap and separates (its event function starts at 0, so a step containing the
        lift and the return would show no sign change): a quarter of the ballistic estimate
        2 gdot / (-gddot) of its flight time. None (scipy's choice) when no such contact."""
        nv = self.nv
        gaps = contact_gaps(self.addr, self._q, self.nc)
        _, _, Jn, _, an, _ = model_terms(self.addr, self._q, self._v, nv, self.nc)
        step = math.inf
        for i in range(self.nc):
            if i in self._mode or abs(gaps[i]) > self.options.gap_tol:
                continue
            gdot = Jn[i] @ self._v
            gddot = Jn[i] @ xdot[nv:] + an[i]
            if gdot > 0 and gddot < 0:
                step = min(step, 0.5 * gdot / -gddot)
        if not math.isfinite(step):
            return None
        return max(min(step, t_end - self._t), 1e-14 * max(1.0, abs(self._t)))

    def _resolve(self, cause: str) -> None:
        """Apply impacts and liftoffs at the current instant until the mode is consistent."""
        opts = self.options
        if cause == "stop":
            self._restick()
        elif cause == "painleve":
            self._drop_kinetic_friction()
        for _ in range(4 * max(self.nc, 1) + 4):
            q, v = self._q, self._v
            gaps = contact_gaps(self.addr, q, self.nc)
            _, _, Jn, _, _, _ = model_terms(self.addr, q, v, self.nv, self.nc)
            gdot = Jn @ v if self.nc else np.zeros(0)
            touching = {i for i in range(self.nc) if gaps[i] <= opts.gap_tol}
            impacting = Mode(i for i in touching - self._mode if gdot[i] < -opts.velocity_tol)
            if impacting:
                self._impact(impacting)
                continue
            resting = Mode(i for i in touching - self._mode if abs(gdot[i]) <= opts.velocity_tol)
            snap = self._snapshot()
            lam = snap.forces(self._mode) if self._mode else np.zeros(self.nc)
            if not resting and all(lam[i] > snap.tol_f for i in self._mode if snap.rows(self._mode).normal_row(i) >= 0):
                if self._slip_if_outside_cone(snap):
                    continue
                return
            S = self._mode | resting
            # a resting contact that moves along the ground joins sliding: sticking it would need
            # a tangential impulse, and the projection onto its rows would jump the velocity
            _, _, _, Jt, _, _ = snap.terms()
            glide = Mode(i for i in resting if snap.stick[i] and abs(Jt[i] @ v) > opts.velocity_tol)
            if glide:
                stick, slide_mu = snap.stick.copy(), snap.slide_mu.copy()
                stick[list(glide)] = False
                for i in glide:
                    slide_mu[i] = self._mu[i] * np.sign(Jt[i] @ v)
                snap = snap.with_stick(stick, slide_mu)
            K, slide, snap = consistent_liftoff_mode(snap, S, opts.enumerate_max, opts.fa_nudge, self.stats)
            slide = (slide | glide) & K
            if K == self._mode and not slide:
                return
            before = self.mode
            self._slide(slide, snap)
            self._set_mode(K, snap)
            self._settle_slide_directions()
            changed = tuple(sorted(self._mode.symmetric_difference(before)))
            if cause == "reset":
                kind = "reset"
            elif K == Mode(before):
                kind, changed = "slip", tuple(sorted(slide))
                self.stats["slips"] += len(slide)
            else:
                kind = "liftoff" if not K >= Mode(before) else "touchdown"
            self._record(kind, changed, before, v, self._v, np.zeros(self.nc))
            if cause != "reset" and len(K) < len(before):
                self.stats["liftoffs"] += 1
        self.stats["predicate_fallbacks"] += 1  # the resolve loop did not settle

    def _restick(self) -> None:
        """Slide-to-stick: sliding contacts (with kinetic friction) whose tangential speed reached
        zero stick again, anchored where they are; the resolve lets them slip again if their
        cone does not hold."""
        vt = tangential_speeds(self.addr, self._q, self._v, self.nv, self.nc)
        stopped = [i for i, d in self._slip_dir.items() if d != 0.0 and d * vt[i] <= self.options.velocity_tol]
        if not stopped:
            return
        before = self.mode
        for i in stopped:
            self._sliding.discard(i)
            del self._slip_dir[i]
        v_minus = self._v.copy()
        self._set_mode(self._mode)
        self.stats["sticks"] += len(stopped)
        self._record("stick", tuple(sorted(stopped)), before, v_minus, self._v, np.zeros(self.nc))

    def _slip_if_outside_cone(self, snap: Snapshot) -> bool:
        """Stick-to-slide transition of contacts whose tangential force is outside the Coulomb
        cone (judged by the trend when on its boundary). Returns whether anything changed."""
        if not self._cones:
            return False
        x = np.concatenate([self._q, self._v])
        _, lam = mode_rhs(self.addr, x, self.joints, self.u_max, *self._cmd_arrays(), self._rows_c,
                          self._rows_k, self._rows_slide, self.nv, self.nc)
        margins = self._cone_margins(lam)
        tol = snap.tol_f
        if all(min(a, b) > tol for _, a, b in margins):
            return False
        # a contact whose friction force saturates along +t (mu fn - ft < 0) slides towards -t
        if any(min(a, b) < -tol for _, a, b in margins):
            bad = {c: (-1.0 if a < b else 1.0) for c, a, b in margins if min(a, b) < -tol}
        else:  # on the boundary: look a moment ahead along the mode's flow
            xdot, _ = mode_rhs(self.addr, x, self.joints, self.u_max, *self._cmd_arrays(), self._rows_c,
                               self._rows_k, self._rows_slide, self.nv, self.nc)
            x2 = x + self.options.fa_nudge * xdot
            _, lam2 = mode_rhs(self.addr, x2, self.joints, self.u_max, *self._cmd_arrays(), self._rows_c,
                               self._rows_k, self._rows_slide, self.nv, self.nc)
            bad = {c: (-1.0 if a2 < b2 else 1.0) for (c, a, b), (_, a2, b2) in zip(margins, self._cone_margins(lam2))
                   if min(a, b) <= tol and min(a2, b2) < min(a, b)}
        if not bad:
            return False
        before = self.mode
        self._slide(bad, directions=bad)
        self._set_mode(self._mode)
        self._settle_slide_directions()
        self.stats["slips"] += len(bad)
        self._record("slip", tuple(sorted(bad)), before, self._v, self._v, np.zeros(self.nc))
        return True

    def _impact(self, impacting: Mode) -> None:
        """Touchdown of `impacting` contacts: Zeno check, mode selection, impact map."""
        opts = self.options
        self.stats["touchdowns"] += 1
        self._impact_times.append(self._t)
        before, v_minus = self.mode, self._v.copy()
        snap = self._snapshot()
        if self._zeno():
            recent = {c for ev in self.events[-2 * opts.zeno_window - 2:] for c in ev.contacts}
            gaps = contact_gaps(self.addr, self._q, self.nc)
            J = self._mode | impacting | Mode(i for i in recent if gaps[i] <= opts.zeno_gap)
            imp = snap.impact(J, 0.0)
            self._v = imp.v_plus
            self._set_mode(J)
            self.stats["zeno"] += 1
            self._impact_times.clear()
            self._record("zeno", tuple(sorted(impacting)), before, v_minus, self._v, imp.P)
            return
        S = self._mode | impacting
        J, slide, snap = consistent_impact_mode(snap, S, opts.restitution, opts.enumerate_max, self.stats)
        imp = snap.impact(J, opts.restitution)
        self._count_impact_cone_violations(snap, J, imp.v_plus)
        self._v = imp.v_plus
        self._slide(slide & J, snap)
        _, _, Jn, _, _, _ = model_terms(self.addr, self._q, self._v, self.nv, self.nc)
        flow = Mode(i for i in J if Jn[i] @ self._v <= opts.velocity_tol)  # restitution: separating contacts leave
        self._set_mode(flow, None)
        self._settle_slide_directions()
        self._record("touchdown", tuple(sorted(impacting)), before, v_minus, self._v, imp.P)

    def _count_impact_cone_violations(self, snap: Snapshot, J: Mode, v_plus: np.ndarray) -> None:
        """Count impacts whose sticking tangential impulse exceeds mu times the normal one (the
        impact is still resolved as sticking, as Assumption A12 prescribes)."""
        rows = snap.rows(J)
        if not np.any(rows.k == 1):
            return
        M, _, Jn, Jt, _, _ = snap.terms()
        A = np.array([Jn[c] if k == 0 else Jt[c] for c, k in zip(rows.c, rows.k)])
        P = np.linalg.lstsq(A.T, M @ (v_plus - snap.v), rcond=None)[0]
        Pn = {int(c): P[r] for r, (c, k) in enumerate(zip(rows.c, rows.k)) if k == 0}
        for r, (c, k) in enumerate(zip(rows.c, rows.k)):
            share = Pn.get(int(c), 0.0) + sum(Pn.get(j, 0.0) for j in rows.dropped_t)
            if k == 1 and abs(P[r]) > self.model.contacts[c].mu * share * (1 + 1e-9) + snap.tol_p:
                self.stats["impact_cone_violations"] += 1

    def _zeno(self) -> bool:
        """Whether the recorded impact times accumulate (see the module docstring)."""
        opts, ts = self.options, self._impact_times
        if len(ts) >= 2 and ts[-1] - ts[-2] < opts.zeno_min_interval:
            return True
        w = int(opts.zeno_window)
        if len(ts) < w + 2:
            return False
        d = np.diff(ts[-(w + 2):])
        if not np.all(d[1:] < d[:-1]) or d[-1] <= 0:
            return False
        r = d[-1] / d[-2]
        return d[-1] * r / (1.0 - r) < opts.zeno_horizon

    def _record(self, kind, contacts, before, v_minus, v_plus, impulse) -> None:
        ev = HybridEvent(self._t, kind, tuple(int(c) for c in contacts), tuple(before), self.mode,
                         np.array(v_minus, dtype=float), np.array(v_plus, dtype=float), np.array(impulse, dtype=float),
                         self._q.copy())
        self.events.append(ev)
        if ev.changed_mode:
            self.stats["mode_changes"] += 1
