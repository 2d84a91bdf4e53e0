"""Pre-flight: does the robot have what the scenario asks of it? Checked by `Scenario.validate`,
so before `launch run` makes a run folder or starts a process: a plant or controller child that
meets a missing pose or an unfit robot only says so in its log, after both processes started.

`check_robot_for(scenario)` raises a one-line ValueError that names the robot, the missing or
unfit field, the scenario that needs it and the fix:

- start_pose: the pose must be in the robot's params["poses"] (a floating-base robot's named
  joint poses, docs/ROBOTS3D.md), with one angle per actuated joint;
- the MPC on a floating-base robot (mpc.centroidal): a C identifier for a name (its generated
  code is named after it), feet, three joints moving each foot alone, and feet left-right
  symmetric at q0 (the checks the controller itself makes when it starts);
- the MPC's options (the robot's controller_defaults["mpc"] under the scenario's
  [controller_options]) are valid, and its first stage is the control period: the tick executes
  that stage and the warm start moves the plan by it, so a scenario ticking at 50 Hz with a
  10 ms first stage would plan on a clock that runs at half speed.
"""
from __future__ import annotations

import numpy as np

DOC = "docs/ROBOTS3D.md"


def check_robot_for(scenario) -> None:
    """Raise ValueError (module docstring) unless scenario.robot has what the scenario needs."""
    from robots import get_robot

    model = get_robot(scenario.robot)  # built (and cached) by the validation that comes first
    robot, name = scenario.robot, scenario.name
    if scenario.start_pose:
        _check_pose(model, robot, name, scenario.start_pose)
    if scenario.controller == "mpc" and model.floating_base:
        _check_mpc3d(model, robot, name)
    try:
        if scenario.controller == "mpc":
            _check_mpc_period(model, scenario)
        if scenario.controller == "pd":
            from mpc.controllers import pd_options

            pd_options(model, **scenario.controller_options)
    except (ValueError, TypeError) as err:
        message = str(err).removeprefix(f"scenario {name!r}: ")
        raise ValueError(f"scenario {name!r}: [controller_options] {message} (fix the scenario's "
                         "[controller_options] table or --set controller_options.KEY=VALUE; "
                         "README, 'Change what the robot does')") from None


def _check_pose(model, robot: str, name: str, pose: str) -> None:
    if not model.floating_base:
        raise ValueError(f"robot {robot!r} is planar; {name} starts from the pose {pose!r} (start_pose), which "
                         f"only floating-base robots have: use a 3D robot, or --set start_pose= for the robot's q0")
    poses = dict(model.params.get("poses") or {})
    if pose not in poses:
        have = f" (it has {', '.join(map(repr, sorted(poses)))})" if poses else ""
        raise ValueError(f"robot {robot!r} has no {pose!r} pose (params['poses']){have}; {name} starts from it: "
                         f"add poses={{{pose!r}: [{model.nu} joint angles, rad]}} to the robot's params ({DOC})")
    angles = np.asarray(poses[pose], dtype=float)
    if angles.shape != (model.nu,) or not np.all(np.isfinite(angles)):
        raise ValueError(f"robot {robot!r}: its {pose!r} pose (params['poses']) must be {model.nu} finite joint "
                         f"angles (rad, in the order of u_names), got shape {angles.shape}; {name} starts from it "
                         f"({DOC})")


def _check_mpc3d(model, robot: str, name: str) -> None:
    if not model.name.isidentifier():
        raise ValueError(f"robot {robot!r}: its name {model.name!r} must be a C identifier (letters, digits, '_') "
                         f"for {name}'s 3D MPC, which names its generated code after it: rename the RobotModel "
                         f"({DOC})")
    from mpc.centroidal.srb import SingleRigidBody
    from mpc.centroidal.wholebody import leg_joints

    try:
        SingleRigidBody.from_model(model)
        leg_joints(model)
    except ValueError as err:
        raise ValueError(f"robot {robot!r} cannot run {name}'s 3D MPC: {err} ({DOC}, what the 3D MPC needs)") from None


def _check_mpc_period(model, scenario) -> None:
    if model.floating_base:
        from mpc.centroidal.controller import mpc3d_options

        first, field = mpc3d_options(model, **scenario.controller_options).dt, "stage_dts[0]"
    else:
        from mpc.wholebody.controller import mpc_options

        first, field = mpc_options(model, **scenario.controller_options).dt, "dt"
    period = 1.0 / scenario.control_rate_hz
    if abs(first - period) > 1e-6 * period:
        also = " (and no later stage shorter)" if model.floating_base else ""
        raise ValueError(f"scenario {scenario.name!r}: the MPC's first stage ({field} = {first:.10g} s) must be the "
                         f"control period (1 / control_rate_hz = {period:.10g} s): it is the stage each tick "
                         f"executes; set control_rate_hz = {1.0 / first:.10g} or the MPC's {field} = "
                         f"{period:.10g}{also} ([controller_options])")
