"""`launch view RUN_DIR`: an interactive 3D replay of a run folder in the browser (viser).

    python -m launch view runs/<run> [--port 8080] [--host 127.0.0.1]

viser (a maintained Python package: a web server plus a three.js client, no JavaScript of ours)
serves the scene and its controls; we picked it over meshcat because it ships GUI widgets
(sliders, buttons, uPlot charts) with the same server, so the time scrubber and the latency
trace need no front-end code. The page shows, at the time the scrubber selects:

- the robot, from launch/drawing.py (the same geometry as animation.mp4, in 3D): links as line
  segments, feet as spheres, on a ground grid; for the URDF quadrupeds also the URDF's visual
  meshes (`robots.urdf.visual_meshes`, loaded once, a few seconds), each moved with its body;
- the contact forces as red segments from each foot (1 mm per N);
- the MPC's predicted horizon of that tick (controller_horizon.npz, when the run has it) as
  faded copies of the robot at a third, two thirds and the end of the horizon;
- beside it, the per-tick STATE -> COMMAND latency (plant_ticks.csv) against simulated time, and
  the time, base position and whether the tick's command came late.

Moving the scrubber (or "play") updates the scene for every connected browser. With
`--trace-frames` each update is also printed on stdout as `frame t=<s> base=<x>,<y>,<z>` (what
tests/test_view.py reads to check that the browser's slider drives the scene). Serving stops
with Ctrl-C.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np

from .drawing import RobotDrawing
from .runfolder import read_csv, run_robot

FORCE_SCALE_M_PER_N = 1e-3
ROBOT_RGB, GHOST_RGB, FORCE_RGB = (40, 110, 200), (150, 180, 230), (220, 40, 40)


class RunViewer:
    """The viser scene of one run folder (module docstring); `show(k)` draws tick k."""

    def __init__(self, folder: Path, *, host: str = "127.0.0.1", port: int = 8080, trace: bool = False) -> None:
        import viser

        self.trace = trace
        self.folder = Path(folder)
        self.scenario, self.model, traj = run_robot(self.folder)
        self.t, self.q = traj["t"], traj["q"]
        m = self.model
        self.force = traj.get("force", np.zeros((len(self.t), m.nc, 1 + m.n_tangent)))
        plant = read_csv(self.folder / "plant_ticks.csv")
        n = len(self.t)
        self.latency_ms = np.resize(plant.get("latency_us", np.full(n, np.nan)) / 1e3, n)
        self.missed = np.resize(plant.get("missed", np.zeros(n)), n)
        self.horizon = None
        path = self.folder / "controller_horizon.npz"
        if path.exists():
            with np.load(path) as data:
                if data["q"].ndim == 3 and data["q"].shape[2] == m.nq:
                    self.horizon = data["q"]
        self.drawing = RobotDrawing(m)
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.lock = threading.Lock()
        self._build()

    # ------------------------------------------------------------------ scene
    def _build(self) -> None:
        s, m = self.server, self.model
        s.scene.set_up_direction("+z")
        s.scene.add_grid("/ground", width=10.0, height=10.0, cell_size=0.1)
        first = self.drawing.at(self.q[0])
        self.links = s.scene.add_line_segments("/robot/links", first.segments, ROBOT_RGB, thickness=0.012)
        self.feet = [s.scene.add_icosphere(f"/robot/foot_{i}", radius=float(r), color=(240, 140, 30), position=c)
                     for i, (c, r) in enumerate(zip(first.centres, self.drawing.radii))]
        self.forces = s.scene.add_line_segments("/robot/forces", self._force_segments(first.feet, 0), FORCE_RGB,
                                                thickness=0.006)
        self.meshes = []
        from robots.urdf import EXAMPLE_ROBOTS

        if m.floating_base and m.name in EXAMPLE_ROBOTS:
            from robots.urdf import visual_meshes

            print(f"view: loading {m.name}'s visual meshes", flush=True)
            for k, mesh in enumerate(visual_meshes(m.name)):
                handle = s.scene.add_mesh_simple(f"/robot/mesh_{k}", mesh.vertices.astype(np.float32),
                                                 mesh.faces.astype(np.uint32), color=(170, 170, 180), opacity=0.85)
                self.meshes.append((mesh, handle))
        self.ghosts = []
        if self.horizon is not None:
            h = self.horizon.shape[1]
            self.stages = sorted({h // 3, 2 * h // 3, h - 1})
            self.ghosts = [s.scene.add_line_segments(f"/plan/stage_{g}", first.segments, GHOST_RGB,
                                                     thickness=0.008) for g in self.stages]
        title = f"{self.scenario.get('name', '')}: {m.name} on {self.scenario.get('plant', '')}"
        s.gui.add_markdown(f"**{title}**, {len(self.t)} ticks")
        self.slider = s.gui.add_slider("time (s)", min=float(self.t[0]), max=float(self.t[-1]),
                                       step=float(np.median(np.diff(self.t))) if len(self.t) > 1 else 0.01,
                                       initial_value=float(self.t[0]))
        self.play = s.gui.add_checkbox("play", initial_value=False)
        self.readout = s.gui.add_markdown("")
        finite = np.where(np.isfinite(self.latency_ms), self.latency_ms, 0.0)
        from viser import uplot

        s.gui.add_uplot(data=(self.t.astype(float), finite.astype(float)),
                        series=(uplot.Series(label="t (s)"), uplot.Series(label="STATE->COMMAND (ms)", stroke="red")),
                        scales={"x": uplot.Scale(time=False)}, title="latency per tick (ms) against t (s)",
                        aspect=1.6)
        # the camera starts looking at the robot from the front-left, a few robot sizes away
        centre = first.origins.mean(axis=0)
        size = max(0.3, float(np.ptp(np.vstack([first.origins, first.feet]), axis=0).max()))
        s.initial_camera.look_at = tuple(centre)
        s.initial_camera.position = tuple(centre + size * np.array([1.5, -2.5, 1.2]))
        self.slider.on_update(lambda _: self.show(self.tick_at(self.slider.value)))
        self.show(0)

    def _force_segments(self, feet: np.ndarray, k: int) -> np.ndarray:
        """(nc, 2, 3) a segment per foot (`feet`, the contact points) along tick k's force, 1 mm per N."""
        f = self.force[k]
        world = np.column_stack([f[:, 1], f[:, 2] if f.shape[1] > 2 else np.zeros(len(f)), f[:, 0]])
        return np.stack([feet, feet + FORCE_SCALE_M_PER_N * world], axis=1)

    def tick_at(self, t: float) -> int:
        """The index of the logged tick at simulated time t (s)."""
        return int(min(len(self.t) - 1, np.searchsorted(self.t, t - 1e-9)))

    def show(self, k: int) -> None:
        """Draw tick k: robot, forces, the plan of that tick, the readout; with `trace`, prints a
        frame line."""
        with self.lock:
            drawn = self.drawing.at(self.q[k])
            self.links.points = drawn.segments
            for handle, centre in zip(self.feet, drawn.centres):
                handle.position = centre
            self.forces.points = self._force_segments(drawn.feet, k)
            if self.meshes:
                from scipy.spatial.transform import Rotation

                poses = drawn.poses
                for mesh, handle in self.meshes:
                    R, p = poses[mesh.body, 3:12].reshape(3, 3), poses[mesh.body, 0:3]
                    Ro, po = mesh.placement
                    x, y, z, w = Rotation.from_matrix(R @ Ro).as_quat()
                    handle.position, handle.wxyz = p + R @ po, (w, x, y, z)
            if self.horizon is not None:
                plan = self.horizon[min(k + 1, len(self.horizon) - 1)]  # STATE k + 1 carried tick k's plan
                for handle, stage in zip(self.ghosts, self.stages):
                    visible = bool(np.isfinite(plan[stage]).all())
                    handle.visible = visible
                    if visible:
                        handle.points = self.drawing.at(plan[stage]).segments
            base = drawn.origins[0]
            late = bool(self.missed[max(0, k - 10): k + 1].any())
            self.readout.content = (f"t = {self.t[k]:.3f} s, base ({base[0]:.3f}, {base[1]:.3f}, {base[2]:.3f}) m"
                                    + (", **deadline missed**" if late else ""))
            if self.trace:
                print(f"frame t={self.t[k]:.4f} base={base[0]:.4f},{base[1]:.4f},{base[2]:.4f}", flush=True)

    def serve_forever(self) -> None:
        """Serve until interrupted; while "play" is ticked, advance the scrubber in real time."""
        last = time.perf_counter()
        while True:
            time.sleep(1 / 30)
            now = time.perf_counter()
            if self.play.value:
                t = float(self.slider.value) + (now - last)
                self.slider.value = t if t <= self.t[-1] else float(self.t[0])  # on_update redraws
            last = now


def serve(folder: Path, *, host: str = "127.0.0.1", port: int = 8080, trace: bool = False) -> None:
    """Serve RUN_DIR's replay at http://host:port until Ctrl-C (prints the address first; `trace`:
    a line per frame drawn)."""
    viewer = RunViewer(folder, host=host, port=port, trace=trace)
    print(f"view: http://{host}:{port} (Ctrl-C to stop)", flush=True)
    try:
        viewer.serve_forever()
    except KeyboardInterrupt:
        print("view: stopped", file=sys.stderr)
    finally:
        viewer.server.stop()
