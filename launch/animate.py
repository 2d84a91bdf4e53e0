"""`animation.mp4` of a run folder: the robot drawn from its model, replayed from trajectory.npz.

    python -m launch animate RUN_DIR [--slowmo F] [--fps N]

Rendered after the loop, never inside it; `render` returns the time it took and the renderer,
which the CLI prints ("animation: RUN_DIR/animation.mp4 (120 frames, rendered in 6.6 s: MuJoCo,
MUJOCO_GL=osmesa, 640x480)"). A 3D (floating-base) robot is rendered in 3D by
MuJoCo's offscreen renderer with its URDF's meshes, a camera following its base, contact
forces as arrows and a text overlay (launch/render3d.py; 640x480 by default); when no headless
GL context can be made it falls back, with a warning, to the stick figure below
(`style="stick"` asks for it).

The stick figure (planar robots, always): the drawing comes from the robot's own definition:
its MJCF (made from the same model) gives each body's capsules and spheres in the body frame,
`numeric(model).body_poses(q)` places the bodies, and `contact_points(q)` the feet. Contact
forces are arrows (1 mm per N, normal and tangential), the ground is the plane z = 0, ticks
whose command came late (plant_ticks.csv `missed`) turn the time stamp red, and the MPC's plan
of that tick (controller_horizon.npz, written by the controller client) is drawn as faded
ghosts at a third, two thirds and the end of its horizon; the holes of a tracked plan
(hopper-holes) are white pits in the ground. The geometry is launch/drawing.py's;
a 3D robot's stick figure is drawn from the side (world x-z): its skeleton, a line from each
joint frame to its parent's (the MJCF's body tree), and its foot spheres. Frames are matplotlib
(Agg) images (1280x720 by default) piped to the ffmpeg that the `imageio-ffmpeg` wheel carries,
H.264, real time at `fps` (default 30) divided by `slowmo`.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from .drawing import RobotDrawing
from .runfolder import read_csv, run_robot

FORCE_SCALE_M_PER_N = 1e-3
MAX_FRAMES = 36_000  # 20 min of video at 30 fps: a larger request is refused, not rendered for hours


def _place(drawn, lines: list, circles: list | None = None) -> None:
    """Move the artists to a drawing (`RobotDrawing.at`), seen from the side (world x-z):
    `lines` (one per segment) and, if given, `circles` (one per sphere)."""
    for line, seg in zip(lines, drawn.segments):
        line.set_data(seg[:, 0], seg[:, 2])
    if circles is not None:
        for circle, centre in zip(circles, drawn.centres):
            circle.center = (centre[0], centre[2])


def frame_indices(t: np.ndarray, fps: int, slowmo: float) -> np.ndarray:
    """The logged tick shown in each video frame: real time at `fps` divided by `slowmo` (F video
    s per simulated s); a ValueError for bad numbers or more than MAX_FRAMES frames."""
    if not (fps > 0 and slowmo > 0):
        raise ValueError(f"fps and slowmo must be > 0, got {fps}, {slowmo}")
    if len(t) == 0:
        raise ValueError("the trajectory is empty")
    n_frames = int((t[-1] - t[0]) * fps * slowmo) + 1
    if n_frames > MAX_FRAMES:
        raise ValueError(f"{n_frames} frames ({t[-1] - t[0]:.3g} s at {fps} fps, slowmo {slowmo:g}) is more than "
                         f"{MAX_FRAMES} (20 min of video): lower --slowmo or --fps")
    frame_times = np.arange(t[0], t[-1] + 1e-12, 1.0 / (fps * slowmo))
    return np.minimum(np.searchsorted(t, frame_times), len(t) - 1)


def late_ticks(folder: Path, n: int, window: int = 10) -> np.ndarray:
    """(n,) bool per tick: a command of this or the `window` ticks before it came late
    (plant_ticks.csv `missed`; all False without the file)."""
    path = Path(folder) / "plant_ticks.csv"
    missed = np.zeros(n)
    logged = np.nan_to_num(read_csv(path).get("missed", np.zeros(0)))[:n] if path.exists() else np.zeros(0)
    missed[:len(logged)] = logged
    return np.convolve(missed != 0, np.ones(window + 1))[:n] > 0


def read_horizon(folder: Path, nq: int) -> np.ndarray | None:
    """The MPC's predicted q per tick (ticks, stages, nq) from controller_horizon.npz, or None."""
    path = Path(folder) / "controller_horizon.npz"
    if not path.exists():
        return None
    with np.load(path) as data:
        return data["q"] if data["q"].ndim == 3 and data["q"].shape[2] == nq else None


def run_holes(scenario: dict) -> list[tuple[float, float, float]]:
    """(centre x, semi-axis x, semi-axis z) in m of the holes of the plan a run tracked
    (controller_options.plan, as the run resolved it); none without a plan or when its file is
    not there any more."""
    plan = (scenario.get("controller_options") or {}).get("plan")
    if not plan or not Path(plan).is_file():
        return []
    from mpc.wholebody.terrain import terrain_from_plan

    terrain = terrain_from_plan(plan, required=False)
    return [] if terrain is None else [(c, terrain.semi_x, terrain.semi_z) for c in terrain.centers]


def render(folder: Path, *, fps: int = 30, slowmo: float = 1.0, size: tuple[int, int] | None = None,
           progress: bool = True, style: str = "auto") -> dict:
    """Write folder/animation.mp4; returns {"path", "frames", "seconds", "render_s", "renderer"}.
    style "auto": a 3D robot in 3D (launch/render3d.py, size default 640x480), a planar one as a
    stick figure (1280x720); "stick": the stick figure for any robot."""
    if style not in ("auto", "stick"):
        raise ValueError(f"style must be 'auto' or 'stick', got {style!r}")
    if style == "auto":
        _, model, _ = run_robot(folder)
        if model.floating_base:
            from .render3d import SIZE, OffscreenGLError, render3d

            try:
                return render3d(folder, fps=fps, slowmo=slowmo, size=size or SIZE, progress=progress)
            except OffscreenGLError as exc:
                print(f"warning: {exc}; animation.mp4 is the stick figure instead", file=sys.stderr)
    return _render_stick(folder, fps=fps, slowmo=slowmo, size=size or (1280, 720), progress=progress)


def _render_stick(folder: Path, *, fps: int, slowmo: float, size: tuple[int, int], progress: bool) -> dict:
    """The stick-figure animation.mp4 (matplotlib; module docstring)."""
    import imageio_ffmpeg
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Ellipse

    folder = Path(folder)
    t_start = time.perf_counter()
    scenario, model, traj = run_robot(folder)
    t, q = traj["t"], traj["q"]
    idx = frame_indices(t, fps, slowmo)
    if not model.body_names:
        raise ValueError(f"{model.name}: the model has no bodies to draw")
    force = traj.get("force", np.zeros((len(t), model.nc, 1 + model.n_tangent)))
    late_any = late_ticks(folder, len(t))
    drawing = RobotDrawing(model)
    horizon = read_horizon(folder, model.nq)  # the MPC's predicted q per tick, drawn as ghosts
    ghost_stages = [] if horizon is None else sorted({horizon.shape[1] // 3, 2 * horizon.shape[1] // 3,
                                                      horizon.shape[1] - 1})

    # the camera follows the base; the view spans the robot's size
    first = drawing.at(q[0])
    extent = max(0.5, 2.5 * float(np.ptp(np.vstack([first.origins, first.feet])[:, [0, 2]], axis=0).max()))
    w, h = size
    fig = plt.figure(figsize=(w / 100, h / 100), dpi=100)
    ax = fig.add_axes([0.05, 0.07, 0.9, 0.88])
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    ax.axhline(0.0, color="0.3", lw=2)
    ax.axhspan(-1.0, 0.0, color="0.85")
    for centre, semi_x, semi_z in run_holes(scenario):  # a tracked plan's holes: white pits, outlined
        ax.add_patch(Ellipse((centre, 0.0), 2 * semi_x, 2 * semi_z, facecolor="white", edgecolor="0.4", ls="--",
                             lw=1.5, zorder=1.5))
    n_caps = drawing.n_segments
    capsules = [ax.plot([], [], "-", color="tab:blue", lw=4, solid_capstyle="round")[0] for _ in range(n_caps)]
    spheres = [Circle((0, 0), r, color="tab:orange") for r in drawing.radii]
    for c in spheres:
        ax.add_patch(c)
    ghosts = [[ax.plot([], [], "-", color="tab:blue", lw=3, alpha=0.12 + 0.1 * g, solid_capstyle="round")[0]
               for _ in range(n_caps)] for g in range(len(ghost_stages))]
    joints = ax.plot([], [], "o", color="k", ms=4)[0]
    arrows = [ax.plot([], [], "-", color="tab:red", lw=2)[0] for _ in range(model.nc)]
    stamp = ax.text(0.02, 0.95, "", transform=ax.transAxes, fontsize=14, va="top", family="monospace")
    from matplotlib.lines import Line2D

    key = [Line2D([], [], color="tab:blue", lw=4, label="bodies"),
           Line2D([], [], marker="o", color="tab:orange", lw=0, ms=8, label="feet"),
           Line2D([], [], color="tab:red", lw=2, label="contact forces"),
           Line2D([], [], color="black", lw=0, label="red time stamp: a deadline missed in the last 10 ticks")]
    if ghost_stages:
        key.insert(3, Line2D([], [], color="tab:blue", lw=3, alpha=0.3,
                             label="faded: the MPC's plan at 1/3, 2/3 and the end of its horizon"))
    ax.legend(handles=key, loc="upper right", fontsize=7, framealpha=0.8)
    ax.set_title(f"{scenario.get('name', '')}: {model.name} on {scenario.get('plant', '')}, "
                 f"{scenario.get('controller', '')}" + (f" (x{1 / slowmo:g} speed)" if slowmo != 1.0 else ""))
    out = folder / "animation.mp4"
    writer = imageio_ffmpeg.write_frames(str(out), (w, h), fps=fps, codec="libx264", macro_block_size=8,
                                         quality=6)
    writer.send(None)
    moving = [*(a for g in ghosts for a in g), *capsules, *spheres, joints, *arrows, stamp]
    for a in moving:  # drawn over a cached background (blitting): axes and ticks only on a new page
        a.set_animated(True)
    width = extent * w / h
    page, background = None, None
    last_print = 0.0
    for k, i in enumerate(idx):
        drawn = drawing.at(q[i])
        _place(drawn, capsules, spheres)
        o, feet = drawn.origins[:, [0, 2]], drawn.feet[:, [0, 2]]
        joints.set_data(o[:, 0], o[:, 1])
        for g, stage in enumerate(ghost_stages):  # the plan made from this state: STATE i + 1 carried it
            plan_q = horizon[min(i + 1, len(horizon) - 1), stage]
            visible = bool(np.isfinite(plan_q).all())
            if visible:
                _place(drawing.at(plan_q), ghosts[g])
            for line in ghosts[g]:
                line.set_visible(visible)
        for c in range(model.nc):
            fn, ft = force[i, c, 0], force[i, c, 1]
            arrows[c].set_data([feet[c, 0], feet[c, 0] + FORCE_SCALE_M_PER_N * ft],
                               [feet[c, 1], feet[c, 1] + FORCE_SCALE_M_PER_N * fn])
        # the camera pages: it moves by 60 % of the view when the base leaves the middle 60 %
        cx = float(o[0, 0])
        if page is None or abs(cx - page) > 0.3 * width:
            page = cx
            ax.set_xlim(page - width / 2, page + width / 2)
            ax.set_ylim(-0.1 * extent, 0.9 * extent)
            fig.canvas.draw()
            background = fig.canvas.copy_from_bbox(fig.bbox)
        late = bool(late_any[i])  # a late command in the last 10 ticks
        stamp.set_text(f"t = {t[i]:6.3f} s" + ("   deadline missed" if late else ""))
        stamp.set_color("red" if late else "black")
        fig.canvas.restore_region(background)
        for a in moving:
            ax.draw_artist(a)
        writer.send(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].tobytes())
        if progress and time.perf_counter() - last_print > 1.0:
            last_print = time.perf_counter()
            print(f"animation: frame {k + 1}/{len(idx)}", flush=True)
    writer.close()
    plt.close(fig)
    render_s = time.perf_counter() - t_start
    return {"path": str(out), "frames": int(len(idx)), "seconds": float(len(idx) / fps), "render_s": render_s,
            "renderer": f"stick figure, matplotlib, {w}x{h}"}
