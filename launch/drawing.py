"""What to draw of a robot at a configuration q, in world coordinates, from its own model:
shared by the video (launch/animate.py) and the browser replay (launch/view.py).

    drawing = RobotDrawing(model)
    drawn = drawing.at(q)       # drawn.segments (N, 2, 3): links as line segments, m; drawn.centres
                                # (S, 3) of the spheres (radii: drawing.radii); origins, feet

Planar robots: the MJCF's capsules and spheres of each body (its x-z geometry) placed by
`body_poses(q)` (origin x, z and pitch), in the plane y = 0. 3D robots: the body tree's
skeleton, a segment from each joint frame's origin to its parent's and from each foot's body to
the foot's centre, and one sphere per foot at its contact point raised by its radius.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np


def body_shapes(mjcf: str) -> dict[str, list[tuple]]:
    """Per body name, its drawable geoms in the body frame (x, z): ("capsule", x0, z0, x1, z1,
    radius) and ("sphere", x, z, radius), read from the model's planar MJCF."""
    shapes: dict[str, list[tuple]] = {}
    for body in ET.fromstring(mjcf).iter("body"):
        own = shapes.setdefault(body.get("name"), [])
        for g in body.findall("geom"):
            size = [float(s) for s in g.get("size", "0.01").split()]
            if g.get("type") == "capsule" and g.get("fromto"):
                x0, _, z0, x1, _, z1 = (float(s) for s in g.get("fromto").split())
                own.append(("capsule", x0, z0, x1, z1, size[0]))
            elif g.get("type") == "sphere":
                x, _, z = (float(s) for s in g.get("pos", "0 0 0").split())
                own.append(("sphere", x, z, size[0]))
    return shapes


def body_parents(mjcf: str) -> dict[str, str]:
    """Per body name of a 3D model's MJCF, the name of its parent body (the root's: none), and
    per sphere geom name (a foot), the body that carries it."""
    out = {}
    for body in ET.fromstring(mjcf).iter("body"):
        out.update({child.get("name"): body.get("name") for child in body.findall("body")})
        out.update({g.get("name"): body.get("name") for g in body.findall("geom") if g.get("type") == "sphere"})
    return out


def planar_world(pose: np.ndarray, x: float, z: float) -> tuple[float, float]:
    """Body-frame point (x, z) in the world for a planar body pose (origin x, origin z, pitch)."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return pose[0] + c * x + s * z, pose[1] - s * x + c * z


class RobotDrawing:
    """The drawable geometry of one robot (module docstring)."""

    def __init__(self, model) -> None:
        from robots import numeric

        self.model = model
        self.fns = numeric(model, verbose=False)
        self.body_index = {n: i for i, n in enumerate(model.body_names)}
        if model.floating_base:
            contact_index = {c.name: -1 - i for i, c in enumerate(model.contacts)}
            self.links = [(self.body_index[p], self.body_index[c] if c in self.body_index else contact_index[c])
                          for c, p in body_parents(model.mjcf).items()
                          if c in self.body_index or c in contact_index]
            self.radii = np.array([c.radius for c in model.contacts])
        else:
            self.shapes = {name: geoms for name, geoms in body_shapes(model.mjcf).items() if name in self.body_index}
            self.radii = np.array([g[3] for geoms in self.shapes.values() for g in geoms if g[0] == "sphere"])

    @property
    def n_segments(self) -> int:
        """How many segments `segments` returns (fixed per robot)."""
        if self.model.floating_base:
            return len(self.links)
        return sum(1 for geoms in self.shapes.values() for g in geoms if g[0] == "capsule")

    def at(self, q: np.ndarray) -> "Drawn":
        """Everything drawn at configuration q, from one body_poses and one contact_points call."""
        poses, points = self.fns.body_poses(q), self.fns.contact_points(q)
        if self.model.floating_base:
            origins, feet = poses[:, 0:3].copy(), points
        else:
            origins = np.column_stack([poses[:, 0], np.zeros(len(poses)), poses[:, 1]])
            feet = np.column_stack([points[:, 0], np.zeros(len(points)), points[:, 1]])
        segments = np.empty((self.n_segments, 2, 3))
        if self.model.floating_base:
            for k, (a, b) in enumerate(self.links):
                segments[k, 0] = poses[a, 0:3]
                segments[k, 1] = poses[b, 0:3] if b >= 0 else feet[-1 - b] + [0.0, 0.0, self.radii[-1 - b]]
            centres = feet + np.outer(self.radii, [0.0, 0.0, 1.0])
        else:
            k, centres = 0, []
            for name, geoms in self.shapes.items():
                pose = poses[self.body_index[name]]
                for g in geoms:
                    if g[0] == "capsule":
                        (x0, z0), (x1, z1) = planar_world(pose, g[1], g[2]), planar_world(pose, g[3], g[4])
                        segments[k] = ((x0, 0.0, z0), (x1, 0.0, z1))
                        k += 1
                    else:
                        x, z = planar_world(pose, g[1], g[2])
                        centres.append((x, 0.0, z))
            centres = np.array(centres).reshape(-1, 3)
        return Drawn(segments, centres, origins, feet, poses)


class Drawn(NamedTuple):
    """A robot's drawing at one q, in the world (m): segments (n_segments, 2, 3), sphere centres
    (S, 3; radii: RobotDrawing.radii), body origins (nb, 3), contact points (nc, 3, planar
    y = 0) and the raw body_poses rows."""

    segments: np.ndarray
    centres: np.ndarray
    origins: np.ndarray
    feet: np.ndarray
    poses: np.ndarray
