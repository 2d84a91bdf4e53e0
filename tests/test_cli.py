"""The command line: `python -m launch` as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launch", *args], capture_output=True, text=True, timeout=300)


def test_help_lists_commands():
    out = run("--help")
    assert out.returncode == 0
    for cmd in ("robots", "demo", "bench"):
        assert cmd in out.stdout


def test_robots_json_lists_the_planar_and_3d_robots():
    out = run("robots", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["name"] for r in rows if r["dim"] == 3} == {"go1", "a1", "solo12", "go2", "anymal_c", "box3d"}
    table = {r["name"]: (r["nq"], r["nv"], r["nu"], r["ncontacts"]) for r in rows}
    assert table == {
        "point_mass": (1, 1, 1, 1),
        "hopper1d": (1, 1, 0, 1),
        "plate_springs": (3, 3, 0, 4),
        "hopper": (4, 4, 2, 1),
        "quadruped": (11, 11, 8, 4),
        "go1": (19, 18, 12, 4),
        "a1": (19, 18, 12, 4),
        "solo12": (19, 18, 12, 4),
        "go2": (19, 18, 12, 4),
        "anymal_c": (19, 18, 12, 4),
        "box3d": (7, 6, 0, 4),
        "block": (3, 3, 0, 2),
    }


def test_robots_table_is_human_readable():
    out = run("robots")
    assert out.returncode == 0 and "quadruped" in out.stdout and "ncontacts" in out.stdout


@pytest.mark.parametrize("args", [("bench", "no-such-bench"), ("no-such-command",)])
def test_bad_command_line_fails_with_a_message(args):
    out = run(*args)
    assert out.returncode != 0
    assert "no-such" in out.stderr


@pytest.mark.parametrize("changes, match", [
    ({"push_ns": 1.0, "push_axis": "w"}, "push_axis must be one of"),
    ({"push_ns": 1.0, "push_axis": "y"}, "hopper is planar"),
    ({"push_ns": 1.0, "push_at_s": 12.0}, "push_at_s must be inside the run"),
    ({"push_ns": 500.0}, "push_ns must be an impulse"),
])
def test_bad_push_settings_are_named(changes, match):
    from launch.scenario import load_scenario

    with pytest.raises(ValueError, match=match):
        load_scenario("hopper").with_overrides(**changes).validate()


def test_push_velocity_axes():
    import numpy as np

    from robots import get_robot
    from sim.protocol import pushed_velocity

    m = get_robot("hopper")
    v0 = np.zeros(m.nv)
    vx = pushed_velocity(m, m.q0, v0, 1.0)
    vz = pushed_velocity(m, m.q0, v0, 1.0, "z")
    assert vx[m.q_names.index("x")] > 0 and vz[m.q_names.index("z")] > 0
    with pytest.raises(ValueError, match="push axis"):
        pushed_velocity(m, m.q0, v0, 1.0, "pitch")
    with pytest.raises(ValueError, match="base coordinate 'x'"):
        pushed_velocity(get_robot("hopper1d"), np.array([0.5]), np.zeros(1), 1.0)


def test_the_controller_waits_for_a_written_endpoint(tmp_path):
    """The plant writes folder/endpoint atomically; the controller also treats an empty file as
    not yet written (the demo once failed connecting to '')."""
    import threading
    import time

    from launch.child import wait_for_endpoint

    (tmp_path / "endpoint").write_text("")
    threading.Timer(0.2, lambda: (tmp_path / "endpoint").write_text("tcp://127.0.0.1:5555\n")).start()
    t0 = time.monotonic()
    assert wait_for_endpoint(tmp_path, timeout_s=5.0) == "tcp://127.0.0.1:5555"
    assert time.monotonic() - t0 >= 0.15
    assert wait_for_endpoint(tmp_path / "nowhere", timeout_s=0.1) == ""


def test_a_run_that_ended_before_its_first_tick_is_reported_not_crashed(tmp_path, synthetic_run):
    """An empty trajectory (the controller failed at once): no plots, clear errors for the
    animation and the MCAP, and the run counts as failed when a process exited with an error."""
    import numpy as np

    from launch.animate import render
    from launch.plots import write_plots
    from launch.runfolder import run_failure

    np.savez(synthetic_run / "trajectory.npz", t=np.zeros(0), q=np.zeros(0), v=np.zeros(0), tau=np.zeros(0),
             contact=np.zeros(0), force=np.zeros(0), q_names=np.array(["x"]), u_names=np.array(["u"]))
    assert write_plots(synthetic_run) == []
    with pytest.raises(ValueError, match="trajectory is empty"):
        render(synthetic_run)
    assert "a process of the run failed" in run_failure({"exit_codes": [0, 1], "interrupted": False,
                                                         "run_dir": str(synthetic_run)})
    assert run_failure({"exit_codes": [0, 0], "interrupted": False, "run_dir": "x"}) == ""
    assert "plant ended the run" in run_failure({"plant_violation": "gap", "end_reason": "gap at t=1",
                                                 "exit_codes": [0, 0]})


def test_holes_metrics_count_holes_the_foot_landed_beyond(tmp_path):
    """hopper-holes summary: a hole counts as cleared when the foot touched the ground beyond it
    before falling into any hole; a base already past a hole whose opening the trailing foot
    lands in does not clear it. final_x_m is the base's last x."""
    import numpy as np

    from launch.runfolder import holes_metrics
    from mpc.wholebody.terrain import HoleTerrain
    from robots import get_robot

    model = get_robot("hopper")

    def folder(rows):  # rows: (base x, hip angle, foot in contact)
        q = np.array([[x, 0.4, hip, 0.0] for x, hip, _ in rows])
        contact = np.array([[c] for _, _, c in rows])
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        path.mkdir()
        np.savez(path / "trajectory.npz", t=0.01 * np.arange(len(rows)), q=q, v=np.zeros_like(q),
                 tau=np.zeros((len(rows), 2)), contact=contact, force=np.zeros((len(rows), 1, 2)),
                 q_names=np.array(model.q_names), u_names=np.array(model.u_names))
        return path

    hop = [(0.4, 0.0, False), (0.6, 0.0, False)]
    good = folder([(0.0, 0.0, True), *hop, (0.95, 0.0, True), (1.4, 0.0, False), (1.95, 0.0, True),
                   (2.4, 0.0, False), (2.95, 0.0, True)])
    m = holes_metrics(good, model, HoleTerrain())
    assert (m["holes_cleared"], m["foot_in_hole"], m["t_first_in_hole"]) == (3, False, None)
    assert m["final_x_m"] == 2.95 and "final_x" not in m
    # the base flies past hole 2 (x = 1.8 > 1.75), the foot lands 0.23 m behind it, in the opening
    trailing = folder([(0.0, 0.0, True), *hop, (0.95, 0.0, True), (1.4, 0.0, False), (1.8, 0.6, True),
                       (1.8, 0.6, True)])
    m = holes_metrics(trailing, model, HoleTerrain())
    assert (m["holes_cleared"], m["foot_in_hole"], m["t_first_in_hole"]) == (1, True, 0.05)
    assert m["final_x_m"] == 1.8


def test_rt_priority_is_checked():
    """Scenario.rt_priority is an integer in [0, 99]; anything else is refused naming the field."""
    from launch.scenario import load_scenario

    sc = load_scenario("go1")
    assert sc.rt_priority == 50
    for bad in (-1, 100, 2.5, True, "50"):
        with pytest.raises(ValueError, match="rt_priority"):
            sc.with_overrides(rt_priority=bad).validate()


def test_setup_step_shows_the_controllers_last_setup_line(tmp_path):
    """While the controller sets up (gait optimization, solver build), the progress bar shows its
    log's last "[...]" line; nothing before the log exists."""
    from launch.run import setup_step

    log = tmp_path / "controller.log"
    assert setup_step(log) == ""
    log.write_text("acados chatter\n[gait3d] solving the periodic go1 gait\n[gait3d]   sigma x100: ok\nother\n")
    assert setup_step(log) == "[gait3d]   sigma x100: ok"
    log.write_text("x" * 10000 + "\n[acados] generating and compiling solver\n")
    assert setup_step(log) == "[acados] generating and compiling solver"


def test_endpoint_mistakes_get_one_line_errors(capsys):
    """serve-plant with an endpoint that names no transport, or with a port another process holds,
    says so in one line (exit 1), not with a traceback."""
    import zmq

    from launch.cli import main

    assert main(["serve-plant", "hopper", "--bind", "127.0.0.1:5558", "--duration", "0.1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: endpoint '127.0.0.1:5558' names no transport: write tcp://127.0.0.1:5558 (or ipc://PATH)"
    holder = zmq.Context.instance().socket(zmq.ROUTER)
    holder.setsockopt(zmq.LINGER, 0)
    port = holder.bind_to_random_port("tcp://127.0.0.1")
    try:
        assert main(["serve-plant", "hopper", "--bind", f"tcp://127.0.0.1:{port}", "--duration", "0.1"]) == 1
        err = capsys.readouterr().err.strip().splitlines()  # the "serving ..." banner, then the error
        assert "Traceback" not in "\n".join(err) and [e for e in err if e.startswith("error:")] == err[-1:]
        assert err[-1].startswith(f"error: cannot bind tcp://127.0.0.1:{port}: Address already in use")
        assert "another process holds that port" in err[-1]
    finally:
        holder.close()


def test_ctrl_c_ends_a_run_with_exit_code_130(tmp_path):
    """SIGINT during a realtime run: the run folder keeps what ran, the terminal says where the run
    was interrupted, and the exit code is 130 (it was 0, as if the run had finished)."""
    import os
    import signal
    import time
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "launch", "run", "hopper-pd", "--duration", "30", "--mode",
                             "realtime", "--no-animation"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("runs/*/progress.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted at t = " in err and "of 30 s" in err, err
    summary = json.loads(next(tmp_path.glob("runs/*/summary.json")).read_text())
    assert summary["interrupted"] is True and summary["ticks"] > 0


def test_small_mistakes_on_the_command_line_are_named(capsys, tmp_path, monkeypatch):
    """A misspelt --set field gets a "did you mean"; --push-at without a push is refused; a run with
    another robot or plant than its scenario's is filed under a folder that says so."""
    from launch.cli import main
    from launch.run import folder_label
    from launch.scenario import load_scenario

    monkeypatch.chdir(tmp_path)
    assert main(["run", "hopper", "--set", "mas_scale=1.2", "--duration", "0.1"]) == 1
    assert "Did you mean 'mass_scale'?" in capsys.readouterr().err
    assert main(["run", "hopper", "--push-at", "1", "--duration", "0.1"]) == 1
    assert "--push-at 1 times a push, but the run has none: add --push N" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    base = load_scenario("go1")
    assert folder_label(base.with_overrides(robot="anymal_c", plant="mujoco"), base) == "go1-anymal_c-mujoco"
    assert folder_label(base, base) == "go1"


def _summary(run_dir, **fields) -> dict:
    base = {"ticks": 100, "rate_hz": 100.0, "fell": False, "misses": 2, "misses_by_cause": {
        "host": 1, "controller": 0, "solver": 1, "transport": 0, "unattributed": 0}, "mode": "lockstep",
        "vx_mps": {"mean": 0.48, "target": 0.5}, "vy_mps": {"mean": None, "target": None},
        "yaw_rate_radps": {"mean": None, "target": None}, "apex_height_m": {"mean": 0.44, "target": 0.45},
        "push_ns": 3.0, "push_axis": "x", "push_at_s": 2.5, "rejected": {}, "interrupted": False,
        "exit_codes": [0, 0], "plant_violation": "", "run_dir": str(run_dir)}
    return {**base, **fields}


@pytest.mark.parametrize("fell, code, outcome", [(False, 0, "done"), (True, 1, "FELL")])
def test_run_ends_with_a_verdict_and_an_exit_code_that_means_it(synthetic_run, monkeypatch, capsys, fell, code,
                                                                outcome):
    """Issue 44: `launch run` printed the table and "fell: False" but not whether the robot did its
    task, and exited 0 after a fall."""
    import launch.cli as cli
    import launch.run as run_module

    monkeypatch.setattr(run_module, "run", lambda sc, **kw: _summary(synthetic_run, fell=fell))
    assert cli.main(["run", "hopper", "--no-animation"]) == code
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (f"verdict: {outcome}: vx 0.480 m/s (target 0.5); apex height 0.440 m (target 0.45); push 3 N s "
                    f"along x at 2.5 s: {'fell' if fell else 'stood'}; 2 misses of 100 ticks (host 1, solver 1)")


def test_a_refused_realtime_priority_is_recorded_and_printed(tmp_path, monkeypatch):
    """Issue 44: without the capability, `--set rt_priority=50` ran under the normal scheduler
    and only the processes' logs said so."""
    import launch.child as child
    from launch.runfolder import outcome_line
    from launch.scenario import Scenario

    monkeypatch.setattr(child, "request_fifo", lambda priority: "[Errno 1] Operation not permitted")
    sc = Scenario(name="rt", robot="hopper", mode="realtime", rt_priority=50)
    child.realtime_priority(sc, "plant", tmp_path)
    got = json.loads((tmp_path / "sched_plant.json").read_text())
    assert got == {"requested": 50, "granted": False, "refused": "[Errno 1] Operation not permitted"}
    line = outcome_line({**_summary(tmp_path), "rt_priority": {"plant": got}})
    assert line.endswith("rt_priority refused (the normal scheduler ran instead): plant: [Errno 1] Operation not "
                         "permitted")


def test_launch_scenarios_lists_every_scenario_and_field_and_the_doc_is_its_output():
    """Issue 44: no list of scenarios and their fields; the doc is generated, so it cannot drift."""
    import dataclasses

    from launch import scenario_table
    from launch.scenario import Scenario, scenario_names

    rows = json.loads(scenario_table.as_json())
    assert [r["scenario"] for r in rows["scenarios"]] == scenario_names()
    assert [r["field"] for r in rows["fields"]] == [f.name for f in dataclasses.fields(Scenario)]
    doc = (Path(__file__).parent.parent / "docs" / "SCENARIOS.md").read_text()
    assert doc == scenario_table.markdown(), "regenerate: python -m launch scenarios --markdown > docs/SCENARIOS.md"


def test_your_own_controller_by_import_path_gets_the_full_run_folder(tmp_path):
    """Issue 44: `--controller mymod:MyCtrl` was refused ("available: pd, mpc")."""
    import os

    root = Path(__file__).parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}  # the module importable, the run folder under tmp_path
    out = subprocess.run([sys.executable, "-m", "launch", "run", "hopper-pd", "--controller",
                          "examples.my_controller:make", "--duration", "0.5", "--no-animation", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["controller"] == "examples.my_controller:make" and summary["ticks"] == 50
    assert not summary["fell"] and summary["misses"] == 0
    folder = Path(summary["run_dir"]) if Path(summary["run_dir"]).is_absolute() else tmp_path / summary["run_dir"]
    assert {"controller_ticks.csv", "trajectory.npz", "latency.png", "run.mcap"} <= {p.name for p in folder.iterdir()}
    bad = subprocess.run([sys.executable, "-m", "launch", "run", "hopper-pd", "--controller", "examples.nope:make"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "cannot import 'examples.nope'" in bad.stderr


def test_a_busy_live_port_is_one_line_and_leaves_no_run_folder(tmp_path):
    """Issue 44: a busy --live-port gave a bare FoxgloveError and a stub run folder."""
    import socket

    from launch.run import run
    from launch.scenario import load_scenario

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ValueError, match=f"--live-port {port}: another process holds that port"):
            run(load_scenario("hopper-pd"), runs_dir=tmp_path, progress=False, live_port=port)
    assert not any(tmp_path.iterdir())


def test_profile_columns_say_what_each_run_ran(synthetic_run):
    """Issue 44: `profile --compare` could not tell the runs' robot, plant or mode apart."""
    from launch.profile import profile_rows

    rows = dict(profile_rows(synthetic_run))
    assert [rows[k] for k in ("scenario", "robot", "plant", "controller")] == ["synthetic", "hopper", "ess", "pd"]


@pytest.mark.parametrize("edit, message", [
    (("vx = 0.5", "vx = 2.0"), "[controller_options] task vx must be a number in [-1.5, 1.5], got 2.0"),
    (("vx = 0.5", 'vx = "fast"'), "[controller_options] task vx must be a number in [-1.5, 1.5], got 'fast'"),
    (("vx = 0.5", "vxx = 0.5"), "unknown mpc options ['vxx'] for a 3D robot (from the scenario); did you mean 'vx'?"),
    (("duration_s = 10.0", 'duration_s = "3"'),
     "duration_s must be a finite number (s), got '3': write it without quotes"),
    (("duration_s = 10.0", "duraton_s = 3"), "unknown field 'duraton_s'; did you mean 'duration_s'?"),
    (('robot = "go1"', "robot = 3"), "robot must be a name in quotes, got 3"),
    (("[controller_options]", "[plant_options]\nslip_sped = 0.01\n[controller_options]"),
     "[plant_options] plant 'ess' has no option 'slip_sped'; did you mean 'slip_speed'?"),
    (("hold_ticks = 3", "hold_ticks = 2.5"), "hold_ticks must be a whole number (ticks), got 2.5"),
])
def test_a_bad_scenario_file_is_one_line_naming_file_and_field_before_any_process(tmp_path, monkeypatch, capsys,
                                                                                    edit, message):
    """Issue 44, item 4: each of these crashed a child process, or named no field, and left a stub
    run folder. Now `launch run` refuses the file in one line (file, field, fix), exit code 1, and
    makes no run folder."""
    from launch.cli import main
    from launch.scenario import SCENARIO_DIR

    text = (SCENARIO_DIR / "go1.toml").read_text()
    assert edit[0] in text
    path = tmp_path / "mine.toml"
    path.write_text(text.replace(edit[0], edit[1]))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--duration", "0.1", "--no-animation"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {path}: ") and message in err, err
    assert not (tmp_path / "runs").exists()


def test_plots_mark_targets_push_fall_and_name_the_feet(synthetic_run, monkeypatch):
    """Issue 44, item 11: trajectory.png draws the task's targets, the push and the fall, names each
    foot, and gives every joint its own colour; phases.png nests acados's timers in their call."""
    import json

    import matplotlib.figure
    import numpy as np

    from launch.plots import phase_tree, write_plots

    with np.load(synthetic_run / "trajectory.npz") as data:
        traj = {k: data[k] for k in data.files}
    traj["q"][60:, 1] = 0.05  # the base drops below half its height at t = 0.6 s: it fell there
    np.savez(synthetic_run / "trajectory.npz", **traj)
    (synthetic_run / "summary.json").write_text(json.dumps({
        "vx_mps": {"mean": 0.5, "target": 0.3}, "apex_height_m": {"mean": 0.4, "target": 0.45},
        "push_ns": 3.0, "push_axis": "x", "push_at_s": 0.3}))
    (synthetic_run / "plant_summary.json").write_text(json.dumps({"deadline_ms": 9.0, "misses": 1, "ticks": 101}))
    (synthetic_run / "controller_ticks.csv").write_text(
        "tick,tick_ms,feedback_ms,fb_tot_ms,fb_qp_ms,prepare_ms\n" +
        "".join(f"{k},2,1.5,1.2,1.0,0.4\n" for k in range(5)))
    labels, colours = [], []
    save = matplotlib.figure.Figure.savefig

    def spy(fig, path, **kw):
        for ax in fig.axes:
            labels.extend(line.get_label() for line in ax.get_lines())
            if ax.get_ylabel() == "angles (rad)":
                colours.extend(str(line.get_color()) for line in ax.get_lines())
        return save(fig, path, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    names = {p.name for p in write_plots(synthetic_run)}
    assert names == {"trajectory.png", "latency.png", "phases.png"}
    for label in ("forward target", "apex height target", "push 3 N s along x", "fell at 0.60 s", "foot"):
        assert label in labels, (label, labels)
    assert "contact 0 normal" not in labels
    assert len(colours) == len(set(colours)) >= 2
    assert phase_tree(["feedback", "fb_tot", "fb_qp", "wholebody", "prepare"]) == [
        ("feedback", 0, None), ("fb_tot", 1, "feedback"), ("fb_qp", 2, "fb_tot"), ("wholebody", 0, None),
        ("prepare", 0, None)]


def test_bench_results_print_as_aligned_text_not_python_dicts():
    """Issue 44, item 13: `bench host-latency` printed raw dicts; nested results are flattened and a
    list of dicts is a table."""
    from launch.cli import result_lines

    lines = result_lines({"seconds": 2.0, "late": {"p50": 90.00172, "max": 2052.37},
                          "cpus": [{"cpu": 0, "late_us": {"p99": 101.7427}}, {"cpu": 1, "late_us": {"p99": 166.1}}]})
    assert lines[0].split() == ["seconds", "2"] and lines[1].split() == ["late.p50", "90"]
    assert lines[3] == "cpus:" and lines[4].split() == ["cpu", "late_us.p99"]
    assert lines[5].split() == ["0", "101.7"] and lines[6].split() == ["1", "166.1"]
    assert not any("{" in line for line in lines)


def test_progress_without_a_terminal_is_plain_lines():
    """Issue 44, item 13: set-up printed nothing when stdout was not a terminal (CI, `| tee`)."""
    import io

    from launch.run import RunProgress
    from launch.scenario import load_scenario

    out = io.StringIO()
    bar = RunProgress(load_scenario("hopper").with_overrides(duration_s=2.0), out=out)
    for step in ("[acados] building", "[acados] building", "[gait] solving"):
        bar.setup(step)
    for t in (0.0, 0.05, 0.2, 0.25, 1.0, 2.0):
        bar.running(t, 1)
    bar.stop()
    assert out.getvalue().splitlines() == [
        "[run] hopper (lockstep, 2 s): starting", "[run] set-up: [acados] building", "[run] set-up: [gait] solving",
        "[run] t = 0.0 s of 2 s, 1 misses", "[run] t = 0.2 s of 2 s, 1 misses", "[run] t = 1.0 s of 2 s, 1 misses",
        "[run] t = 2.0 s of 2 s, 1 misses"]


def test_the_legmpc_console_script_is_python_m_launch():
    """Issue 44, item 13: `legmpc` equals `python -m launch` (pyproject.toml [project.scripts])."""
    import tomllib
    from importlib.metadata import entry_points

    root = Path(__file__).resolve().parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert declared == {"legmpc": "launch.cli:main"}
    installed = [e for e in entry_points(group="console_scripts") if e.name == "legmpc"]
    assert installed and installed[0].value == "launch.cli:main", "reinstall: make install (pip install -e .)"
    script = Path(sys.executable).parent / "legmpc"
    out = subprocess.run([str(script), "scenarios", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == json.loads(run("scenarios", "--json").stdout)


def test_bench_robot_option_is_checked_before_any_work():
    """`bench plant3d --robot NAME` runs another 3D robot; a planar or unknown robot, or --robot on a
    benchmark without one, is a clear error (exit 2) naming what to pass."""
    planar = run("bench", "plant3d", "--robot", "hopper")
    assert planar.returncode == 2 and "not a 3D robot" in planar.stderr and "anymal_c" in planar.stderr
    unknown = run("bench", "plant3d", "--robot", "nosuch")
    assert unknown.returncode == 2 and "unknown robot 'nosuch'" in unknown.stderr
    other = run("bench", "incline", "--robot", "go1")
    assert other.returncode == 2 and "does not take --robot" in other.stderr
