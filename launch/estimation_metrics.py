"""How good a run's state estimate was: the controller's estimates (controller_ticks.csv's est_*
columns, bridge/client.py) against the plant's ground truth (trajectory.npz), tick by tick.

summary.json's `estimation` (docs/RUNS.md, docs/ESTIMATION.md):
- vel_rms_mps: RMS of the base velocity error's norm (world frame), m/s;
- height_rms_m: RMS of the base height error, m;
- roll_pitch_rms_deg: RMS of the roll and pitch errors (the tilt error's two components), deg;
- yaw_drift_deg, xy_drift_m: the heading and horizontal position errors at the end (these are
  not observable from the robot's own sensors: they drift), deg and m;
- ticks: ticks compared.
The first ESTIMATE_SETTLE_S of the run are left out (the filter converging from its start).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robots.rotations import rotation_matrices

ESTIMATE_SETTLE_S = 0.2


def estimation_errors(t_est: np.ndarray, q_est: np.ndarray, v_est: np.ndarray, t: np.ndarray, q: np.ndarray,
                      v: np.ndarray) -> dict | None:
    """The `estimation` figures (module docstring) of estimates (times t_est, base q (n, 7), base-frame
    v (n, 6)) against the truth (times t, q (m, nq), v (m, nv)); None when no tick matches."""
    idx = np.searchsorted(t, t_est - 1e-9)
    ok = (idx < len(t)) & (t_est >= t_est[0] + ESTIMATE_SETTLE_S)
    ok[ok] &= np.abs(t[idx[ok]] - t_est[ok]) < 1e-6
    if not ok.any():
        return None
    i = idx[ok]
    Re, Rt = rotation_matrices(q_est[ok, 3:7]), rotation_matrices(q[i, 3:7])
    vel_err = np.einsum("nij,nj->ni", Re, v_est[ok, 0:3]) - np.einsum("nij,nj->ni", Rt, v[i, 0:3])
    dR = np.einsum("nji,njk->nik", Rt, Re)  # truth^T estimate: the error in the base frame
    roll = np.arctan2(dR[:, 2, 1], dR[:, 2, 2])
    pitch = -np.arcsin(np.clip(dR[:, 2, 0], -1.0, 1.0))
    yaw_t = np.arctan2(Rt[-1, 1, 0], Rt[-1, 0, 0])
    yaw_e = np.arctan2(Re[-1, 1, 0], Re[-1, 0, 0])
    return {"vel_rms_mps": float(np.sqrt(np.mean(np.sum(vel_err ** 2, axis=1)))),
            "height_rms_m": float(np.sqrt(np.mean((q_est[ok, 2] - q[i, 2]) ** 2))),
            "roll_pitch_rms_deg": float(np.degrees(np.sqrt(np.mean(roll ** 2 + pitch ** 2)))),
            "yaw_drift_deg": float(np.degrees(np.angle(np.exp(1j * (yaw_e - yaw_t))))),
            "xy_drift_m": float(np.linalg.norm(q_est[ok][-1, 0:2] - q[i[-1], 0:2])),
            "ticks": int(ok.sum())}


def estimation_metrics(folder: Path, ctrl: dict) -> dict | None:
    """The run's `estimation` figures from its controller columns `ctrl` (read_csv of
    controller_ticks.csv) and trajectory.npz; None for a run on full state."""
    from .runfolder import trajectory

    if "est_x" not in ctrl or not (Path(folder) / "trajectory.npz").exists():
        return None
    traj = trajectory(folder)
    cols = lambda names: np.stack([ctrl[n] for n in names], axis=1)
    q_est = cols(["est_x", "est_y", "est_z", "est_qx", "est_qy", "est_qz", "est_qw"])
    v_est = cols(["est_vx", "est_vy", "est_vz", "est_wx", "est_wy", "est_wz"])
    good = np.all(np.isfinite(q_est), axis=1) & np.all(np.isfinite(v_est), axis=1)
    if not good.any() or traj["q"].ndim != 2 or traj["q"].shape[1] < 7:
        return None
    return estimation_errors(ctrl["t"][good], q_est[good], v_est[good], traj["t"], traj["q"], traj["v"])
