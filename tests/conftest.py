"""Shared fixtures: robots and their compiled functions, built once per test session."""
from __future__ import annotations

import numpy as np
import pytest

from robots import get_robot, numeric, robot_names


@pytest.fixture(scope="session", params=robot_names())
def robot(request):
    """(model, compiled functions) for every registered robot."""
    model = get_robot(request.param)
    return model, numeric(model)


def random_state(model, rng: np.random.Generator, scale: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """A random (q, v) around the model's nominal configuration."""
    q = model.q0 + rng.normal(scale=scale, size=model.nq)
    v = rng.normal(scale=1.0, size=model.nv)
    return q, v
