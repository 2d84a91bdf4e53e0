"""Robot models: one symbolic (CasADi) definition per robot, the single source of truth.

    from robots import get_robot, numeric
    model = get_robot("hopper")          # frozen RobotModel (symbolic)
    fns = numeric(model)                 # compiled C functions, cached by content hash
    M = fns.mass_matrix(model.q0)

Your own robot: `get_robot("my_module:build")` (an import path), `register_robot(name, build)`,
or an installed package's entry point in the group `legmpc.robots` (docs/ROBOTS.md).
"""
from .model import Contact, RobotModel, check_vector
from .numeric import NumericRobot, numeric
from .registry import ENTRY_POINT_GROUP, get_robot, register_robot, robot_names

__all__ = ["Contact", "RobotModel", "NumericRobot", "check_vector", "get_robot", "numeric", "register_robot",
           "robot_names", "ENTRY_POINT_GROUP"]
