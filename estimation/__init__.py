"""State estimation on the controller's side: base pose and velocity from a legged robot's own
sensors (docs/ESTIMATION.md). `LeggedEstimator` is the estimator; `EstimatingController` wraps any
controller so that it runs on estimates."""
from .estimator import EstimatorOptions, LeggedEstimator

__all__ = ["EstimatorOptions", "LeggedEstimator"]
