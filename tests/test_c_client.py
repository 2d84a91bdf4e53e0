"""The C client library (bridge/c/): built with the project's strict flags (`make c-examples`),
its two example controllers and a test driver (bridge/c/tests/probe.c) run against
`python -m launch serve-plant` on 127.0.0.1, its CONFIG reader fed good and bad payloads.

Skipped only when libzmq's headers (Debian: libzmq3-dev) are missing, and then not on CI
(the CI environment variable set): there a missing library fails the suite.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zmq

from bridge import protocol as P
from bridge.security import make_keys
from robots import get_robot

ROOT = Path(__file__).resolve().parents[1]
C_DIR = ROOT / "bridge" / "c"
BUILD = C_DIR / "build"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _have_libzmq() -> bool:
    if shutil.which("pkg-config"):
        return subprocess.run(["pkg-config", "--exists", "libzmq"]).returncode == 0
    return Path("/usr/include/zmq.h").exists()


@pytest.fixture(scope="module")
def built() -> Path:
    """`make c-examples` (the library and both examples), then the test driver; the build
    folder."""
    if not _have_libzmq():
        why = "libzmq3-dev is not installed (apt-get install libzmq3-dev): the C client cannot be built"
        if os.environ.get("CI"):
            pytest.fail(why + "; CI installs it (make sysdeps), so this is a broken CI image")
        pytest.skip(why)
    for cmd in (["make", "-s", "c-examples"], ["make", "-s", "-C", "bridge/c", "build/probe"]):
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}"
    for name in ("liblegmpc_client.a", "go1_stand", "hopper_pd", "probe"):
        assert (BUILD / name).exists(), name
    return BUILD


class Plant:
    """`serve-plant ROBOT` on tcp://127.0.0.1 (a port the system chooses), logs in log_dir."""

    def __init__(self, tmp_path: Path, robot: str, *args: str):
        self.log = tmp_path / "plant"
        self.proc = subprocess.Popen([sys.executable, "-m", "launch", "serve-plant", robot, "--bind",
                                      "tcp://127.0.0.1:*", "--log-dir", str(self.log), *args],
                                     cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("ready "):
            self.proc.kill()
            pytest.fail(f"serve-plant did not start: {line!r}\n{self.proc.stderr.read()[-2000:]}")
        self.endpoint = line.split(" ", 1)[1]
        assert self.endpoint.startswith("tcp://127.0.0.1:")

    def summary(self, timeout: float = 60.0) -> dict:
        """Wait for the plant's end; its summary (the JSON line it prints last)."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert self.proc.returncode == 0, err[-2000:]
        return json.loads(out.strip().splitlines()[-1])

    def stop(self) -> dict:
        self.proc.terminate()
        return self.summary()

    def trajectory(self) -> np.ndarray:
        with np.load(self.log / "trajectory.npz") as d:
            return d["q"]


def _run(*args, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def _python_config(endpoint: str) -> dict:
    """CONFIG as a pyzmq controller gets it (HELLO, then CONFIG's payload)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "name": "test"}))
        assert sock.poll(30000), "no CONFIG"
        msg = P.decode(sock.recv_multipart(), None)
        assert msg.type == P.CONFIG
        return msg.json()
    finally:
        sock.close()


def test_the_c_header_speaks_the_python_side_protocol_version():
    """legmpc_client.h's LEGMPC_PROTOCOL_VERSION is bridge/protocol.py's VERSION: a protocol bump
    fails here until the C client is brought along."""
    text = (C_DIR / "legmpc_client.h").read_text()
    versions = re.findall(r"^#define LEGMPC_PROTOCOL_VERSION (\d+)$", text, re.M)
    assert versions == [str(P.VERSION)], (versions, P.VERSION)


def test_examples_are_short_and_build_with_strict_flags(built):
    for name in ("go1_stand.c", "hopper_pd.c"):
        lines = (C_DIR / "examples" / name).read_text().splitlines()
        assert len(lines) <= 60, (name, len(lines))
    makefile = (C_DIR / "Makefile").read_text()
    assert "-Wall -Wextra -Werror -std=c11" in makefile


def _run_example(built, tmp_path, example: str, robot: str, plant_name: str):
    """Run a C example against `serve-plant ROBOT` (lockstep, 2 s) and check the run was clean:
    it exited 0 on the plant's BYE, 200 ticks, no miss, no refusal, no fall; returns (the
    example's stderr, the plant's logged trajectory)."""
    plant = Plant(tmp_path, robot, "--plant", plant_name, "--mode", "lockstep", "--duration", "2")
    ctrl = _run(built / example, plant.endpoint)
    summary = plant.summary()
    assert ctrl.returncode == 0, ctrl.stderr
    assert "plant: run ended" in ctrl.stderr, ctrl.stderr
    assert summary["ticks"] == 200 and summary["misses"] == 0 and summary["rejected"] == {}, summary
    assert summary["end_reason"] == "run ended" and summary["plant_violation"] == "" and summary["fell"] is False
    return ctrl.stderr, plant.trajectory()


def test_go1_stand_example_keeps_go1_standing(built, tmp_path):
    go1 = get_robot("go1")
    stderr, traj = _run_example(built, tmp_path, "go1_stand", "go1", "mujoco")
    assert "connected to go1 (lockstep, 100 Hz)" in stderr, stderr
    z = traj[:, 2]
    assert z.min() > 0.85 * go1.q0[2] and abs(z[-1] - go1.q0[2]) < 0.03, (z.min(), z[-1])


def test_hopper_pd_example_holds_the_hopper_up(built, tmp_path):
    hopper = get_robot("hopper")
    _, traj = _run_example(built, tmp_path, "hopper_pd", "hopper", "ess")
    z = traj[:, hopper.q_names.index("z")]
    assert z.min() > 0.9 * hopper.q0[1], z.min()


@pytest.mark.parametrize("robot", ["hopper", "go1"])
def test_config_reads_as_python_reads_it(built, tmp_path, robot):
    """Every CONFIG field the C struct holds equals the payload pyzmq receives from the same plant;
    then the C client takes over (a new HELLO) and answers until BYE."""
    plant = Plant(tmp_path, robot, "--mode", "lockstep", "--duration", "0.2")
    want = _python_config(plant.endpoint)
    out = _run(built / "probe", "config", plant.endpoint)
    summary = plant.summary()
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "connect LEGMPC_OK "
    got = json.loads(lines[1])
    assert got["nf"] == len(want["force_columns"]) and got["floating_base"] == int(want["floating_base"])
    for key in ("robot", "nq", "nv", "nu", "nc", "mode", "control_rate_hz", "plant_rate_hz", "deadline_s", "hold_ticks",
                "safe_kp", "damping_kd", "q_names", "u_names", "contacts", "q0", "u_max", "q_index", "v_index"):
        assert got[key] == want[key], key
    assert got["quaternion_order"] == want.get("quaternion_order", "")
    assert got["base_velocity_frame"] == want.get("base_velocity_frame", "")
    assert lines[2] == "end LEGMPC_EV_BYE bye 'run ended' states 20 skipped 0 commands 20 errors 0", lines[2]
    assert summary["hellos"] == 2 and summary["rejected"] == {} and summary["misses"] == 0


def test_malformed_commands_are_answered_with_the_documented_reasons(built, tmp_path):
    """COMMANDs with a NaN, a tick that is not the plant's and a negative gain, sent from C: each
    ERROR's reason is the one docs/PROTOCOL.md gives, and each is matched (by the order the plant
    answers in) to the COMMAND that caused it; a good COMMAND then goes through."""
    plant = Plant(tmp_path, "hopper", "--mode", "lockstep", "--duration", "0.2")
    out = _run(built / "probe", "bad", plant.endpoint)
    summary = plant.summary()
    assert out.returncode == 0, out.stdout + out.stderr
    command = P.COMMAND
    assert out.stdout.splitlines()[:7] == [
        "connect LEGMPC_OK ",
        "state 1 tick 0 check non_finite value ok",  # legmpc_check_command foresees the plant's verdicts
        f"error non_finite answers {command} 0 local 0 tick 0",
        f"error sequence answers {command} 7 local 0 tick 0",
        f"error value answers {command} 0 local 0 tick 0",
        "plan LEGMPC_E_ARGUMENT PLAN not sent: non_finite (x[0])",  # the plant never sees a bad PLAN
        "state 1 tick 1 status 0",
    ], out.stdout
    assert summary["rejected"] == {"non_finite": 1, "sequence": 1, "value": 1} and summary["misses"] == 0
    errors_table = (ROOT / "docs" / "PROTOCOL.md").read_text().split("## Errors", 1)[1]
    for reason in ("non_finite", "sequence", "value"):
        assert f"| `{reason}` |" in errors_table, reason
        assert reason in P.REASONS


def test_connect_failures_have_codes_and_messages(built, tmp_path):
    plant = Plant(tmp_path, "hopper", "--mode", "lockstep", "--duration", "0.1")
    refused = _run(built / "probe", "connect", plant.endpoint, "a1", "10000").stdout.splitlines()
    assert refused[0].startswith("connect LEGMPC_E_REFUSED the plant refused HELLO: robot: "), refused
    assert refused[1] == f"error robot answers {P.HELLO} 0 local 0 tick 0"
    bad = _run(built / "probe", "connect", "tcp://no-such-endpoint", "-", "500").stdout
    assert bad.startswith("connect LEGMPC_E_ZMQ cannot connect to 'tcp://no-such-endpoint'"), bad
    with socket_on_loopback() as port:  # a port nobody serves: no CONFIG comes
        silent = _run(built / "probe", "connect", f"tcp://127.0.0.1:{port}", "-", "300").stdout
    assert silent.startswith("connect LEGMPC_E_TIMEOUT no CONFIG from"), silent
    good = _run(built / "probe", "connect", plant.endpoint, "hopper", "10000")
    summary = plant.summary()
    assert good.returncode == 0 and "end LEGMPC_EV_BYE bye 'run ended' states 10" in good.stdout, good.stdout
    assert summary["rejected"] == {"robot": 1} and summary["ticks"] == 10


class socket_on_loopback:
    """A TCP port on 127.0.0.1 that is bound (so no one else takes it) but never accepts."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


def test_after_a_stall_only_the_newest_state_is_answered(built, tmp_path):
    """Realtime at 10 Hz: the driver stops for 420 ms after tick 2 while the plant keeps sending;
    the next receive drains the queue and returns the newest STATE (3 older ones dropped), whose
    COMMAND arrives in time: no stale COMMAND is refused, and the next STATE says ok."""
    plant = Plant(tmp_path, "hopper", "--mode", "realtime", "--rate", "10", "--duration", "1.5")
    out = _run(built / "probe", "stall", plant.endpoint, "420")
    summary = plant.summary()
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    tick, skipped, _ = map(int, re.fullmatch(r"state tick (\d+) skipped (\d+) status (\d+)", lines[1]).groups())
    assert skipped >= 2 and tick == 3 + skipped, lines
    assert lines[2] == f"state tick {tick + 1} skipped 0 status 0", lines  # the drained STATE's answer was applied
    assert summary["rejected"] == {} and summary["misses"] >= skipped, summary


def test_curve_keys_from_a_key_folder(built, tmp_path):
    """With `serve-plant --curve-keys DIR`, the C client given DIR (as bridge/client.py reads it)
    is served; without keys it is refused by the handshake and never gets CONFIG."""
    keys = make_keys(tmp_path / "keys")
    plant = Plant(tmp_path, "hopper", "--mode", "lockstep", "--duration", "0.1", "--curve-keys", str(keys))
    stranger = _run(built / "probe", "connect", plant.endpoint, "hopper", "1000").stdout
    assert stranger.startswith("connect LEGMPC_E_TIMEOUT"), stranger
    friend = _run(built / "probe", "connect", plant.endpoint, "hopper", "10000", keys)
    summary = plant.summary()
    assert friend.returncode == 0 and "end LEGMPC_EV_BYE bye 'run ended' states 10" in friend.stdout, friend.stdout
    assert summary["hellos"] == 1 and summary["ticks"] == 10


def _config_cases(config: dict) -> dict[str, tuple[bytes, str]]:
    """name -> (payload, expected first words of the C reader's verdict)."""
    good = json.dumps(config)

    def edit(**fields):
        return json.dumps({**config, **fields}).encode()

    missing = dict(config)
    del missing["q0"]
    nested = "[" * 100 + "]" * 100
    return {
        "good": (good.encode(), "ok robot hopper nq 4 nv 4 nu 2 nc 1 nf 2 q_name0 x"),
        "unknown fields ignored": (good[:-1].encode() + b', "later": {"a": [1, {"b": null}]}, "x": "\\u00e9"}',
                                   "ok robot hopper"),
        "escapes decoded": (edit(robot="hop\u00e9\U0001F600"), "ok robot hop\u00e9\U0001F600 "),
        "float for an integer": (good.replace('"nq": 4', '"nq": 4.0').encode(), "error field: CONFIG field 'nq' must be an integer"),
        "true for an integer": (edit(nu=True), "error field: CONFIG field 'nu' must be an integer, got true/false"),
        "string for a number": (edit(deadline_s="0.009"), "error field: CONFIG field 'deadline_s' must be a number, got a string"),
        "missing field": (json.dumps(missing).encode(), "error field: CONFIG needs field 'q0'"),
        "short list": (edit(q0=[0.0, 0.4]), "error field: CONFIG field 'q0' has 2 elements, expected 4"),
        "float index": (edit(q_index=[2.0, 3]), "error field: CONFIG field 'q_index' must be a list of integers, element 0"),
        "index outside q": (edit(q_index=[2, 4]), "error field: CONFIG q_index/v_index of actuator 1"),
        "duplicate field": (good[:-1].encode() + b', "nq": 4}', "error field: CONFIG field 'nq' appears twice"),
        "other version": (edit(protocol=P.VERSION + 1), f"error version: the plant speaks protocol {P.VERSION + 1}"),
        "bad mode": (edit(mode="fast"), "error field: CONFIG field 'mode' is 'fast'"),
        "NaN": (edit(deadline_s=float("nan")), "error json:"),
        "trailing comma": (good[:-1].encode() + b",}", "error json:"),
        "extra data": (good.encode() + b" {}", "error json: CONFIG: extra data"),
        "not an object": (b"[1, 2]", "error json: the CONFIG payload must be a JSON object, got an array"),
        "empty": (b"", "error json: the CONFIG payload must be a JSON object, got nothing"),
        "too deep": (good[:-1].encode() + f', "deep": {nested}}}'.encode(), "error json: CONFIG: nested beyond depth"),
        "invalid UTF-8": (edit(robot="hopper").replace(b"hopper", b"hop\xc3\x28r"), "error json: CONFIG: invalid UTF-8"),
        "lone surrogate": (good.replace('"robot": "hopper"', '"robot": "\\ud800"').encode(), "error json: CONFIG: lone surrogate"),
        "truncated": (good[:len(good) // 2].encode(), "error json:"),
        "control character": (good.replace('"hopper"', '"hop\nper"').encode(), "error json: CONFIG: control character"),
    }


def test_the_config_reader_is_strict(built, tmp_path):
    plant = Plant(tmp_path, "hopper", "--mode", "lockstep", "--duration", "0.1")
    config = _python_config(plant.endpoint)
    plant.stop()
    cases = _config_cases(config)
    files = []
    for i, (payload, _) in enumerate(cases.values()):
        files.append(tmp_path / f"case{i}.json")
        files[-1].write_bytes(payload)
    out = _run(built / "probe", "parse", *files)
    assert out.returncode == 0, out.stderr
    verdicts = out.stdout.splitlines()
    assert len(verdicts) == len(cases)
    for (name, (_, want)), got in zip(cases.items(), verdicts):
        assert got.startswith(want), (name, got)


def test_the_config_reader_survives_mangled_payloads(built, tmp_path):
    """300 truncated and byte-flipped CONFIGs through the reader built with AddressSanitizer and
    UBSan (or the plain build where the sanitizers are missing): each is read or refused, no crash."""
    plant = Plant(tmp_path, "go1", "--mode", "lockstep", "--duration", "0.1")
    good = json.dumps(_python_config(plant.endpoint)).encode()
    plant.stop()
    probe = tmp_path / "probe_asan"
    libs = subprocess.run(["pkg-config", "--libs", "libzmq"], capture_output=True, text=True).stdout.split() or ["-lzmq"]
    sanitized = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address,undefined",
                                "-fno-sanitize-recover=all", f"-I{C_DIR}", str(C_DIR / "tests" / "probe.c"),
                                str(C_DIR / "legmpc_client.c"), *libs, "-lm", "-o", str(probe)],
                               capture_output=True, text=True)
    if sanitized.returncode != 0:
        probe = built / "probe"
    rng = random.Random(43)
    files = []
    for i in range(300):
        data = bytearray(good)
        if i % 3 == 0:
            data = data[:rng.randrange(1, len(data))]  # at least a byte: the flips below need one
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.choice(b'"\\{}[],:0-.eE \x00\xff\xc3tfnu')
        files.append(tmp_path / f"m{i}.json")
        files[-1].write_bytes(bytes(data))
    out = _run(probe, "parse", *files)
    assert out.returncode == 0, out.stderr[-3000:]
    verdicts = out.stdout.splitlines()
    assert len(verdicts) == len(files) and all(v.startswith(("ok ", "error ")) for v in verdicts)
    assert sum(v.startswith("error ") for v in verdicts) > 200  # most mangled payloads are refused


def test_cpp_includes_and_links_the_library(built, tmp_path):
    if not shutil.which("g++"):
        if os.environ.get("CI"):
            pytest.fail("no g++: the CI machine has gcc's C++ compiler (Debian: g++)")
        pytest.skip("no g++ on this machine")
    src = tmp_path / "use.cpp"
    src.write_text('#include "legmpc_client.h"\n#include <cstdio>\n'
                   "int main() {\n"
                   "    legmpc_client *c = legmpc_new();\n"
                   "    legmpc_options o = legmpc_options();\n"
                   "    o.connect_timeout_ms = 200;\n"
                   '    int r = legmpc_connect(c, "tcp://127.0.0.1:9", &o);\n'
                   '    std::printf("%s %d\\n", legmpc_code_name(r), LEGMPC_PROTOCOL_VERSION);\n'
                   "    legmpc_close(c);\n"
                   "    return 0;\n}\n")
    libs = subprocess.run(["pkg-config", "--libs", "libzmq"], capture_output=True, text=True).stdout.split() or ["-lzmq"]
    exe = tmp_path / "use"
    build = _run("g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{C_DIR}", src, built / "liblegmpc_client.a",
                 *libs, "-o", exe)
    assert build.returncode == 0, build.stderr
    out = _run(exe)
    assert out.stdout == f"LEGMPC_E_TIMEOUT {P.VERSION}\n", out.stdout + out.stderr


FAKE_CONFIG = {"protocol": P.VERSION, "robot": "fake", "nq": 4, "nv": 4, "nu": 2, "nc": 1, "q_names": ["x", "z", "hip", "knee"],
               "u_names": ["hip", "knee"], "contacts": ["foot"], "q_index": [2, 3], "v_index": [2, 3], "u_max": [60.0, 60.0],
               "q0": [0.0, 0.4, 0.1, -0.2], "mode": "lockstep", "control_rate_hz": 100.0, "plant_rate_hz": 1000.0,
               "deadline_s": 0.009, "hold_ticks": 3, "safe_kp": 0.0, "damping_kd": 1.0, "floating_base": False,
               "force_columns": ["normal", "x"]}


def _fake_plant(script) -> tuple[str, "threading.Thread", dict]:
    """A ROUTER on 127.0.0.1 that runs script(receive, send, out) in a thread against the first
    peer: receive() decodes the next message (P.decode, validating it), send(frames) answers."""
    import threading

    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 1000)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    out: dict = {"ident": None}

    def receive(dims=None):
        assert sock.poll(20000), "the C client sent nothing"
        ident, *frames = sock.recv_multipart()
        out["ident"] = ident
        return P.decode(frames, dims)

    def run():
        try:
            script(receive, lambda frames: sock.send_multipart([out["ident"], *frames]), out)
        except BaseException as exc:  # reported by the test
            out["failure"] = exc
        finally:
            sock.close()

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return f"tcp://127.0.0.1:{port}", th, out


def test_the_wire_bytes_against_a_scripted_plant(built):
    """A scripted plant checks the C client's HELLO, COMMAND and PLAN with bridge/protocol.py's
    decoder, feeds it two malformed STATEs (refused there, reported as local errors with the
    protocol's reasons), an ERROR (matched to the COMMAND) and BYE."""
    dims = P.Dims(4, 4, 2, 1, 2)
    good = [np.array([0.0, 0.4, 0.1, -0.2]), np.zeros(4), np.ones(1, np.uint8), np.array([[50.0, 1.0]]),
            np.zeros(1, np.uint8)]

    def script(receive, send, out):
        hello = receive()
        out["hello"] = (hello.type, hello.json())
        send(P.encode_json(P.CONFIG, 0, 0.0, FAKE_CONFIG))
        send(P.encode(P.STATE, 0, 0.0, [np.array([0.0, np.nan, 0.0, 0.0])] + good[1:]))  # non_finite
        send(P.encode(P.STATE, 0, 0.0, [np.zeros(3)] + good[1:]))  # shape
        send(P.encode(P.STATE, 0, 0.0, good, dims=dims))
        out["command"] = receive(dims)
        out["plan"] = receive(dims)
        send(P.encode_json(P.ERROR, 0, 0.0, {"reason": "value", "detail": "scripted"}))
        send(P.encode_json(P.BYE, 0, 0.0, {"reason": "scripted end"}))

    endpoint, th, out = _fake_plant(script)
    run = _run(built / "probe", "connect", endpoint, "-", "10000")
    th.join(20)
    assert "failure" not in out, out.get("failure")
    assert run.stdout.splitlines() == [
        "connect LEGMPC_OK ",
        "error non_finite answers 0 0 local 1 tick 0",
        "error shape answers 0 0 local 1 tick 0",
        f"error value answers {P.COMMAND} 0 local 0 tick 0",
        "end LEGMPC_EV_BYE bye 'scripted end' states 1 skipped 0 commands 1 errors 1",
    ], run.stdout + run.stderr
    assert out["hello"] == (P.HELLO, {"protocol": P.VERSION, "name": "probe"})
    cmd = out["command"]
    assert cmd.type == P.COMMAND and cmd.seq == 0
    np.testing.assert_array_equal(cmd.arrays["q_des"], [[0.1, -0.2]])  # q0's joints, by q_index
    np.testing.assert_array_equal(cmd.arrays["kp"], [40.0, 40.0])
    np.testing.assert_array_equal(cmd.arrays["tau_ff"], [[0.0, 0.0]])  # NULL arrays are zeros
    assert cmd.arrays["valid_until"].tolist() == [-1]
    plan = out["plan"]
    assert plan.type == P.PLAN and plan.arrays["x"].shape == (2, 8) and plan.arrays["u"].shape == (2, 2)


def test_a_plant_of_another_protocol_version_is_refused_with_a_clear_message(built):
    def script(receive, send, out):
        receive()
        head, *rest = P.encode_json(P.CONFIG, 0, 0.0, {**FAKE_CONFIG, "protocol": P.VERSION + 1})
        send([head[:4] + (P.VERSION + 1).to_bytes(2, "little") + head[6:], *rest])

    endpoint, th, out = _fake_plant(script)
    run = _run(built / "probe", "connect", endpoint, "-", "10000")
    th.join(20)
    assert "failure" not in out, out.get("failure")
    assert run.stdout.startswith(f"connect LEGMPC_E_PROTOCOL the plant's reply to HELLO cannot be read (version: the "
                                 f"plant speaks protocol version {P.VERSION + 1}, this client version {P.VERSION}"), run.stdout


def test_a_c_controller_is_refused_in_one_line_by_a_plant_sending_hardware_sensors(built, tmp_path):
    """The C client reads full state (its HELLO lists no sensor set); a plant sending the robot's
    own sensors refuses its HELLO with ERROR `sensors`, which the example prints and exits on."""
    plant = Plant(tmp_path, "go1", "--plant", "mujoco", "--mode", "lockstep", "--duration", "0.5",
                  "--sensors", "hardware")
    try:
        ctrl = _run(built / "go1_stand", plant.endpoint)
        assert ctrl.returncode != 0
        assert "refused HELLO: sensors: this plant sends the 'hardware' sensor set" in ctrl.stderr, ctrl.stderr
    finally:
        plant.proc.kill()
        plant.proc.wait(10)
