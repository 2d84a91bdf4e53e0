"""NMDP robot plant (implements `sim.protocol.Plant`) and its options.

    plant = NmdpPlant(get_robot("quadruped"), method="pgm")
    state = plant.reset(model.q0)
    state = plant.step(JointCommand(...), 0.01)      # one backward-Euler NMDP step of 10 ms

The joint impedance law tau = clip(tau_ff + kp (q_des - q_j) + kd (v_des - v_j), +-u_max) is
evaluated at the end of each (sub)step, inside the implicit equations: a stable PD. `method`
picks first-order PGM ("pgm"), zeroth-order PGM ("zopgm") or the linearised MDP baseline
("mdp", one QP per step, PD linear-implicit). See docs/NMDP.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

import numpy as np

from robots.model import RobotModel

from ..invariants import DEFAULT_PENETRATION_LIMIT_M, NON_FINITE, Invariants, check_penetration_limit
from ..protocol import JointCommand, PlantState, actuated_joints, checked_reset, pack_command
from . import kernel as K
from .qp import DenseQp
from .terms import n_faces, n_force, nmdp_library


# Default capacity (docs/NMDP.md, "Resting penetration"): a contact holds up to 30 times the robot's
# weight, reached over a 1 cm deep ramp (stiffness 1.5 F / 1 cm = 4500 weights per metre). A foot
# carrying the whole weight then rests ~1.8 mm deep, and a 0.2 m drop sinks ~1 cm: the capacity
# bounds the work the contact can do (F over the depth), so it must stop a drop within the
# penetration limit, and the ramp bounds the resting depth.
FORCE_LIMIT_WEIGHTS = 30.0
DEPTH_SCALE_M = 0.01


class NmdpError(RuntimeError):
    """A step could not be completed (status text, simulated time t in s, and the state before it).
    `step()` latches its message as the violation instead of raising it (module docstring of
    sim/invariants.py); `failed_step_error` builds it."""

    def __init__(self, message: str, status: int, t: float, q: np.ndarray, v: np.ndarray):
        super().__init__(message)
        self.status, self.t, self.q, self.v = status, t, q, v


@dataclass(frozen=True)
class NmdpOptions:
    """Options of the NMDP plant, validated once (`validated()` raises ValueError naming the field).

    method: "pgm" (first-order), "zopgm" (zeroth-order) or "mdp" (linearised baseline).
    stiffness: contact stiffness k, N/m: None = 1.5 F / DEPTH_SCALE_M (the capacity's ramp
        1 cm deep), a number or one per contact: the steepest slope of the capacity
        cap = F S(depth / delta) (sim.nmdp.terms), so delta = 1.5 F / k.
    force_limit: F, N, the capacity of a fully pressed contact: None = FORCE_LIMIT_WEIGHTS (30)
        times the robot's weight (largest diagonal entry of M(q0) times g), a number or one per
        contact.
    mu: friction coefficients: None = the model's, a number or one per contact (>= 0).
    max_step: largest primary step, s: `step(cmd, dt)` takes ceil(dt / max_step) equal steps
        (None: one step of dt).
    adaptive: halve a substep whose manifold projection diverges (the paper's Algorithm 2).
    min_substep_fraction: smallest substep allowed, as a fraction of the primary step.
    newton_rtol: Newton stops when |R| <= newton_rtol * max(M_ii) * max(|v|, 0.1 m/s), N s.
    max_newton: Newton iterations per projection.
    pgm_rtol: PGM stops when the predicted decrease of the kinetic energy is below pgm_rtol
        times 1/2 max(M_ii) max(|v|, 0.1)^2, J.
    max_iter: PGM outer iterations (QP solves) per substep. max_line_search: halvings of the
        PGM step before stopping. armijo: sufficient-decrease constant of the line search.
    qp_reg: relative Tikhonov term added to the QP metric (keeps it positive definite).
    penetration_limit_m: deepest contact gap (m) before the state is flagged as a violation
        (sim/invariants.py).
    """

    method: str = "pgm"
    stiffness: float | Sequence[float] | None = None
    mu: float | Sequence[float] | None = None
    force_limit: float | Sequence[float] | None = None
    max_step: float | None = None
    adaptive: bool = True
    min_substep_fraction: float = 2.0 ** -12
    newton_rtol: float = 1e-9
    max_newton: int = 30
    pgm_rtol: float = 1e-6
    max_iter: int = 200
    max_line_search: int = 10
    armijo: float = 1e-4
    qp_reg: float = 1e-9
    penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M

    def validated(self, model: RobotModel) -> "NmdpOptions":
        """Check every field against `model`; raise ValueError naming the field and the fix."""
        if self.method not in K.METHODS:
            raise ValueError(f"NmdpPlant: method must be one of {sorted(K.METHODS)}, got {self.method!r}")
        for name in ("newton_rtol", "pgm_rtol", "armijo", "qp_reg", "min_substep_fraction"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"NmdpPlant: {name} must be a finite number > 0, got {value!r}")
        if not self.armijo < 1 or not self.min_substep_fraction < 1:
            raise ValueError("NmdpPlant: armijo and min_substep_fraction must be < 1")
        for name in ("max_newton", "max_iter", "max_line_search"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"NmdpPlant: {name} must be an integer >= 1, got {value!r}")
        if self.max_step is not None and not (math.isfinite(self.max_step) and self.max_step > 0):
            raise ValueError(f"NmdpPlant: max_step must be None or a finite number > 0 (s), got {self.max_step!r}")
        per_contact(model, "stiffness", self.stiffness, [1.0] * model.nc, positive=True)
        per_contact(model, "mu", self.mu, [c.mu for c in model.contacts], positive=False)
        if self.force_limit is not None:
            per_contact(model, "force_limit", self.force_limit, [1.0] * model.nc, positive=True)
        check_penetration_limit("NmdpPlant", self.penetration_limit_m)
        return self


def per_contact(model: RobotModel, name: str, value, default: Sequence[float], *, positive: bool) -> np.ndarray:
    """`value` (None = `default`, a number, or one per contact) as an (nc,) array, checked:
    finite and >= 0 (> 0 if `positive`); the ValueError names the field and the contact."""
    arr = np.array(default if value is None else np.broadcast_to(np.asarray(value, dtype=float), (model.nc,)),
                   dtype=float)
    if arr.shape != (model.nc,):
        raise ValueError(f"NmdpPlant: {name} must be a number or {model.nc} values, got {value!r}")
    for c, x in zip(model.contacts, arr):
        if not np.isfinite(x) or x < 0 or (positive and x == 0):
            need = "> 0" if positive else ">= 0"
            raise ValueError(f"NmdpPlant: {name} of contact {c.name!r} must be finite and {need}, got {x}")
    return arr


class NmdpPlant:
    """A robot plant integrated by NMDP (backward Euler + maximal dissipation by PGM) or the
    linearised MDP baseline. Implements `sim.protocol.Plant`.

    Args:
        model: a RobotModel (planar, or 3D with a floating base) with at least one contact.
        options: an `NmdpOptions`; keyword arguments override its fields (e.g. method="zopgm").
        cache_dir, verbose: code-generation cache folder and whether to announce compiling.
    """

    def __init__(self, model: RobotModel, options: NmdpOptions | None = None, *,
                 cache_dir: Path | str | None = None, verbose: bool = True, **overrides):
        if model.nc == 0:
            raise ValueError(f"{model.name}: the NMDP plant needs at least one contact")
        unknown = set(overrides) - {f.name for f in fields(NmdpOptions)}
        if unknown:
            raise ValueError(f"NmdpPlant: unknown option(s) {sorted(unknown)}; see NmdpOptions")
        base = options if options is not None else NmdpOptions()
        self.options = NmdpOptions(**{**{f.name: getattr(base, f.name) for f in fields(NmdpOptions)},
                                      **overrides}).validated(model)
        o = self.options
        self.model = model
        nv, nu, nc = model.nv, model.nu, model.nc
        nl = n_force(model) * nc  # contact force unknowns (sim.nmdp.terms)
        self.method = o.method
        self._method = K.METHODS[o.method]
        self.mu = per_contact(model, "mu", o.mu, [c.mu for c in model.contacts], positive=False)
        self._lib = nmdp_library(model, cache_dir, verbose)
        m0 = self._lib["nmdp_explicit"](model.q0, np.zeros(nv), np.zeros(3 * nc))[0].reshape(nv, nv)
        self.weight = float(np.max(np.diag(m0))) * model.gravity  # N (largest diagonal entry of M(q0) times g)
        if o.force_limit is None:
            self.force_limit = np.full(nc, FORCE_LIMIT_WEIGHTS * self.weight)
        else:
            self.force_limit = per_contact(model, "force_limit", o.force_limit, [1.0] * nc, positive=True)
        # default: the stiffness that makes the capacity's ramp DEPTH_SCALE_M deep (docs/NMDP.md)
        self.stiffness = per_contact(model, "stiffness", o.stiffness, 1.5 * self.force_limit / DEPTH_SCALE_M,
                                     positive=True)
        self.depth_scale = 1.5 * self.force_limit / self.stiffness
        self._cp = np.concatenate([self.force_limit, self.depth_scale, self.mu])
        # one qpOASES workspace per number of contacts that can act (sim.nmdp.kernel._solve_qp)
        nf = n_faces(model)
        self._qps = [DenseQp(n_force(model) * k, nf * k, cache_dir=cache_dir, verbose=verbose)
                     for k in range(1, nc + 1)]
        self._qp = self._qps[-1]
        implicit = "nmdp_implicit_zo" if o.method == "zopgm" else "nmdp_implicit"
        self._addr = np.array([self._lib[implicit].address, self._lib["nmdp_explicit"].address,
                               self._qp.solve_address, self._lib["nmdp_residual"].address,
                               self._lib["nmdp_integrate"].address, self._lib["nmdp_mass"].address]
                              + [qp.handle for qp in self._qps], dtype=np.int64)
        self._joints = actuated_joints(model)
        self._umax = np.where(np.isfinite(model.u_max), model.u_max, 1e300).astype(float)
        self._opts = np.zeros(K.N_OPTS)
        self._opts[K.O_NEWTON_RTOL] = o.newton_rtol
        self._opts[K.O_MAX_NEWTON] = o.max_newton
        self._opts[K.O_PGM_RTOL] = o.pgm_rtol
        self._opts[K.O_MAX_ITER] = o.max_iter
        self._opts[K.O_ARMIJO] = o.armijo
        self._opts[K.O_MAX_LS] = o.max_line_search
        self._opts[K.O_MIN_FRACTION] = o.min_substep_fraction
        self._opts[K.O_ADAPTIVE] = 1.0 if o.adaptive else 0.0
        self._opts[K.O_QP_REG] = o.qp_reg
        self._opts[K.O_FACES] = nf
        imp, exp = self._lib["nmdp_implicit"], self._lib["nmdp_explicit"]
        self._bufs = (
            np.zeros(imp.n_in), np.zeros(imp.n_out), np.zeros(exp.n_in), np.zeros(exp.n_out),
            np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv, dtype=np.int64), np.zeros(nv),
            np.zeros((nv, nl)), np.zeros((nv, nl)), np.zeros((nl, nl)), np.zeros(nl),
            np.zeros(self._qp.n_in), np.zeros(nl + self._qp.n_out), np.zeros(nl), np.zeros(nv), np.zeros(nv),
            np.zeros(self._lib["nmdp_residual"].n_out),
            np.zeros(1),  # 1 when (LU, piv) hold factors of K from the last substep (kernel.pgm_substep)
            np.zeros((nc, 1 + nl + nf * nc)),  # the QP workspaces' warm starts (kernel._solve_qp)
        )
        self._cmd = np.zeros(5 * nu)
        self._st = np.zeros(K.N_STATS)
        self._trace = np.zeros(0)
        self._force = np.zeros((nc, 1 + model.n_tangent))
        self._cap = np.zeros(nc)
        self.invariants = Invariants(model, o.penetration_limit_m)
        self.violation = ""  # latched until reset (sim/invariants.py)
        self.q = np.array(model.q0, dtype=float)
        self.v = np.zeros(nv)
        self.lam = np.zeros(nl)
        self.t = 0.0
        self._ready = False
        self._totals = np.zeros(K.N_TOTALS)  # kernel.accumulate's layout
        self._totals[K.S_MIN_DT] = math.inf
        self._good = (np.zeros(model.nq), np.zeros(nv))  # advance's state before its last step
        self._sizes = (model.nq, nv, nu, nc, 1 + model.n_tangent)
        self._inv_args = self.invariants.compiled_args

    # ------------------------------------------------------------------ protocol
    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q, v) at time t (s); contact forces (lam) start at zero. Returns the state."""
        self.q[:], self.v[:], self.t = checked_reset(self.model, q, v, t)
        self.lam[:] = 0.0
        self._force[:] = 0.0
        self._cap[:] = 0.0
        self._cmd[:] = 0.0
        for a in self._carried():  # warm starts: a reset run replays bit for bit
            a[:] = 0
        self._ready = True
        self.violation = ""
        self.invariants.reset_report()
        self._check()
        return self.state()

    def _carried(self) -> tuple:
        """The kernel's buffers that carry over from one step to the next (warm starts): K's LU
        factors and pivots with their flag, and the QP workspaces' duals."""
        b = self._bufs
        return b[5], b[6], b[-2], b[-1]

    def set_command(self, command: JointCommand) -> None:
        """Hold `command` (validated against the model) until the next call."""
        self._cmd[:] = pack_command(command, self.model)

    def step(self, command: JointCommand | None, dt: float) -> PlantState:
        """Advance dt seconds (one primary step, or ceil(dt / max_step)) holding `command`
        (None keeps the previous one); returns the state. A step that fails (NmdpError) or breaks
        an invariant is not raised: the state before it is returned with `violation` set, and
        kept until reset (sim/invariants.py). One compiled call (`kernel.advance`)."""
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        if not (type(dt) is float and 0.0 < dt < math.inf):
            dt = self._check_dt(dt, "dt")
        if self.violation:
            if command is not None:
                self.set_command(command)  # a bad command still raises ValueError
            return self.state()
        n = 1 if self.options.max_step is None else max(1, math.ceil(dt / self.options.max_step - 1e-9))
        h = dt / n
        if command is not None:
            try:  # fast path: a well-formed command goes straight into the held one
                loaded = K.load_command(command.tau_ff, command.q_des, command.v_des, command.kp, command.kd,
                                        self._cmd)
            except (TypeError, AttributeError):
                loaded = False
            if not loaded:
                self.set_command(command)  # ValueError names a bad field; fills missing ones
        nq, nv, nu, nc, dim = self._sizes
        q, v, tau = np.empty(nq), np.empty(nv), np.empty(nu)
        contact, force = np.empty(nc, dtype=np.bool_), np.empty((nc, dim))
        heights_address, heights, _, lowest, floating = self._inv_args
        status, failure, done = K.advance(self._addr, self._bufs, self.q, self.v, n, h, self._cmd, self._cp,
                                          self.lam, self._joints, self._umax, self._method, self._opts, self._st,
                                          self._totals, self._force, self._cap, self._trace, heights_address,
                                          heights, lowest, floating, *self._good, q, v, contact, force, tau)
        t_fail = self.t + done * h
        if status != K.OK:
            self._latch(str(self.failed_step_error(status, h, t_fail)))
        elif failure:
            self._latch(self.invariants.explain(failure, t_fail, self.q, self.v))
            if failure == NON_FINITE:  # back to the last good state
                self.q[:], self.v[:] = self._good
                self.t += (done - 1) * h
                return self.state()
        self.t += done * h
        return PlantState(self.t, q, v, contact, force, tau, self.violation)

    def failed_step_error(self, status: int, h: float, t: float) -> NmdpError:
        """The NmdpError for a primary step of h seconds at t (s) that ended with `status`."""
        return NmdpError(f"{self.model.name}: {self.method} step of {h:g} s at t={t:.6g} failed: "
                         f"{K.STATUS_TEXT[status]}", status, t, self.q.copy(), self.v.copy())

    def _check(self) -> str:
        """Check the invariants at the current state; latch and report a violation."""
        violation = self.invariants.check(self.t, self.q, self.v)
        if violation:
            self._latch(violation)
        return violation

    def _latch(self, violation: str) -> None:
        self.violation = violation
        self.invariants.report(violation)

    def rollout(self, commands: np.ndarray | list[JointCommand], dt: float) -> dict:
        """Apply commands[k] during step k of dt seconds, all in compiled code.

        commands: JointCommands or an array (n x 5 nu) of packed commands (see `pack_command`).
        Returns {"q": n x nq, "v": n x nv, "stats": n x N_STATS (kernel.STAT_NAMES), "status",
        "steps"}; stops at the first failed step (status != 0, rows after it are NaN).
        """
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before rollout()")
        dt = self._check_dt(dt, "dt")
        if self.options.max_step is not None and dt > self.options.max_step:
            raise ValueError(f"NmdpPlant.rollout: dt={dt} exceeds max_step={self.options.max_step}; "
                             "pass dt <= max_step")
        if isinstance(commands, np.ndarray):
            packed = np.ascontiguousarray(commands, dtype=np.float64)
            if packed.ndim != 2 or packed.shape[1] != 5 * self.model.nu or not np.isfinite(packed).all():
                raise ValueError(f"NmdpPlant.rollout: commands must be finite, shape (n, {5 * self.model.nu})")
        else:
            packed = np.stack([pack_command(c, self.model) for c in commands]) if len(commands) else \
                np.zeros((0, 5 * self.model.nu))
        n = packed.shape[0]
        out_q = np.full((n, self.model.nq), np.nan)
        out_v = np.full((n, self.model.nv), np.nan)
        out_st = np.zeros((n, K.N_STATS))
        status, done = K.rollout(self._addr, self._bufs, self.q, self.v, float(dt), packed, self._cp, self.lam,
                                 self._joints, self._umax, self._method, self._opts, out_q, out_v, out_st)
        for k in range(min(done + (status != K.OK), n)):
            K.accumulate(self._totals, out_st[k])
        self.t += done * dt
        if done:
            self._cmd[:] = packed[done - 1]
        return {"q": out_q, "v": out_v, "stats": out_st, "status": int(status), "steps": int(done),
                "status_text": K.STATUS_TEXT[int(status)]}

    def solve_step(self, dt: float, command: JointCommand | None = None, *, trace_len: int = 256) -> dict:
        """Diagnostics: one primary step from the current state WITHOUT changing it.

        Returns {"status", "q", "v", "lam", "stats" (name -> value), "trace": the PGM objective
        (kinetic energy at the next step, J) after each accepted iteration of the last substep}.
        """
        dt = self._check_dt(dt, "dt")
        cmd = self._cmd.copy() if command is None else pack_command(command, self.model)
        q, v, lam = self.q.copy(), self.v.copy(), self.lam.copy()
        st, trace = np.zeros(K.N_STATS), np.zeros(trace_len)
        force, cap = np.zeros_like(self._force), np.zeros_like(self._cap)
        kept = [a.copy() for a in self._carried()]  # the warm starts are state too
        status = K.nmdp_step(self._addr, self._bufs, q, v, dt, cmd, self._cp, lam, self._joints, self._umax,
                             self._method, self._opts, st, trace, force, cap)
        for a, b in zip(self._carried(), kept):
            a[:] = b
        return {"status": int(status), "q": q, "v": v, "lam": lam, "force": force,
                "stats": dict(zip(K.STAT_NAMES, st.tolist())), "trace": trace[:int(st[K.S_TRACE_N])].copy()}

    def state(self) -> PlantState:
        """The current PlantState (fresh arrays): contact = penetrating (capacity > 0), force =
        (normal, tangential) in N from the last step, tau = the impedance torque at the state."""
        tau = np.empty(self.model.nu)
        K.impedance_torques(self._cmd, self.q, self.v, self._joints, self._umax, tau)
        return PlantState(self.t, self.q.copy(), self.v.copy(), self._cap > 0, self._force.copy(), tau,
                          self.violation)

    @property
    def stats(self) -> dict:
        """Cumulative counters since construction: steps, PGM iterations (QP solves), Newton
        iterations (chord or Newton steps), jacobians (evaluations of K), substeps, halvings,
        line-search stops, QP warnings, iteration-limit hits, and min_dt, the smallest substep
        used (s)."""
        tot = self._totals
        counts = {K.STAT_NAMES[k]: int(tot[k]) for k in K.COUNTED}
        return {"steps": int(tot[K.T_STEPS]), **counts, "min_dt": float(tot[K.S_MIN_DT])}

    def last_step(self) -> dict:
        """Statistics of the last primary step (kernel.STAT_NAMES)."""
        return dict(zip(K.STAT_NAMES, self._st.tolist()))

    def _check_dt(self, dt, name: str) -> float:
        if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0):
            raise ValueError(f"{self.model.name}: {name} must be a finite number > 0 (s), got {dt!r}")
        return float(dt)
