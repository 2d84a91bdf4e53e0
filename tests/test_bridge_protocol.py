"""Wire protocol: round trips, and malformed frames rejected with a counted reason."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge import protocol as P

DIMS = P.Dims(nq=4, nv=4, nu=2, nc=1)


def _state(q=None):
    return P.encode(P.STATE, 7, 1.25, [np.arange(4.0) if q is None else q, np.zeros(4), np.array([1], np.uint8),
                                       np.zeros((1, 2)), np.zeros(1, np.uint8)])


def test_round_trip_is_zero_copy_and_exact():
    frames = _state()
    msg = P.decode(frames, DIMS)
    assert (msg.type, msg.seq, msg.t) == (P.STATE, 7, 1.25)
    np.testing.assert_array_equal(msg.arrays["q"], np.arange(4.0))
    assert msg.arrays["force"].shape == (1, 2) and msg.arrays["contact"].dtype == np.uint8
    assert not msg.arrays["q"].flags.owndata  # a view of the frame, no copy
    hello = P.decode(P.encode_json(P.HELLO, 0, 0.0, {"protocol": 1, "robot": "hopper"}), None)
    assert hello.json() == {"protocol": 1, "robot": "hopper"}


def _mutate(frames, kind, data):
    head = bytearray(frames[0])
    body = [bytes(memoryview(f).cast("B")) for f in frames[1:]]
    if kind == "magic":
        head[0:4] = b"XXXX"
    elif kind == "version":
        struct.pack_into("<H", head, 4, (P.VERSION + 1 + data % 65535) % 65536)  # any other version
    elif kind == "type":
        struct.pack_into("<H", head, 6, 100 + data % 1000)
    elif kind == "count":
        struct.pack_into("<I", head, 28, 6 + data % 10)
    elif kind == "dtype":
        head[32 + 2] = 2  # q declared uint8
    elif kind == "shape":
        struct.pack_into("<I", head, 32 + 4, 5 + data % 7)
    elif kind == "size":
        body[0] = body[0][:-8]
    elif kind == "truncated_header":
        head = head[: data % 32]
    elif kind == "truncated_multipart":
        body = body[:-1]
    elif kind == "huge":
        body[3] = bytes(P.MAX_FRAME_BYTES + 8)
    elif kind == "nan":
        q = np.frombuffer(body[0], np.float64).copy()
        q[data % 4] = [np.nan, np.inf, -np.inf][data % 3]
        body[0] = q.tobytes()
    return [bytes(head), *body]


KINDS = ["magic", "version", "type", "count", "dtype", "shape", "size", "truncated_header",
         "truncated_multipart", "huge", "nan"]


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(KINDS), data=st.integers(0, 10_000))
def test_malformed_frames_are_rejected_with_a_reason(kind, data):
    with pytest.raises(P.ProtocolError) as info:
        P.decode(_mutate(_state(), kind, data), DIMS)
    assert info.value.reason in P.REASONS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), min_size=0, max_size=8))
def test_random_bytes_never_crash_the_decoder(frames):
    try:
        P.decode(frames, DIMS)
    except P.ProtocolError as err:
        assert err.reason in P.REASONS


def test_unexpected_type_and_missing_config():
    with pytest.raises(P.ProtocolError, match="unexpected"):
        P.decode(_state(), DIMS, expect=(P.COMMAND,))
    with pytest.raises(P.ProtocolError, match="before CONFIG"):
        P.decode(_state(), None)


def test_encode_with_dims_matches_the_general_encoder_and_checks_each_field():
    cmd = [np.arange(2.0)[None, :], np.ones((1, 2)), np.zeros((1, 2)), np.full(2, 5.0), np.full(2, 0.5),
           np.array([8], np.int64), np.zeros(1), np.arange(8, dtype=np.int64)]
    state = [np.arange(4.0), np.zeros(4), np.array([1], np.uint8), np.ones((1, 2)), np.array([2], np.uint8)]
    for msg_type, arrays in ((P.COMMAND, cmd), (P.STATE, state)):
        fast = P.encode(msg_type, 7, 1.25, arrays, wall_ns=11, dims=DIMS)
        slow = P.encode(msg_type, 7, 1.25, arrays, wall_ns=11)
        assert [bytes(memoryview(f).cast("B")) for f in fast] == [bytes(memoryview(f).cast("B")) for f in slow]
    with pytest.raises(ValueError, match="kp: int64"):  # integer gains must be converted by the caller
        P.encode(P.COMMAND, 7, 1.25, cmd[:3] + [np.array([5, 5])] + cmd[4:], dims=DIMS)
    with pytest.raises(ValueError, match=r"q_des: float64 \(1, 3\)"):
        P.encode(P.COMMAND, 7, 1.25, cmd[:1] + [np.ones((1, 3))] + cmd[2:], dims=DIMS)
    with pytest.raises(ValueError, match="needs 8 arrays"):
        P.encode(P.COMMAND, 7, 1.25, cmd[:5], dims=DIMS)


@pytest.mark.parametrize("field, bad", [("q", np.nan), ("v", np.inf), ("force", -np.inf)])
def test_non_finite_values_in_any_float_field_are_rejected(field, bad):
    arrays = {"q": np.arange(4.0), "v": np.zeros(4), "contact": np.array([1], np.uint8), "force": np.ones((1, 2)),
              "status": np.zeros(1, np.uint8)}
    arrays[field].flat[-1] = bad
    with pytest.raises(P.ProtocolError, match=f"non_finite: {field}"):
        P.decode(P.encode(P.STATE, 7, 1.25, list(arrays.values())), DIMS)
    long = P.encode(P.PLAN, 1, 0.0, [np.zeros(100), np.zeros((100, 8)), np.zeros((100, 2))])
    long[2] = np.frombuffer(bytes(memoryview(long[2]).cast("B")), np.float64).copy()
    long[2][-1] = bad  # past the short-array path
    with pytest.raises(P.ProtocolError, match="non_finite: x"):
        P.decode(long, DIMS)


_EXTREMES = [1e308, -1e308, 1.7e308, float("inf"), float("-inf"), float("nan"), 5e-324, 0.0]


@settings(max_examples=300, deadline=None)
@given(q=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_EXTREMES)),
                  min_size=4, max_size=4),
       force=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_EXTREMES)),
                      min_size=2, max_size=2),
       t=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_EXTREMES)))
def test_a_state_decodes_exactly_when_numpy_calls_its_values_finite(q, force, t):
    """The fast path's single finiteness check (the sum of all of a message's numbers; when the
    sum overflows or meets inf - inf, the full validation decides) agrees with numpy's
    isfinite for any values, huge ones that overflow a sum included: a finite STATE decodes to
    exactly its values, a non-finite one is refused as non_finite."""
    arrays = [np.array(q), np.zeros(4), np.array([1], np.uint8), np.array(force).reshape(1, 2),
              np.zeros(1, np.uint8)]
    frames = P.encode(P.STATE, 3, t, arrays, dims=DIMS)
    if np.isfinite(q).all() and np.isfinite(force).all() and np.isfinite(t):
        msg = P.decode(frames, DIMS)
        assert msg.t == t and np.array_equal(msg.arrays["q"], q)
        assert np.array_equal(msg.arrays["force"], np.reshape(force, (1, 2)))
    else:
        with pytest.raises(P.ProtocolError, match="non_finite"):
            P.decode(frames, DIMS)


def _dims(nq, nu, nc, floating, hardware=False):
    """Dims of a planar (nf 2) or 3D (nq = nv + 1, nf 3) robot; a 3D one's STATE may carry the
    hardware sensor set."""
    return P.Dims(nq, nq - 1 if floating and nq > 1 else nq, nu, nc, 3 if floating else 2,
                  "hardware" if hardware and floating else "full")


def _random_state(dims, rng):
    """A STATE's arrays for `dims` (either sensor set), random but valid (finite, flags 0/1)."""
    arrays = []
    for name, dtype, shape in P.schema(P.STATE, dims):
        if name == "status":
            arrays.append(np.array([rng.integers(0, 4)], np.uint8))
        elif dtype == np.uint8:
            arrays.append(rng.integers(0, 2, shape).astype(np.uint8))
        else:
            arrays.append(rng.normal(size=shape))
    return arrays


@settings(max_examples=150, deadline=None)
@given(nq=st.integers(1, 40), nu=st.integers(0, 30), nc=st.integers(0, 8), floating=st.booleans(),
       hardware=st.booleans(), data=st.data())
def test_any_robot_shape_round_trips_and_its_byte_flips_are_refused_cleanly(nq, nu, nc, floating, hardware, data):
    """STATE (the full state, or a 3D robot's hardware sensors) and COMMAND of any dimensions,
    planar (nf 2) or 3D (nq = nv + 1, nf 3), decode to exactly what was encoded; flipping any
    one byte of any frame gives the same message back or a ProtocolError with a known reason,
    never another exception."""
    dims = _dims(nq, nu, nc, floating, hardware)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    state = _random_state(dims, rng)
    k = int(rng.integers(1, 6))
    command = [rng.normal(size=(k, nu)) for _ in range(3)] + [rng.uniform(0, 5, nu) for _ in range(2)] + \
        [np.array([rng.integers(-1, 100)], np.int64), np.arange(k) * 0.01,
         rng.integers(0, 2**40, len(P.REPORT_FIELDS))]
    for msg_type, arrays in ((P.STATE, state), (P.COMMAND, command)):
        frames = P.encode(msg_type, 3, 0.03, arrays, dims=dims)
        msg = P.decode(frames, dims)
        for (name, _, _), a in zip(P.schema(msg_type, dims), arrays):
            np.testing.assert_array_equal(msg.arrays[name], a)
        raw = [bytearray(memoryview(f).cast("B")) for f in frames]
        i = data.draw(st.integers(0, len(raw) - 1))
        if not raw[i]:
            continue
        j = data.draw(st.integers(0, len(raw[i]) - 1))
        raw[i][j] ^= data.draw(st.integers(1, 255))
        try:
            P.decode([bytes(r) for r in raw], dims)
        except P.ProtocolError as err:
            assert err.reason in P.REASONS


@settings(max_examples=300, deadline=None)
@given(nq=st.integers(1, 30), nu=st.integers(0, 20), nc=st.integers(0, 6), floating=st.booleans(),
       hardware=st.booleans(),
       flips=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10_000), st.integers(1, 255)), max_size=3),
       split=st.booleans(), as_memoryview=st.booleans(), prepared=st.booleans(), data=st.data())
def test_the_fast_path_accepts_only_what_the_full_validation_accepts(nq, nu, nc, floating, hardware, flips, split,
                                                                   as_memoryview, prepared, data):
    """`decode`'s fast path (`_decode_fixed`) against the full validation alone, on STATEs and
    COMMANDs with flipped bytes, a frame moved to a neighbour, or frames given as memoryviews of
    8-byte items, into arrays made by `prepare_decode` or not: whatever the fast path returns,
    the full path returns too, with equal arrays, time and sequence number, and the fast path's
    arrays are read-only and aligned for their dtype. STATEs of either sensor set."""
    dims = _dims(nq, nu, nc, floating, hardware)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    state = _random_state(dims, rng)
    k = int(rng.integers(1, 6))
    command = [rng.normal(size=(k, nu)) for _ in range(3)] + [rng.normal(size=nu) for _ in range(2)] + \
        [np.array([rng.integers(-1, 100)], np.int64), np.arange(k) * 0.01, rng.integers(0, 2**40, len(P.REPORT_FIELDS))]
    for msg_type, arrays in ((P.STATE, state), (P.COMMAND, command)):
        raw = [bytearray(memoryview(f).cast("B")) for f in P.encode(msg_type, 3, 0.03, arrays, dims=dims)]
        for i, j, x in flips:
            frame = raw[i % len(raw)]
            if frame:
                frame[j % len(frame)] ^= x
        if split and len(raw) > 2 and raw[1]:  # the first array's last byte moves to the next frame
            raw[2][:0] = raw[1][-1:]
            del raw[1][-1]
        frames = [bytes(r) for r in raw]
        if as_memoryview:
            frames = [frames[0]] + [memoryview(f).cast("d") if len(f) % 8 == 0 and f else f for f in frames[1:]]
        if prepared:
            P.prepare_decode(msg_type, dims)
        fast = P._decode_fixed(frames, dims, None)
        if fast is None:
            continue
        full = _full_decode(frames, dims)
        assert (full.type, full.seq, full.t, full.wall_ns) == (fast.type, fast.seq, fast.t, fast.wall_ns)
        assert full.arrays.keys() == fast.arrays.keys()
        for name in full.arrays:
            got = fast.arrays[name]
            assert full.arrays[name].dtype == got.dtype and got.flags.aligned and not got.flags.writeable
            np.testing.assert_array_equal(full.arrays[name], got)


def _full_decode(frames, dims):
    """`decode` with its fast path switched off: the full validation alone."""
    original = P._decode_fixed
    P._decode_fixed = lambda *args: None
    try:
        return P.decode(frames, dims)
    finally:
        P._decode_fixed = original


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                 st.sampled_from([1e9, -1e9, 1.0000001e9, -1e308, 1e308, float("nan"),
                                                  float("inf"), float("-inf"), -0.0, -1e-300])),
                       min_size=10, max_size=10))
def test_the_command_value_check_agrees_with_its_field_by_field_definition(values):
    """check_command_values (joined sum and sorts) refuses exactly the COMMANDs that a plain
    field-by-field reading refuses, with the same reason, for any values, NaN and inf included."""
    names = ("tau_ff", "q_des", "v_des", "kp", "kd")
    arrays = {name: np.array(values[2 * i:2 * i + 2]) for i, name in enumerate(names)}
    expected = None
    for name in names:
        a = arrays[name]
        if not np.isfinite(a).all():
            expected = "non_finite"
        elif name in ("kp", "kd") and a.min() < 0 or np.abs(a).max() > P.COMMAND_VALUE_LIMIT:
            expected = "value"
        if expected:
            break
    if expected is None:
        P.check_command_values(arrays)
    else:
        with pytest.raises(P.ProtocolError) as info:
            P.check_command_values(arrays)
        assert info.value.reason == expected


def test_prepared_arrays_serve_one_message_each():
    """`prepare_decode` keeps at most two sets; each decoded message gets its own (a later message
    never changes an earlier one's arrays), read-only; a message the fast path refuses takes
    none, and a decode with none left makes its own arrays."""
    dims = P.Dims(11, 11, 8, 4)
    layout = P._fixed_layout(P.STATE, dims)
    layout.pool.clear()
    for _ in range(3):
        P.prepare_decode(P.STATE, dims)
    assert len(layout.pool) == 2

    def state(k, q0=0.0):
        arrays = [np.full(11, q0 + k), np.full(11, -k, float), np.array([1, 0, 1, k % 2], np.uint8),
                  np.full((4, 2), 2.0 * k), np.array([k % 4], np.uint8)]
        return P.encode(P.STATE, k, 0.01 * k, arrays, dims=dims)

    with pytest.raises(P.ProtocolError) as info:  # a NaN: the full path refuses it, no set is used
        P.decode(state(9, q0=float("nan")), dims)
    assert info.value.reason == "non_finite" and len(layout.pool) == 2
    msgs = [P.decode(state(k), dims) for k in range(1, 4)]
    assert not layout.pool
    for k, msg in enumerate(msgs, start=1):
        a = msg.arrays
        assert (a["q"] == k).all() and (a["v"] == -k).all() and (a["force"] == 2.0 * k).all()
        assert a["contact"].tolist() == [1, 0, 1, k % 2] and a["status"].tolist() == [k % 4]
        assert msg.numbers[:11] == (float(k),) * 11 and msg.t == 0.01 * k
        for arr in a.values():
            assert not arr.flags.writeable and arr.flags.aligned
            with pytest.raises(ValueError):
                arr[...] = 0
    assert msgs[0].arrays["q"].base is not msgs[1].arrays["q"].base


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.floats(0, 1e9), min_size=10, max_size=10), signs=st.lists(st.booleans(), min_size=6,
                                                                                    max_size=6),
       breaks=st.lists(st.tuples(st.integers(0, 9), st.sampled_from([1e9, -1e9, 1.0000001e9, -1.0000001e9, -0.0,
                                                                     -1e-300, 1e308, -1e308, 2e9])), max_size=2))
def test_check_command_agrees_with_the_value_check_of_the_arrays(values, signs, breaks):
    """`check_command` (bounds read off the decoded numbers) refuses exactly the COMMANDs that
    `check_command_values` (the arrays, field by field) refuses, with the same reason."""
    dims = P.Dims(3, 3, 2, 1)
    values = [-v if sign else v for v, sign in zip(values, signs)] + values[6:]  # gains (the last 4) >= 0
    for i, bad in breaks:  # none, one or two values at or beyond a bound
        values[i] = bad
    arrays = [np.array(values[2 * i:2 * i + 2])[None, :] for i in range(3)] + \
        [np.array(values[2 * i:2 * i + 2]) for i in range(3, 5)] + \
        [np.array([5], np.int64), np.zeros(1), np.zeros(len(P.REPORT_FIELDS), np.int64)]
    msg = P.decode(P.encode(P.COMMAND, 1, 0.0, arrays, dims=dims), dims)
    outcomes = []
    for check in (lambda: P.check_command(msg), lambda: P.check_command_values(msg.arrays)):
        try:
            check()
            outcomes.append(None)
        except P.ProtocolError as err:
            outcomes.append(err.reason)
    assert outcomes[0] == outcomes[1]
