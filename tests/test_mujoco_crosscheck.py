"""Cross-check against MuJoCo: the exported MJCF gives our M(q) and h(q, v) at random states."""
from __future__ import annotations

import numpy as np
import pytest

from robots import get_robot, numeric, robot_names
from tests.conftest import random_state

mujoco = pytest.importorskip("mujoco")
# the planar robots: MuJoCo's qpos, qvel are our q, v (the 3D robots' check, with their
# quaternion order and velocity frame, is tests/test_spatial.py's test_exported_mjcf_matches_mujoco)
PLANAR = [name for name in robot_names() if not get_robot(name).floating_base]


@pytest.mark.parametrize("name", PLANAR)
def test_mass_matrix_and_bias_match_mujoco(name):
    model = get_robot(name)
    fns = numeric(model)
    mj = mujoco.MjModel.from_xml_string(model.mjcf)
    data = mujoco.MjData(mj)
    full = np.zeros((mj.nv, mj.nv))
    rng = np.random.default_rng(6)
    for _ in range(100):
        q, v = random_state(model, rng, scale=1.0)
        v *= 3.0
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(mj, data)
        mujoco.mj_fullM(mj, data, full)
        M = fns.mass_matrix(q)
        h = fns.bias(q, v) - fns.passive(q, v)  # qfrc_bias has no springs/dampers
        assert np.linalg.norm(M - full) <= 1e-8 * np.linalg.norm(full), f"M differs at q={q}"
        assert np.linalg.norm(h - data.qfrc_bias) <= 1e-8 * np.linalg.norm(data.qfrc_bias), f"h differs at q={q}"
        np.testing.assert_allclose(-fns.passive(q, v), data.qfrc_passive, atol=1e-12)


def test_joint_springs_and_dampers_match_mujoco_passive_forces():
    """A small tree built inline (double pendulum on a cart with springs/dampers) exercises the
    builder's passive terms, which none of the library robots uses."""
    from robots import numeric as make_numeric
    from robots.planar import Body, Joint, PlanarTree, build_planar_robot

    tree = PlanarTree(
        name="spring_pendulum",
        bodies=(
            Body("cart", None, (0.0, 0.0), (Joint("x", "slide_x", stiffness=30.0, rest=0.2, damping=1.5),), 2.0),
            Body("link1", "cart", (0.0, 0.0), (Joint("j1", "hinge", stiffness=5.0, rest=0.3, damping=0.2),), 1.0,
                 com=(0.05, -0.25), inertia=0.02),
            Body("link2", "link1", (0.0, -0.5), (Joint("j2", "hinge", axis_sign=-1, stiffness=2.0, damping=0.1),),
                 0.5, com=(0.0, -0.2), inertia=0.01),
        ),
    )
    model = build_planar_robot(tree)
    fns = make_numeric(model)
    mj = mujoco.MjModel.from_xml_string(model.mjcf)
    data = mujoco.MjData(mj)
    full = np.zeros((mj.nv, mj.nv))
    rng = np.random.default_rng(7)
    for _ in range(50):
        q, v = rng.normal(size=3), rng.normal(size=3)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(mj, data)
        mujoco.mj_fullM(mj, data, full)
        np.testing.assert_allclose(fns.mass_matrix(q), full, rtol=1e-10, atol=1e-12)
        # ours sits in h (left-hand side); MuJoCo's qfrc_passive is the applied force
        np.testing.assert_allclose(-fns.passive(q, v), data.qfrc_passive, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fns.bias(q, v), data.qfrc_bias - data.qfrc_passive, rtol=1e-10, atol=1e-12)
