"""MuJoCo as a plant: the peer users already trust, behind the same plant protocol.

    plant = MujocoPlant(get_robot("hopper"))          # or make_plant("mujoco", model)
    state = plant.reset(q0)
    state = plant.step(command, 0.01)

The model is the robot's own MJCF (`RobotModel.mjcf`, made from the same definition; tests
check MuJoCo's M and bias forces against ours), so MuJoCo's contacts are its own, soft: a 3D
robot's feet carry the compliant plants' stiffness (robots/urdf.py, `with_contact_springs`),
a planar robot's MuJoCo's defaults; friction from the model's `mu`. The joint impedance law of
the plant protocol is MuJoCo's own at every MuJoCo step (timestep 1 / plant_rate_hz): each
motor becomes an affine actuator, force = (tau_ff + kp q_des + kd v_des) - kp q - kd v, its
force limited to u_max, so a control period is one `mj_step(..., nstep)` call with no Python
between the steps. Contact flags and forces (normal, tangential along x;
N) come from MuJoCo's contacts of each foot's sphere with the floor. Planar robots: q and v
are MuJoCo's qpos and qvel (the MJCF's joints are the model's coordinates, in order). 3D
robots: MuJoCo's free joint stores the quaternion as (w, x, y, z) and the base's linear
velocity in the world frame; the plant converts to and from the model's (x, y, z, w) and
base-frame velocity (`robots.urdf.mujoco_state`), and reports per foot (normal, x, y) forces. The
invariants of sim/invariants.py are checked after every step, as on the other plants, with
MUJOCO_PENETRATION_LIMIT_M as the default limit (soft contacts sink on impact).

Measured (`LEGMPC_FUZZ_PLANTS=mujoco python -m launch bench plant-fuzz --full --json`): 10,000
examples, 0 fall-throughs, 0 exceptions, 0 violations, deepest gap 31 mm, 48 s. MuJoCo's soft
contacts are not strictly passive: in the fuzz's limp cases the mechanical energy grew by up to
4.9 % of the case's energy scale (ESS 1 %, NMDP and the hybrid plant none). The plate on
springs has no MJCF geoms for its spring contacts, so MuJoCo cannot run it (a clear error).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from robots.model import RobotModel
from robots.urdf import mujoco_state
from sim.invariants import Invariants, LatchedViolation
from sim.protocol import (JointCommand, PlantState, actuated_joints, actuated_positions, checked_dt, checked_reset,
                          pack_command)

# MuJoCo's default soft contact (solref 0.02 s, critically damped) lets a foot landing at v m/s
# sink about v x 7.5 ms before it holds (26 mm for the point mass dropped 1 m, 4.4 m/s): the
# stated limit covers landings up to ~6 m/s.
MUJOCO_PENETRATION_LIMIT_M = 0.05


@njit(cache=True)
def _elliptic_contacts(geom1, geom2, frames, efc_address, efc_force, floor, foot_of_geom, contact, force):
    """Contact flags and forces (nc x dim: normal, x (, y), N, the floor's force on the foot, world
    frame) of each foot from MuJoCo's contact list under elliptic cones, where a contact's force
    in its own frame is its first efc rows (what mj_contactForce copies)."""
    nc, dim = force.shape
    for i in range(nc):
        contact[i] = False
        for k in range(dim):
            force[i, k] = 0.0
    for k in range(geom1.shape[0]):
        if geom1[k] == floor:
            i, sign = foot_of_geom[geom2[k]], 1.0
        elif geom2[k] == floor:
            i, sign = foot_of_geom[geom1[k]], -1.0  # make it the floor's force on the foot
        else:
            continue
        adr = efc_address[k]
        if i < 0 or adr < 0:  # not a foot, or a contact MuJoCo excluded from the constraints
            continue
        contact[i] = True
        for axis, col in ((2, 0), (0, 1), (1, 2)):  # world z (normal), x, y
            if col < dim:
                w = 0.0
                for r in range(3):  # frame rows: normal, tangent 1, tangent 2; geom1's force on geom2
                    w += frames[k, 3 * r + axis] * efc_force[adr + r]
                force[i, col] += sign * w


@njit(cache=True)
def _model_state(qpos, qvel, q, v):
    """Our (q, v) from MuJoCo's free-joint (qpos, qvel), the inverse of `robots.urdf.mujoco_state`
    (the quaternion made unit: MuJoCo keeps it so to ~1e-16)."""
    q[:] = qpos
    v[:] = qvel
    w, x, y, z = qpos[3], qpos[4], qpos[5], qpos[6]
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    q[3], q[4], q[5], q[6] = x, y, z, w
    R = ((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
         (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
         (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))
    for r in range(3):  # R^T qvel[0:3]: the world-frame linear velocity in the base frame
        v[r] = R[0][r] * qvel[0] + R[1][r] * qvel[1] + R[2][r] * qvel[2]


@njit(cache=True)
def _load_command(packed, act, ctrl, biasprm):
    """The impedance law's actuators for a packed command (tau_ff, q_des, v_des, kp, kd; 5 nu):
    ctrl = tau_ff + kp q_des + kd v_des, bias -kp q - kd v (module docstring)."""
    nu = act.shape[0]
    for j in range(nu):
        a = act[j]
        kp, kd = packed[3 * nu + j], packed[4 * nu + j]
        ctrl[a] = packed[j] + kp * packed[nu + j] + kd * packed[2 * nu + j]
        biasprm[a, 1] = -kp
        biasprm[a, 2] = -kd


class MujocoPlant(LatchedViolation):
    """MuJoCo stepping a RobotModel's MJCF, planar or 3D (module docstring).

    Args:
        model: the robot. plant_rate_hz: MuJoCo's step rate (Hz). penetration_limit_m: deepest
        contact gap (m) before the state is flagged as a violation.
    """

    def __init__(self, model: RobotModel, *, plant_rate_hz: float = 1000.0,
                 penetration_limit_m: float = MUJOCO_PENETRATION_LIMIT_M) -> None:
        import mujoco

        if not model.mjcf:
            raise ValueError(f"{model.name}: the model has no MJCF, so MuJoCo cannot run it")
        if not (isinstance(plant_rate_hz, (int, float)) and math.isfinite(plant_rate_hz) and plant_rate_hz > 0):
            raise ValueError(f"MujocoPlant: plant_rate_hz must be a positive number, got {plant_rate_hz!r}")
        self._mj = mujoco
        self.model = model
        self.mj = mujoco.MjModel.from_xml_string(model.mjcf)
        if (self.mj.nq, self.mj.nv, self.mj.nu) != (model.nq, model.nv, model.nu):
            raise ValueError(f"{model.name}: the MJCF has nq, nv, nu = {self.mj.nq}, {self.mj.nv}, {self.mj.nu}; "
                             f"the model {model.nq}, {model.nv}, {model.nu}")
        self.h = 1.0 / float(plant_rate_hz)
        self.mj.opt.timestep = self.h
        self.data = mujoco.MjData(self.mj)
        self.joints = actuated_joints(model)  # into v (MuJoCo's qvel has the same layout)
        self.joints_q = actuated_positions(model)  # into q
        self.u_max = np.array(model.u_max, dtype=float)
        floor = mujoco.mj_name2id(self.mj, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        self._feet = []
        for c in model.contacts:
            gid = mujoco.mj_name2id(self.mj, mujoco.mjtObj.mjOBJ_GEOM, c.name)
            if gid < 0:
                raise ValueError(f"{model.name}: the MJCF has no geom {c.name!r} for contact {c.name!r}")
            self._feet.append(gid)
        self._floor = floor
        self._foot_of_geom = np.full(self.mj.ngeom, -1, dtype=np.int64)
        self._foot_of_geom[self._feet] = np.arange(len(self._feet))
        self._elliptic = self.mj.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
        self.invariants = Invariants(model, penetration_limit_m)
        self._impedance_actuators()
        self._tau = np.zeros(model.nu)
        self._ready = False

    def _impedance_actuators(self) -> None:
        """Turn the MJCF's motors into the impedance law's actuators (module docstring):
        self._act[j] is the actuator of the model's actuator j (matched by the joint it drives)."""
        mujoco, mj = self._mj, self.mj
        if mj.nu != self.model.nu:
            raise ValueError(f"{self.model.name}: the MJCF has {mj.nu} actuators, the model {self.model.nu}")
        dof_of = {int(mj.jnt_dofadr[mj.actuator_trnid[a, 0]]): a for a in range(mj.nu)}
        try:
            self._act = np.array([dof_of[int(j)] for j in self.joints], dtype=np.int64)
        except KeyError as err:
            raise ValueError(f"{self.model.name}: no MJCF actuator drives the model's joint at v index {err}") from None
        if np.any(mj.actuator_gear[self._act, 0] != 1.0):
            raise ValueError(f"{self.model.name}: the MJCF's motors must have gear 1 (the impedance law is per joint)")
        for j, a in enumerate(self._act):
            mj.actuator_gaintype[a] = mujoco.mjtGain.mjGAIN_FIXED
            mj.actuator_gainprm[a, :] = 0.0
            mj.actuator_gainprm[a, 0] = 1.0
            mj.actuator_biastype[a] = mujoco.mjtBias.mjBIAS_AFFINE
            mj.actuator_biasprm[a, :] = 0.0
            mj.actuator_ctrllimited[a] = 0
            mj.actuator_forcelimited[a] = 1
            mj.actuator_forcerange[a] = (-self.u_max[j], self.u_max[j])

    # ------------------------------------------------------------------ protocol
    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q in m/rad, v in m/s, rad/s) at time t (s); returns it."""
        q, v, t = checked_reset(self.model, q, v, t)
        self._mj.mj_resetData(self.mj, self.data)
        if self.model.floating_base:
            q, v = mujoco_state(q, v)
        self.data.qpos[:], self.data.qvel[:], self.data.time = q, v, t
        self._mj.mj_forward(self.mj, self.data)
        self._ready = True
        self._clear_violation()
        return self._checked(self.state())

    def step(self, command: JointCommand, dt: float) -> PlantState:
        """Advance dt seconds (MuJoCo steps of at most 1 / plant_rate_hz) holding `command`."""
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        dt = checked_dt(self.model, dt)
        packed = pack_command(command, self.model)  # fast path for well-formed commands; else ValueError
        if self.violation:
            return self._held_state()
        t_end = self.data.time + dt
        d, mj, act = self.data, self.mj, self._act
        _load_command(packed, act, d.ctrl, mj.actuator_biasprm)
        n = int((dt + 1e-12) / self.h)  # whole MuJoCo steps, then what is left of dt
        if n:
            self._mj.mj_step(mj, d, n)
        rest = t_end - d.time
        if rest > 1e-12:
            mj.opt.timestep = rest
            self._mj.mj_step(mj, d)
            mj.opt.timestep = self.h
        d.time = t_end  # no drift from the steps' rounding
        self._tau = d.actuator_force[act].copy()
        return self._checked(self.state())

    def state(self) -> PlantState:
        """The current PlantState: contact flags and forces of each foot, N: (normal, tangential
        along x) planar, (normal, x, y) in 3D."""
        d, nc, dim = self.data, self.model.nc, self.model.dim
        contact, force = np.zeros(nc, dtype=bool), np.zeros((nc, dim))
        f6 = np.zeros(6)
        if d.ncon and self._elliptic:  # one compiled pass over MuJoCo's contact list (3D robots)
            c = d.contact
            _elliptic_contacts(c.geom1, c.geom2, c.frame, c.efc_address, d.efc_force, self._floor,
                               self._foot_of_geom, contact, force)
        elif d.ncon:  # the contact list's fields as arrays: one Python object per contact is slow
            geom1, geom2, frames = d.contact.geom1.tolist(), d.contact.geom2.tolist(), d.contact.frame
            foot = self._foot_of_geom
            for k in range(d.ncon):
                g1, g2 = geom1[k], geom2[k]
                if g1 == self._floor:
                    i, sign = foot[g2], 1.0
                elif g2 == self._floor:
                    i, sign = foot[g1], -1.0  # make it the floor's force on the foot
                else:
                    continue
                if i < 0:
                    continue
                self._mj.mj_contactForce(self.mj, d, k, f6)
                world = sign * (frames[k].reshape(3, 3).T @ f6[:3])  # geom1's force on geom2, world frame
                contact[i] = True
                force[i] += (world[2], world[0], world[1])[:dim]
        if self.model.floating_base:  # MuJoCo's (w, x, y, z) and world-frame base velocity -> the model's
            q, v = np.empty(self.model.nq), np.empty(self.model.nv)
            _model_state(d.qpos, d.qvel, q, v)
        else:
            q, v = d.qpos.copy(), d.qvel.copy()
        return PlantState(float(d.time), q, v, contact, force, self._tau.copy(), self.violation)
