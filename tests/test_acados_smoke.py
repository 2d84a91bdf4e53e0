"""acados through our runtime module: generate, compile, load from cache, solve."""
from __future__ import annotations

import os

import numpy as np

from mpc.acados.runtime import ensure_runtime
from mpc.acados.smoke import solve_double_integrator


def test_runtime_sets_up_acados_without_user_variables():
    import acados

    tpl = ensure_runtime()
    assert hasattr(tpl, "AcadosOcpSolver")
    assert os.environ["ACADOS_SOURCE_DIR"] == acados.DIR


def test_generate_compile_solve_then_load_from_cache(tmp_path):
    first = solve_double_integrator(cache_dir=tmp_path, verbose=False)
    assert first.built_now and first.status == 0
    assert first.u0 == np.float64(-1.0) or abs(first.u0 + 1.0) < 1e-6  # braking at the bound from x0 = (1, 0)
    assert np.all(np.abs(first.x_final) < 0.05), first.x_final
    second = solve_double_integrator(cache_dir=tmp_path, verbose=False)
    assert not second.built_now and second.status == 0
    np.testing.assert_allclose(second.x_final, first.x_final, atol=1e-9)
    assert not any(p.name == "c_generated_code" for p in __import__("pathlib").Path.cwd().iterdir())
