"""The plant server's safe command on a 3D robot: a controller that dies mid-run leaves go1
standing (joint spring at the pose of the takeover), and a new controller takes over.

Without the spring (safe_kp 0: damping only) the same choreography ends the run: go1's body
has no contacts, so the collapsed robot sinks through the ground and the plant says so.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import zmq

from bridge import protocol as P
from bridge.server import PlantServer, ServerOptions
from robots import get_robot
from sim.registry import make_plant

GO1 = get_robot("go1")
DIMS = P.Dims.of(GO1)
RATE_HZ = 50.0


def _stand_controller(endpoint: str, seconds: float, stop: threading.Event) -> int:
    """Answer STATEs with a joint PD to go1's standing pose for `seconds` of plant time (or until
    BYE), then go silent without a word, as a killed process would; returns commands sent."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "name": "stand"}))
    nu, sent, t_end = GO1.nu, 0, None
    stance = np.asarray(GO1.q0[7:], float)
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
            cmd = [np.zeros(nu), stance, np.zeros(nu), np.full(nu, 60.0), np.full(nu, 2.0), np.array([-1], np.int64)]
            sock.send_multipart(P.encode(P.COMMAND, msg.seq, msg.t, cmd, dims=DIMS))
            sent += 1
    finally:
        sock.close()
    return sent


def _choreography(tmp_path, safe_kp):
    """First controller 1 s, silence ~1 s, a second controller until the end (4 s)."""
    endpoint = f"ipc://{tmp_path}/safe"
    server = PlantServer(make_plant("ess", GO1), ServerOptions(bind=endpoint, mode="realtime", control_rate_hz=RATE_HZ,
                                                               duration_s=4.0, hold_ticks=2, safe_kp=safe_kp))
    stop, sent = threading.Event(), {}

    def run():
        sent["first"] = _stand_controller(endpoint, 1.0, stop)
        time.sleep(1.0)
        sent["second"] = _stand_controller(endpoint, 60.0, stop)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    summary = server.run()
    stop.set()
    th.join(10)
    statuses = [row[5] for row in server.log.rows]
    base_z = np.array(server.log.traj["q"])[:, 2]
    return server, summary, statuses, base_z


def test_a_dead_controller_leaves_go1_standing_and_a_new_one_takes_over(tmp_path):
    server, summary, statuses, base_z = _choreography(tmp_path, None)  # the robot's own: 40 N m/rad
    assert server.safe_kp == GO1.controller_defaults["safe"]["kp"] == 40.0
    assert server.violation == "", server.violation
    first_miss = statuses.index("hold")
    assert statuses[first_miss:first_miss + 3] == ["hold", "hold", "damp"]
    damped = [i for i, s in enumerate(statuses) if s == "damp"]
    assert len(damped) >= 0.5 * RATE_HZ, "the silence should last about a second"
    assert base_z[damped].min() > 0.15, f"go1 sank to {base_z[damped].min():.3f} m while its controller was away"
    assert "ok" in statuses[damped[-1]:], "the second controller never took over"
    assert summary["hellos"] == 2 and len(statuses) == summary["ticks"] == int(4.0 * RATE_HZ)


def test_without_the_spring_the_collapsed_go1_ends_the_run(tmp_path):
    server, _, statuses, base_z = _choreography(tmp_path, 0.0)
    assert "below the ground" in server.violation
    assert statuses[-1] == "violation" and len(statuses) < int(4.0 * RATE_HZ)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "40"])
def test_a_bad_safe_kp_is_refused_with_its_name(bad):
    with pytest.raises(ValueError, match="safe_kp"):
        ServerOptions(safe_kp=bad).validate()
