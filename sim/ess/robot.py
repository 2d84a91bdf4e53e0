"""ESS vector field, events and plant for robots with compliant contacts.

Contact model (per contact i, gap phi_i, normal velocity vn_i = Jn_i v, tangential vt_i):
- stance force fn_i = -k_i phi_i - b_i vn_i (spring-damper), ft_i = -mu_i fn_i tanh(vt_i / v_s);
- two guards per contact: touchdown h_td = -phi (crossed when the gap closes) and liftoff
  h_lo = -fn = k phi + b vn (crossed when the force would turn tensile; with
  liftoff="gap", h_lo = phi as in the paper's plate model). The reset matrix re-arms each
  contact's other guard; a re-armed guard must first leave its eps-band (hysteresis), so after
  liftoff the foot must rise eps above the ground before a touchdown can be projected.
- stance = touchdown crossed and liftoff not crossed (from the integrator's sign vector).

Friction: Coulomb's law regularised by tanh(vt / v_s). It is smooth inside each contact mode,
so it adds no events, and ESS's assumptions (vector field selected by the signs of event
functions, liveness at each guard) hold. The cost: a "sticking" foot creeps at
v_s * atanh(ft / (mu fn)), and the law is stiff: its slope mu fn / v_s acting on a light
foot limits the explicit step. Default v_s = 0.1 m/s: measured on the standing quadruped,
v_s = 0.01 needs ~6 steps per ms, v_s = 0.1 one step per ms (bench sim-rtf).
Where liveness can fail: a foot grazing the ground (vn -> 0 inside the band) or a force that
reaches zero with zero rate. The plant then *locates* that guard's crossing exactly
(on_violation="locate") instead of projecting, so it never stops; the count is in `stats`.

The joint impedance law tau = clip(tau_ff + kp (q_des - q_j) + kd (v_des - v_j), +-u_max) is
evaluated continuously inside f (the limit of a fast servo loop), command held over a step.
All numbers come from the robot's generated C functions; no Python runs inside a step.
"""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np
from numba import njit

from robots.ccall import call_flat
from robots.codegen import compile_functions
from robots.model import RobotModel, check_vector

from ..protocol import JointCommand, PlantState, actuated_joints, pack_command
from . import kernel as K
from .integrator import EssIntegrationError, EssSystem, GuardState, LivenessError

HEADER = 6  # p = [nq, nv, nu, nc, slip_speed, liftoff_force, k(nc), b(nc), mu(nc), joint(nu), u_max(nu), command(5 nu)]


def _lib(model: RobotModel, cache_dir=None, verbose: bool = True):
    """Compile the three C functions the ESS plant needs from the model's expressions."""
    q, v = model.q, model.v
    M, h = model.mass_matrix, model.bias
    phi, Jn, Jt = model.contact_gaps(), model.normal_jacobian(), model.tangent_jacobian()
    fns = [
        ca.Function("ess_terms", [q, v], [M, h, phi, Jn, Jt], ["q", "v"], ["M", "h", "phi", "Jn", "Jt"]),
        ca.Function("ess_contact", [q], [phi, Jn], ["q"], ["phi", "Jn"]),
        ca.Function("ess_dJnv", [q, v], [ca.jacobian(Jn @ v, q)], ["q", "v"], ["dJnv_dq"]),
    ]
    return compile_functions(fns, lib_name=f"{model.name}-ess", cache_dir=cache_dir, verbose=verbose)


@njit(cache=True)
def _solve_spd(M, b, L, out, n):
    """Solve M out = b for symmetric positive definite M (n x n) by Cholesky, in place in L."""
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@njit(cache=True)
def _actuator_torque(x, p, a, nq, nu, nc):
    """Clipped joint impedance torque of actuator a (N m) for the command held in p."""
    base = HEADER + 3 * nc
    cmd = base + 2 * nu
    j = int(p[base + a])
    tau = (p[cmd + a] + p[cmd + 3 * nu + a] * (p[cmd + nu + a] - x[j])
           + p[cmd + 4 * nu + a] * (p[cmd + 2 * nu + a] - x[nq + j]))
    umax = p[base + nu + a]
    return min(max(tau, -umax), umax)


@njit(cache=True)
def _stance_force(x, p, bt, i, nq, nv, nc):
    """(fn, ft) of contact i in stance, N: spring-damper normal force, tanh-regularised friction
    (ft = 0 without friction). bt holds the `ess_terms` outputs at x."""
    o_phi = nv * nv + nv
    o_jn = o_phi + nc
    o_jt = o_jn + nc * nv
    vn = 0.0
    for k in range(nv):
        vn += bt[o_jn + i * nv + k] * x[nq + k]
    fn = -p[HEADER + i] * bt[o_phi + i] - p[HEADER + nc + i] * vn
    mu = p[HEADER + 2 * nc + i]
    if mu <= 0.0:
        return fn, 0.0
    vt = 0.0
    for k in range(nv):
        vt += bt[o_jt + i * nv + k] * x[nq + k]
    return fn, -mu * fn * np.tanh(vt / p[4])


@njit(cache=True)
def fill_outputs(x, sigma, p, ctx, force, tau, contact):
    """Contact flags, forces (nc x 2: normal, tangential, N) and applied torques (nu, N m) at x."""
    addr, bt, bc, bg, gen, L = ctx
    nq, nv, nu, nc = int(p[0]), int(p[1]), int(p[2]), int(p[3])
    call_flat(addr[0], x.ctypes.data, bt.ctypes.data)
    for i in range(nc):
        contact[i] = sigma[i] > 0.0 and sigma[nc + i] < 0.0
        force[i, 0], force[i, 1] = _stance_force(x, p, bt, i, nq, nv, nc) if contact[i] else (0.0, 0.0)
    for a in range(nu):
        tau[a] = _actuator_torque(x, p, a, nq, nu, nc)


@njit(cache=True)
def robot_f(t, x, sigma, p, ctx, out):
    """dx/dt = (v, M^-1 (B tau + sum Jn^T fn + Jt^T ft - h)) for the current contact modes."""
    addr, bt, bc, bg, gen, L = ctx
    nq, nv, nu, nc = int(p[0]), int(p[1]), int(p[2]), int(p[3])
    call_flat(addr[0], x.ctypes.data, bt.ctypes.data)
    o_h = nv * nv
    o_jn = o_h + nv + nc
    o_jt = o_jn + nc * nv
    for i in range(nv):
        gen[i] = -bt[o_h + i]
    base = HEADER + 3 * nc
    for a in range(nu):
        gen[int(p[base + a])] += _actuator_torque(x, p, a, nq, nu, nc)
    for i in range(nc):
        if sigma[i] > 0.0 and sigma[nc + i] < 0.0:
            fn, ft = _stance_force(x, p, bt, i, nq, nv, nc)
            for k in range(nv):
                gen[k] += bt[o_jn + i * nv + k] * fn + bt[o_jt + i * nv + k] * ft
    for i in range(nq):
        out[i] = x[nq + i]
    _solve_spd(bt[:o_h].reshape((nv, nv)), gen, L, out[nq:], nv)


@njit(cache=True)
def robot_h(x, p, ctx, out):
    """Events: touchdown -phi_i (rows 0..nc-1) and liftoff k phi + b vn (or phi) (rows nc..2nc-1)."""
    addr, bt, bc, bg, gen, L = ctx
    nq, nv, nc = int(p[0]), int(p[1]), int(p[3])
    call_flat(addr[1], x.ctypes.data, bc.ctypes.data)
    force_liftoff = p[5] > 0.0
    for i in range(nc):
        phi = bc[i]
        out[i] = -phi
        if force_liftoff:
            vn = 0.0
            for k in range(nv):
                vn += bc[nc + i * nv + k] * x[nq + k]
            out[nc + i] = p[HEADER + i] * phi + p[HEADER + nc + i] * vn
        else:
            out[nc + i] = phi


@njit(cache=True)
def robot_Dh(x, p, ctx, out):
    """Jacobian (2nc x (nq + nv)) of `robot_h`."""
    addr, bt, bc, bg, gen, L = ctx
    nq, nv, nc = int(p[0]), int(p[1]), int(p[3])
    call_flat(addr[1], x.ctypes.data, bc.ctypes.data)
    force_liftoff = p[5] > 0.0
    if force_liftoff:
        call_flat(addr[2], x.ctypes.data, bg.ctypes.data)
    out[:, :] = 0.0
    for i in range(nc):
        k_i, b_i = p[HEADER + i], p[HEADER + nc + i]
        for c in range(nq):
            jn = bc[nc + i * nv + c]
            out[i, c] = -jn
            if force_liftoff:
                out[nc + i, c] = k_i * jn + b_i * bg[i * nq + c]
                out[nc + i, nq + c] = b_i * jn
            else:
                out[nc + i, c] = jn


@njit  # not cacheable: it binds the vector-field dispatchers (recompiled per process, ~5-10 s)
def run_robot(ctx, x, t, tf, p, sigma, armed, pending, parked, reset, eps, rtol, atol, hstep, h_max,
              live_min, on_violation, max_events, max_steps, t_eval, x_eval, eval_pos, stats):
    """`kernel.ess_integrate` bound to the robot vector field (compiled once, cached on disk)."""
    return K.ess_integrate(robot_f, robot_h, robot_Dh, ctx, x, t, tf, p, sigma, armed, pending, parked, reset,
                           eps, False, rtol, atol, hstep, h_max, live_min, on_violation, max_events,
                           max_steps, t_eval, x_eval, eval_pos, stats)


@njit
def rollout_robot(ctx, x, t0, period, commands, p, cmd_offset, sigma, armed, pending, parked, reset, eps,
                  rtol, atol, hstep, h_max, live_min, on_violation, max_events, max_steps, out_x, stats):
    """Apply commands[k] (packed, 5 nu) during tick k of `period` s; record x after each tick.

    Returns (t reached, status, guard, ticks completed).
    """
    te = np.empty(0)
    xe = np.empty((0, x.shape[0]))
    pos = np.zeros(1, dtype=np.int64)
    t = t0
    for k in range(commands.shape[0]):
        p[cmd_offset:] = commands[k]
        t, status, guard = K.ess_integrate(robot_f, robot_h, robot_Dh, ctx, x, t, t0 + (k + 1) * period, p,
                                           sigma, armed, pending, parked, reset, eps, False, rtol, atol, hstep,
                                           h_max, live_min, on_violation, max_events, max_steps, te, xe, pos,
                                           stats)
        if status != K.OK:
            return t, status, guard, k
        out_x[k] = x
    return t, K.OK, -1, commands.shape[0]


class EssPlant:
    """A robot plant integrated by ESS (implements `sim.protocol.Plant`).

    Args:
        model: a RobotModel with compliant contacts (stiffness > 0 on every contact).
        eps: band width of the guards, m for touchdown and N for force liftoff (scalar applies
            to touchdown; liftoff uses eps * k so both mean "eps metres").
        rtol, atol: Dormand-Prince tolerances; h_max: largest integration step, s.
        slip_speed: v_s of the tanh friction law, m/s. liftoff: "force" or "gap".
        on_violation: "locate" (default: exact event location where liveness fails) or "raise".
        cache_dir, verbose: code-generation cache folder and whether to announce compiling.
    """

    def __init__(self, model: RobotModel, *, eps: float = 1e-4, rtol: float = 1e-4, atol: float = 1e-6,
                 h_max: float = 0.005, slip_speed: float = 0.1, liftoff: str = "force",
                 on_violation: str = "locate", max_events: int = 10_000, cache_dir: Path | str | None = None,
                 verbose: bool = True):
        if model.nq != model.nv:
            raise ValueError(f"{model.name}: the ESS plant needs nq == nv (planar robots), got {model.nq}, {model.nv}")
        if model.nc == 0:
            raise ValueError(f"{model.name}: the ESS plant needs at least one contact")
        soft = [c.name for c in model.contacts if c.stiffness <= 0]
        if soft:
            raise ValueError(f"{model.name}: contacts {soft} have no stiffness; the ESS plant needs compliant contacts")
        for name, value in (("eps", eps), ("rtol", rtol), ("atol", atol), ("h_max", h_max),
                            ("slip_speed", slip_speed)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"EssPlant: {name} must be finite and > 0, got {value}")
        if liftoff not in ("force", "gap"):
            raise ValueError(f"EssPlant: liftoff must be 'force' or 'gap', got {liftoff!r}")
        if on_violation not in ("locate", "raise"):
            raise ValueError(f"EssPlant: on_violation must be 'locate' or 'raise', got {on_violation!r}")
        self.model = model
        self.options = dict(eps=eps, rtol=rtol, atol=atol, h_max=h_max, slip_speed=slip_speed, liftoff=liftoff,
                            on_violation=on_violation, max_events=max_events)
        lib = _lib(model, cache_dir, verbose)
        nq, nv, nu, nc = model.nq, model.nv, model.nu, model.nc
        self._joints = actuated_joints(model)
        stiff = np.array([c.stiffness for c in model.contacts])
        self._p = np.concatenate([
            [nq, nv, nu, nc, slip_speed, 1.0 if liftoff == "force" else 0.0],
            stiff, [c.damping for c in model.contacts], [c.mu for c in model.contacts],
            self._joints.astype(float), np.where(np.isfinite(model.u_max), model.u_max, 1e300),
            np.zeros(5 * nu),
        ])
        self._cmd = HEADER + 3 * nc + 2 * nu
        self._lib = lib  # keeps the shared library (and so the addresses below) alive
        ctx = (
            np.array([lib[n].address for n in ("ess_terms", "ess_contact", "ess_dJnv")], dtype=np.int64),
            np.empty(lib["ess_terms"].n_out), np.empty(lib["ess_contact"].n_out), np.empty(lib["ess_dJnv"].n_out),
            np.empty(nv), np.zeros((nv, nv)),
        )
        reset = np.zeros((2 * nc, 2 * nc), dtype=np.bool_)
        for i in range(nc):
            reset[i, nc + i] = reset[nc + i, i] = True
        self.system = EssSystem(robot_f, robot_h, robot_Dh, n=nq + nv, m=2 * nc, reset=reset, ctx=ctx,
                                name=f"{model.name}-ess")
        self._eps = np.concatenate([np.full(nc, eps), eps * (stiff if liftoff == "force" else np.ones(nc))])
        self._stats = np.zeros(K.N_STATS, dtype=np.int64)
        self._hstep = np.array([min(1e-3, h_max), 1e-4])
        self._violation = 0 if on_violation == "raise" else 1
        self._empty = np.zeros(0)
        self._empty2 = np.zeros((0, nq + nv))
        self._eval_pos = np.zeros(1, dtype=np.int64)
        self.x = np.zeros(nq + nv)
        self.t = 0.0
        self.guards: GuardState | None = None

    # ------------------------------------------------------------------ protocol
    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q, v) at time t (s); contact modes follow from the gaps. Returns it."""
        m = self.model
        q = check_vector(m, "q", q, m.nq)
        v = np.zeros(m.nv) if v is None else check_vector(m, "v", v, m.nv)
        if not np.isfinite(t):
            raise ValueError(f"{m.name}: t must be finite, got {t}")
        self.x[:] = np.concatenate([q, v])
        self.t = float(t)
        nc = m.nc
        hx = np.empty(2 * nc)
        robot_h(self.x, self._p, self.system.ctx, hx)
        sigma = np.empty(2 * nc)
        armed = np.zeros(2 * nc, np.bool_)
        pending = np.zeros(2 * nc, np.bool_)
        for i in range(nc):
            stance = hx[i] >= 0  # gap closed
            sigma[i], sigma[nc + i] = (1.0, -1.0) if stance else (-1.0, 1.0)
            if stance:
                armed[nc + i], pending[nc + i] = (hx[nc + i] < -self._eps[nc + i]), (hx[nc + i] >= -self._eps[nc + i])
            else:
                armed[i], pending[i] = (hx[i] < -self._eps[i]), (hx[i] >= -self._eps[i])
        self.guards = GuardState(sigma, armed, pending, np.zeros(2 * nc, np.bool_))
        self._p[self._cmd:] = 0.0
        self._hstep[:] = (min(1e-3, self.options["h_max"]), 1e-4)
        return self.state()

    def set_command(self, command: JointCommand) -> None:
        """Hold `command` (validated against the model) until the next call."""
        self._p[self._cmd:] = pack_command(command, self.model)

    def step(self, command: JointCommand | None, dt: float) -> PlantState:
        """Advance dt seconds holding `command` (None keeps the previous one); returns the state."""
        if command is not None:
            self.set_command(command)
        self.advance(self.t + dt)
        return self.state()

    def advance(self, t_end: float, t_eval: np.ndarray | None = None) -> np.ndarray | None:
        """Integrate to absolute time t_end (s) under the held command (no state object built).

        With t_eval (ascending absolute times in (t, t_end]) the states x = (q, v) at those
        times are returned, len(t_eval) x (nq + nv), from the integrator's dense output.
        """
        if self.guards is None:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        if not t_end >= self.t:
            raise ValueError(f"{self.model.name}: dt must be >= 0 (t={self.t}, requested {t_end})")
        g = self.guards
        o = self.options
        if t_eval is None:
            te, xe = self._empty, self._empty2
        else:
            te = np.ascontiguousarray(t_eval, dtype=np.float64)
            xe = np.full((te.size, self.system.n), np.nan)
        self._eval_pos[0] = 0
        t, status, guard = run_robot(
            self.system.ctx, self.x, self.t, float(t_end), self._p,
            g.sigma, g.armed, g.pending, g.parked, self.system.reset, self._eps,
            o["rtol"], o["atol"], self._hstep, o["h_max"], 1e-12, self._violation, o["max_events"],
            self._max_steps(t_end - self.t), te, xe, self._eval_pos, self._stats)
        self.t = t
        if status == K.LIVENESS:
            raise LivenessError(guard, t, self.x)
        if status != K.OK:
            raise EssIntegrationError(f"{self.model.name}: {K.STATUS_TEXT[status]} at t={t:.6g}")
        return None if t_eval is None else xe

    def rollout(self, commands: list[JointCommand], period: float) -> np.ndarray:
        """Apply commands[k] during the k-th tick of `period` seconds, all in compiled code.

        The batch form of calling step(commands[k], period) in a loop (same result), for
        offline use and benchmarks. Returns the states x = (q, v) after each tick,
        len(commands) x (nq + nv); the plant ends at the last state.
        """
        if self.guards is None:
            raise RuntimeError(f"{self.model.name}: call reset() before rollout()")
        if not (np.isfinite(period) and period > 0):
            raise ValueError(f"{self.model.name}: period must be finite and > 0, got {period}")
        packed = np.stack([pack_command(c, self.model) for c in commands]) if commands else np.zeros((0, 0))
        out = np.empty((len(commands), self.system.n))
        g, o = self.guards, self.options
        t, status, guard, done = rollout_robot(
            self.system.ctx, self.x, self.t, float(period), packed, self._p, self._cmd, g.sigma, g.armed, g.pending,
            g.parked, self.system.reset, self._eps, o["rtol"], o["atol"], self._hstep, o["h_max"], 1e-12,
            self._violation, o["max_events"], self._max_steps(period), out, self._stats)
        self.t = t
        if status == K.LIVENESS:
            raise LivenessError(guard, t, self.x)
        if status != K.OK:
            raise EssIntegrationError(f"{self.model.name}: {K.STATUS_TEXT[status]} at t={t:.6g} (tick {done})")
        return out

    def state(self) -> PlantState:
        """The current PlantState (fresh arrays; the plant keeps its own)."""
        m = self.model
        force, tau, contact = np.empty((m.nc, 2)), np.empty(m.nu), np.empty(m.nc, np.bool_)
        fill_outputs(self.x, self.guards.sigma, self._p, self.system.ctx, force, tau, contact)
        return PlantState(self.t, self.x[:m.nq].copy(), self.x[m.nq:].copy(), contact, force, tau)

    def _max_steps(self, span: float) -> int:
        """Step budget of one kernel call: 1000 attempts per largest step, at least 10,000."""
        return int(min(1e9, max(1e4, 1000.0 * span / self.options["h_max"])))

    @property
    def stats(self) -> dict:
        """Cumulative integrator counters since construction."""
        return dict(zip(K.STAT_NAMES, self._stats.tolist()))
