"""Physics nobody here wrote: every plant drops the hopper and touches down at the free-fall time."""
from __future__ import annotations

import math

import numpy as np
import pytest

from robots import get_robot
from sim.protocol import JointCommand
from sim.registry import make_plant

DROP = 0.1  # m
RESOLUTION = 1e-4  # s, the step at which contact flags are sampled

# stated tolerance of each plant on the touchdown time (s), on top of the sampling resolution:
# hybrid locates the event exactly; ESS to its band (eps = 1e-6 m at ~1.4 m/s: ~1e-6 s); NMDP's
# backward-Euler step and depth-scaled force capacity engage within about one step.
TOLERANCE = {"hybrid": 1e-9, "ess": 1e-5, "nmdp": 1e-3}
OPTIONS = {"hybrid": {}, "ess": {"eps": 1e-6}, "nmdp": {}}


@pytest.mark.parametrize("plant_name", ["hybrid", "ess", "nmdp"])
def test_hopper_drop_touches_down_at_the_free_fall_time(plant_name):
    model = get_robot("hopper")
    plant = make_plant(plant_name, model, plant_rate_hz=1.0 / RESOLUTION, **OPTIONS[plant_name])
    q = model.q0.copy()
    q[model.q_names.index("z")] += DROP
    plant.reset(q)
    limp = JointCommand.zero(model.nu)
    t_free = math.sqrt(2 * DROP / model.gravity)
    t_touch = None
    for _ in range(int(2 * t_free / RESOLUTION)):
        state = plant.step(limp, RESOLUTION)
        if state.contact.any():
            t_touch = state.t
            break
    assert t_touch is not None, f"{plant_name}: no touchdown within {2 * t_free:.3f} s"
    # the flag is first seen at the end of the sampling step that contains the touchdown
    assert t_free - TOLERANCE[plant_name] <= t_touch <= t_free + RESOLUTION + TOLERANCE[plant_name], \
        (plant_name, t_touch, t_free)
    assert np.isfinite(state.q).all()
