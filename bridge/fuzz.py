"""Structure-aware fuzzing of the plant server: hostile messages made from valid ones.

`hostile_message(rng, dims)` draws one message (a list of frames, as a DEALER sends it): a valid
HELLO, COMMAND or PLAN, then zero or more mutations of its structure: any header field (magic,
version, type, sequence, time, wall clock, array count), any descriptor field (field id, dtype,
ndim, dims, reserved), frame count (dropped, duplicated, extra), frame bytes (cut, extended,
random, NaN/inf floats, huge values), or the JSON payload (random JSON values of every type,
deep nesting, invalid UTF-8, wrong field types). The tests (tests/test_bridge_hardening.py)
draw the generator's `random.Random` from hypothesis; `python -m launch bench bridge-fuzz` runs
it seeded for 100,000 messages against a `serve-plant` process.

`probe(k)` is a message that the plant always refuses (`magic`, its ERROR detail naming the
probe's own magic k) and that the generator cannot produce by chance: sent after fuzz messages,
`is_probe_reply` spots its ERROR, which marks the end of their replies.
"""
from __future__ import annotations

import json
import math
import random
import struct

import numpy as np

from . import protocol as P



def probe(k: int) -> tuple[list, bytes]:
    """The k-th probe message (a bare header whose magic is b"~" + k as 3 bytes) and that magic."""
    magic = b"~" + (k % (1 << 24)).to_bytes(3, "little")
    return [P.FIXED.pack(magic, P.VERSION, P.HELLO, 0, 0.0, 0, 0)], magic


def is_probe_reply(msg: P.Message, magic: bytes) -> bool:
    """True if `msg` is the plant's ERROR refusing the probe with this magic."""
    if msg.type != P.ERROR:
        return False
    body = msg.json()
    return body["reason"] == "magic" and repr(magic) in body.get("detail", "")

_JSON_VALUES = [None, True, False, 0, 1, -1, 2, 1.0, 1e308, -0.0, "", "hopper", "x" * 300, [], [1, 2, 3], {},
                {"protocol": 1}, {"protocol": 2}, [[[]]]]


def _random_json(rng: random.Random, depth: int = 0):
    """A random JSON value: scalars of every type, arrays and objects up to depth 3."""
    kind = rng.randrange(6 if depth < 3 else 4)
    if kind == 0:
        return rng.choice(_JSON_VALUES)
    if kind == 1:
        return rng.randint(-2**70, 2**70)
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind == 3:
        return "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(12)))
    if kind == 4:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["protocol", "robot", "name", "x", ""]): _random_json(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def _hello_payload(rng: random.Random) -> bytes:
    """A HELLO payload: valid, valid with odd extras, wrong types, non-objects, or not JSON."""
    choice = rng.randrange(8)
    if choice == 0:
        return json.dumps({"protocol": P.VERSION, "name": "fuzz"}).encode()
    if choice == 1:
        obj = {"protocol": rng.choice([P.VERSION, 0, 2, True, 1.0, "1", None, [1]]),
               "robot": rng.choice(["hopper", "quadruped", 5, None, "h" * 500]),
               "name": _random_json(rng)}
        return json.dumps(obj).encode()
    if choice == 2:
        return json.dumps(_random_json(rng)).encode()
    if choice == 3:
        n = rng.randrange(1, 40_000)
        return (b"[" * n + b"]" * n) if rng.random() < 0.5 else (b'{"a":' * n + b"1" + b"}" * n)
    if choice == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if choice == 5:
        return b'{"protocol": 1, "robot": "\xff\xfe"}'
    if choice == 6:
        return b'{"protocol": NaN}' if rng.random() < 0.5 else b'{"protocol": 1' + b" " * rng.randrange(10)
    return json.dumps({"protocol": P.VERSION, "pad": "p" * rng.choice([10, 70_000])}).encode()


def valid_message(rng: random.Random, dims: P.Dims, seq: int) -> list:
    """A valid HELLO, COMMAND (sequence `seq`) or PLAN for a robot of `dims`."""
    kind = rng.randrange(3)
    if kind == 0:
        return P.encode(P.HELLO, seq, 0.0, [np.frombuffer(_hello_payload(rng), np.uint8)])
    if kind == 1:
        nu = dims.nu
        gains = [np.full(nu, rng.uniform(0, 100)), np.full(nu, rng.uniform(0, 10))]
        k = rng.choice([1, 1, 2, 5])
        arrays = [np.full((k, nu), rng.uniform(-10, 10)), np.zeros((k, nu)), np.zeros((k, nu)), *gains,
                  np.array([rng.choice([-1, seq, seq + 3])], np.int64), np.arange(k) * 0.01,
                  np.zeros(len(P.REPORT_FIELDS), np.int64)]
        return P.encode(P.COMMAND, seq, 0.0, arrays)
    n = rng.randrange(0, 50)
    return P.encode(P.PLAN, seq, 0.0, [np.zeros(n), np.zeros((n, dims.nq + dims.nv)), np.zeros((n, dims.nu))])


def _mutate(rng: random.Random, frames: list) -> list:
    """One structural mutation of a message (frames as bytes)."""
    head = bytearray(frames[0])
    body = [bytearray(f) for f in frames[1:]]
    n_desc = max(0, (len(head) - P.FIXED.size) // P.DESC.size)
    op = rng.randrange(12)
    if op == 0 and len(head) >= 4:  # magic
        head[rng.randrange(4)] = rng.randrange(256)
    elif op == 1:  # a fixed header field: version, type, sequence, time, wall clock, count
        offset, fmt = rng.choice([(4, "<H"), (6, "<H"), (8, "<I"), (12, "<d"), (20, "<q"), (28, "<I")])
        if len(head) >= offset + struct.calcsize(fmt):
            if fmt == "<d":
                value = rng.choice([math.nan, math.inf, -math.inf, -1.0, 1e300])
            elif fmt == "<q":
                value = rng.randint(-2**63, 2**63 - 1)
            else:
                value = rng.randrange(2 ** (8 * struct.calcsize(fmt)))
            struct.pack_into(fmt, head, offset, value)
    elif op == 2 and n_desc:  # a descriptor field: id, dtype, ndim, dim0, dim1, reserved
        base = P.FIXED.size + rng.randrange(n_desc) * P.DESC.size
        offset, fmt = rng.choice([(0, "<H"), (2, "<B"), (3, "<B"), (4, "<I"), (8, "<I"), (12, "<I")])
        value = rng.choice([0, 1, 2, 3, 4, 255, rng.randrange(2 ** 16)])
        struct.pack_into(fmt, head, base + offset, value % (2 ** (8 * struct.calcsize(fmt))))
    elif op == 3:  # cut or extend the header
        head = head[:rng.randrange(len(head) + 1)] if rng.random() < 0.5 else head + bytes(rng.randrange(1, 40))
    elif op == 4 and body:  # drop a frame
        del body[rng.randrange(len(body))]
    elif op == 5:  # extra frames
        body += [bytearray(rng.randbytes(rng.randrange(32))) for _ in range(rng.randrange(1, 4))]
    elif op == 6 and body:  # cut or extend a frame
        i = rng.randrange(len(body))
        body[i] = body[i][:rng.randrange(len(body[i]) + 1)] if rng.random() < 0.5 else body[i] + bytes(8)
    elif op == 7 and body:  # random bytes in a frame
        i = rng.randrange(len(body))
        body[i] = bytearray(rng.randbytes(len(body[i])))
    elif op == 8 and body:  # a non-finite or huge float in a frame
        i = rng.randrange(len(body))
        if len(body[i]) >= 8:
            k = rng.randrange(len(body[i]) // 8)
            struct.pack_into("<d", body[i], 8 * k, rng.choice([math.nan, math.inf, -math.inf, 1e300, -1e12, -1.0]))
    elif op == 9:  # a frame over the size limits
        body.append(bytearray(rng.choice([P.MAX_FRAME_BYTES + 8, 2 * P.MAX_FRAME_BYTES])))
    elif op == 10:  # no frames at all, or the header alone
        return [bytes(head)] if rng.random() < 0.5 else [b""]
    else:  # the whole message replaced by random frames
        return [rng.randbytes(rng.randrange(64)) for _ in range(rng.randrange(1, 5))]
    return [bytes(head), *map(bytes, body)]


def hostile_message(rng: random.Random, dims: P.Dims, seq: int = 0) -> list:
    """A valid message with 0 to 3 structural mutations (about a sixth stay unmutated)."""
    frames = valid_message(rng, dims, seq)
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        frames = _mutate(rng, frames)
        if not frames:
            break
    return frames
