"""`bench incline`: does each plant's friction stick inside the Coulomb cone and slide at the
right acceleration outside it, at the plant's default settings?

Workload: box3d (1 kg, four corner spheres, mu 0.5: Coulomb sticks below atan(0.5) = 26.57 deg)
on a ground tilted by 10, 20, 25, 28, 30, 35 and 45 deg about a horizontal axis at 30 deg from x
(a tilted gravity, `robots.library.box3d`), released at rest, 1 s in `step(command, 0.01)`
calls. Below the critical angle the figure is the creep, the box's mean speed over the last
0.5 s (mm/s; Coulomb: 0). Above it, the slide error: the acceleration along the steepest
descent fitted over the last 0.5 s against g (sin a - mu cos a), in %. The planar ESS row is
the `block` robot (0.4 x 0.1 m, mu 0.5) on the same tilts (a gravity tilted in its plane).
"""
from __future__ import annotations

import math
import sys

import numpy as np

ANGLES_DEG = (10.0, 20.0, 25.0, 28.0, 30.0, 35.0, 45.0)
MU = 0.5
PERIOD = 0.01  # s per step() call
T_END = 1.0  # s
PLANTS_3D = ("ess", "nmdp", "mujoco")


def incline_figure(plant_name: str, model, tilt_deg: float, down: np.ndarray, position) -> dict:
    """Run `model` (box3d or block: params g, tilt_deg, one mu for every contact) released at rest
    on `plant_name` (default options) for T_END and return {"creep_mm_s": ...} below the
    critical angle or {"slide_error_pct": ...} above it (or {"violation": ...}).
    down: the unit steepest-descent direction in the position's coordinates; position(q) the
    body's position (2 or 3)."""
    from sim.protocol import JointCommand
    from sim.registry import make_plant

    plant = make_plant(plant_name, model)
    state = plant.reset(model.q0)
    n = int(round(T_END / PERIOD))
    xs = []
    for _ in range(n):
        state = plant.step(JointCommand.zero(model.nu), PERIOD)
        if state.violation:
            return {"violation": state.violation}
        xs.append(position(state.q))
    xs = np.array(xs)
    half = n // 2
    late = xs[half:] - xs[half - 1]
    t = np.arange(1, n - half + 1) * PERIOD
    a, mu = math.radians(tilt_deg), model.contacts[0].mu
    want = model.params["g"] * (math.sin(a) - mu * math.cos(a))
    if want <= 0.0:
        return {"creep_mm_s": float(np.linalg.norm(late[-1]) / t[-1] * 1e3)}
    accel = 2.0 * np.polyfit(t, late @ down, 2)[0]
    return {"slide_error_pct": float((accel / want - 1.0) * 100.0)}


def _rounded(figure: dict) -> dict:
    """`incline_figure`'s numbers to 4 decimals, for the report."""
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in figure.items()}


def bench_incline(args) -> dict:
    """Creep (mm/s) below the friction cone and slide error (%) above it, per plant and angle
    (module docstring)."""
    from robots import get_robot
    from robots.library.box3d import incline_gravity

    out: dict[str, dict] = {}
    for plant in PLANTS_3D:
        rows = {}
        for tilt in ANGLES_DEG:
            model = get_robot("box3d", tilt_deg=tilt, mu=MU)
            down = incline_gravity(9.81, tilt, 30.0)
            down[2] = 0.0
            down /= np.linalg.norm(down)
            rows[f"{tilt:g}"] = _rounded(incline_figure(plant, model, tilt, down, lambda q: q[:3].copy()))
        out[plant] = rows
        print(f"[incline] {plant} done", file=sys.stderr, flush=True)
    rows = {}
    for tilt in ANGLES_DEG:
        model = get_robot("block", tilt_deg=tilt, mu=MU, width=0.4, height=0.1)
        rows[f"{tilt:g}"] = _rounded(incline_figure("ess", model, tilt, np.array([-1.0, 0.0]), lambda q: q[:2].copy()))
    out["ess_planar_block"] = rows
    creep = {p: max((r["creep_mm_s"] for r in rows.values() if "creep_mm_s" in r), default=None)
             for p, rows in out.items()}
    slide = {p: max((abs(r["slide_error_pct"]) for r in rows.values() if "slide_error_pct" in r), default=None)
             for p, rows in out.items()}
    return {"mu": MU, "critical_deg": round(math.degrees(math.atan(MU)), 2), "angles_deg": list(ANGLES_DEG),
            "plants": out, "max_creep_mm_s": creep, "max_abs_slide_error_pct": slide}
