"""Benchmarks, run on demand with `python -m launch bench <name> [--json]` (never in the tests).

Each entry maps a name to (function(args) -> dict of figures, one-line description).
"""
from __future__ import annotations

from .codegen_cache import bench_codegen_cache

BENCHMARKS = {
    "codegen-cache": (bench_codegen_cache, "cold vs warm start of the compiled robot functions (cache speed-up)"),
}
