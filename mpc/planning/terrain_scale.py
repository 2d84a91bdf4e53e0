"""The hopper-holes plan by continuation in the terrain's scale (docs/PLANNING.md).

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
4. Narrowed (only when the task's holes are narrower than `path_semi_x`, e.g. the authors'
   holes of semi-axis 0.25 m): stages 1-3 run on the path's wide holes (semi-axis
   `path_semi_x`, which give the tiles a clear hop) until they reach scale 1 or a step fails
   for good. Then the task's own holes replace them at the last converged scale (the plan is
   already outside them, as they are narrower), and the growth goes on to scale 1 with them.

    result = solve_by_terrain_scale(HopperTask(), progress=print)  # result.plan, result.scale, ...
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .hopper_holes import HopperTask, hopper_holes_ocp, hopper_options, terrain_arrays
from .solve import Plan, solve_plan, tile_primal

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ScaleSchedule:
    """How the terrain grows. scales: increasing factors ending at 1; margin: m by which every
    hole's horizontal semi-axis is narrowed until the final step (which uses the task's holes);
    tile_options / step_options: `hopper_options` overrides for the tiles (from the straight-line
    guess) and for the steps (from the previous solution, sigma starting at sigma_0; a step ends
    at its first failed NLP, so that a step too long is soon retried shorter).
    path_semi_x: horizontal semi-axis (m, at scale 1) of the holes stages 1-3 grow when the
    task's own are narrower (stage 4 of the module docstring); the paper's a_k = 0.5."""

    scales: tuple[float, ...] = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
    margin: float = 0.05
    max_halvings: int = 2
    path_semi_x: float = 0.5
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
        if self.path_semi_x <= 0:
            raise ValueError(f"ScaleSchedule.path_semi_x must be > 0 m, got {self.path_semi_x}")


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
    save_dir: if set, every converged scale step is written there as scale_<s>_semi_x_<a>.npz,
    a the holes' horizontal semi-axis in m (`Plan.save_npz`, with the primal vector w for a
    warm start).
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

    # the holes stages 1-3 grow: the task's, or the path's wider ones (then stage 4 narrows them)
    wide = schedule.path_semi_x > task.terrain.semi_x
    path = dataclasses.replace(task, terrain=dataclasses.replace(task.terrain, semi_x=schedule.path_semi_x)) if wide else task

    # 1. tiles (identical tiles are solved once)
    first = scaled_task(path, schedule.scales[0], schedule.margin)
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
    state = {"w": w, "best": None, "task": first, "where": (0.0, schedule.margin), "base": None}  # the last solution

    def grow(base: HopperTask, points: list[tuple[float, float]]) -> tuple[str | None, Plan]:
        """Solve `base` scaled to each (scale, margin) of points in turn, each from the last
        solution. Returns (None, last plan) when all converged, else (why it stopped, failed plan).
        Midpoint retries only between two points of the same base."""
        for point in points:
            target, retries = point, 0
            while True:
                step = scaled_task(base, *target)
                plan = run(f"scale {target[0]:.4g} (semi-axis {step.terrain.semi_x:.4g} m)", step, step_opts,
                           w_start=state["w"])
                if plan.converged:
                    state.update(w=plan.w, best=plan, task=step, where=target, base=base)
                    if save_dir is not None:
                        Path(save_dir).mkdir(parents=True, exist_ok=True)
                        plan.save_npz(Path(save_dir) / f"scale_{target[0]:.4g}_semi_x_{step.terrain.semi_x:.4g}.npz",
                                      **terrain_arrays(step.terrain))
                    if target == point:
                        break
                    target = point  # the midpoint solved: try the scheduled point again from there
                    continue
                if retries == schedule.max_halvings or state["base"] is not base:
                    return f"step to scale {target[0]:.4g} failed", plan
                retries += 1
                done = state["where"]
                target = ((done[0] + target[0]) / 2, (done[1] + target[1]) / 2)
                say(f"[scale] retrying at the midpoint {target[0]:.4g} (margin {target[1]:.3g} m)")
        return None, plan

    failure, last = grow(path, [(s, schedule.margin) for s in schedule.scales] + [(1.0, 0.0)])
    # 4. narrow the path's wide holes to the task's where stage 3 ended, and grow on from there
    if wide and state["best"] is not None:
        at = state["where"][0]
        say(f"[scale] narrowing the holes to the task's (semi-axis {task.terrain.semi_x:.4g} m at scale 1) "
            f"at scale {at:.4g}")
        failure, last = grow(task, [(at, 0.0)] + [(s, 0.0) for s in schedule.scales if s > at])
    if state["best"] is None:  # the first step on the laid-out tiles failed
        return finish(last, first, (schedule.scales[0], schedule.margin), failure)
    return finish(state["best"], state["task"], state["where"], failure)
