"""Command line, scenarios, run folders, plots and benchmarks (`python -m launch --help`)."""
