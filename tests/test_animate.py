"""animation.mp4 of a run folder (launch/animate.py), on a synthetic run of the hopper."""
from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from launch.animate import render
from launch.drawing import body_shapes
from robots import get_robot, numeric


def _frames(path):
    gen = imageio_ffmpeg.read_frames(str(path))
    meta = next(gen)
    return meta, [np.frombuffer(f, np.uint8).reshape(meta["size"][1], meta["size"][0], 3) for f in gen]


def test_animation_is_real_time_shows_the_robot_moving_and_marks_misses(synthetic_run):
    out = render(synthetic_run, progress=False)
    meta, frames = _frames(out["path"])
    assert meta["size"] == (1280, 720) and meta["fps"] == 30
    assert out["frames"] == len(frames) == 31  # 0 .. 1 s at 30 fps
    assert np.abs(frames[0].astype(int) - frames[8].astype(int)).sum() > 0  # the robot moved
    red = lambda f: int(((f[..., 0] > 180) & (f[..., 1] < 80) & (f[..., 2] < 80)).sum())  # noqa: E731
    assert red(frames[16]) > red(frames[0]) + 50  # t = 0.53 s: "deadline missed" in red
    slow = render(synthetic_run, slowmo=2.0, progress=False)
    assert slow["frames"] == 61


def test_shapes_come_from_the_models_mjcf():
    shapes = body_shapes(get_robot("hopper").mjcf)
    assert set(shapes) == {"body", "thigh", "shank"}
    assert [s[0] for s in shapes["shank"]] == ["capsule", "sphere"]
    model = get_robot("hopper")  # the foot sphere's lowest point is the contact point
    fns = numeric(model, verbose=False)
    q = model.q0 + np.array([0.1, 0.05, 0.3, -0.4])
    from launch.drawing import planar_world as _world

    pose = fns.body_poses(q)[model.body_names.index("shank")]
    _, x, z, r = shapes["shank"][1]
    np.testing.assert_allclose(_world(pose, x, z - r), fns.contact_points(q)[0], atol=1e-12)


def test_bad_input_is_refused(tmp_path, synthetic_run):
    with pytest.raises(ValueError, match="not a run folder"):
        render(tmp_path / "nothing")
    with pytest.raises(ValueError, match="slowmo"):
        render(synthetic_run, slowmo=0.0)
    with pytest.raises(ValueError, match="lower --slowmo or --fps"):
        render(synthetic_run, slowmo=1e6)
    (synthetic_run / "scenario.json").write_text('{"robot": "quadruped"}')
    with pytest.raises(ValueError, match="not from one run"):
        render(synthetic_run)
    (synthetic_run / "scenario.json").unlink()
    with pytest.raises(ValueError, match="no scenario.json"):
        render(synthetic_run)


def test_the_mpc_plan_is_drawn_as_a_ghost(synthetic_run):
    """With controller_horizon.npz (the plan of each tick) the frames gain faded copies of the
    robot; without it they have none."""
    plain = _frames(render(synthetic_run, progress=False)["path"])[1]
    q = np.load(synthetic_run / "trajectory.npz")["q"]
    plans = np.repeat(q[:, None, :], 9, axis=1)
    plans[:, :, 0] += np.linspace(0.0, 0.3, 9)  # the plan walks 0.3 m ahead over its horizon
    np.savez(synthetic_run / "controller_horizon.npz", q=plans)
    ghost = _frames(render(synthetic_run, progress=False)["path"])[1]
    faded = lambda f: int(((f[..., 2] > 150) & (f[..., 0] > 120) & (f[..., 0] < 235)).sum())  # noqa: E731
    assert faded(ghost[10]) > faded(plain[10]) + 500


def test_the_holes_of_a_tracked_plan_are_drawn(synthetic_run):
    """A run that tracked a plan (controller_options.plan) shows the plan's holes as white pits
    in the grey ground; the same run without a plan has none."""
    import json

    plain = _frames(render(synthetic_run, progress=False)["path"])[1][0]
    plan = synthetic_run / "plan.npz"
    np.savez(plan, hole_centers=np.array([0.3]), hole_semi_x=0.15, hole_semi_z=0.1)
    scenario = json.loads((synthetic_run / "scenario.json").read_text())
    scenario["controller_options"] = {"plan": str(plan)}
    (synthetic_run / "scenario.json").write_text(json.dumps(scenario))
    holed = _frames(render(synthetic_run, progress=False)["path"])[1][0]
    white = lambda f: int((f.min(axis=-1) > 245).sum())  # noqa: E731
    assert white(holed) > white(plain) + 500


@pytest.fixture()
def go1_run(tmp_path):
    """A run folder of go1: 0.2 s at 100 Hz walking forward and bending its knees, 60 N on the
    front-left and rear-right feet (a trot's stance pair)."""
    import json

    model = get_robot("go1")
    t = np.arange(1, 21) * 0.01
    q = np.tile(model.q0, (len(t), 1))
    q[:, 0] = 0.5 * t
    q[:, 9::3] += 0.3 * np.sin(2 * np.pi * 5 * t)[:, None]  # the calves
    force = np.zeros((len(t), model.nc, 3))
    force[:, [0, 3], 0] = 60.0
    np.savez(tmp_path / "trajectory.npz", t=t, q=q, v=np.zeros((len(t), model.nv)), tau=np.zeros((len(t), model.nu)),
             contact=force[:, :, 0] > 0, force=force, q_names=np.array(model.q_names),
             u_names=np.array(model.u_names))
    (tmp_path / "scenario.json").write_text(json.dumps({"name": "go1", "robot": "go1", "plant": "ess",
                                                        "controller": "mpc"}))
    return tmp_path


def test_a_3d_robot_is_rendered_in_3d_with_its_meshes_and_force_arrows(go1_run):
    """go1's animation.mp4 is MuJoCo's offscreen render (640x480, a frame per 1/30 s), not blank,
    not the stick figure, and its force arrows are red pixels that a run without forces lacks."""
    from launch.render3d import scene_model

    assert scene_model(get_robot("go1"), (640, 480)).nmesh >= 13  # trunk, hips, thighs, calves...
    out = render(go1_run, progress=False)
    assert out["renderer"].startswith("MuJoCo, MUJOCO_GL=")
    meta, frames = _frames(out["path"])
    assert meta["size"] == (640, 480) and meta["fps"] == 30
    assert out["frames"] == len(frames) == 6  # 0.01 .. 0.2 s at 30 fps
    assert frames[0].std() > 20  # sky, checker floor, robot: not a blank picture
    assert np.abs(frames[0].astype(int) - frames[5].astype(int)).mean() > 1  # the legs moved
    stick = render(go1_run, progress=False, style="stick", size=(640, 480))
    assert stick["renderer"].startswith("stick figure")
    stick_frame = _frames(stick["path"])[1][0]
    assert np.abs(frames[0].astype(int) - stick_frame.astype(int)).mean() > 30

    red = lambda f: int(((f[..., 0] > 150) & (f[..., 1] < 70) & (f[..., 2] < 70)).sum())  # noqa: E731
    traj = dict(np.load(go1_run / "trajectory.npz"))
    traj["force"] = np.zeros_like(traj["force"])
    np.savez(go1_run / "trajectory.npz", **traj)
    unloaded = _frames(render(go1_run, progress=False)["path"])[1][0]
    assert red(frames[0]) > red(unloaded) + 100


def test_without_an_offscreen_gl_the_3d_robot_falls_back_to_the_stick_figure(go1_run, monkeypatch, capsys):
    from launch import render3d

    def no_gl(width, height):
        raise render3d.OffscreenGLError("no offscreen OpenGL context with MUJOCO_GL=osmesa: test")

    monkeypatch.setattr(render3d, "gl_context", no_gl)
    out = render(go1_run, progress=False)
    assert out["renderer"].startswith("stick figure") and _frames(out["path"])[0]["size"] == (1280, 720)
    assert "stick figure instead" in capsys.readouterr().err


def test_decimated_meshes_keep_their_shape():
    """Vertex clustering: a fine sphere loses most of its triangles, its vertices stay on it."""
    import trimesh

    from launch.render3d import decimate

    sphere = trimesh.creation.icosphere(subdivisions=5, radius=0.1)
    vertices, faces = decimate(np.asarray(sphere.vertices), np.asarray(sphere.faces), 0.01)
    assert len(faces) < 0.2 * len(sphere.faces) and faces.max() < len(vertices)
    np.testing.assert_allclose(np.linalg.norm(vertices, axis=1), 0.1, atol=0.01)
