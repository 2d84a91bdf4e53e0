"""`run.mcap` of a run folder: the run's logs as an MCAP file that Foxglove opens.

    python -m launch mcap RUN_DIR          (launch run and make demo write it after every run)

Written after the loop from the run folder's files (trajectory.npz, plant_ticks.csv,
controller_ticks.csv), never inside it. JSON messages with JSON schemas, one message per tick
on each channel, logged at the plant's wall clock of that tick (plant_ticks.csv `wall_ns`; the
simulated time is in every message as `t`):

- `/tf` (foxglove.FrameTransforms): the pose of every body of the robot in the frame `world`
  (planar robots: x, z and the pitch about y; 3D robots: each joint frame's position and
  orientation), so Foxglove's 3D panel shows the robot's frames;
- `/joint_states`: names, positions (m or rad), velocities, applied efforts (N or N m);
- `/contacts`: per contact its flag and its normal and tangential forces (N; 3D robots: the
  tangential force along world x, and along y in `tangential_y_N`);
- `/timing`: the tick's command latency and jitter (us), status and miss flag, and the
  controller's tick and solve times (ms).
The `mcap` package writes it; the same package reads it back (tests/test_mcap_log.py).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from .runfolder import read_csv, run_robot

_VEC3 = {"type": "object", "properties": {k: {"type": "number"} for k in "xyz"}}
_QUAT = {"type": "object", "properties": {k: {"type": "number"} for k in "xyzw"}}
_TIME = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}}
_NUMBERS = {"type": "array", "items": {"type": "number"}}
_NAMES = {"type": "array", "items": {"type": "string"}}
SCHEMAS = {
    "/tf": ("foxglove.FrameTransforms", {
        "type": "object", "properties": {"transforms": {"type": "array", "items": {
            "type": "object", "properties": {"timestamp": _TIME, "parent_frame_id": {"type": "string"},
                                             "child_frame_id": {"type": "string"}, "translation": _VEC3,
                                             "rotation": _QUAT}}}}}),
    "/joint_states": ("legmpc.JointStates", {
        "type": "object", "properties": {"t": {"type": "number"}, "name": _NAMES, "position": _NUMBERS,
                                         "velocity": _NUMBERS, "effort": _NUMBERS}}),
    "/contacts": ("legmpc.Contacts", {
        "type": "object", "properties": {"t": {"type": "number"}, "name": _NAMES,
                                         "in_contact": {"type": "array", "items": {"type": "boolean"}},
                                         "normal_N": _NUMBERS, "tangential_N": _NUMBERS,
                                         "tangential_y_N": _NUMBERS}}),
    "/timing": ("legmpc.Timing", {
        "type": "object", "properties": {"tick": {"type": "integer"}, "t": {"type": "number"},
                                         "latency_us": {"type": "number"}, "jitter_us": {"type": "number"},
                                         "status": {"type": "string"}, "missed": {"type": "boolean"},
                                         "controller_tick_ms": {"type": "number"},
                                         "solve_ms": {"type": "number"}}}),
}


def _num(x) -> float | None:
    """A JSON number, or None for NaN / missing."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _at(table: dict, name: str, k: int):
    """Row k of a CSV column, or None when the column or the row is missing."""
    column = table.get(name)
    return column[k] if column is not None and k < len(column) else None


def write_mcap(folder: Path) -> dict:
    """Write folder/run.mcap; returns {"path", "ticks", "channels"}."""
    from mcap.writer import Writer

    from robots import numeric

    folder = Path(folder)
    _, model, traj = run_robot(folder)
    fns = numeric(model, verbose=False)
    plant, ctrl = read_csv(folder / "plant_ticks.csv"), read_csv(folder / "controller_ticks.csv")
    n = len(traj["t"])
    first_wall = _num(_at(plant, "wall_ns", 0))
    t0_ns = int(first_wall) if first_wall else 0
    force = traj.get("force", np.zeros((n, model.nc, 1 + model.n_tangent)))
    contact = traj.get("contact", np.zeros((n, model.nc), bool))
    out = folder / "run.mcap"
    with open(out, "wb") as f:
        writer = Writer(f)
        writer.start(profile="", library="legmpc")
        channels = {}
        for topic, (name, schema) in SCHEMAS.items():
            sid = writer.register_schema(name=name, encoding="jsonschema", data=json.dumps(schema).encode())
            channels[topic] = writer.register_channel(topic=topic, message_encoding="json", schema_id=sid)
        for k in range(n):
            t = float(traj["t"][k])
            wall = _num(_at(plant, "wall_ns", k))
            stamp = int(wall) if wall else t0_ns + int(t * 1e9)
            timing = {"tick": k, "latency_us": _num(_at(plant, "latency_us", k)),
                      "jitter_us": _num(_at(plant, "jitter_us", k)), "status": str(_at(plant, "status", k) or ""),
                      "missed": bool((_num(_at(plant, "missed", k)) or 0) > 0),
                      "controller_tick_ms": _num(_at(ctrl, "tick_ms", k)), "solve_ms": _num(_at(ctrl, "solve_ms", k))}
            messages = tick_messages(model, fns, t, stamp, traj["q"][k], traj["v"][k], traj["tau"][k], contact[k],
                                     force[k], timing)
            for topic, msg in messages.items():
                writer.add_message(channels[topic], log_time=stamp, publish_time=stamp, sequence=k,
                                   data=json.dumps(msg).encode())
        writer.finish()
    return {"path": str(out), "ticks": n, "channels": sorted(SCHEMAS)}


def tick_messages(model, fns, t: float, stamp_ns: int, q, v, tau, contact, force, timing: dict) -> dict:
    """The JSON messages of one tick, per topic of SCHEMAS: body poses (/tf), joint states, contacts
    and `timing` (tick, latency_us, jitter_us, status, missed, controller_tick_ms, solve_ms; None
    where unknown). t: simulated time (s); stamp_ns: the transforms' timestamp (ns); fns:
    `numeric(model)`. Shared by run.mcap and the live stream (launch/live.py)."""
    joints_q, joints_v = _joint_indices(model)
    stamped = {"sec": stamp_ns // 10**9, "nsec": stamp_ns % 10**9}
    transforms = [{"timestamp": stamped, "parent_frame_id": "world", "child_frame_id": body, **pose}
                  for body, pose in zip(model.body_names, _frame_poses(model, fns.body_poses(q)))]
    return {
        "/tf": {"transforms": transforms},
        "/joint_states": {"t": t, "name": list(model.u_names),
                          "position": [_num(q[j]) for j in joints_q],
                          "velocity": [_num(v[j]) for j in joints_v],
                          "effort": [_num(x) for x in tau]},
        "/contacts": {"t": t, "name": [c.name for c in model.contacts], "in_contact": [bool(c) for c in contact],
                      "normal_N": [_num(x) for x in force[:, 0]], "tangential_N": [_num(x) for x in force[:, 1]],
                      **({"tangential_y_N": [_num(x) for x in force[:, 2]]} if force.shape[1] > 2 else {})},
        "/timing": {"t": t, **timing},
    }


@lru_cache(maxsize=8)
def _joint_indices(model) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The actuated joints' indices into q and into v, found once per model (not every tick)."""
    from sim.protocol import actuated_joints, actuated_positions

    return tuple(actuated_positions(model).tolist()), tuple(actuated_joints(model).tolist())


def _frame_poses(model, poses: np.ndarray) -> list[dict]:
    """Foxglove translation and rotation (quaternion x, y, z, w) of each body from `body_poses` rows."""
    if model.floating_base:
        from scipy.spatial.transform import Rotation

        quats = Rotation.from_matrix(poses[:, 3:12].reshape(-1, 3, 3)).as_quat()
        return [{"translation": dict(zip("xyz", map(float, p[:3]))), "rotation": dict(zip("xyzw", map(float, qt)))}
                for p, qt in zip(poses, quats)]
    return [{"translation": {"x": float(p[0]), "y": 0.0, "z": float(p[1])},
             "rotation": {"x": 0.0, "y": math.sin(p[2] / 2), "z": 0.0, "w": math.cos(p[2] / 2)}} for p in poses]
