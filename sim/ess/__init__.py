"""ESS plant simulator: the Event-Selected-Systems integrator (seed 000) and robot plants built on it."""
