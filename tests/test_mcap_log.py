"""run.mcap (launch/mcap_log.py) read back with the mcap package's own reader."""
from __future__ import annotations

import collections
import json
import math

import numpy as np
import pytest
from mcap.reader import make_reader

from launch.mcap_log import SCHEMAS, write_mcap
from robots import get_robot


def test_every_tick_on_every_channel_with_its_schema(synthetic_run):
    out = write_mcap(synthetic_run)
    model = get_robot("hopper")
    counts, first = collections.Counter(), {}
    with open(out["path"], "rb") as fh:
        for schema, channel, message in make_reader(fh).iter_messages():
            counts[channel.topic] += 1
            assert schema.name == SCHEMAS[channel.topic][0] and channel.message_encoding == "json"
            first.setdefault(channel.topic, {})[message.sequence] = json.loads(message.data)
    assert counts == {topic: 101 for topic in SCHEMAS}  # 0 .. 1 s at 100 Hz
    assert sorted(first["/timing"]) == list(range(101))
    tf = first["/tf"][25]["transforms"]  # t = 0.25 s: hip at q0 + 0.4 rad
    assert [x["child_frame_id"] for x in tf] == list(model.body_names)
    thigh = tf[model.body_names.index("thigh")]
    pitch = 2 * math.atan2(thigh["rotation"]["y"], thigh["rotation"]["w"])
    assert pitch == pytest.approx(model.q0[2] + 0.4, abs=1e-9)
    assert thigh["translation"]["x"] == pytest.approx(0.125)
    assert first["/timing"][50]["missed"] is True and first["/timing"][49]["missed"] is False
    contacts = first["/contacts"][10]
    assert contacts["normal_N"] == [60.0] and contacts["in_contact"] == [True]
    joints = first["/joint_states"][25]
    assert joints["name"] == list(model.u_names)
    np.testing.assert_allclose(joints["position"][0], model.q0[2] + 0.4)


def test_not_a_run_folder(tmp_path):
    with pytest.raises(ValueError, match="not a run folder"):
        write_mcap(tmp_path)
