"""Deadline attribution: every missed tick gets exactly one cause (docs/MPC.md, "Deadline misses
and the machine").

The plant keeps one `TickRecord` per tick, on the CLOCK_MONOTONIC that both processes share:
when STATE left, the deadline, when the tick's COMMAND arrived (on time or late) with the
controller's report (bridge/protocol.py REPORT_FIELDS: STATE received, the tick's CPU and wall
time, solver-failed flag) and the time the controller stamped on sending it. Host stalls come
from the witnesses of both processes (bridge/witness.py). A missed tick's cause, in this order:

- `controller`: the plant refused the controller's COMMAND for the tick (malformed: ERROR with
  its reason) and none valid followed; or the controller's CPU time for that tick alone exceeds
  the deadline, or its own
  work after the previous COMMAND (e.g. the MPC's preparation), still running when STATE came,
  kept it from reading STATE for at least the lateness and that work and the tick's together
  took more CPU time than the deadline (it cannot keep up). Work that ran late only because the
  tick before was late (catching up after a stall) takes that tick's cause;
- `solver`: the COMMAND came on time, but the controller's solver failed and it sent a fallback
  rather than a plan of its own (REPORT_SOLVER_FAILED);
- `host`: the process was not running for at least the lateness: witnessed stalls inside the
  tick's window [STATE sent, COMMAND arrived], or the controller's wall time over its CPU time
  plus the time STATE waited beyond the CPU time of the controller's previous work (a stall
  injected by `stall_ms` counts here: it stands in for the machine stopping the controller);
- `transport`: both processes ran, and the time the messages spent between them (STATE sent to
  received, COMMAND sent to arrived) beyond its usual (the median over the run's answered
  ticks) covers the lateness;
- `unattributed`: none of these explains it.
A tick no COMMAND ever answered (the controller, behind after a stall, answers only the newest
STATE) is `host` when stalls covering at least STALL_MIN_NS fall between its STATE and the next
COMMAND that arrived, else the cause of the tick before it in the same streak of misses, else
`unattributed`. Lockstep runs have no deadline in wall time: a tick there misses when its CPU
time exceeds the deadline (`controller`), its solver failed (`solver`), or `stall_ms` /
`transport_delay_ms` simulate a stall or a late COMMAND (`host`, `transport`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .protocol import REPORT_SOLVER_FAILED

CAUSES = ("host", "controller", "solver", "transport", "unattributed")
STALL_MIN_NS = 1_000_000  # a never-answered tick needs at least this much witnessed stall to be `host`


@dataclass(slots=True)
class TickRecord:
    """One tick's times (ns, CLOCK_MONOTONIC; 0 = none) and what the plant made of it.

    sent_ns: STATE left the plant. deadline_ns: the COMMAND was due. arrival_ns: the tick's
    COMMAND reached the plant (on time or late; 0 if never). command_sent_ns: the controller's
    send stamp (the COMMAND header's clock). report: the COMMAND's REPORT_FIELDS (None if none
    came). missed: the plant applied no fresh plan of the controller's on time. injected: a
    cause a lockstep simulation decided ("host" or "transport"), else ""."""

    tick: int
    sent_ns: int
    deadline_ns: int
    arrival_ns: int = 0
    command_sent_ns: int = 0
    report: tuple | None = None
    missed: bool = False
    injected: str = ""
    refused: bool = False  # a message of the controller's was refused during the tick's wait
    cause: str = ""


def stalled_ns(stalls: np.ndarray, start: int, end: int) -> int:
    """Total length (ns) of the union of `stalls` ((n, 2) from_ns, to_ns) inside [start, end]."""
    if not len(stalls) or end <= start:
        return 0
    lo = np.clip(stalls[:, 0], start, end)
    hi = np.clip(stalls[:, 1], start, end)
    keep = hi > lo
    if not keep.any():
        return 0
    lo, hi = lo[keep], hi[keep]
    order = np.argsort(lo)
    total, cur_lo, cur_hi = 0, int(lo[order[0]]), int(hi[order[0]])
    for a, b in zip(lo[order[1:]].tolist(), hi[order[1:]].tolist()):
        if a > cur_hi:
            total += cur_hi - cur_lo
            cur_lo, cur_hi = a, b
        else:
            cur_hi = max(cur_hi, b)
    return total + cur_hi - cur_lo


def _state_leg_ns(rec: TickRecord) -> int | None:
    """How long STATE took from the plant (or from the controller being free again, if later) to
    being read, ns; None if not known."""
    rep = rec.report
    return rep[0] - max(rec.sent_ns, rep[6]) if rep is not None and rep[0] else None


def _command_leg_ns(rec: TickRecord) -> int | None:
    """How long the COMMAND took from its send stamp to the plant, ns; None if not known."""
    return rec.arrival_ns - rec.command_sent_ns if rec.command_sent_ns and rec.arrival_ns else None


def _waited_ns(rec: TickRecord) -> int | None:
    """How long STATE waited for the controller's work on the tick before, ns; None if not known."""
    rep = rec.report
    return max(0, rep[6] - rec.sent_ns) if rep is not None and rep[6] else None


def _legs_ns(rec: TickRecord) -> int:
    """The time (ns) a tick's STATE and COMMAND spent between the processes (`_state_leg_ns`
    and `_command_leg_ns`); 0 where not known."""
    if rec.report is None or not rec.arrival_ns:
        return 0
    return max(0, _state_leg_ns(rec) or 0) + (_command_leg_ns(rec) or 0)


def miss_times(rec: TickRecord) -> tuple:
    """(late, cpu, wall, state leg, command leg, waited) in ms of a record (nan where not known),
    for misses.csv (which adds the CPU time over the run's median: `cpu_over_median`)."""
    nan = float("nan")
    rep = rec.report
    late = (rec.arrival_ns - rec.deadline_ns) / 1e6 if rec.arrival_ns else nan
    if rep is None:
        return late, nan, nan, nan, nan, nan
    in_ms = [nan if x is None else x / 1e6 for x in (_state_leg_ns(rec), _command_leg_ns(rec), _waited_ns(rec))]
    return (late, rep[1] / 1e6, rep[2] / 1e6, *in_ms)


def cause_of(rec: TickRecord, stalls: np.ndarray, deadline_ns: int, *, realtime: bool, prev_cause: str = "",
             usual_legs_ns: int = 0) -> str:
    """The cause of one missed tick that a COMMAND answered (module docstring); prev_cause: the
    cause of the tick before, if it was missed; usual_legs_ns: the run's median transit time."""
    if rec.injected:
        return rec.injected
    rep = rec.report
    cpu, wall, flags = (rep[1], rep[2], rep[3]) if rep is not None else (0, 0, 0)
    if cpu > deadline_ns:
        return "controller"
    busy_cpu = rep[7] if rep is not None else 0
    waited = _waited_ns(rec) or 0  # STATE waited for the controller's own work
    on_time = rec.arrival_ns and rec.arrival_ns <= rec.deadline_ns
    if (on_time or not realtime) and flags & REPORT_SOLVER_FAILED:
        return "solver"
    if not realtime:
        return "unattributed"
    lateness = rec.arrival_ns - rec.deadline_ns
    if waited >= lateness:  # STATE waited for the controller's work on the tick before
        if min(waited, busy_cpu) >= lateness and cpu + busy_cpu > deadline_ns:
            return "controller"
        if prev_cause:
            return prev_cause
    # the controller was not running while STATE waited beyond its previous work's CPU time, and
    # during the tick beyond its CPU time: one after the other, so they add up
    not_running = max(stalled_ns(stalls, rec.sent_ns, rec.arrival_ns),
                      max(0, wall - cpu if wall else 0) + max(0, waited - busy_cpu))
    if not_running >= lateness:
        return "host"
    if _legs_ns(rec) - usual_legs_ns >= lateness:
        return "transport"
    return "unattributed"


def attribute(records: list[TickRecord], stalls: np.ndarray, deadline_ns: int, *, realtime: bool) -> dict:
    """Set `cause` on every missed record; return misses_by_cause {cause: count} over CAUSES."""
    counts = dict.fromkeys(CAUSES, 0)
    legs = [_legs_ns(r) for r in records if r.arrival_ns and r.report is not None and r.arrival_ns <= r.deadline_ns]
    usual = int(np.median(legs)) if legs else 0
    next_arrival = 0
    # the next answered tick's arrival, for ticks never answered: walk backwards once
    after = [0] * len(records)
    for i in range(len(records) - 1, -1, -1):
        after[i] = next_arrival
        if records[i].arrival_ns:
            next_arrival = records[i].arrival_ns
    prev_cause = ""
    for i, rec in enumerate(records):
        if not rec.missed:
            prev_cause = ""
            continue
        if rec.refused and rec.report is None and not rec.injected:
            rec.cause = "controller"  # it answered, with a COMMAND the plant could not apply
        elif rec.injected or rec.report is not None:
            rec.cause = cause_of(rec, stalls, deadline_ns, realtime=realtime, prev_cause=prev_cause,
                                 usual_legs_ns=usual)
        elif realtime and stalled_ns(stalls, rec.sent_ns, after[i] or rec.deadline_ns) >= STALL_MIN_NS:
            rec.cause = "host"
        else:
            rec.cause = prev_cause or "unattributed"
        prev_cause = rec.cause
        counts[rec.cause] += 1
    return counts
