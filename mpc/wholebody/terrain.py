"""Terrain a plan avoids: elliptic holes in flat ground, as plan files store them.

    terrain = terrain_from_plan("plan.npz", required=False)   # HoleTerrain, or None for flat ground
    levels = terrain.levels(px, pz)                           # >= 1 outside each hole

The offline planner (mpc.planning) writes a plan's holes with `terrain_arrays`; the MPC that
tracks the plan (mpc.wholebody.plan_transcription) and the run folder's summary read them back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HoleTerrain:
    """Elliptic keep-out regions for the foot, centred on the ground (m). The defaults are the
    planner's Section 6 terrain: three holes 0.5 m wide (semi_x 0.25; mpc.planning.hopper_holes
    gives the paper's other reading, 0.5)."""

    centers: tuple[float, ...] = (0.5, 1.5, 2.5)
    semi_x: float = 0.25
    semi_z: float = 0.1

    def __post_init__(self) -> None:
        if self.semi_x <= 0 or self.semi_z <= 0:
            raise ValueError(f"hole semi-axes must be > 0 m, got semi_x={self.semi_x}, semi_z={self.semi_z}")

    def levels(self, px, pz):
        """Ellipse level ((px - xc)/a)^2 + (pz/b)^2 per hole (>= 1 outside); numpy or SX inputs."""
        return [((px - xc) / self.semi_x) ** 2 + (pz / self.semi_z) ** 2 for xc in self.centers]


def terrain_arrays(terrain: HoleTerrain) -> dict[str, np.ndarray]:
    """The terrain as named arrays (hole_centers, hole_semi_x, hole_semi_z; m) for a plan file."""
    return {"hole_centers": np.asarray(terrain.centers, dtype=float), "hole_semi_x": np.float64(terrain.semi_x),
            "hole_semi_z": np.float64(terrain.semi_z)}


def terrain_from_plan(path, *, required: bool = True) -> HoleTerrain | None:
    """The terrain a plan file (plan.npz of `python -m launch plan`) avoids. A file without one
    (written before plan files carried it, or a plan over flat ground): ValueError if
    `required`, else None."""
    with np.load(path) as d:
        if "hole_semi_x" not in d:
            if not required:
                return None
            raise ValueError(f"plan {path!s} does not say which holes it avoids (written before plan files "
                             "carried hole_centers/hole_semi_x); make it again with `python -m launch plan`")
        return HoleTerrain(centers=tuple(float(c) for c in d["hole_centers"]), semi_x=float(d["hole_semi_x"]),
                           semi_z=float(d["hole_semi_z"]))
