"""The hopper-holes plan by continuation in the terrain's scale (issue 8, docs/PLANNING.md).

Why: from a straight-line or trivial guess the sigma homotopy on the full three-hole task
stalls (sessions 8-13). What converges from a straight-line guess is a single hop over one
small hole. So the full task is reached in three stages, every NLP solved by the same sigma
homotopy (`solve_plan`), no contact sequence or timing given to any of them:

1. Tiles: the task is cut into one piece per hole (the control intervals split as evenly as
   possible, 7 + 7 + 6 for N = 20), each a hop from rest over one hole of the task shrunk by
   `scales[0]` (and narrowed by `margin`), solved from the straight-line guess.
2. The tiles' primal vectors are laid end to end (`solve.tile_primal`): the shrunk three-hole
   task's starting point, with each tile's foot x, clock and cost shifted by the tiles before.
3. The three-hole task, grown through `scales` (holes, their spacing and the target scaled
   about the start x), is re-solved from the last solution at each scale, sigma from
   `step_options`' sigma_0 (1e-2) down to comp_tol (1e-6, the issue's figure); a last step
   removes the margin (the issue's holes).
   A step that fails is retried from the midpoint (at most `max_halvings` midpoints per
   scheduled scale).

    result = solve_by_terrain_scale(HopperTask(), progress=print)  # result.plan, result.scale, ...
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .hopper_holes import HopperTask, hopper_holes_ocp, hopper_options
from .solve import Plan, solve_plan, tile_primal

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ScaleSchedule:
    """How the terrain grows. scales: increasing factors ending at 1; margin: m by which every
    hole's horizontal semi-axis is narrowed until the final step (which uses the task's holes);
    tile_options / step_options: `hopper_options` overrides for the tiles (from the straight-line
    guess) and for the steps (from the previous solution, sigma starting at sigma_0; a step ends
    at its first failed NLP, so that a step too long is soon retried shorter)."""

    scales: tuple[float, ...] = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
    margin: float = 0.05
    max_halvings: int = 2
    tile_options: tuple[tuple[str, object], ...] = (
        ("init", "interpolate"), ("sigma_0", 10.0), ("homotopy_slope", 0.5), ("superlinear", False),
        ("first_nlp_max_iter", None), ("ipopt_max_iter", 1500), ("max_homotopy", 25), ("comp_tol", 1e-6))
    step_options: tuple[tuple[str, object], ...] = (
        ("sigma_0", 1e-2), ("homotopy_slope", 0.5), ("superlinear", False), ("first_nlp_max_iter", None),
        ("ipopt_max_iter", 1500), ("max_homotopy", 40), ("comp_tol", 1e-6), ("stop_on_failure", True))

    def __post_init__(self) -> None:
        s = np.asarray(self.scales, dtype=float)
        if s.size == 0 or s[-1] != 1.0 or np.any(s <= 0) or np.any(np.diff(s) <= 0):
            raise ValueError(f"ScaleSchedule.scales must increase from > 0 to exactly 1.0, got {self.scales}")
        if self.margin < 0:
            raise ValueError(f"ScaleSchedule.margin must be >= 0 m, got {self.margin}")


def scaled_task(task: HopperTask, scale: float, margin: float) -> HopperTask:
    """The task with hole centres, hole widths and target x scaled by `scale` about the start x;
    every horizontal semi-axis narrowed by `margin` (m)."""
    x0 = task.q0[0]
    semi = scale * task.terrain.semi_x - margin
    if semi <= 0:
        raise ValueError(f"scale {scale} with margin {margin} m leaves no hole (semi-axis {semi:.3g} m); "
                         "raise the first scale or lower the margin")
    terrain = dataclasses.replace(task.terrain, centers=tuple(x0 + scale * (c - x0) for c in task.terrain.centers),
                                  semi_x=semi)
    target = (x0 + scale * (task.q_target[0] - x0),) + tuple(task.q_target[1:])
    return dataclasses.replace(task, terrain=terrain, q_target=target)


def hole_tiles(task: HopperTask) -> list[tuple[HopperTask, float]]:
    """One (tile task, hop length m) per hole: a hop from rest at task.q0 over one hole to the
    next foothold, on an equal share of the control intervals (the first ones get the extra).

    Needs equally spaced holes, the first centred half a spacing after the start and the
    target one spacing after the last (as in the Section 6 task)."""
    centers = np.asarray(task.terrain.centers, dtype=float)
    x0, x_end = task.q0[0], task.q_target[0]
    n = centers.size
    if n == 0:
        raise ValueError("hole_tiles: the terrain has no holes; solve the task directly")
    d = (x_end - x0) / n
    if d <= 0 or not np.allclose(centers, x0 + d * (np.arange(n) + 0.5), atol=1e-9):
        raise ValueError(f"hole_tiles: holes at {tuple(centers)} are not equally spaced between the start x = {x0} "
                         f"and the target x = {x_end} (expected centres at start + (i + 1/2) * {d:.3g} m)")
    counts = [task.n_intervals // n + (1 if i < task.n_intervals % n else 0) for i in range(n)]
    dt = task.horizon / task.n_intervals
    one_hole = dataclasses.replace(task.terrain, centers=(x0 + d / 2,))
    return [(dataclasses.replace(task, n_intervals=k, horizon=k * dt, terrain=one_hole,
                                 q_target=(x0 + d,) + tuple(task.q_target[1:])), d) for k in counts]


@dataclass
class ScaleResult:
    """What `solve_by_terrain_scale` reached.

    plan: the last converged plan (the failed tile's if no tile converged); its homotopy log
        holds every NLP of every stage (each entry with a "stage" key) and its cpu_s their sum.
    task: the (scaled) task `plan` solves; scale, margin: where that task stands (1.0 and 0.0:
        the task asked for). converged (= plan.converged): the task asked for was solved.
    stages: one dict per solve: stage, converged, complementarity, cost, cpu_s, nlps.
    """

    plan: Plan
    task: HopperTask
    scale: float
    margin: float
    stages: list[dict]

    @property
    def converged(self) -> bool:
        """True when the task asked for (scale 1, no margin) was solved."""
        return bool(self.plan.converged)


def solve_by_terrain_scale(task: HopperTask = HopperTask(), schedule: ScaleSchedule = ScaleSchedule(), *,
                           progress: Progress | None = None, save_dir: Path | str | None = None,
                           **option_overrides) -> ScaleResult:
    """Solve `task` by the three stages of this module (see the module docstring).

    option_overrides go to both option sets (e.g. linear_solver). Stops at the first step
    that fails even after `max_halvings` midpoints and returns the last converged plan.
    save_dir: if set, every converged scale step is written there as scale_<s>_margin_<m>.npz
    (`Plan.save_npz`, with the primal vector w for a warm start).
    """
    say = progress or (lambda msg: None)
    t_start = time.perf_counter()
    tile_opts = hopper_options(**dict(schedule.tile_options, **option_overrides))
    step_opts = hopper_options(**dict(schedule.step_options, **option_overrides))
    log: list[dict] = []
    stages: list[dict] = []
    cpu = 0.0

    def run(stage: str, t: HopperTask, options, w_start=None) -> Plan:
        nonlocal cpu
        say(f"[scale] {stage}: target x {t.q_target[0]:.3f} m, holes at "
            f"{', '.join(f'{c:.3f}' for c in t.terrain.centers)} m (semi-axis {t.terrain.semi_x:.3f} m), "
            f"N = {t.n_intervals}")
        plan = solve_plan(hopper_holes_ocp(t), options, progress=say, w_start=w_start)
        cpu += plan.cpu_s
        log.extend(dict(entry, stage=stage) for entry in plan.homotopy)
        stages.append({"stage": stage, "converged": bool(plan.converged), "complementarity": float(plan.complementarity),
                       "cost": float(plan.cost), "cpu_s": round(float(plan.cpu_s), 2), "nlps": len(plan.homotopy)})
        say(f"[scale] {stage}: {'converged' if plan.converged else 'NOT converged'} "
            f"(comp {plan.complementarity:.2e}, cost {plan.cost:.3f}, {plan.cpu_s:.0f} s CPU)")
        return plan

    def finish(plan: Plan, solved: HopperTask, where: tuple[float, float], failure: str | None) -> ScaleResult:
        plan.homotopy, plan.cpu_s = log, cpu
        done = failure is None
        plan.converged = plan.converged and done
        if not done:
            say(f"[scale] stopped: {failure}; returning the plan of scale {where[0]:.4g} (margin {where[1]:.3g} m)")
        say(f"[scale] {len(log)} NLPs, {cpu:.0f} s CPU, {time.perf_counter() - t_start:.0f} s wall")
        return ScaleResult(plan=plan, task=solved, scale=where[0], margin=where[1], stages=stages)

    # 1. tiles (identical tiles are solved once)
    first = scaled_task(task, schedule.scales[0], schedule.margin)
    tiles = hole_tiles(first)
    solved: dict[int, Plan] = {}
    for tile, _ in tiles:
        n = tile.n_intervals
        if n not in solved:
            which = [str(i + 1) for i, (t, _) in enumerate(tiles) if t.n_intervals == n]
            solved[n] = run(f"tile{'s' if len(which) > 1 else ''} {', '.join(which)} of {len(tiles)}", tile, tile_opts)
            if not solved[n].converged:
                return finish(solved[n], tile, (schedule.scales[0], schedule.margin),
                              f"the tile of N = {n} did not converge")

    # 2. lay them end to end: foot x, clock and cost continue from the tile before
    ocp_system = hopper_holes_ocp(first).system
    nx = ocp_system.x.numel()
    parts, offset = [], np.zeros(nx)
    for tile, hop in tiles:
        plan = solved[tile.n_intervals]
        parts.append((plan, offset.copy()))
        offset[0] += hop  # x of the foot (or of the base, in robot coordinates): translation
        offset[ocp_system.index_t] += tile.horizon
        offset[ocp_system.index_ell] += plan.cost
    w = tile_primal(parts)

    # 3. grow the terrain; a failed step is retried from the midpoint of the last solved scale
    points = [(s, schedule.margin) for s in schedule.scales] + [(1.0, 0.0)]
    done = (0.0, schedule.margin)  # scale 0: nothing solved on the three-hole task yet
    best: Plan | None = None
    for point in points:
        target, retries = point, 0
        while True:
            plan = run(f"scale {target[0]:.4g} (margin {target[1]:.3g} m)", scaled_task(task, *target), step_opts,
                       w_start=w)
            if plan.converged:
                w, done, best = plan.w, target, plan
                if save_dir is not None:
                    Path(save_dir).mkdir(parents=True, exist_ok=True)
                    plan.save_npz(Path(save_dir) / f"scale_{target[0]:.4g}_margin_{target[1]:.3g}.npz")
                if target == point:
                    break
                target = point  # the midpoint solved: try the scheduled point again from there
                continue
            if retries == schedule.max_halvings or best is None:
                where = done if best is not None else target
                return finish(best or plan, scaled_task(task, *where), where, f"step to scale {target[0]:.4g} failed")
            retries += 1
            target = ((done[0] + target[0]) / 2, (done[1] + target[1]) / 2)
            say(f"[scale] retrying at the midpoint {target[0]:.4g} (margin {target[1]:.3g} m)")
    return finish(best, task, (1.0, 0.0), None)
