"""What to draw of a robot at a configuration q, in world coordinates, from its own model:
shared by the video (launch/animate.py) and the browser replay (launch/view.py).

    drawing = RobotDrawing(model)
    segments = drawing.segments(q)          # (N, 2, 3): links as line segments, m
    centres, radii = drawing.spheres(q)     # (S, 3), (S,): feet (and the planar MJCF's spheres), m

Planar robots: the MJCF's capsules and spheres of each body (its x-z geometry) placed by
`body_poses(q)` (origin x, z and pitch), in the plane y = 0. 3D robots: the body tree's
skeleton, a segment from each joint frame's origin to its parent's and from each foot's body to
the foot's centre, and one sphere per foot at its contact point raised by its radius.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

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

    def origins(self, q: np.ndarray) -> np.ndarray:
        """(nb, 3) the bodies' origins in the world, m."""
        poses = self.fns.body_poses(q)
        if self.model.floating_base:
            return poses[:, 0:3].copy()
        return np.column_stack([poses[:, 0], np.zeros(len(poses)), poses[:, 1]])

    def feet(self, q: np.ndarray) -> np.ndarray:
        """(nc, 3) the contact points in the world, m (planar: y = 0)."""
        p = self.fns.contact_points(q)
        return p if self.model.floating_base else np.column_stack([p[:, 0], np.zeros(len(p)), p[:, 1]])

    def segments(self, q: np.ndarray) -> np.ndarray:
        """(n_segments, 2, 3) the links as segments in the world, m."""
        poses = self.fns.body_poses(q)
        out = np.empty((self.n_segments, 2, 3))
        if self.model.floating_base:
            feet = self.feet(q)
            for k, (a, b) in enumerate(self.links):
                out[k, 0] = poses[a, 0:3]
                out[k, 1] = poses[b, 0:3] if b >= 0 else feet[-1 - b] + [0.0, 0.0, self.radii[-1 - b]]
            return out
        k = 0
        for name, geoms in self.shapes.items():
            pose = poses[self.body_index[name]]
            for g in geoms:
                if g[0] == "capsule":
                    (x0, z0), (x1, z1) = planar_world(pose, g[1], g[2]), planar_world(pose, g[3], g[4])
                    out[k] = ((x0, 0.0, z0), (x1, 0.0, z1))
                    k += 1
        return out

    def spheres(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centres (S, 3), radii (S,)) of the spheres to draw, m: the feet."""
        if self.model.floating_base:
            return self.feet(q) + np.outer(self.radii, [0.0, 0.0, 1.0]), self.radii
        poses = self.fns.body_poses(q)
        centres = [(x, 0.0, z) for name, geoms in self.shapes.items() for g in geoms if g[0] == "sphere"
                   for x, z in [planar_world(poses[self.body_index[name]], g[1], g[2])]]
        return np.array(centres).reshape(-1, 3), self.radii
