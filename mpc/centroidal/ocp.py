"""The contact-implicit OCP of a 3D robot's single rigid body, as a pure description.

Same interface as `mpc.wholebody.ocp.ContactOcp` (x, u, x_next, comp, step, residuals, pairs,
u_lb/u_ub, n_comp, options), so the acados RTI solver and the IPOPT oracle of the planar
robots solve it unchanged. It adds soft inequalities (`ineq`, bounds `ineq_lb`/`ineq_ub`; with
the complementarity residuals they make `h`, `h_lb`, `h_ub`, what the solvers soften) and cost
features (`cost_x`, `cost_u`).

Stage lengths. With `stage_dts` (s, one per stage) the stages may differ in length (fine first
stages, coarser later ones: a long horizon for the same number of stages). The expressions then
depend on a symbol `dt_param` (the stage's length), which the solvers set per stage; without
it every stage is `options.dt` long and the expressions are numeric in it.

Variables of stage k (h = its length, s)
    x = (c, theta, vc, wb, p_1..p_nc)          24 for four feet
        c      CoM position, world, m;  theta = (roll, pitch, yaw), ZYX Euler angles, rad
        vc     CoM velocity, world, m/s; wb = angular velocity in the body frame, rad/s
        p_i    foot i's contact point, world, m
    u = (vf_1..vf_nc, lambda_1..lambda_nc)     28 for four feet
        vf_i       foot i's velocity over the stage in the heading frame (the world turned by
                   the stage's yaw), m/s
        lambda_i   4 weights >= 0 (units of m g) on the edges of foot i's friction pyramid,
                   whose axes are the heading frame's: f_i = m g Rz(yaw) (mu (l1 - l2),
                   mu (l3 - l4), l1 + l2 + l3 + l4); |fx|, |fy| <= mu fz holds by the bounds
Dynamics (semi-implicit Euler, forces held over the stage):
    vc+ = vc + h (sum f_i / m + g),       c+ = c + h vc+
    wb+ = wb + h I^-1 (sum (R^T (p_i - c)) x (R^T f_i) - wb x I wb),  theta+ = theta + h E(theta)^-1 wb+
    p_i+ = p_i + h Rz(yaw) vf_i
Contact (no schedule: the optimizer decides which foot carries weight when). The ground is
rigid in the plan: a foot carries load only at height 0 (the measured feet of a compliant
plant, a millimetre or two below it under load, are read as on it: `wholebody.srb_state`).
    0 <= a_i = p_i,z+  _|_  fz_i >= 0      smoothed Fischer-Burmeister (m x weights), as planar
Soft inequalities (L1 + L2 penalised slacks, like the complementarity residual):
    |vf_i,x|, |vf_i,y| <= lift_speed g_i     a foot slides only as fast as it is lifted, in the
                                             heading frame: a loaded foot (g_i ~ 0) sticks, a
                                             moving one clears the ground. Linear in (x, u):
                                             unlike the product fz_i |vf_i| = 0, its
                                             linearization at a resting unloaded foot is never
                                             empty. g_i is the foot's height at the stage's end
                                             (a_i) on a stage of the control period dt0, and
                                             (h - dt0) / 2 before the end on a longer one
                                             (alpha p_i,z + (1 - alpha) a_i, alpha = (1 - dt0 / h) / 2),
                                             so that a coarse stage lets a landing or lifting
                                             foot move as fine stages would over the same time.
    R^T (p_i+ - c+) - p_i,nominal in [reach_lo, reach_hi]   (each foot's reach box, body frame)
    fz_i <= srb.fz_max_i                     what the leg's motors can push (weights; go1 2.5)
Bounds: |vf_i| <= the foot speed box (heading frame), 0 <= lambda <= FORCE_MAX.
Everything is invariant under moving and turning the scene about z (test).

Robot-scaled constants (`ContactScales.of(srb)`): with h0 the standing CoM height and g gravity,
the foot speed box is (1.55, 1.55, 0.93) sqrt(g h0) (a Froude number; go1: 2.5, 2.5, 1.5 m/s)
and lift_speed 16.5 sqrt(g / h0) (go1: 100 1/s: a foot lifted 1 cm may move sideways at 1 m/s).

Cost features (translation- and yaw-invariant, so one reference serves any heading):
    cost_x = (c_z, roll, pitch, Rz(yaw)^T vc, wb, Rz(yaw)^T (p_i - c))
    cost_u = (vf_i, lambda_i)          (already in the heading frame)
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..problem import OcpOptions, fischer_burmeister
from .srb import SingleRigidBody

# where the cost features (`CentroidalOcp.cost_x`, module docstring) hold the CoM height, the
# heading-frame velocity (x, y), the yaw rate and the first foot offset
FEATURE_HEIGHT, FEATURE_VX, FEATURE_VY, FEATURE_YAW_RATE, FEATURE_FEET = 0, 3, 4, 8, 9
# the complementarity pairs (a, b) of each foot, kind-major as in `CentroidalOcp.pairs`:
# a in m or m/s, b in weights (m g)
PAIR_NAMES = ("gap * fz", "|foot velocity xy| * fz (slip)")
FOOT_SPEED_FROUDE = np.array([1.55, 1.55, 0.93])  # x sqrt(g h0): a swinging foot's speed box (go1: 2.5, 2.5, 1.5 m/s)
LIFT_FROUDE = 16.5  # x sqrt(g / h0): the lift rule's speed per metre of gap (go1: 100 1/s)
FORCE_MAX = 0.75  # weights: the largest pyramid edge weight (a foot carries at most 3 m g)


@dataclass(frozen=True)
class ContactScales:
    """The contact logic's robot-scaled constants (module docstring): foot speed box (m/s, x, y, z
    in the heading frame) and lift speed (1/s)."""

    foot_speed_max: np.ndarray
    lift_speed: float

    @classmethod
    def of(cls, srb: SingleRigidBody) -> "ContactScales":
        """The constants of a body, from its standing height and gravity."""
        v, w = np.sqrt(srb.gravity * srb.height), np.sqrt(srb.gravity / srb.height)
        return cls(FOOT_SPEED_FROUDE * v, float(LIFT_FROUDE * w))


def rot_x(a):
    """Rotation about x by a (rad), CasADi."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(1, 0, 0), ca.horzcat(0, c, -s), ca.horzcat(0, s, c))


def rot_y(a):
    """Rotation about y by a (rad), CasADi."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(c, 0, s), ca.horzcat(0, 1, 0), ca.horzcat(-s, 0, c))


def rot_z(a):
    """Rotation about z by a (rad), CasADi."""
    c, s = ca.cos(a), ca.sin(a)
    return ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1))


def euler_to_rot(theta):
    """R = Rz(yaw) Ry(pitch) Rx(roll) of theta = (roll, pitch, yaw), rad."""
    return rot_z(theta[2]) @ rot_y(theta[1]) @ rot_x(theta[0])


def euler_rates(theta, wb):
    """d theta / dt (rad/s) of ZYX Euler angles for the body-frame angular velocity wb."""
    r, p = theta[0], theta[1]
    sr, cr, tp, cp = ca.sin(r), ca.cos(r), ca.tan(p), ca.cos(p)
    return ca.vertcat(wb[0] + sr * tp * wb[1] + cr * tp * wb[2], cr * wb[1] - sr * wb[2], (sr * wb[1] + cr * wb[2]) / cp)


@dataclass(frozen=True)
class SrbLayout:
    """Index helpers for x and u of a robot with nc feet."""

    nc: int

    @property
    def nx(self) -> int:
        """State size."""
        return 12 + 3 * self.nc

    @property
    def nu(self) -> int:
        """Control size."""
        return 7 * self.nc

    def foot(self, i: int) -> slice:
        """Slice of x holding foot i's position."""
        return slice(12 + 3 * i, 15 + 3 * i)

    def foot_velocity(self, i: int) -> slice:
        """Slice of u holding foot i's velocity."""
        return slice(3 * i, 3 * i + 3)

    def edges(self, i: int) -> slice:
        """Slice of u holding foot i's four pyramid edge weights."""
        return slice(3 * self.nc + 4 * i, 3 * self.nc + 4 * i + 4)


class CentroidalOcp:
    """Symbolic pieces of the single-rigid-body contact-implicit OCP (module docstring).

    stage_dts: per-stage lengths (s); None: every stage is options.dt long. With stage_dts,
    options.n_stages must equal its length and options.dt its first entry (the stage a tick
    executes)."""

    def __init__(self, srb: SingleRigidBody, options: OcpOptions = OcpOptions(), stage_dts=None):
        options.validate()
        if stage_dts is not None:
            stage_dts = np.asarray(stage_dts, dtype=float)
            if (stage_dts.ndim != 1 or len(stage_dts) != options.n_stages or not np.all(np.isfinite(stage_dts))
                    or np.any(stage_dts <= 0) or stage_dts[0] != options.dt):
                raise ValueError(f"stage_dts must be {options.n_stages} stage lengths > 0 s starting with dt = "
                                 f"{options.dt}, got {stage_dts}")
            if np.all(stage_dts == options.dt):
                stage_dts = None  # uniform after all
        self.srb, self.options = srb, options
        self.stage_dts = stage_dts
        self.model = srb  # what the shared solvers read a name from
        self.scales = scales = ContactScales.of(srb)
        nc = srb.nc
        lay = self.layout = SrbLayout(nc)
        self.nx, self.nu, self.nc, self.n_tau = lay.nx, lay.nu, nc, 0
        self.weight = srb.weight
        x, u = ca.SX.sym("x", lay.nx), ca.SX.sym("u", lay.nu)
        h = ca.SX.sym("dt")
        c, th, vc, wb = x[0:3], x[3:6], x[6:9], x[9:12]
        Rz = rot_z(th[2])
        feet = [x[lay.foot(i)] for i in range(nc)]
        vh = [u[lay.foot_velocity(i)] for i in range(nc)]  # heading frame
        vfs = [Rz @ v for v in vh]  # world
        forces, fzs = [], []
        for i in range(nc):
            lam = u[lay.edges(i)]
            mu = float(srb.mu[i])
            fz = lam[0] + lam[1] + lam[2] + lam[3]
            fzs.append(fz)
            forces.append(srb.weight * (Rz @ ca.vertcat(mu * (lam[0] - lam[1]), mu * (lam[2] - lam[3]), fz)))
        R = euler_to_rot(th)
        inertia = ca.DM(srb.inertia)
        g = ca.DM([0.0, 0.0, -srb.gravity])
        vc1 = vc + h * (sum(forces, ca.DM.zeros(3)) / srb.mass + g)
        c1 = c + h * vc1
        torque = sum((ca.cross(R.T @ (p - c), R.T @ f) for p, f in zip(feet, forces)), ca.DM.zeros(3))
        wb1 = wb + h * ca.solve(inertia, torque - ca.cross(wb, inertia @ wb))
        th1 = th + h * euler_rates(th, wb1)
        feet1 = [p + h * v for p, v in zip(feet, vfs)]
        x_next = ca.vertcat(c1, th1, vc1, wb1, *feet1)
        R1 = euler_to_rot(th1)
        a = ca.vertcat(*[feet1[i][2] for i in range(nc)])
        b = ca.vertcat(*fzs)
        speed = ca.vertcat(*[ca.sqrt(vh[i][0] ** 2 + vh[i][1] ** 2 + 1e-12) for i in range(nc)])
        comp = fischer_burmeister(a, b, options.sigma)
        self.n_comp = nc
        reach = ca.vertcat(*[R1.T @ (feet1[i] - c1) - srb.feet_nominal[i] for i in range(nc)])
        # |vf_i,x|, |vf_i,y| <= lift_speed a_i (heading frame): a foot moves sideways only as high
        # as it is lifted (a loaded foot's a_i is sigma / fz, ~0: it sticks); linear, never degenerate
        # on a stage longer than the control period dt0 the rule holds at (h - dt0) / 2 before its
        # end (the midpoint of what is left after one fine stage): a coarse stage's foot may move
        # while it lands or lifts, as it would over the same time in fine stages
        lift, alpha = scales.lift_speed, 0.5 * (1.0 - options.dt / h)
        g_rule = [alpha * feet[i][2] + (1.0 - alpha) * a[i] for i in range(nc)]
        slide = ca.vertcat(*[vh[i][k] + s * lift * g_rule[i] for s in (1.0, -1.0) for i in range(nc) for k in range(2)])
        ineq = ca.vertcat(reach, slide, b)
        self.ineq_lb = np.concatenate([srb.reach_lo.ravel(), np.zeros(2 * nc), np.full(2 * nc, -1e3),
                                       np.full(nc, -1e3)])
        self.ineq_ub = np.concatenate([srb.reach_hi.ravel(), np.full(2 * nc, 1e3), np.zeros(2 * nc),
                                       np.minimum(srb.fz_max, 4 * FORCE_MAX)])
        h_all = ca.vertcat(comp, ineq)
        self.h_lb = np.concatenate([np.zeros(self.n_comp), self.ineq_lb])
        self.h_ub = np.concatenate([np.zeros(self.n_comp), self.ineq_ub])
        # the stage-length-dependent expressions: symbolic in dt_param (varying stages) or
        # numeric at options.dt
        self.dt_param = h if stage_dts is not None else None
        self.step_dt = ca.Function("step_dt", [x, u, h], [x_next], ["x", "u", "dt"], ["x_next"])
        self.soft_dt = ca.Function("soft_dt", [x, u, h], [h_all], ["x", "u", "dt"], ["h"])
        dt0 = options.dt
        fix = (lambda e: e) if stage_dts is not None else (lambda e: ca.substitute(e, h, dt0))
        self.x_next, self.comp, self.ineq, self.h = fix(x_next), fix(comp), fix(ineq), fix(h_all)
        Rzt = Rz.T
        self.cost_x = ca.vertcat(c[2], th[0], th[1], Rzt @ vc, wb, *[Rzt @ (p - c) for p in feet])
        self.cost_u = u
        self.x, self.u = x, u
        # numeric Functions at the first stage's length (the stage a tick executes)
        at0 = lambda e: ca.substitute(e, h, dt0)  # noqa: E731
        self.step = ca.Function("step", [x, u], [at0(x_next)], ["x", "u"], ["x_next"])
        self.residuals = ca.Function("residuals", [x, u], [at0(h_all)], ["x", "u"], ["h"])
        self.pairs = ca.Function("pairs", [x, u], [at0(ca.vertcat(a, speed)), ca.vertcat(b, b)], ["x", "u"], ["a", "b"])
        self.features = ca.Function("features", [x, u], [self.cost_x, self.cost_u], ["x", "u"], ["yx", "yu"])
        self.forces = ca.Function("forces", [x, u], [ca.horzcat(*forces).T], ["x", "u"], ["f"])  # nc x 3, N, world
        self.u_lb = np.zeros(lay.nu)
        self.u_lb[: 3 * nc] = -np.tile(scales.foot_speed_max, nc)
        self.u_ub = np.full(lay.nu, FORCE_MAX)
        self.u_ub[: 3 * nc] = np.tile(scales.foot_speed_max, nc)

    def soft_scale(self, lift_price: float) -> np.ndarray:
        """Penalty factors of the softened constraints `h` (complementarity, reach, lift rule, leg
        force): 1, 1, lift_price, 1."""
        nc = self.nc
        return np.concatenate([np.ones(nc + 3 * nc), np.full(4 * nc, float(lift_price)), np.ones(nc)])

    @property
    def horizon_s(self) -> float:
        """The horizon's length, s."""
        if self.stage_dts is not None:
            return float(np.sum(self.stage_dts))
        return self.options.n_stages * self.options.dt

    def stage_lengths(self) -> np.ndarray:
        """Every stage's length (s), (n_stages,)."""
        if self.stage_dts is not None:
            return self.stage_dts.copy()
        return np.full(self.options.n_stages, self.options.dt)

    def normal_forces(self, u: np.ndarray) -> np.ndarray:
        """Normal forces fz (N) from control vector(s) u (..., nu) -> (..., nc)."""
        u = np.asarray(u)
        lam = u[..., 3 * self.nc:].reshape(*u.shape[:-1], self.nc, 4)
        return self.weight * lam.sum(axis=-1)

    def state_from(self, c, theta, vc, wb, feet) -> np.ndarray:
        """x from its parts (feet: nc x 3)."""
        return np.concatenate([c, theta, vc, wb, np.ravel(feet)])

    def standing_state(self, yaw: float = 0.0) -> np.ndarray:
        """The nominal stance at the origin: CoM at its standing height over the feet."""
        srb = self.srb
        c = np.array([0.0, 0.0, srb.height])
        Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
        feet = c + srb.feet_nominal @ Rz.T
        feet[:, 2] = 0.0
        return self.state_from(c, [0, 0, yaw], np.zeros(3), np.zeros(3), feet)

    def standing_control(self) -> np.ndarray:
        """Feet still, the weight shared equally (each edge 1 / (4 nc) weights)."""
        u = np.zeros(self.nu)
        u[3 * self.nc:] = 1.0 / (4 * self.nc)
        return u
