"""sim: the plants that stand in for the hardware, behind one protocol (protocol.py).

ess/ (Event-Selected-Systems), nmdp/ (non-convex maximal dissipation), hybrid/ (event-driven
rigid-contact reference), baselines/ (the tutorial's), registry.py (plants by name),
invariants.py (the per-step physics checks every plant runs), fuzz.py (random cases for tests
and benches). See docs/ARCHITECTURE.md.
"""
