"""Plant names -> constructors, so scenarios and the CLI can pick a plant by name."""
from __future__ import annotations

from robots.model import RobotModel

PLANTS = ("ess", "nmdp", "hybrid", "mujoco")
PLANAR_ONLY = ("hybrid",)  # plants whose kernels assume nq == nv and one tangent per contact


def check_plant_for(name: str, model: RobotModel) -> None:
    """Raise ValueError (naming the plants that can) if plant `name` cannot run `model`."""
    if name in PLANAR_ONLY:
        from .protocol import require_planar

        require_planar(model, name)


def make_plant(name: str, model: RobotModel, *, plant_rate_hz: float = 1000.0, **options):
    """Build plant `name` for `model`; the plant rate (Hz) bounds its integration step.

    ess: compliant contacts, Event-Selected-Systems integrator (sim.ess.EssPlant).
    nmdp: backward Euler with non-convex maximal dissipation (sim.nmdp.NmdpPlant); its largest
        step is the plant period.
    hybrid: rigid contacts, event-driven reference (sim.hybrid.HybridPlant).
    mujoco: MuJoCo on the robot's MJCF, its own soft contacts (sim.mujoco_plant.MujocoPlant).
    """
    if name == "ess":
        from .ess.robot import EssPlant

        return EssPlant(model, h_max=1.0 / plant_rate_hz, verbose=False, **options)
    if name == "nmdp":
        from .nmdp import NmdpPlant

        return NmdpPlant(model, verbose=False, **{"max_step": 1.0 / plant_rate_hz, **options})
    if name == "hybrid":
        from .hybrid import HybridPlant

        return HybridPlant(model, **options)
    if name == "mujoco":
        from .mujoco_plant import MujocoPlant

        return MujocoPlant(model, plant_rate_hz=plant_rate_hz, **options)
    raise ValueError(f"unknown plant {name!r}; available plants: {', '.join(PLANTS)}")
