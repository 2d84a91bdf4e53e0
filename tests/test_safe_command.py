"""The plant server's safe command on a 3D robot: a controller that dies mid-run leaves go1
standing, its joints held where they were when the safe command took over, and a new
controller takes over.

Without the spring (safe_kp 0: damping only) the same choreography ends the run: go1's body
has no contacts, so the collapsed robot sinks below the ground and the plant says so.
"""
from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest
import zmq

from bridge import protocol as P
from sim.protocol import JointCommand
from bridge.server import PlantServer, ServerOptions
from robots import get_robot
from sim.registry import make_plant

GO1 = get_robot("go1")
DIMS = P.Dims.of(GO1)
RATE_HZ = 50.0
STANCE = np.asarray(GO1.q0[7:], float)
CROUCH = STANCE + np.tile([0.0, 0.25, -0.5], 4)  # hip flexed, knee bent: clearly not the stance


def _pose_controller(endpoint: str, pose: np.ndarray, seconds: float, stop: threading.Event) -> int:
    """Answer STATEs with a joint PD to `pose` for `seconds` of plant time (or until BYE), then
    go silent without a word, as a killed process would; returns the commands sent."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "name": "pose"}))
    nu, sent, t_end = GO1.nu, 0, None
    try:
        while not stop.is_set():
            if not sock.poll(100):
                continue
            msg = P.decode(sock.recv_multipart(), DIMS)
            if msg.type == P.BYE:
                break
            if msg.type != P.STATE:
                continue
            t_end = msg.t + seconds if t_end is None else t_end
            if msg.t >= t_end:
                break
            cmd = P.command_arrays(JointCommand(np.zeros(nu), pose, np.zeros(nu), np.full(nu, 60.0), np.full(nu, 2.0)), -1)
            sock.send_multipart(P.encode(P.COMMAND, msg.seq, msg.t, cmd, dims=DIMS))
            sent += 1
    finally:
        sock.close()
    return sent


def _choreography(tmp_path, safe_kp):
    """A crouching controller for 1 s, ~0.6 s of silence, a standing controller for 1 s, then
    silence to the end of the 4 s run."""
    endpoint = f"ipc://{tmp_path}/safe"
    server = PlantServer(make_plant("ess", GO1), ServerOptions(bind=endpoint, mode="realtime", control_rate_hz=RATE_HZ,
                                                               duration_s=4.0, hold_ticks=2, safe_kp=safe_kp))
    stop = threading.Event()

    def run():
        _pose_controller(endpoint, CROUCH, 1.0, stop)
        time.sleep(0.6)
        _pose_controller(endpoint, STANCE, 1.0, stop)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    summary = server.run()
    stop.set()
    th.join(10)
    statuses = [row[5] for row in server.log.rows]
    q = np.array(server.log.trajectory()["q"])
    return server, summary, statuses, q


def _fallbacks(statuses, min_ticks=10):
    """(start, end) of each stretch of at least `min_ticks` ticks without a command: the
    silences, not a lone late tick on a busy machine."""
    out, start = [], None
    for i, s in enumerate(statuses + ["ok"]):
        if s != "ok" and start is None:
            start = i
        elif s == "ok" and start is not None:
            if i - start >= min_ticks:
                out.append((start, i))
            start = None
    return out


def test_a_dead_controller_leaves_go1_standing_in_its_pose_and_a_new_one_takes_over(tmp_path):
    server, summary, statuses, q = _choreography(tmp_path, None)  # the robot's own: 40 N m/rad
    assert server.safe_kp == GO1.controller_defaults["safe"]["kp"] == 40.0
    assert summary["options"]["safe_kp"] == 40.0
    assert server.violation == "", server.violation
    silences = _fallbacks(statuses)
    assert len(silences) == 2, silences
    for (start, end), pose in zip(silences, (CROUCH, STANCE)):
        assert statuses[start:start + 3] == ["hold", "hold", "damp"]
        assert set(statuses[start + 2:end]) == {"damp"}
        held = q[start + 2:end, 7:]  # joint angles while the safe command holds them
        # standing on its legs, not collapsed (a collapse ends below the ground)
        assert q[start + 2:end, 2].min() > 0.5 * q[start, 2], (q[start, 2], q[start + 2:end, 2].min())
        # held where the joints were at the takeover (after the held ticks), with the spring's
        # sag, and not at the other controller's pose (q0 is the stance)
        takeover, other = q[start + 1, 7:], (STANCE if pose is CROUCH else CROUCH)
        assert np.abs(held - takeover).max() < 0.3
        assert np.abs(held - takeover).mean() < 0.6 * np.abs(held - other).mean()
    assert np.abs(CROUCH - STANCE).max() > 0.49  # so the two silences hold different poses
    assert "ok" in statuses[silences[0][1]:silences[1][0]], "the second controller never took over"
    assert summary["hellos"] == 2 and len(statuses) == summary["ticks"] == int(4.0 * RATE_HZ)


def test_without_the_spring_the_collapsed_go1_ends_the_run(tmp_path):
    server, _, statuses, _ = _choreography(tmp_path, 0.0)
    assert "below the ground" in server.violation
    assert statuses[-1] == "violation" and len(statuses) < int(4.0 * RATE_HZ)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "40"])
def test_a_bad_safe_kp_is_refused_with_its_name(bad):
    with pytest.raises(ValueError, match="safe_kp"):
        ServerOptions(safe_kp=bad).validate()


def test_a_robot_with_a_bad_safe_stiffness_is_refused_with_where_it_comes_from():
    bad = dataclasses.replace(GO1, controller_defaults={"safe": {"kp": -40.0}})
    with pytest.raises(ValueError, match=r"go1: controller_defaults\['safe'\]\['kp'\]"):
        PlantServer(make_plant("ess", bad), ServerOptions())
