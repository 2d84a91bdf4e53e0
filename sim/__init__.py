"""sim: see docs/ARCHITECTURE.md (not yet implemented beyond this package marker)."""
