"""Deadline attribution (bridge/attribution.py) and plan-covered commands (sim/command_plan.py).

Realtime tests provoke each cause for real: a controller burning CPU past the deadline on
chosen ticks (`controller`), a controller process stopped with SIGSTOP (`host`), a proxy that
delays COMMANDs between the two processes (`transport`). They assert which ticks got which
cause, never a time."""
from __future__ import annotations

import heapq
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.attribution import CAUSES, TickRecord, attribute, miss_times, stalled_ns
from bridge.client import ClientOptions, ControllerClient
from bridge.server import PlantServer, ServerOptions
from conftest import start_pd_hopper_client
from mpc.closed_loop import run_in_process
from mpc.controllers import make_controller
from robots import get_robot
from sim.command_plan import CommandKeeper, JointPlan
from sim.protocol import JointCommand, actuated_positions
from sim.registry import make_plant

MODEL = get_robot("hopper")
MS = 1_000_000


def _server(endpoint: str, **opts) -> PlantServer:
    return PlantServer(make_plant("ess", MODEL), ServerOptions(bind=endpoint, **opts))


def _misses(server: PlantServer) -> dict[int, str]:
    return {r.tick: r.cause for r in server.records if r.missed}


# ------------------------------------------------------------------ the rule itself
def test_stalled_time_is_the_union_inside_the_window():
    stalls = np.array([[0, 10], [5, 20], [30, 40], [100, 200]])
    assert stalled_ns(stalls, 0, 50) == 30  # [0, 20] and [30, 40]
    assert stalled_ns(stalls, 15, 35) == 10
    assert stalled_ns(np.zeros((0, 2), np.int64), 0, 50) == 0


def _rec(tick, *, late_ms, cpu_ms=1.0, wall_ms=None, state_leg_ms=0.0, flags=0, ready_ms=0.0, busy_ms=0.0):
    sent = tick * 10 * MS
    deadline = sent + 9 * MS
    arrival = deadline + int(late_ms * MS)
    wall = cpu_ms if wall_ms is None else wall_ms
    recv = sent + int(state_leg_ms * MS)
    report = (recv, int(cpu_ms * MS), int(wall * MS), flags, 0, 0, sent + int(ready_ms * MS) if ready_ms else 0,
              int(busy_ms * MS))
    return TickRecord(tick, sent, deadline, arrival, arrival, report, missed=True)  # the COMMAND's leg: 0


@pytest.mark.parametrize("rec, stalls, cause", [
    (_rec(0, late_ms=3, cpu_ms=12), [], "controller"),                       # its own CPU time
    (_rec(0, late_ms=-2, flags=1), [], "solver"),                             # on time, a fallback
    (_rec(0, late_ms=3, cpu_ms=2, wall_ms=9), [], "host"),                    # 7 ms not running
    (_rec(0, late_ms=3, cpu_ms=2), [[2 * MS, 8 * MS]], "host"),               # a witnessed stall
    (_rec(0, late_ms=3, cpu_ms=2), [[2 * MS, 3 * MS]], "unattributed"),       # a stall too short
    (_rec(0, late_ms=3, cpu_ms=2, state_leg_ms=10), [], "transport"),         # between the two
    (_rec(0, late_ms=3, cpu_ms=4, ready_ms=6, busy_ms=6), [], "controller"),  # cannot keep up
])
def test_each_cause_by_its_definition(rec, stalls, cause):
    counts = attribute([rec], np.array(stalls, np.int64).reshape(-1, 2), 9 * MS, realtime=True)
    assert rec.cause == cause and counts[cause] == 1 and sum(counts.values()) == 1


def test_a_never_answered_tick_is_host_with_a_stall_else_takes_its_streak_cause():
    answered = _rec(0, late_ms=3, cpu_ms=12)
    lost = TickRecord(1, 10 * MS, 19 * MS, missed=True)
    counts = attribute([answered, lost], np.zeros((0, 2), np.int64), 9 * MS, realtime=True)
    assert (answered.cause, lost.cause) == ("controller", "controller") and counts["controller"] == 2
    lost2 = TickRecord(5, 50 * MS, 59 * MS, missed=True)
    attribute([lost2], np.array([[48 * MS, 60 * MS]]), 9 * MS, realtime=True)
    assert lost2.cause == "host"
    lost3 = TickRecord(5, 50 * MS, 59 * MS, missed=True)
    attribute([lost3], np.zeros((0, 2), np.int64), 9 * MS, realtime=True)
    assert lost3.cause == "unattributed"


# ------------------------------------------------------------------ realtime, for real
def _realtime(tmp_path, client_opts: dict, seconds: float = 1.0, endpoint: str | None = None):
    plant_ep = f"ipc://{tmp_path}/plant"
    server = _server(plant_ep, mode="realtime", duration_s=seconds)
    client = ControllerClient(endpoint or plant_ep, make_controller("pd", MODEL), ClientOptions(**client_opts))
    out = {}
    th = threading.Thread(target=lambda: out.update(client.run()), daemon=True)
    th.start()
    summary = server.run()
    th.join(10)
    return server, summary


def test_a_controller_burning_cpu_past_the_deadline_is_controller_on_exactly_those_ticks(tmp_path):
    server, summary = _realtime(tmp_path, {"delay_every": 20, "delay_phase": 7, "burn_s": 0.012})
    misses = _misses(server)
    burned = {k for k in range(len(server.records)) if k % 20 == 7}
    assert {k for k, c in misses.items() if c == "controller"} == burned
    assert sum(summary["misses_by_cause"].values()) == summary["misses"] == len(misses)





def test_a_controller_process_stopped_for_20_ms_is_host(tmp_path):
    endpoint = f"ipc://{tmp_path}/plant"
    server = _server(endpoint, mode="realtime", duration_s=3.0)
    stops = []

    def choreography():
        proc = start_pd_hopper_client(endpoint, server)
        time.sleep(0.5)
        for _ in range(5):
            t0 = time.monotonic_ns()
            proc.send_signal(signal.SIGSTOP)
            time.sleep(0.02)
            proc.send_signal(signal.SIGCONT)
            stops.append((t0, time.monotonic_ns()))
            time.sleep(0.3)
        proc.wait(timeout=60)

    th = threading.Thread(target=choreography, daemon=True)
    th.start()
    summary = server.run()
    th.join(60)
    assert len(stops) == 5
    in_stop = [r for r in server.records if r.missed and any(r.sent_ns <= b and r.deadline_ns >= a for a, b in stops)]
    assert in_stop, "a 20 ms stop of the controller must cost a deadline"
    assert all(r.cause == "host" for r in in_stop), [(r.tick, r.cause) for r in in_stop]
    blamed = [(r.tick, miss_times(r)) for r in server.records if r.missed and r.cause == "controller"]
    assert not blamed, f"(tick, (late, cpu, wall, state leg, command leg, waited) ms): {blamed}"  # the machine may add others


CONFIG_LOADS_NOTHING = """
import json
import sys
import bridge.protocol as P
import bridge.witness as W
from bridge.client import ClientOptions, ControllerClient
from mpc.controllers import make_controller
from robots import get_robot
client = ControllerClient("ipc:///nowhere", make_controller("pd", get_robot("hopper")), ClientOptions(stall_ms=float(sys.argv[1]), stall_prob=0.5))
client._warm_up_config()
assert W._lib is not None, "the witness library is not loaded before HELLO"
config = P.decode(P.encode_json(P.CONFIG, 0, 0.0, json.loads(sys.argv[2])), None)
before = set(sys.modules)
holder = [None]
realtime, chaos = client._configured(config, holder)
holder[0].stop()
assert realtime and (chaos is not None) == (float(sys.argv[1]) > 0)
print(sorted(set(sys.modules) - before))
"""


@pytest.mark.parametrize("stall_ms", [0.0, 50.0])
def test_handling_config_loads_nothing_new(stall_ms):
    """The plant sends STATE 0 right after CONFIG: a module or library first loaded while handling
    CONFIG (the witness's, ~50 ms; numpy.random's, ~10 ms) would make a realtime run's tick 0 late
    and, when CONFIG and STATE arrive together, count as the controller's CPU time. A fresh
    interpreter, since this one has loaded everything already."""
    config = _server("ipc:///nowhere", mode="realtime")._config()  # built here: a plant loads what a client need not
    out = subprocess.run([sys.executable, "-c", CONFIG_LOADS_NOTHING, str(stall_ms), json.dumps(config)],
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def _delaying_proxy(front: str, back: str, delay_s: float, stop: threading.Event) -> None:
    """Forward between a controller (connecting to `front`) and the plant at `back`, holding
    every controller-to-plant message `delay_s`."""
    ctx = zmq.Context.instance()
    fsock, bsock = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    fsock.bind(front)
    bsock.connect(back)
    ident, queue = None, []
    poller = zmq.Poller()
    poller.register(fsock, zmq.POLLIN)
    poller.register(bsock, zmq.POLLIN)
    while not stop.is_set():
        events = dict(poller.poll(1))
        if fsock in events:
            ident, *frames = fsock.recv_multipart()
            heapq.heappush(queue, (time.monotonic() + delay_s, len(queue), frames))
        if bsock in events and ident is not None:
            fsock.send_multipart([ident, *bsock.recv_multipart()])
        while queue and queue[0][0] <= time.monotonic():
            bsock.send_multipart(heapq.heappop(queue)[2])
    fsock.close(0)
    bsock.close(0)


def test_a_delaying_proxy_between_the_two_is_transport(tmp_path):
    stop = threading.Event()
    front, back = f"ipc://{tmp_path}/front", f"ipc://{tmp_path}/plant"
    proxy = threading.Thread(target=_delaying_proxy, args=(front, back, 0.011, stop), daemon=True)
    proxy.start()
    try:
        server, summary = _realtime(tmp_path, {}, seconds=1.0, endpoint=front)
    finally:
        stop.set()
        proxy.join(5)
    causes = summary["misses_by_cause"]
    assert causes["transport"] >= 0.8 * (len(server.records) - 1)  # every answered tick came late
    assert causes["controller"] == 0


# ------------------------------------------------------------------ plan-covered commands
class _Recorder:
    """A plant stand-in that records every (command, dt) it is stepped with."""

    def __init__(self, model):
        self.model, self.calls, self.t = model, [], 0.0

    def step(self, cmd, dt):
        self.calls.append((self.t, cmd.tau_ff.copy(), cmd.q_des.copy(), cmd.v_des.copy(), dt))
        self.t += dt
        from sim.protocol import PlantState

        nq, nc = self.model.nq, self.model.nc
        return PlantState(self.t, np.zeros(nq), np.zeros(self.model.nv), np.zeros(nc, bool), np.zeros((nc, 2)),
                          np.zeros(self.model.nu))


def _applied(plant) -> list:
    """The applied torque and setpoints at every plant-rate instant of a recording (one per ms)."""
    out = []
    for t, tau, qd, vd, dt in plant.calls:
        for i in range(int(round(dt / 1e-3))):
            out.append((round(t + i * 1e-3, 9), tau.tolist(), qd.tolist(), vd.tolist()))
    return out


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 12), seed=st.integers(0, 2**31 - 1))
def test_a_horizon_then_k_minus_1_missed_ticks_applies_what_k_commands_one_per_tick_apply(k, seed):
    """One COMMAND with K setpoints, one per control period, followed by K - 1 missed ticks gives
    the plant the same setpoints at every instant as the K setpoints sent as K one-setpoint
    COMMANDs, one per tick."""
    rng = np.random.default_rng(seed)
    nu, period = MODEL.nu, 0.01
    rows = rng.normal(size=(3, k, nu))
    plan = JointPlan(period * np.arange(k), rows[0], rows[1], rows[2], np.full(nu, 40.0), np.ones(nu))
    runs = []
    for once in (True, False):
        plant = _Recorder(MODEL)
        keeper = CommandKeeper(nu, actuated_positions(MODEL), hold_ticks=3, safe_kp=0.0, damping_kd=1.0)
        state = plant.step(JointCommand.zero(nu), 0.0)
        plant.calls.clear()
        for tick in range(k):
            if once and tick == 0:
                keeper.accept(plan, state.t)
                status = "ok"
            elif once:
                status = keeper.status(tick, state.t)
                assert status == "plan"
            else:
                keeper.accept(JointPlan.of(plan.setpoint(tick)), state.t)
                status = "ok"
            state = keeper.step(plant, state, period, status)
        runs.append(_applied(plant))
    assert runs[0] == runs[1]


def test_past_its_horizon_a_plan_is_held_then_damped():
    nu = MODEL.nu
    keeper = CommandKeeper(nu, actuated_positions(MODEL), hold_ticks=2, safe_kp=0.0, damping_kd=1.0)
    plan = JointPlan(np.array([0.0, 0.01, 0.02]), np.ones((3, nu)), np.ones((3, nu)), np.zeros((3, nu)),
                     np.ones(nu), np.ones(nu))
    keeper.accept(plan, 0.0, valid_until=-1)
    statuses = [keeper.status(tick, 0.01 * tick) for tick in range(1, 7)]
    assert statuses == ["plan", "plan", "hold", "hold", "damp", "damp"]
    keeper.accept(plan, 0.0, valid_until=1)
    assert [keeper.status(tick, 0.01 * tick) for tick in (1, 2)] == ["plan", "damp"]


def test_one_setpoint_plans_miss_as_plain_commands_always_did():
    nu = MODEL.nu
    keeper = CommandKeeper(nu, actuated_positions(MODEL), hold_ticks=3, safe_kp=0.0, damping_kd=1.0)
    keeper.accept(JointPlan.of(JointCommand.zero(nu)), 0.0)
    assert [keeper.status(t, 0.01 * t) for t in range(1, 6)] == ["hold", "hold", "hold", "damp", "damp"]


# ------------------------------------------------------------------ lockstep chaos
def test_lockstep_stalls_are_deterministic_and_the_server_and_the_in_process_loop_agree(tmp_path):
    """A simulated 55 ms stall on 5 % of ticks: the same ticks lost in two in-process runs and in
    the lockstep plant server (6 ticks each: ceil(55 / 10)), all `host`."""
    opts = dict(stall_ms=55.0, stall_prob=0.05, chaos_seed=3)
    logs = [run_in_process(make_plant("ess", MODEL), make_controller("pd", MODEL), duration_s=2.0, q0=MODEL.q0,
                           **opts) for _ in range(2)]
    lost = [[i for i, r in enumerate(log["rows"]) if r["missed"]] for log in logs]
    assert lost[0] == lost[1] and lost[0] and len(lost[0]) % 6 == 0
    assert {r["cause"] for log in logs for r in log["rows"] if r["missed"]} == {"host"}
    np.testing.assert_array_equal(logs[0]["q"], logs[1]["q"])
    server = _server(f"ipc://{tmp_path}/p", duration_s=2.0, **opts)
    client = ControllerClient(f"ipc://{tmp_path}/p", make_controller("pd", MODEL), ClientOptions())
    th = threading.Thread(target=client.run, daemon=True)
    th.start()
    summary = server.run()
    th.join(10)
    assert sorted(_misses(server)) == lost[0]
    assert summary["misses_by_cause"]["host"] == len(lost[0]) == summary["injected_ticks"]["stall"]
    np.testing.assert_allclose(server.log.trajectory()["q"], logs[0]["q"], atol=1e-12)


def test_attribution_causes_are_the_documented_five():
    assert CAUSES == ("host", "controller", "solver", "transport", "unattributed")


def test_behind_after_a_stall_the_client_answers_only_the_newest_state(tmp_path):
    """A 55 ms stall at tick 10: the STATEs of ticks 11-15 wait; the client answers the newest
    one only (counting the skipped), so the plant refuses at most the stale tick 10's COMMAND."""
    server, summary = _realtime(tmp_path, {"delay_every": 1000, "delay_phase": 10, "delay_s": 0.055})
    rows = server.records
    assert rows[10].missed and rows[10].cause == "host"  # slept, not computed: the process was not running
    late = [r.tick for r in rows if r.missed]
    assert set(range(10, 15)) <= set(late), late
    assert summary["rejected"].get("sequence", 0) <= 1, summary["rejected"]


def test_lockstep_transport_delay_at_the_deadline_loses_every_command(tmp_path):
    log = run_in_process(make_plant("ess", MODEL), make_controller("pd", MODEL), duration_s=0.2, q0=MODEL.q0,
                         transport_delay_ms=9.0)
    assert all(r["missed"] and r["cause"] == "transport" for r in log["rows"])
    assert [r["plant_status"] for r in log["rows"]][:5] == ["damp"] * 5  # nothing ever arrived to hold


def test_a_late_tick_whose_controller_slept_after_waiting_is_host():
    """STATE waited 6 ms for the controller's previous tick, then the controller slept 150 ms (a
    stall): the two spans of not running add up to the 153 ms lateness."""
    rec = _rec(0, late_ms=153, cpu_ms=4.7, wall_ms=155.2, ready_ms=6.66, busy_ms=0.5)
    attribute([rec], np.zeros((0, 2), np.int64), 9 * MS, realtime=True)
    assert rec.cause == "host"


def test_a_sweep_episode_with_simulated_stalls_reports_its_misses_by_cause():
    from launch.episode import run_episode
    from launch.scenario import Scenario

    sc = Scenario(name="stalls", robot="hopper", controller="pd", duration_s=1.0, stall_ms=55.0, stall_prob=0.05,
                  seed=3).validate()
    row = run_episode(sc)
    assert row["error"] == "" and row["misses"] > 0 and row["misses"] == row["misses_host"]
    assert row["solve_p50_ms"] is not None


def test_a_refused_command_is_the_controllers_miss():
    rec = TickRecord(0, 0, 9 * MS, missed=True, refused=True)
    attribute([rec], np.zeros((0, 2), np.int64), 9 * MS, realtime=True)
    assert rec.cause == "controller"
