"""The 3D quadrupeds as `RobotModel`s (robots/floating.py, robots/library/quadrupeds3d.py): the
compiled functions every plant and the MPC use, against pinocchio at random states (issue 27)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robots import get_robot, numeric
from robots.urdf import load_urdf_tree

ROBOTS = ("go1", "a1", "solo12", "go2", "anymal_c")


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    model = get_robot(request.param)
    pmodel = pin.buildModelFromUrdf(str(load_urdf_tree(request.param).path), pin.JointModelFreeFlyer())
    return model, numeric(model, verbose=False), pmodel, pmodel.createData()


def _random_state(pmodel, rng):
    q = pin.randomConfiguration(pmodel, -np.ones(pmodel.nq), np.ones(pmodel.nq))
    q[:3] = rng.normal(size=3)
    return q, rng.normal(scale=2.0, size=pmodel.nv)


def test_sizes_limits_and_standing_pose(robot):
    model, fns, _, _ = robot
    assert (model.nq, model.nv, model.nu, model.nc, model.dim, model.n_tangent) == (19, 18, 12, 4, 3, 2)
    assert model.floating_base and model.B.shape == (18, 12) and np.all(model.u_max > 0)
    assert np.all(np.isinf(model.q_min[:7])) and np.all(model.q_min[7:] < model.q_max[7:])
    # q0 stands: every foot sphere touches the ground, the base is level and above it
    np.testing.assert_allclose(fns.contact_gap(model.q0), 0.0, atol=1e-12)
    assert model.q0[2] > 0.1 and np.array_equal(model.q0[3:7], [0, 0, 0, 1])


def test_dynamics_contacts_and_energy_match_pinocchio(robot):
    """At 50 random states, to 1e-9 relative: M, h, each foot's gap (frame height - radius), the
    normal and tangential Jacobians (rows of the world velocity), the contact bias accelerations
    (pinocchio's classical frame acceleration at zero joint acceleration) and the energies."""
    model, fns, pm, pd = robot
    rng = np.random.default_rng(31)
    r = model.contacts[0].radius
    for _ in range(50):
        q, v = _random_state(pm, rng)
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        scale = np.abs(Mp).max()
        np.testing.assert_allclose(fns.mass_matrix(q), Mp, rtol=0, atol=1e-9 * scale)
        hp = pin.rnea(pm, pd, q, v, np.zeros(pm.nv))
        np.testing.assert_allclose(fns.bias(q, v), hp, rtol=0, atol=1e-9 * np.abs(hp).max())
        pin.forwardKinematics(pm, pd, q, v, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, q)
        Jn, Jt = fns.contact_jacobians(q)
        an, at = fns.contact_bias_accelerations(q, v)
        for i, c in enumerate(model.contacts):
            fid = pm.getFrameId(c.name)
            J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
            acc = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).linear
            tol = 1e-9 * max(1.0, np.abs(J).max())
            assert fns.contact_gap(q)[i] == pytest.approx(pd.oMf[fid].translation[2] - r, abs=1e-9)
            np.testing.assert_allclose(fns.contact_points(q)[i], pd.oMf[fid].translation - [0, 0, r], atol=1e-9)
            np.testing.assert_allclose(Jn[i], J[2], rtol=0, atol=tol)
            np.testing.assert_allclose(Jt[2 * i:2 * i + 2], J[:2], rtol=0, atol=tol)
            np.testing.assert_allclose(an[i], acc[2], rtol=0, atol=1e-9 * max(1.0, np.abs(acc).max()))
            np.testing.assert_allclose(at[2 * i:2 * i + 2], acc[:2], rtol=0, atol=1e-9 * max(1.0, np.abs(acc).max()))
        T, V = fns.energy(q, v)
        assert T == pytest.approx(pin.computeKineticEnergy(pm, pd, q, v), rel=1e-9)
        assert V == pytest.approx(pin.computePotentialEnergy(pm, pd, q), rel=1e-9, abs=1e-9)


def test_integrate_and_velocity_map_agree(robot):
    """The compiled q (+) v dt equals pinocchio's integrate, and dq/dt = G(q) v is its
    derivative in dt (central difference), quaternion norm 1 to 1e-12."""
    import casadi as ca

    model, fns, pm, _ = robot
    G = ca.Function("G", [model.q], [model.velocity_map])
    rng = np.random.default_rng(5)
    for _ in range(10):
        q, v = _random_state(pm, rng)
        nxt = fns.integrate(q, v, 0.01)
        want = pin.integrate(pm, q, v * 0.01)
        want[3:7] *= np.sign(want[3:7] @ nxt[3:7])
        np.testing.assert_allclose(nxt, want, atol=1e-10)
        assert abs(np.linalg.norm(nxt[3:7]) - 1.0) < 1e-12
        eps = 1e-6
        fd = (fns.integrate(q, v, eps) - fns.integrate(q, v, -eps)) / (2 * eps)
        np.testing.assert_allclose(np.array(G(q)) @ v, fd, atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_bad_parameters_name_the_field():
    with pytest.raises(ValueError, match="unknown parameters"):
        get_robot("go1", stiffnes=1.0)


def test_the_3d_doc_example_runs(capsys):
    """docs/ROBOTS3D.md's Python block runs as written and prints what its comments say."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "ROBOTS3D.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", doc, re.S | re.M)
    assert len(blocks) == 2  # go1's, then "Your own URDF quadruped"'s (test_the_urdf_walkthrough_runs)
    exec(compile(blocks[0], "docs/ROBOTS3D.md", "exec"), {"__name__": "robots3d_doc"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "19 18 12 4"
    import ast

    assert ast.literal_eval(out[1]) == [0.0, 0.0, 0.285, 0.0, 0.0, 0.0, 1.0]
    quat, norm = out[2].rsplit(" ", 1)
    np.testing.assert_allclose(ast.literal_eval(quat), [np.sin(0.05), 0.0, 0.0, np.cos(0.05)], atol=1e-4)
    assert abs(float(norm) - 1.0) < 1e-12


DOC = Path(__file__).resolve().parents[1] / "docs" / "ROBOTS3D.md"
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)


def _walkthrough_blocks(lang: str) -> list[tuple[str, str]]:
    """(info string, body) of the fenced blocks in `lang` of the doc's "Your own URDF quadruped"."""
    text = DOC.read_text()
    start = text.index("## Your own URDF quadruped")
    section = text[start:text.index("\n## ", start + 1)]
    return [(info.strip(), body) for kind, info, body in FENCE.findall(section) if kind == lang]


def test_the_urdf_walkthrough_shows_the_example_module_verbatim():
    files = [(info, body) for info, body in _walkthrough_blocks("python") if info.startswith("file=")]
    assert [info for info, _ in files] == ["file=examples/my_quadruped.py"]
    assert files[0][1] == (DOC.parents[1] / "examples" / "my_quadruped.py").read_text()


def test_the_urdf_walkthrough_runs(monkeypatch, capsys):
    """Its Python block, run from the repository's root, prints what its comments say."""
    monkeypatch.chdir(DOC.parents[1])
    monkeypatch.setattr(sys, "path", list(sys.path))  # the block puts examples/ first
    (code,) = [body for info, body in _walkthrough_blocks("python") if not info]
    exec(compile(code, "docs/ROBOTS3D.md (Your own URDF quadruped)", "exec"), {"__name__": "robots3d_urdf_doc"})
    assert capsys.readouterr().out.splitlines() == [
        "my_quadruped 19 18 12 4", "('FL_hip_joint', 'FL_thigh_joint', 'FL_calf_joint')", "16.09 0.287",
        "True True", "49"]


def test_the_urdf_walkthrough_commands_are_valid(monkeypatch):
    """Its shell commands: the URDF listing names go2's and anymal_c's files; each `launch run`
    makes a scenario that validates (robot built, pre-flight passed; not run: the figures in
    the text were measured); the refusal it quotes is the pre-flight's."""
    import shlex
    import subprocess

    from launch.cli import _overridden_scenario, build_parser

    root = DOC.parents[1]
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root / "examples"))
    lines = [line for _, body in _walkthrough_blocks("sh") for line in body.splitlines() if line.strip()]
    runs = [line for line in lines if "-m launch run" in line]
    assert len(runs) == 4 and len(lines) == 5
    listing = subprocess.run([sys.executable, *shlex.split(lines[0])[1:]], capture_output=True, text=True, timeout=60)
    assert "go2_description/urdf/go2.urdf" in listing.stdout and "anymal_c_simple_description/urdf/anymal.urdf" \
        in listing.stdout
    for line in runs:
        argv = shlex.split(line)
        argv = argv[argv.index("launch") + 1:]
        _overridden_scenario(build_parser().parse_args(argv))
    (refusal,) = [body.strip() for kind, _, body in FENCE.findall(DOC.read_text()) if kind == "" and "error:" in body]
    assert refusal == ("error: robot 'my_module:build' has no 'lying' pose (params['poses']); go1-stand starts from "
                       "it: add poses={'lying': [12 joint angles, rad]} to the robot's params (docs/ROBOTS3D.md)")


def test_visual_meshes_come_from_the_urdf_and_sit_on_their_bodies():
    """robots.urdf.visual_meshes (what `launch view` draws): go1's meshes load through pinocchio's
    parser; each belongs to a body of the tree and, placed at q0, lies within the robot's reach."""
    from robots.urdf import visual_meshes

    model = get_robot("go1")
    meshes = visual_meshes("go1")
    assert len(meshes) >= 13 and all(0 <= m.body < len(model.body_names) for m in meshes)
    poses = numeric(model).body_poses(model.q0)
    for mesh in meshes:
        assert mesh.faces.max() < len(mesh.vertices) and mesh.faces.shape[1] == 3
        R, p = poses[mesh.body, 3:12].reshape(3, 3), poses[mesh.body, 0:3]
        world = (R @ (mesh.placement[0] @ mesh.vertices.T + mesh.placement[1][:, None])).T + p
        assert world[:, 2].min() > -0.05 and np.abs(world[:, :2]).max() < 0.5  # on and above the ground, near the base
    with pytest.raises(ValueError, match="example-robot-data"):
        visual_meshes("hopper")
