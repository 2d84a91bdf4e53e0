"""Offline contact-implicit trajectory optimization: time-freezing + FESD (seed 004).

    from mpc.planning import ContactLagrangian, time_freezing_system, TimeFreezingOcp, solve_plan
    plan = solve_plan(ocp, PlannerOptions(), progress=print_to_stderr)

Modules: `time_freezing` (the reformulation of a one-contact CLS into a PSS), `ocp` (problem
description and options), `solve` (nosnoc FESD discretization, homotopy, physical-time recovery),
`active_set` (the active-set polish of a relaxed solution),
`particle` (the paper's Example 5), `hopper_holes` (Section 6), `plots`, `replay`,
`terrain_scale` (how the hopper-holes plan is made), `shipped` (the converged hopper-holes plan
shipped in data/, its resolution for a run and the warm start from it), `plan_hash` (what NLP a
plan solves) and `plan_check` (a plan file re-verified on today's model).

`solve` (and with it nosnoc, a dev dependency) is imported on first use of `Plan` or
`solve_plan`: reading plan files and the shipped plan's hash check (the MPC's run path) need neither.
"""
from .ocp import PlannerOptions, TimeFreezingOcp
from .time_freezing import ContactLagrangian, TimeFreezingSystem, step_multipliers, time_freezing_system

__all__ = [
    "ContactLagrangian", "Plan", "PlannerOptions", "TimeFreezingOcp", "TimeFreezingSystem",
    "solve_plan", "step_multipliers", "time_freezing_system",
]


def __getattr__(name: str):
    """`Plan` and `solve_plan`, imported from `solve` on first use (it imports nosnoc)."""
    if name in ("Plan", "solve_plan"):
        from . import solve

        return getattr(solve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
