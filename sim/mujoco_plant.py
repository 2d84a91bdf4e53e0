"""MuJoCo as a plant: the peer users already trust, behind the same plant protocol.

    plant = MujocoPlant(get_robot("hopper"))          # or make_plant("mujoco", model)
    state = plant.reset(q0)
    state = plant.step(command, 0.01)

The model is the robot's own MJCF (`RobotModel.mjcf`, made from the same definition; tests check
MuJoCo's M and bias forces against ours), so MuJoCo's contacts are its own, soft: a 3D robot's feet
carry the compliant plants' stiffness (robots/urdf.py, `with_contact_springs`), a planar robot's
MuJoCo's defaults; friction from the model's `mu`. The joint impedance law of the plant protocol is
MuJoCo's own at every MuJoCo step (timestep 1 / plant_rate_hz): each motor becomes an affine
actuator, force = (tau_ff + kp q_des + kd v_des) - kp q - kd v, its force limited to u_max, so a
control period has no Python between the steps. Contact flags and forces (normal, tangential along
x; N) come from a MuJoCo contact sensor per foot (`with_foot_sensors`: the net force of the foot's
contacts with the floor), so that a step reads one array MuJoCo fills instead of walking its
contact list; a test checks them against `mj_contactForce` over that list. A control period is one
compiled call (`_advance`): it loads the command into the actuators, calls MuJoCo's C `mj_step` by
its address (the bindings' `_address` of the model and data, MuJoCo's buffers viewed by theirs) and
reads the outputs and checks the invariants; a test checks it bit for bit against the bindings'
`mj_step`. Planar robots: q and v are MuJoCo's qpos and qvel (the MJCF's joints are the model's
coordinates, in order). 3D robots: MuJoCo's free joint stores the quaternion as (w, x, y, z) and
the base's linear velocity in the world frame; the plant converts to and from the model's (x, y, z,
w) and base-frame velocity (`robots.urdf.mujoco_state`), and reports per foot (normal, x, y)
forces. The invariants of sim/invariants.py are checked after every step, as on the other plants,
with MUJOCO_PENETRATION_LIMIT_M as the default limit (soft contacts sink on impact).

Measured (`LEGMPC_FUZZ_PLANTS=mujoco python -m launch bench plant-fuzz --full --json`): 10,000
examples, 0 fall-throughs, 0 exceptions, 0 violations, deepest gap 31 mm, 48 s. MuJoCo's soft
contacts are not strictly passive: in the fuzz's limp cases the mechanical energy grew by up to
4.9 % of the case's energy scale (ESS 1 %, NMDP and the hybrid plant none). The plate on
springs has no MJCF geoms for its spring contacts, so MuJoCo cannot run it (a clear error).
"""
from __future__ import annotations

import math

import numpy as np
from numba import carray, njit
from numba import types as nbt

from robots import ccall
from robots.model import RobotModel
from robots.urdf import mujoco_state
from sim import command_check, invariants as _invariants
from sim.command_check import fields_ok
from sim.invariants import Invariants, LatchedViolation, _first_failure
from sim.protocol import JointCommand, PlantState, actuated_joints, checked_dt, checked_reset, pack_command

# MuJoCo's default soft contact (solref 0.02 s, critically damped) lets a foot landing at v m/s
# sink about v x 7.5 ms before it holds (26 mm for the point mass dropped 1 m, 4.4 m/s): the
# stated limit covers landings up to ~6 m/s.
MUJOCO_PENETRATION_LIMIT_M = 0.05


def with_foot_sensors(mjcf: str, feet: list[str]) -> str:
    """`mjcf` with one MuJoCo contact sensor per foot geom: the number of its contacts with the
    floor and their net force (the foot's force on the floor, world frame, N), 4 values a foot
    in `sensordata`, so that a step's forces are one array MuJoCo fills, not its contact list."""
    sensors = "".join(f'<contact geom1="{foot}" geom2="floor" data="found force" reduce="netforce"/>' for foot in feet)
    head, tail = mjcf.rsplit("</mujoco>", 1)
    return f"{head}  <sensor>{sensors}</sensor>\n</mujoco>{tail}"


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
def _read_state(qpos, qvel, sensordata, actuator_force, act, q, v, contact, force, tau,
                heights_address, heights, nc, lowest, floating):
    """The plant's outputs from MuJoCo's data: (q, v) (`_model_state` for a floating base, else
    MuJoCo's own), each foot's contact flag and force (nc x dim: normal, x (, y), N, the floor's
    on the foot) from its sensor (`with_foot_sensors`), and the actuators' torques tau (N m).
    Returns the invariants' `_first_failure` at (q, v); heights_address to floating are
    `Invariants.compiled_args` (nc: the number of feet, force's rows)."""
    if floating:
        _model_state(qpos, qvel, q, v)
    else:
        q[:] = qpos
        v[:] = qvel
    dim = force.shape[1]
    for i in range(nc):
        contact[i] = sensordata[4 * i] > 0.0
        force[i, 0] = -sensordata[4 * i + 3]  # world z: the normal
        force[i, 1] = -sensordata[4 * i + 1]
        if dim > 2:
            force[i, 2] = -sensordata[4 * i + 2]
    for j in range(act.shape[0]):
        tau[j] = actuator_force[act[j]]
    return _first_failure(q, v, heights_address, heights, nc, lowest, floating)


@njit(cache=True)
def _load_command(tau_ff, q_des, v_des, kp, kd, act, ctrl, biasprm):
    """Load a command into the impedance law's actuators: ctrl = tau_ff + kp q_des + kd v_des,
    bias -kp q - kd v (module docstring). False, with nothing loaded, unless every field has
    length nu and is finite and the gains are >= 0 (`fields_ok`)."""
    nu = act.shape[0]
    if not fields_ok(tau_ff, q_des, v_des, kp, kd, nu):
        return False
    for j in range(nu):
        a = act[j]
        ctrl[a] = tau_ff[j] + kp[j] * q_des[j] + kd[j] * v_des[j]
        biasprm[a, 1] = -kp[j]
        biasprm[a, 2] = -kd[j]
    return True


BAD_COMMAND = -1  # `_advance`'s answer for a command that fails `_load_command`'s check
# `_advance`'s calls: addresses of mj_step, the mjModel and mjData, and of MuJoCo's buffers it
# reads and writes (fixed for the data's life), and the invariants' heights function
C_STEP, C_MODEL, C_DATA, C_QPOS, C_QVEL, C_SENSOR, C_ACT_FORCE, C_CTRL, C_BIASPRM, C_HEIGHTS = range(10)
_FIELD = nbt.Array(nbt.float64, 1, "C", readonly=True)  # writable arrays match too; the bridge's are read-only
_VEC = nbt.float64[::1]


@njit(nbt.int64(_FIELD, _FIELD, _FIELD, _FIELD, _FIELD, nbt.int64[::1], nbt.int64[::1], nbt.int64,
                _VEC, _VEC, nbt.boolean[::1], nbt.float64[:, ::1], _VEC, _VEC, nbt.float64, nbt.boolean), cache=True)
def _advance(tau_ff, q_des, v_des, kp, kd, act, calls, nstep, q, v, contact, force, tau, heights, lowest, floating):
    """A control period in one compiled call: load the command (`_load_command`), take nstep
    MuJoCo steps (mj_step called by address) and read the outputs into q to tau (`_read_state`;
    heights, lowest, floating and calls[C_HEIGHTS] as in `Invariants.compiled_args`). MuJoCo's
    buffers are views made from their addresses in `calls` (layout: C_STEP ...), which keeps this
    call's dispatch to 16 arguments. Returns BAD_COMMAND, with nothing loaded or stepped, for a
    command that fails the check, else the invariants' `_first_failure` after the steps. The
    signature refuses anything but C-contiguous float64 command vectors, writable or not
    (TypeError), so a bad command costs no compilation and takes `pack_command`'s checks."""
    nq, nv, nc, nu = q.shape[0], v.shape[0], contact.shape[0], tau.shape[0]  # MuJoCo's nu: `_impedance_actuators`
    ctrl = carray(ccall.f64_pointer(calls[C_CTRL]), nu)
    biasprm = carray(ccall.f64_pointer(calls[C_BIASPRM]), (nu, 10))  # mjNBIAS
    if not _load_command(tau_ff, q_des, v_des, kp, kd, act, ctrl, biasprm):
        return BAD_COMMAND
    for _ in range(nstep):
        ccall.call_flat(calls[C_STEP], calls[C_MODEL], calls[C_DATA])
    return _read_state(carray(ccall.f64_pointer(calls[C_QPOS]), nq), carray(ccall.f64_pointer(calls[C_QVEL]), nv),
                       carray(ccall.f64_pointer(calls[C_SENSOR]), 4 * nc),
                       carray(ccall.f64_pointer(calls[C_ACT_FORCE]), nu), act, q, v, contact, force, tau,
                       calls[C_HEIGHTS], heights, nc, lowest, floating)


def _mj_step_address(mujoco) -> int:
    """The address of the C function mj_step in the MuJoCo library the `mujoco` package loaded."""
    import ctypes
    from pathlib import Path

    found = sorted(Path(mujoco.__file__).parent.glob("libmujoco.so*")) + sorted(
        Path(mujoco.__file__).parent.glob("libmujoco*.dylib"))
    if not found:
        raise RuntimeError(f"MujocoPlant: no libmujoco shared library beside {mujoco.__file__}; the plant calls "
                           f"mj_step from compiled code and needs the MuJoCo wheel's library")
    return ctypes.cast(ctypes.CDLL(str(found[0])).mj_step, ctypes.c_void_p).value


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
        feet = [c.name for c in model.contacts]
        try:
            self.mj = mujoco.MjModel.from_xml_string(with_foot_sensors(model.mjcf, feet))
        except ValueError as err:
            raise ValueError(f"{model.name}: MuJoCo cannot load the MJCF with a contact sensor between the floor and "
                             f"each contact's geom {feet} (the MJCF needs a geom named 'floor' and one per contact, "
                             f"named as the contact): {'; '.join(str(err).splitlines())}") from None
        if (self.mj.nq, self.mj.nv, self.mj.nu) != (model.nq, model.nv, model.nu):
            raise ValueError(f"{model.name}: the MJCF has nq, nv, nu = {self.mj.nq}, {self.mj.nv}, {self.mj.nu}; "
                             f"the model {model.nq}, {model.nv}, {model.nu}")
        self.h = 1.0 / float(plant_rate_hz)
        self.mj.opt.timestep = self.h
        self.data = mujoco.MjData(self.mj)
        self.joints = actuated_joints(model)  # into v (MuJoCo's qvel has the same layout)
        self.u_max = np.array(model.u_max, dtype=float)
        self.invariants = Invariants(model, penetration_limit_m)
        self._check_args = self.invariants.compiled_args
        self._impedance_actuators()
        d = self.data
        self._actuators = (self._act, d.ctrl, self.mj.actuator_biasprm)  # `_load_command`'s last arguments
        heights_address, heights, _, lowest, floating = self._check_args
        buffers = (d.qpos, d.qvel, d.sensordata, d.actuator_force, d.ctrl, self.mj.actuator_biasprm)
        if self.mj.nsensordata != 4 * model.nc:
            raise ValueError(f"{model.name}: the MJCF has sensors of its own ({self.mj.nsensordata - 4 * model.nc} "
                             f"values); the plant reads sensordata as its foot sensors alone: remove them")
        if self.mj.actuator_biasprm.shape != (model.nu, 10) or not all(b.flags.c_contiguous for b in buffers):
            raise RuntimeError(f"MujocoPlant: MuJoCo {mujoco.__version__}'s buffers are not laid out as this plant "
                               f"reads them (actuator_biasprm {self.mj.actuator_biasprm.shape}, expected (nu, 10))")
        # `_advance`'s calls (C_STEP ...); `_address` is MuJoCo's mjModel* and mjData*
        self._calls = np.array([_mj_step_address(mujoco), self.mj._address, d._address]
                               + [b.ctypes.data for b in buffers] + [heights_address], dtype=np.int64)
        self._advance_tail = (heights, lowest, floating)
        self._views = (d.qpos, d.qvel, d.sensordata, d.actuator_force)  # MuJoCo's buffers: fixed for d's life
        self._sizes = (model.nq, model.nv, model.nu, model.nc, model.dim)
        self._mj_step = mujoco.mj_step
        self._t = 0.0  # s, the plant's time (MuJoCo's d.time advances by its own steps; reading it costs a binding call)
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
        zero = np.zeros(self.model.nu)
        _load_command(zero, zero, zero, zero, zero, *self._actuators)  # no command yet: the actuators apply nothing
        if self.model.floating_base:
            q, v = mujoco_state(q, v)
        self.data.qpos[:], self.data.qvel[:], self.data.time = q, v, t
        self._t = t
        self._mj.mj_forward(self.mj, self.data)
        self._ready = True
        self._clear_violation()
        return self._checked(*self._state())

    def step(self, command: JointCommand, dt: float) -> PlantState:
        """Advance dt seconds (MuJoCo steps of at most 1 / plant_rate_hz) holding `command`."""
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        if not (type(dt) is float and 0.0 <= dt < math.inf):
            dt = checked_dt(self.model, dt)
        if self.violation:  # the physics failed earlier: hold the last good state until reset
            pack_command(command, self.model)  # a bad command still raises ValueError
            return self._held_state()
        h = self.h
        n = int((dt + 1e-12) / h)  # whole MuJoCo steps, then what is left of dt
        rest = dt - n * h
        nq, nv, nu, nc, dim = self._sizes
        q, v, tau = np.empty(nq), np.empty(nv), np.empty(nu)
        contact, force = np.empty(nc, dtype=np.bool_), np.empty((nc, dim))
        act, calls, tail = self._act, self._calls, self._advance_tail
        try:  # fast path: a well-formed command goes straight into the actuators
            failure = _advance(command.tau_ff, command.q_des, command.v_des, command.kp, command.kd, act, calls, n,
                               q, v, contact, force, tau, *tail)
        except (TypeError, AttributeError):
            failure = BAD_COMMAND
        if failure == BAD_COMMAND:
            packed = pack_command(command, self.model)  # ValueError names a bad field; fills missing ones
            failure = _advance(*(packed[k * nu:(k + 1) * nu] for k in range(5)), act, calls, n,
                               q, v, contact, force, tau, *tail)
        self._t += dt
        if rest > 1e-12:  # a last, shorter MuJoCo step (dt not a multiple of 1 / plant_rate_hz)
            mj, d = self.mj, self.data
            mj.opt.timestep = rest
            self._mj_step(mj, d)
            mj.opt.timestep = h
            d.time = self._t  # no drift from the steps' rounding
            return self._checked(*self._state())
        return self._checked(PlantState(self._t, q, v, contact, force, tau, ""), failure)

    def state(self) -> PlantState:
        """The current PlantState: contact flags and forces of each foot, N: (normal, tangential
        along x) planar, (normal, x, y) in 3D; tau the actuators' torques of the last step, N m."""
        return self._state()[0]

    def _state(self) -> tuple[PlantState, int]:
        """(state, failure): `state()` and the invariants' answer for it, as `_checked` takes them."""
        nq, nv, nu, nc, dim = self._sizes
        q, v, tau = np.empty(nq), np.empty(nv), np.empty(nu)
        contact, force = np.empty(nc, dtype=np.bool_), np.empty((nc, dim))
        failure = _read_state(*self._views, self._act, q, v, contact, force, tau, *self._check_args)
        return PlantState(self._t, q, v, contact, force, tau, self.violation), failure


# numba tracks this file only; the invariants' check (and ccall, which it inlines) and the command's check are
# inlined into the compiled step
ccall.drop_stale_cache(_read_state, "mujoco_plant.", [_invariants.__file__, ccall.__file__, command_check.__file__])
