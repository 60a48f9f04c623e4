"""The array backend: NumPy by default, CuPy on request, one code path for both."""

from __future__ import annotations

import numpy as np
import pytest
from repo_paths import CORPUS

from tilesim import backend
from tilesim.backend import BackendUnavailable, to_host, use_backend
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse_file
from tilesim.shaders.synthetic_inputs import generate, load_interface


def test_numpy_is_the_default():
    assert backend.backend_name() == "numpy" and backend.xp() is np


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="unknown backend"):
        backend.set_backend("opencl")


def test_cupy_request_fails_clearly_where_unavailable():
    if "cupy" in backend.available_backends():
        pytest.skip("CuPy and a GPU are present")
    with pytest.raises(BackendUnavailable, match="cupy"):
        backend.set_backend("cupy")
    assert backend.backend_name() == "numpy"


@pytest.mark.gpu
def test_cupy_runs_the_corpus_like_numpy():
    if "cupy" not in backend.available_backends():
        pytest.skip("needs CuPy and an NVIDIA GPU")

    import cupy

    corpus = CORPUS
    for path in sorted(corpus.rglob("*.tgsi"))[:40]:
        program = parse_file(path)
        interp = Interpreter(program)
        host = generate(program, width=16, height=16, interface=load_interface(path), xp=np)
        with use_backend("cupy"):
            dev = generate(program, width=16, height=16, interface=load_interface(path),
                           xp=cupy)
            gpu = interp.run(dev.inputs, dev.constants, lanes=dev.lanes,
                             system_values=dev.system_values)
        cpu = interp.run(host.inputs, host.constants, lanes=host.lanes,
                         system_values=host.system_values)
        # Transcendentals may differ in the last bits between CUDA and the host libm.
        np.testing.assert_allclose(to_host(gpu.outputs), cpu.outputs, rtol=2e-6, atol=1e-6,
                                   equal_nan=True, err_msg=str(path))
        assert (to_host(gpu.stats.lane_instructions) == cpu.stats.lane_instructions).all()


def test_quad_any_and_all_read_each_quads_four_lanes():
    """quad_any / quad_all (a quad's four bools read as one word) equal the reduction over
    each quad's lanes, on contiguous masks and on views that are not, on both backends."""
    from cupy_emulation import use_emulated_cupy

    rng = np.random.default_rng(5)
    mask = rng.random(4 * 999) < 0.6
    mask[:16] = [True] * 4 + [False] * 4 + [True, False, False, False] + [False] * 3 + [True]
    strided = (rng.random(8 * 999) < 0.6)[::2]
    for lanes in (mask, strided):
        quads = lanes.reshape(-1, 4)
        np.testing.assert_array_equal(backend.quad_any(lanes), quads.any(axis=1))
        np.testing.assert_array_equal(backend.quad_all(lanes), quads.all(axis=1))
    with use_emulated_cupy() as xp:
        device = xp.asarray(mask)
        np.testing.assert_array_equal(to_host(backend.quad_any(device)),
                                      mask.reshape(-1, 4).any(axis=1))
        np.testing.assert_array_equal(to_host(backend.quad_all(device)),
                                      mask.reshape(-1, 4).all(axis=1))
