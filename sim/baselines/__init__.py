"""The tutorial's three contact methods (seed 003) as plants: hybrid reset, penalty, time-stepping.

    from sim.baselines import HybridResetPlant, PenaltyPlant, TimeSteppingPlant
    plant = PenaltyPlant(get_robot("point_mass"))          # tutorial tanh law, dt 1 ms
"""
from .hybrid_reset import HybridResetPlant
from .penalty import TUTORIAL_TANH, PenaltyPlant
from .timestepping import TimeSteppingPlant

__all__ = ["HybridResetPlant", "PenaltyPlant", "TimeSteppingPlant", "TUTORIAL_TANH"]
