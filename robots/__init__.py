"""Robot models: one symbolic (CasADi) definition per robot, the single source of truth.

    from robots import get_robot, numeric
    model = get_robot("hopper")          # frozen RobotModel (symbolic)
    fns = numeric(model)                 # compiled C functions, cached by content hash
    M = fns.mass_matrix(model.q0)
"""
from .model import Contact, RobotModel, check_vector
from .numeric import NumericRobot, numeric
from .registry import get_robot, robot_names

__all__ = ["Contact", "RobotModel", "NumericRobot", "check_vector", "get_robot", "numeric", "robot_names"]
