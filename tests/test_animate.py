"""animation.mp4 of a run folder (launch/animate.py), on a synthetic run of the hopper."""
from __future__ import annotations

import json

import imageio_ffmpeg
import numpy as np
import pytest

from launch.animate import body_shapes, render
from robots import get_robot, numeric


@pytest.fixture()
def run_dir(tmp_path):
    """A run folder with 1 s of the hopper walking forward and swinging its hip, a late tick at 0.5 s."""
    model = get_robot("hopper")
    t = np.arange(0.0, 1.0 + 1e-9, 0.01)
    q = np.tile(model.q0, (len(t), 1))
    q[:, 0] = 0.5 * t
    q[:, 2] += 0.4 * np.sin(2 * np.pi * t)
    force = np.zeros((len(t), model.nc, 2))
    force[:, 0, 0] = 60.0
    np.savez(tmp_path / "trajectory.npz", t=t, q=q, v=np.zeros_like(q), tau=np.zeros((len(t), model.nu)),
             contact=np.ones((len(t), model.nc), bool), force=force, q_names=np.array(model.q_names),
             u_names=np.array(model.u_names))
    (tmp_path / "scenario.json").write_text(json.dumps({"name": "synthetic", "robot": "hopper", "plant": "ess",
                                                        "controller": "pd"}))
    missed = np.zeros(len(t), int)
    missed[50] = 1
    rows = "\n".join(f"{k},{m}" for k, m in enumerate(missed))
    (tmp_path / "plant_ticks.csv").write_text("tick,missed\n" + rows + "\n")
    return tmp_path


def _frames(path):
    gen = imageio_ffmpeg.read_frames(str(path))
    meta = next(gen)
    return meta, [np.frombuffer(f, np.uint8).reshape(meta["size"][1], meta["size"][0], 3) for f in gen]


def test_animation_is_real_time_shows_the_robot_moving_and_marks_misses(run_dir):
    out = render(run_dir, progress=False)
    meta, frames = _frames(out["path"])
    assert meta["size"] == (1280, 720) and meta["fps"] == 30
    assert out["frames"] == len(frames) == 31  # 0 .. 1 s at 30 fps
    assert np.abs(frames[0].astype(int) - frames[8].astype(int)).sum() > 0  # the robot moved
    red = lambda f: int(((f[..., 0] > 180) & (f[..., 1] < 80) & (f[..., 2] < 80)).sum())  # noqa: E731
    assert red(frames[16]) > red(frames[0]) + 50  # t = 0.53 s: "deadline missed" in red
    slow = render(run_dir, slowmo=2.0, progress=False)
    assert slow["frames"] == 61


def test_shapes_come_from_the_models_mjcf():
    shapes = body_shapes(get_robot("hopper").mjcf)
    assert set(shapes) == {"body", "thigh", "shank"}
    assert [s[0] for s in shapes["shank"]] == ["capsule", "sphere"]
    model = get_robot("hopper")  # the foot sphere's lowest point is the contact point
    fns = numeric(model, verbose=False)
    q = model.q0 + np.array([0.1, 0.05, 0.3, -0.4])
    from launch.animate import _world

    pose = fns.body_poses(q)[model.body_names.index("shank")]
    _, x, z, r = shapes["shank"][1]
    np.testing.assert_allclose(_world(pose, x, z - r), fns.contact_points(q)[0], atol=1e-12)


def test_bad_input_is_refused(tmp_path, run_dir):
    with pytest.raises(ValueError, match="not a run folder"):
        render(tmp_path / "nothing")
    with pytest.raises(ValueError, match="slowmo"):
        render(run_dir, slowmo=0.0)
