"""`animation.mp4` of a 3D (floating-base) robot: MuJoCo's offscreen renderer on the robot's MJCF.

    render3d(folder, fps=30, slowmo=1.0, size=(640, 480))   # called by launch.animate.render

Rendered after the run, never inside the loop, from the run folder alone (trajectory.npz,
plant_ticks.csv, scenario.json, controller_horizon.npz when there is one). The scene is the
robot's own MJCF (`RobotModel.mjcf`, robots/urdf.py `to_mjcf`: bodies, joints, foot spheres,
ground plane) compiled by MuJoCo with, added for drawing only (no mass, no collisions):

- the URDF's visual meshes (`robots.urdf.visual_meshes`: example-robot-data ships them as DAE,
  which MuJoCo cannot load, so pinocchio's loader reads them and they go in as vertex and face
  arrays), coarsened to MESH_CELL_M by vertex clustering (go1: 678k triangles -> 53k, which
  look the same at 640x480: a frame of software GL ~40 ms instead of ~190 ms) and kept in the
  code-generation cache folder (reading the DAE files takes ~3.5 s, the cache ~0.1 s); a robot
  without meshes (your own URDF, box3d) gets a skeleton instead: a capsule from each body to
  each child and foot, and a box over the base's;
- a checker floor, a sky, a light that follows the robot and casts its shadow (a 1024 shadow
  map and no multisampling: MuJoCo's defaults cost software GL ~60 ms more a frame).

Each frame places the bodies at the logged q (mj_kinematics, nothing is simulated), and draws:
the contact forces as red arrows from each foot's contact point (an arrow as long as the base's
nominal height is the robot's weight; the scale is printed in the corner); the MPC's plan of
that tick when the folder has controller_horizon.npz (translucent blue base and orange feet at
a third, two thirds and the end of the horizon: markers, not a second copy of the meshes); the
robot, plant and controller at the top and the time at the bottom, in red with "deadline
missed" when a command of the last 10 ticks came late (plant_ticks.csv `missed`). The camera
follows the base (its x-y averaged over TRACK_WINDOW_S around the frame's time, so it neither
lags nor shakes with the gait; a fixed height and direction): a trot stays in the middle of the
picture and the floor's squares show it moving.

The GL context is headless: MUJOCO_GL, when the user has not set it, is set here to
DEFAULT_GL ("osmesa", Debian's libosmesa6, which `make sysdeps` installs) before mujoco is
imported; MUJOCO_GL=egl works too (Mesa's EGL without a GPU; a GPU's EGL when there is one).
When no context can be made, `OffscreenGLError` says why, and launch/animate.py falls back to
the stick figure.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_GL = "osmesa"
SIZE = (640, 480)
MESH_CELL_M = 0.004  # vertex clustering cell of the visual meshes, m
TRACK_WINDOW_S = 0.5  # the camera looks at the base's x-y averaged over this window, centred (no lag)
LIGHT_DIR = (-0.1, 0.2, -1.0)  # the spot light shines down this way, from 3 robot sizes away
LATE_WINDOW = 10  # ticks: a missed command this recent colours the time stamp red


class OffscreenGLError(RuntimeError):
    """No headless OpenGL context could be made (the backend, the error, what to try)."""


def gl_context(width: int, height: int):
    """A current headless GL context of MUJOCO_GL's backend (set to DEFAULT_GL here when the user
    has not set it; before mujoco is imported when this runs first)."""
    backend = os.environ.setdefault("MUJOCO_GL", DEFAULT_GL).strip().lower()
    try:
        if backend == "osmesa":
            from mujoco.osmesa import GLContext
        elif backend == "egl":
            from mujoco.egl import GLContext
        else:  # glfw, glx: a window system's context, needs a display
            from mujoco import GLContext
        context = GLContext(width, height)
        context.make_current()
    except Exception as exc:  # noqa: BLE001 - ImportError, RuntimeError, ctypes and GL errors alike
        other = "egl" if backend == "osmesa" else "osmesa"
        raise OffscreenGLError(f"no offscreen OpenGL context with MUJOCO_GL={backend}: {type(exc).__name__}: {exc} "
                               f"(try MUJOCO_GL={other}; osmesa needs Debian's libosmesa6, egl libegl1 and "
                               "libegl-mesa0)") from exc
    return context


def decimate(vertices: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """A coarser mesh by vertex clustering: the vertices in each cube of side `cell` (m) become
    their mean, the triangles that collapse are dropped. (V, 3) float and (F, 3) int in and out."""
    if cell <= 0 or not len(faces):
        return vertices, faces
    _, inverse, counts = np.unique(np.floor(vertices / cell).astype(np.int64), axis=0, return_inverse=True,
                                   return_counts=True)
    inverse = inverse.ravel()
    merged = np.zeros((len(counts), 3))
    np.add.at(merged, inverse, vertices)
    merged /= counts[:, None]
    f = inverse[faces]
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    return merged, f[keep]


MESH_CACHE_VERSION = 1  # bump when what robot_meshes stores changes


@functools.lru_cache(maxsize=4)
def robot_meshes(robot: str) -> tuple:
    """The visual meshes of an example-robot-data robot for drawing: (body index, pos, quat
    (w x y z), vertices, faces) each, coarsened (`decimate`); () for any other robot. Read once
    per machine (go1: ~3.5 s, pinocchio reading its DAE files), then from the code-generation
    cache folder ($LEGMPC_CACHE_DIR or ~/.cache/legmpc, robots/codegen.py), keyed by the URDF
    file's path, size and time and MESH_CELL_M."""
    from robots.codegen import default_cache_dir
    from robots.urdf import EXAMPLE_ROBOTS, example_robot_path

    if robot not in EXAMPLE_ROBOTS:
        return ()
    urdf = example_robot_path(EXAMPLE_ROBOTS[robot][0])
    stat = urdf.stat()
    key = hashlib.sha256(f"{MESH_CACHE_VERSION} {urdf} {stat.st_size} {stat.st_mtime_ns} {MESH_CELL_M}".encode())
    path = default_cache_dir() / f"meshes-{robot}-{key.hexdigest()[:16]}.npz"
    try:
        with np.load(path) as data:
            return tuple((int(data[f"body_{k}"]), data[f"pos_{k}"], data[f"quat_{k}"], data[f"vertices_{k}"],
                          data[f"faces_{k}"]) for k in range(int(data["n"])))
    except (OSError, KeyError, ValueError):
        pass
    meshes = _load_meshes(robot)
    arrays = {"n": len(meshes)}
    for k, (body, pos, quat, vertices, faces) in enumerate(meshes):
        arrays.update({f"body_{k}": body, f"pos_{k}": pos, f"quat_{k}": quat, f"vertices_{k}": vertices,
                       f"faces_{k}": faces})
    try:  # written whole or not at all: a temporary file, then renamed
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as tmp:
            np.savez(tmp, **arrays)
        os.replace(tmp.name, path)
    except OSError:
        pass  # a read-only cache: load the meshes again next time
    return meshes


def _load_meshes(robot: str) -> tuple:
    """`robot_meshes` without the cache: pinocchio's loader, then `decimate`."""
    from robots.urdf import visual_meshes
    from scipy.spatial.transform import Rotation

    out = []
    for mesh in visual_meshes(robot):
        vertices, faces = decimate(mesh.vertices, mesh.faces, MESH_CELL_M)
        if len(faces) < 4:
            continue
        R, p = mesh.placement
        x, y, z, w = Rotation.from_matrix(R).as_quat()
        out.append((mesh.body, np.asarray(p, float), np.array([w, x, y, z]), vertices.astype(np.float32),
                    faces.astype(np.int32)))
    return tuple(out)


def _skeleton(spec, body, radius: float, rgba) -> None:
    """Capsules from `body`'s origin to each child body and each foot sphere, recursively; the
    root also gets a box over them (a robot without meshes)."""
    import mujoco

    ends = [np.array(child.pos, float) for child in body.bodies]
    ends += [np.array(g.pos, float) for g in body.geoms if g.type == mujoco.mjtGeom.mjGEOM_SPHERE]
    for end in ends:
        if np.linalg.norm(end) > 1e-6:
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *end], size=[radius, 0, 0],
                          rgba=rgba, contype=0, conaffinity=0, mass=0, group=1)
    if body.parent.name == "world" and len(ends) >= 2:
        ends = np.array(ends)
        half = np.abs(ends).max(axis=0)
        half[2] = max(half[2], 0.25 * min(half[0], half[1]), radius)
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=half, rgba=rgba, contype=0, conaffinity=0, mass=0,
                      group=1)
    for child in body.bodies:
        _skeleton(spec, child, radius, rgba)


def scene_model(model, size: tuple[int, int]):
    """The MjModel drawn: `model.mjcf` with the meshes (or a skeleton), floor, sky and light."""
    import mujoco

    spec = mujoco.MjSpec.from_string(model.mjcf)
    floor = next(g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE)
    spec.add_texture(name="checker", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
                     rgb1=[0.80, 0.82, 0.85], rgb2=[0.66, 0.69, 0.73], width=256, height=256)
    checker = spec.add_material(name="checker", texrepeat=[4, 4], texuniform=True)
    checker.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "checker"
    floor.material = "checker"
    spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                     rgb1=[0.93, 0.95, 0.98], rgb2=[0.62, 0.72, 0.85], width=64, height=384)
    height = float(model.q0[2])
    meshes = robot_meshes(model.name)
    for k, (body, pos, quat, vertices, faces) in enumerate(meshes):
        spec.add_mesh(name=f"visual_{k}", uservert=vertices.ravel().tolist(), userface=faces.ravel().tolist())
        rgba = [0.30, 0.32, 0.36, 1.0] if body == 0 else [0.55, 0.57, 0.60, 1.0]
        spec.body(model.body_names[body]).add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"visual_{k}", pos=pos,
                                                   quat=quat, rgba=rgba, contype=0, conaffinity=0, mass=0, group=1)
    if not meshes:
        _skeleton(spec, spec.body(model.body_names[0]), 0.04 * height, [0.40, 0.45, 0.55, 1.0])
    for g in spec.geoms:  # the feet: the contact model's spheres
        if g.type == mujoco.mjtGeom.mjGEOM_SPHERE:
            g.rgba = [0.95, 0.55, 0.12, 1.0]
    spec.worldbody.add_light(name="sun", pos=[0.0, 0.0, 1.0], dir=LIGHT_DIR, castshadow=True, cutoff=60.0,
                             mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM, diffuse=[0.6, 0.6, 0.6],
                             specular=[0.2, 0.2, 0.2])  # placed by render3d, 3 robot sizes up LIGHT_DIR
    vis = spec.visual
    vis.headlight.ambient = [0.4, 0.4, 0.4]
    vis.headlight.diffuse = [0.45, 0.45, 0.45]
    vis.quality.shadowsize = 1024  # MuJoCo's 4096 costs software GL ~40 ms a frame
    vis.quality.offsamples = 0  # no multisampling: 2 samples cost ~20 ms a frame, 4 more
    vis.global_.offwidth, vis.global_.offheight = size
    vis.map.znear = 0.01
    return spec.compile()


def render3d(folder: Path, *, fps: int = 30, slowmo: float = 1.0, size: tuple[int, int] = SIZE,
             progress: bool = True) -> dict:
    """Write folder/animation.mp4 of a floating-base robot's run (module docstring); returns
    {"path", "frames", "seconds", "render_s", "renderer"}."""
    from .animate import frame_indices, late_ticks, read_horizon
    from .runfolder import run_robot

    t_start = time.perf_counter()
    folder = Path(folder)
    scenario, robot, traj = run_robot(folder)
    if not robot.floating_base:
        raise ValueError(f"{robot.name} is planar: launch.animate draws it")
    t, q = traj["t"], traj["q"]
    idx = frame_indices(t, fps, slowmo)
    force = traj.get("force", np.zeros((len(t), robot.nc, 3)))
    late = late_ticks(folder, len(t), LATE_WINDOW)
    horizon = read_horizon(folder, robot.nq)
    w, h = size
    context = gl_context(w, h)  # before mujoco.MjrContext; OffscreenGLError when there is none
    import imageio_ffmpeg
    import mujoco
    from scipy.ndimage import uniform_filter1d

    from robots.urdf import mujoco_state

    con = writer = None
    try:
        m = scene_model(robot, size)
        d = mujoco.MjData(m)
        plan = mujoco.MjData(m)  # the plan's configurations, placed for their feet
        foot_geoms = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, c.name) for c in robot.contacts]
        radii = np.array([c.radius for c in robot.contacts])
        height = float(robot.q0[2])
        weight = float(m.body_mass.sum() * np.linalg.norm(m.opt.gravity))
        scale = height / weight  # m per N: the robot's weight is as long as the base is high
        try:  # MuJoCo's GL resources: fails on a context without the OpenGL it needs
            con = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_100)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, con)
        except Exception as exc:  # noqa: BLE001 - mujoco.FatalError and GL errors alike
            raise OffscreenGLError(f"MuJoCo cannot render with MUJOCO_GL={os.environ.get('MUJOCO_GL')}: "
                                   f"{type(exc).__name__}: {exc}") from exc
        scn = mujoco.MjvScene(m, maxgeom=m.ngeom + 64)
        opt = mujoco.MjvOption()
        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        d.qpos[:], _ = mujoco_state(robot.q0, np.zeros(robot.nv))
        mujoco.mj_kinematics(m, d)  # standing: the robot's size (feet's span and height) sets the distances
        reach = float(np.ptp(d.geom_xpos[foot_geoms][:, :2], axis=0).max()) + height
        cam.distance, cam.azimuth, cam.elevation = 2.2 * reach, 120.0, -18.0
        m.light_poscom0[0] = -3.0 * reach * np.asarray(LIGHT_DIR) / np.linalg.norm(LIGHT_DIR)  # above the robot
        rect = mujoco.MjrRect(0, 0, w, h)
        rgb = np.empty((h, w, 3), np.uint8)
        stages = [] if horizon is None else sorted({horizon.shape[1] // 3, 2 * horizon.shape[1] // 3,
                                                    horizon.shape[1] - 1})
        title = (f"{scenario.get('name', '')}: {robot.name} on {scenario.get('plant', '')}, "
                 f"{scenario.get('controller', '')}" + (f"  (x{1 / slowmo:g} speed)" if slowmo != 1.0 else ""))
        legend = (f"force arrows: {height:.2f} m = weight {weight:.0f} N" +
                  ("\ntranslucent robots: the MPC's plan at 1/3, 2/3 and the end of its horizon" if stages else "") +
                  "\nred time stamp: a deadline missed in the last 10 ticks")
        out = folder / "animation.mp4"
        writer = imageio_ffmpeg.write_frames(str(out), (w, h), fps=fps, codec="libx264", macro_block_size=8,
                                             quality=6)
        writer.send(None)
        dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
        look = uniform_filter1d(q[:, 0:2], size=max(1, int(round(TRACK_WINDOW_S / dt))), axis=0, mode="nearest")
        last_print = 0.0
        for k, i in enumerate(idx):
            d.qpos[:], _ = mujoco_state(q[i], np.zeros(robot.nv))
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_camlight(m, d)  # the light follows the robot's centre of mass
            cam.lookat[:] = (look[i, 0], look[i, 1], 0.6 * height)
            mujoco.mjv_updateScene(m, d, opt, None, cam, mujoco.mjtCatBit.mjCAT_ALL, scn)
            contact = d.geom_xpos[foot_geoms] - np.outer(radii, [0.0, 0.0, 1.0])  # lowest point of each foot
            mean_force = force[min(idx[k - 1] + 1, i) if k else i:i + 1].mean(axis=0)  # over this frame's ticks
            for c in range(robot.nc):
                f = mean_force[c]
                world = np.array([f[1], f[2] if len(f) > 2 else 0.0, f[0]])
                if np.linalg.norm(world) * scale > 0.01:
                    _add(scn, mujoco.mjtGeom.mjGEOM_ARROW, (0.85, 0.1, 0.1, 1.0), contact[c],
                         contact[c] + scale * world, 0.035 * height)
            if stages:  # the plan made from this state: STATE i + 1 carried it
                for g, stage in enumerate(stages):
                    plan_q = horizon[min(i + 1, len(horizon) - 1), stage]
                    if not np.isfinite(plan_q).all():
                        continue
                    plan.qpos[:], _ = mujoco_state(plan_q, np.zeros(robot.nv))
                    mujoco.mj_kinematics(m, plan)
                    a = 0.25 + 0.15 * g
                    _add(scn, mujoco.mjtGeom.mjGEOM_SPHERE, (0.25, 0.45, 0.9, a), plan.xpos[1], size=0.08 * height)
                    for c, gid in enumerate(foot_geoms):
                        _add(scn, mujoco.mjtGeom.mjGEOM_SPHERE, (0.95, 0.55, 0.12, a), plan.geom_xpos[gid],
                             size=radii[c])
            mujoco.mjr_render(rect, scn, con)
            font, grid = mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos
            mujoco.mjr_overlay(font, grid.mjGRID_TOPLEFT, rect, title, "", con)
            mujoco.mjr_overlay(font, grid.mjGRID_BOTTOMRIGHT, rect, legend, "", con)
            stamp = f"t = {t[i]:6.3f} s" + ("   deadline missed" if late[i] else "")
            box = mujoco.MjrRect(0, 0, int(sum(con.charWidth[ord(ch)] for ch in stamp)) + 16, con.charHeight + 12)
            mujoco.mjr_rectangle(box, 0.1, 0.1, 0.1, 0.75)
            mujoco.mjr_text(font, stamp, con, 8 / box.width, 6 / box.height,  # relative to the box: mjr_rectangle
                            *((1.0, 0.3, 0.25) if late[i] else (1.0, 1.0, 1.0)))  # left it the viewport
            mujoco.mjr_readPixels(rgb, None, rect, con)
            writer.send(np.ascontiguousarray(rgb[::-1]).tobytes())  # GL's rows run bottom-up
            if progress and time.perf_counter() - last_print > 1.0:
                last_print = time.perf_counter()
                print(f"animation: frame {k + 1}/{len(idx)}", flush=True)
        writer.close()
        writer = None
    finally:
        if writer is not None:
            writer.close()
        if con is not None:
            con.free()
        context.free()
    render_s = time.perf_counter() - t_start
    backend = os.environ.get("MUJOCO_GL", DEFAULT_GL)
    return {"path": str(out), "frames": int(len(idx)), "seconds": float(len(idx) / fps), "render_s": render_s,
            "renderer": f"MuJoCo, MUJOCO_GL={backend}, {w}x{h}"}


def _add(scn, kind, rgba, start, end=None, width: float = 0.0, size: float = 0.0) -> None:
    """Append a geom to the scene: an arrow (connector) from start to end of `width`, or a sphere
    of radius `size` at start; silently none when the scene is full."""
    import mujoco

    if scn.ngeom >= scn.maxgeom:
        return
    geom = scn.geoms[scn.ngeom]
    mujoco.mjv_initGeom(geom, kind, np.array([size, size, size]), np.asarray(start, float), np.eye(3).ravel(),
                        np.array(rgba, np.float32))
    if end is not None:  # MuJoCo draws an arrow half as long as its connector (render_gl3.c: size[2] / 6 * 3)
        start = np.asarray(start, float)
        mujoco.mjv_connector(geom, kind, width, start, start + 2.0 * (np.asarray(end, float) - start))
    geom.category = mujoco.mjtCatBit.mjCAT_DECOR
    scn.ngeom += 1
