"""Monte Carlo sweeps (launch/sweep_spec.py, sweep_report.py, sweep.py) on a local Ray.

The two-node cluster (head + worker node, a killed worker) is tests/test_sweep_cluster.py."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.sweep_report import read_rows, summarize, wilson_interval, worker_gaps, write_plots
from launch.sweep_spec import SweepSpec, parse_set, parse_vary

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("ray")


def launch(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "launch", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)


def test_vary_gives_evenly_spaced_typed_values_and_short_names():
    assert parse_vary("push=0:4:3") == ("push_ns", [0.0, 2.0, 4.0])
    assert parse_vary("mass_scale=0.8:1.2:5") == ("mass_scale", [0.8, 0.9, 1.0, 1.1, 1.2])
    assert parse_vary("latency=0:4:3") == ("command_latency_ticks", [0, 2, 4])
    assert parse_vary("plant=ess,mujoco") == ("plant", ["ess", "mujoco"])
    assert parse_vary("friction_mu=none,0.5") == ("friction_mu", [None, 0.5])
    assert parse_set("sensor_noise_q=0.001") == ("sensor_noise_q", 0.001)


@pytest.mark.parametrize("arg, match", [
    ("foo=1:2:3", r"'foo' is not a scenario field\. Fields: robot, .*push_ns.*mass_scale"),
    ("seed=0:3:4", r"use --seeds K"),
    ("mode=lockstep,realtime", r"sweeps run lockstep"),
    ("latency=0:1:3", r"command_latency_ticks takes whole numbers; 0:1:3 gives 0.5"),
    ("plant=ess:nmdp:2", r"plant is text; list its values"),
    ("push=0:4", r"write FIELD=START:STOP:N|three parts"),
    ("push=0:4:zero", r"N \(the number of values\) must be a whole number"),
    ("push", r"write FIELD=START:STOP:N"),
])
def test_bad_vary_arguments_name_the_field_and_the_fix(arg, match):
    with pytest.raises(ValueError, match=match):
        parse_vary(arg)


def test_episodes_are_the_product_times_the_seeds_and_every_one_is_checked_up_front():
    spec = SweepSpec.from_args("hopper", ["push=0:4:3", "mass_scale=0.9:1.1:2"], seeds=2, duration_s=3.0)
    assert spec.episodes == 12
    assert spec.values(0) == {"push_ns": 0.0, "mass_scale": 0.9, "seed": 0}
    assert spec.values(3) == {"push_ns": 0.0, "mass_scale": 1.1, "seed": 1}
    assert spec.values(11) == {"push_ns": 4.0, "mass_scale": 1.1, "seed": 1}
    sc = spec.scenario(9)
    assert (sc.push_ns, sc.mass_scale, sc.seed, sc.duration_s, sc.name) == (4.0, 0.9, 1, 3.0, "hopper")
    assert SweepSpec.from_json(json.loads(json.dumps(spec.to_json()))).scenario(9) == sc
    with pytest.raises(ValueError, match="episode 12 is not in this sweep"):
        spec.values(12)
    with pytest.raises(ValueError, match="the episodes with push_ns=200.0: .*push_ns must be an impulse"):
        SweepSpec.from_args("hopper", ["push=0:200:2"])
    with pytest.raises(ValueError, match="sweeps run lockstep"):
        SweepSpec.from_args("hopper-realtime", ["push=0:1:2"])


def test_wilson_interval_matches_the_textbook_values():
    lo, hi = wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775
    assert wilson_interval(20, 20)[1] == 1.0 and wilson_interval(0, 0) is None
    assert all(wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0 for n in range(1, 200))


def _row(k, push, success):
    return {"episode": k, "push_ns": push, "mass_scale": 1.0, "seed": 0, "success": success, "fell": not success,
            "plant_violation": "", "error": "", "misses": 0, "solve_p99_ms": 1.0 + k, "wall_s": 0.1, "host": "h",
            "node_id": "n", "pid": 1}


def test_journal_rows_come_back_typed_and_a_cut_short_line_is_skipped(tmp_path):
    names = ["episode", "push_ns", "seed", "success", "fell", "plant_violation", "error", "misses", "solve_p99_ms",
             "wall_s", "host", "node_id", "pid"]
    with open(tmp_path / "episodes.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names, extrasaction="ignore")
        w.writeheader()
        for k in range(3):
            w.writerow(_row(k, 2.0 * k, k != 1))
        w.writerow(_row(0, 0.0, False))  # a duplicate: the first row counts
        fh.write("4,8.0,0,Tr")  # a driver killed mid-line
    rows = read_rows(tmp_path)
    assert [r["episode"] for r in rows] == [0, 1, 2]
    assert rows[1] == {**{k: v for k, v in _row(1, 2.0, False).items() if k in names}}


def test_summary_gives_rates_per_value_and_plots_are_drawn(tmp_path):
    rows = [_row(k, float(k % 3), k % 3 != 2) for k in range(12)]
    for r in rows:
        r["mass_scale"] = 0.9 if r["episode"] < 6 else 1.1
    vary = {"push_ns": [0.0, 1.0, 2.0], "mass_scale": [0.9, 1.1]}
    s = summarize(rows, vary, planned=14)
    assert (s["episodes_completed"], s["episodes_missing"], s["successes"]) == (12, 2, 8)
    assert s["success_rate"] == pytest.approx(8 / 12)
    assert [v["successes"] for v in s["by_field"]["push_ns"]] == [4, 4, 0]
    assert s["by_field"]["push_ns"][2]["ci95"][0] == 0.0
    names = {p.name for p in write_plots(tmp_path, rows, vary, deadline_ms=10.0)}
    assert names == {"success_vs_push_ns.png", "success_vs_mass_scale.png", "success_push_ns_mass_scale.png",
                     "solve_p99.png"}
    # 0 of 3: the Wilson lower bound rounds to 5.5e-17, above the rate (matplotlib refused the error bar)
    assert write_plots(tmp_path, [_row(k, 0.0, False) for k in range(3)], {"push_ns": [0.0]})


def test_unknown_field_on_the_command_line_is_refused_before_ray_starts(tmp_path):
    out = launch("sweep", "hopper", "--vary", "pushh=0:1:2", cwd=tmp_path, timeout=120)
    assert out.returncode == 1
    assert "'pushh' is not a scenario field" in out.stderr and "push_ns" in out.stderr
    assert not (tmp_path / "runs").exists()
    out = launch("sweep", "hopper", "--vary", "push=0:1:2", "--workers", "2", "--address", "auto", cwd=tmp_path,
                 timeout=120)
    assert out.returncode == 1 and "drop --workers" in out.stderr
    out = launch("run", "hopper", "--set", "mass=2", cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "--set mass=2: 'mass' is not a scenario field" in out.stderr


def test_local_sweep_writes_its_folder_and_an_episode_replays_identically_over_the_bridge(tmp_path):
    out = launch("sweep", "hopper", "--vary", "push=0:3:2", "--seeds", "2", "--duration", "1", "--workers", "2",
                 "--set", "sensor_noise_q=0.0005", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["episodes_completed"] == 4 and summary["success_rate"] is not None
    folder = tmp_path / summary["sweep_dir"]
    assert {"sweep.json", "episodes.csv", "episodes.parquet", "summary.json", "success_vs_push_ns.png",
            "solve_p99.png"} <= {p.name for p in folder.iterdir()}
    meta = json.loads((folder / "sweep.json").read_text())
    assert meta["spec"]["vary"] == {"push_ns": [0.0, 3.0]} and meta["versions"]["ray"]
    rows = read_rows(folder)
    assert sorted(r["episode"] for r in rows) == [0, 1, 2, 3]
    from launch.sweep import code_version

    assert summary["code_versions"] == [code_version()]  # the workers ran this checkout
    import pyarrow.parquet as pq

    table = pq.read_table(folder / "episodes.parquet")
    assert table.num_rows == 4 and {"push_ns", "seed", "fell", "solve_p99_ms", "host"} <= set(table.column_names)
    # episode 3 (push 3 N s, seed 1, sensor noise) replayed alone over the bridge: the same floats
    replay = launch("run", "--from-sweep", str(folder), "--episode", "3", "--json", "--no-animation", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    run = json.loads(replay.stdout)
    row = next(r for r in rows if r["episode"] == 3)
    assert run["push_ns"] == 3.0 and run["fell"] == row["fell"]
    assert run["vx_mps"]["mean"] == row["vx_mps"] and run["apex_height_m"]["mean"] == row["apex_height_m"]
    bad = launch("run", "hopper", "--from-sweep", str(folder), "--episode", "3", cwd=tmp_path, timeout=120)
    assert bad.returncode == 1 and "drop SCENARIO" in bad.stderr


def test_ctrl_c_keeps_finished_rows_and_resume_runs_only_the_missing_ones(tmp_path, slow_hopper):
    toml = slow_hopper
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "launch", "sweep", str(toml), "--vary", "push=0:1:3", "--seeds",
                             "2", "--duration", "0.5", "--workers", "1", "--json"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    journal = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((tmp_path / "runs").glob("*-sweep-slow-hopper/episodes.csv"))
        if found and len(found[0].read_text().splitlines()) >= 3:  # header + 2 rows
            journal = found[0]
            break
        time.sleep(0.2)
    assert journal is not None, proc.communicate()[1][-2000:]
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[:2000] + "\n...\n" + stderr[-1000:]
    summary = json.loads(stdout)
    done = summary["episodes_completed"]
    assert summary["interrupted"] and 2 <= done < 6, (done, stderr[-2000:])
    assert "--resume" in stderr
    folder = journal.parent
    out = launch("sweep", "--resume", str(folder), "--workers", "1", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["episodes_completed"] == 6
    meta = json.loads((folder / "sweep.json").read_text())
    assert [i["episodes_run"] for i in meta["invocations"]] == [done, 6 - done]
    episodes = [int(line.split(",")[0]) for line in journal.read_text().splitlines()[1:] if line]
    assert sorted(episodes) == list(range(6)), "every episode exactly once"


def test_worker_gaps_are_the_idle_time_between_episodes_of_one_worker():
    rows = [{"host": "h", "pid": 1, "started_unix_s": 100.0, "warmup_s": 1.0, "wall_s": 2.0},
            {"host": "h", "pid": 1, "started_unix_s": 103.01, "warmup_s": 0.0, "wall_s": 2.0},
            {"host": "h", "pid": 2, "started_unix_s": 100.5, "warmup_s": 0.0, "wall_s": 1.0},
            {"host": "h", "pid": 1, "started_unix_s": 105.03, "warmup_s": 0.0, "wall_s": 1.0}]
    assert worker_gaps(rows) == pytest.approx([0.01, 0.02])


def test_one_controller_option_can_be_set_and_varied():
    """Issue 44: `--set vx=0.4` and `--set controller_options.vx=0.4` were refused; sweeps could
    not vary a controller option."""
    from launch.scenario import load_scenario
    from launch.sweep_spec import SweepSpec, apply_changes, parse_set

    sc = apply_changes(load_scenario("go1"), dict([parse_set("controller_options.vy=0.2")])).validate()
    assert sc.controller_options == {"vx": 0.5, "period": 0.4, "vy": 0.2}
    spec = SweepSpec.from_args("go1", ["controller_options.vx=0.3:0.5:3"])
    assert [spec.scenario(k).controller_options["vx"] for k in range(spec.episodes)] == [0.3, 0.4, 0.5]
    with pytest.raises(ValueError, match="unknown mpc options"):
        apply_changes(load_scenario("go1"), dict([parse_set("controller_options.vxx=1")])).validate()
    with pytest.raises(ValueError, match="task vx must be"):
        SweepSpec.from_args("go1", ["controller_options.vx=0.5:2.5:2"])
