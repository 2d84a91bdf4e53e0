"""Event-driven rigid-contact reference simulator (seed 001): modes, plastic impact, pseudo-impulse.

    from sim.hybrid import HybridPlant
    plant = HybridPlant(get_robot("block"), pseudo_impulse=0.0)
"""
from .options import DEFAULT_PSEUDO_IMPULSE, HybridOptions
from .plant import HybridEvent, HybridPlant

__all__ = ["DEFAULT_PSEUDO_IMPULSE", "HybridEvent", "HybridOptions", "HybridPlant"]
