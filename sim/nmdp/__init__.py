"""NMDP plant simulator (seed 002): backward-Euler articulated dynamics with contact forces
chosen by the non-convex maximal dissipation principle, solved by (zeroth-order) projected
gradient with adaptive step halving; the linearised MDP time stepper as the baseline.
See docs/NMDP.md."""
from .plant import NmdpError, NmdpOptions, NmdpPlant

__all__ = ["NmdpError", "NmdpOptions", "NmdpPlant"]
