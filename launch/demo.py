"""`make demo` / `python -m launch demo`: the main job, as far as the project has come.

The closed-loop hopper (plant + MPC over the ZeroMQ bridge) is not built yet. Until it is,
the demo runs the foundation end to end and says so: the robot library, its compiled
functions, the MuJoCo cross-check of the exported models, a passive hopper drop in MuJoCo
compared with free fall, and an acados SQP-RTI solve.
"""
from __future__ import annotations

import math
import time

import numpy as np


def _mujoco_drop(model, drop: float) -> float:
    """Drop the exported MJCF from `drop` metres above touchdown; return the first contact time (s)."""
    import mujoco

    mj = mujoco.MjModel.from_xml_string(model.mjcf)
    data = mujoco.MjData(mj)
    data.qpos[:] = model.q0
    data.qpos[model.q_names.index("z")] += drop
    while data.time < 2.0:
        mujoco.mj_step(mj, data)
        if data.ncon > 0:
            return float(data.time)
    return math.nan


def _mujoco_max_mismatch(model, fns, n: int = 20) -> float:
    """Largest |M - M_mujoco| and |h - qfrc_bias| over n random states."""
    import mujoco

    mj = mujoco.MjModel.from_xml_string(model.mjcf)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    worst = 0.0
    full = np.zeros((mj.nv, mj.nv))
    for _ in range(n):
        q = model.q0 + rng.normal(scale=0.5, size=model.nq)
        v = rng.normal(size=model.nv)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(mj, data)
        mujoco.mj_fullM(mj, data, full)
        worst = max(worst, np.abs(fns.mass_matrix(q) - full).max(),
                    np.abs(fns.bias(q, v) - fns.passive(q, v) - data.qfrc_bias).max())
    return worst


def run_demo() -> int:
    """Run the foundation demo; print what ran and what is not built yet. Returns 0 on success."""
    from rich.console import Console
    from rich.table import Table

    from mpc.smoke import solve_double_integrator
    from robots import get_robot, numeric, robot_names

    con = Console()
    con.rule("legmpc demo")
    con.print("[bold yellow]The closed-loop hopper (plant + MPC over the bridge) is not built yet.[/] "
              "This demo runs what exists: the robot library, compiled dynamics, MuJoCo cross-check, acados.")
    table = Table(title="robot library: symbolic models -> compiled C (cached by content hash)")
    for col in ("robot", "nq", "nu", "contacts", "compiled", "M/h vs MuJoCo (max abs)"):
        table.add_column(col)
    for name in robot_names():
        model = get_robot(name)
        t0 = time.perf_counter()
        fns = numeric(model)
        took = time.perf_counter() - t0
        how = f"built in {fns.library.build_s:.2f} s" if fns.library.built_now else f"cache hit, {took * 1e3:.0f} ms"
        table.add_row(name, str(model.nq), str(model.nu), str(model.nc), how,
                      f"{_mujoco_max_mismatch(model, fns):.1e}")
    con.print(table)

    hopper = get_robot("hopper")
    drop = 0.1
    t_touch = _mujoco_drop(hopper, drop)
    t_free = math.sqrt(2 * drop / hopper.gravity)
    con.print(f"hopper (exported MJCF) dropped {drop} m in MuJoCo: first contact at {t_touch:.4f} s; "
              f"free fall predicts {t_free:.4f} s (the gap is MuJoCo's 1 ms step and sphere foot)")

    res = solve_double_integrator()
    con.print(f"acados SQP-RTI/HPIPM smoke OCP ({'compiled now' if res.built_now else 'cached solver'}): "
              f"status {res.status}, u0 = {res.u0:.3f}, {res.sqp_iters} RTI steps in {res.time_tot_s * 1e3:.2f} ms")
    con.print("[bold]Ran:[/] robot library + codegen + MuJoCo cross-check + acados smoke solve. "
              "[bold]Not yet:[/] plants (ESS/NMDP/hybrid), MPC, bridge - see `issues`.")
    return 0
