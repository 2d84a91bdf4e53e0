"""Code generation: content-hash caching, numba access, flat row-major layout."""
from __future__ import annotations

import casadi as ca
import numba
import numpy as np

from robots import get_robot, numeric
from robots.codegen import compile_functions


def _functions(scale: float):
    x = ca.SX.sym("x", 3)
    A = ca.vertcat(ca.horzcat(x[0], 2 * x[1], 3 * x[2]), ca.horzcat(scale * x[0] ** 2, 0, 1))  # 2 x 3
    return [ca.Function("mat", [x], [A], ["x"], ["A"]), ca.Function("vec", [x], [ca.sin(x), ca.sum1(x)])]


def test_cache_hit_and_rebuild_only_when_source_changes(tmp_path):
    first = compile_functions(_functions(1.0), lib_name="t", cache_dir=tmp_path, verbose=False)
    again = compile_functions(_functions(1.0), lib_name="t", cache_dir=tmp_path, verbose=False)
    changed = compile_functions(_functions(2.0), lib_name="t", cache_dir=tmp_path, verbose=False)
    assert first.built_now and not again.built_now and changed.built_now
    assert first.path == again.path != changed.path


def test_outputs_are_row_major_with_original_shapes(tmp_path):
    lib = compile_functions(_functions(1.0), lib_name="t", cache_dir=tmp_path, verbose=False)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(lib["mat"](x), [[1.0, 4.0, 9.0], [1.0, 0.0, 1.0]])
    s, total = lib["vec"](x)
    np.testing.assert_allclose(s, np.sin(x))
    assert total.shape == (1,) and total[0] == 6.0
    assert lib["mat"].out_shapes == ((2, 3),) and lib["vec"].n_out == 4


def test_numba_loop_calls_compiled_mass_matrix_without_python():
    model = get_robot("quadruped")
    fns = numeric(model)
    cfunc = fns.raw["mass_matrix"].cfunc
    nv = model.nv

    @numba.njit(cache=False)
    def trace_sum(qs):
        out = np.empty(nv * nv)
        total = 0.0
        for i in range(qs.shape[0]):
            q = np.ascontiguousarray(qs[i])
            cfunc(q.ctypes.data, out.ctypes.data)
            for k in range(nv):
                total += out[k * nv + k]
        return total

    qs = model.q0 + np.random.default_rng(8).normal(scale=0.3, size=(20, model.nq))
    expected = sum(np.trace(fns.mass_matrix(q)) for q in qs)
    assert np.isclose(trace_sum(qs), expected, rtol=1e-12)


def test_the_cache_key_holds_the_host_cpu(tmp_path, monkeypatch):
    """The generated C is compiled for the host's CPU (-march=native), so a cache copied to a
    machine with another CPU must recompile, not run instructions that CPU may lack."""
    import robots.codegen as cg

    source = "double twice(double x) { return 2.0 * x; }\n"
    path, built, _ = cg.compile_shared(source, lib_name="twice", cache_dir=tmp_path, verbose=False)
    assert built and "-march=native" in cg.CFLAGS
    assert not cg.compile_shared(source, lib_name="twice", cache_dir=tmp_path, verbose=False)[1]  # cached
    monkeypatch.setattr(cg, "_HOST_CPU", ["x86_64\nmodel name : another CPU\nflags : fpu sse2"])
    other, built_again, _ = cg.compile_shared(source, lib_name="twice", cache_dir=tmp_path, verbose=False)
    assert built_again and other != path
