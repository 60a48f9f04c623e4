"""The CuPy path of the renderer, checked without a GPU through the emulated CuPy
(``tests/cupy_emulation.py``: NumPy arithmetic behind CuPy's rules), and on a real GPU where
there is one.

Under the emulation a render must be bit-identical to the NumPy render: the arithmetic is the
same, so any difference is a host/device slip the emulation let through. On a real GPU,
results may differ in the last bits (fused multiply-adds, CUDA's transcendentals), so the GPU
test compares as the conformance test compares with Mesa.
"""

from __future__ import annotations

import cupy_emulation
import numpy as np
import pytest
from cupy_emulation import HostDeviceMixError, use_emulated_cupy
from repo_paths import CORPUS

from tilesim import backend
from tilesim.render.techniques.bus import Techniques
from tilesim.render.workloads.conformance_scenes import SCENES, record_scene
from tilesim.studies.conformance import render_tilesim

# --- the emulation itself refuses what CuPy refuses ------------------------------------------


def _refusals(cp):
    a = cp.arange(6)
    return {
        "implicit host conversion": lambda: np.asarray(a),
        "NumPy function on a device array": lambda: np.sum(a),
        "host operand": lambda: a + np.arange(6),
        "host index array": lambda: a[np.array([1, 2])],
        "host value assigned": lambda: a.__setitem__(slice(0, 2), np.array([1, 2])),
        "0-d array as a size": lambda: range(a.max()),
        "0-d array as a dict key": lambda: {a[0]: 1},
        "device array as a size": lambda: cp.zeros(a.max()),
        "scatter with an undefined winner": lambda: a.__setitem__(cp.asarray([0, 0]),
                                                                  cp.asarray([1, 2])),
        "ufunc keyword CuPy lacks": lambda: cp.add(a, 1, where=a > 2),
        "ufunc method CuPy lacks": lambda: cp.maximum.accumulate(a),
        "name CuPy lacks": lambda: cp.fromregex,
    }


@pytest.mark.parametrize("case", list(_refusals(np)))
def test_the_emulation_refuses_what_cupy_refuses(case):
    if case == "name CuPy lacks" and cupy_emulation.cupy_namespace() is None:
        pytest.skip("the cupy package (the gpu extra) is not installed")
    with use_emulated_cupy() as cp:
        with pytest.raises((HostDeviceMixError, TypeError, AttributeError,
                            NotImplementedError)):
            _refusals(cp)[case]()


def test_the_emulation_allows_what_cupy_allows():
    with use_emulated_cupy() as cp:
        a = cp.arange(6)
        a[cp.asarray([0, 0])] = 7                     # repeated index, one value: defined
        cp.add.at(a, cp.asarray([1, 1]), 1)           # atomic scatter
        assert backend.to_host(a).tolist() == [7, 3, 2, 3, 4, 5]
        assert backend.array_module(a) is cp
        assert isinstance(backend.to_host(a), np.ndarray)


# --- the TGSI interpreter under the emulation -------------------------------------------------

@pytest.mark.slow
def test_the_interpreter_runs_the_corpus_identically_on_the_cupy_path():

    from tilesim.shaders.interpreter import Interpreter
    from tilesim.shaders.parser import parse_file
    from tilesim.shaders.synthetic_inputs import generate, load_interface

    corpus = CORPUS
    paths = sorted(corpus.rglob("*.tgsi"))
    assert len(paths) > 100
    for path in paths:
        program = parse_file(path)
        interp = Interpreter(program)
        host = generate(program, width=16, height=16, interface=load_interface(path), xp=np)
        cpu = interp.run(host.inputs, host.constants, lanes=host.lanes,
                         system_values=host.system_values)
        with use_emulated_cupy() as cp:
            dev = generate(program, width=16, height=16, interface=load_interface(path), xp=cp)
            gpu = interp.run(dev.inputs, dev.constants, lanes=dev.lanes,
                             system_values=dev.system_values)
            outputs = backend.to_host(gpu.outputs)
            lane_instructions = backend.to_host(gpu.stats.lane_instructions)
        np.testing.assert_array_equal(outputs.view(np.uint32),
                                      np.asarray(cpu.outputs).view(np.uint32), str(path))
        np.testing.assert_array_equal(lane_instructions, cpu.stats.lane_instructions)


# --- the renderer under the emulation: bit-identical to NumPy --------------------------------

def _render_both(name: str, techniques: str = "baseline"):
    frames, width, height = record_scene(name)
    host_images, host_counters = render_tilesim(frames, width, height,
                                                technique=Techniques.from_name(techniques))
    with use_emulated_cupy():
        images, counters = render_tilesim(frames, width, height,
                                          technique=Techniques.from_name(techniques))
    return host_images, host_counters, images, counters


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENES))
def test_every_conformance_scene_renders_identically_on_the_cupy_path(name):
    host_images, host_counters, images, counters = _render_both(name)
    assert all(type(image) is np.ndarray for image in images)   # frames come back to the host
    for host, device in zip(host_images, images, strict=True):
        np.testing.assert_array_equal(device, host)
    assert counters == host_counters


def test_fp16_mediump_renders_identically_on_the_cupy_path():
    """The fp16 mode's roundings (sources, results, llvmpipe's 16-bit forms) on the device."""
    frames, width, height = record_scene("mediump_precision")
    host_images, host_counters = render_tilesim(frames, width, height, mediump="fp16")
    with use_emulated_cupy():
        images, counters = render_tilesim(frames, width, height, mediump="fp16")
    for host, device in zip(host_images, images, strict=True):
        np.testing.assert_array_equal(device, host)
    assert counters == host_counters
    fp32_images, _ = render_tilesim(frames, width, height, mediump="fp32")
    assert not np.array_equal(fp32_images[0], host_images[0])


# Scenes that exercise what each technique reacts to: several frames and render targets,
# depth tests, blending, textures.
TECHNIQUE_SCENES = ("overlap_order", "depth_funcs", "render_to_texture", "tex_min_filters")


@pytest.mark.slow
@pytest.mark.parametrize("techniques", ["te+re+evr", "re/xor", "dsr", "memo", "memo/32"])
@pytest.mark.parametrize("name", TECHNIQUE_SCENES)
def test_techniques_run_identically_on_the_cupy_path(name, techniques):
    host_images, host_counters, images, counters = _render_both(name, techniques)
    for host, device in zip(host_images, images, strict=True):
        np.testing.assert_array_equal(device, host)
    assert counters == host_counters


# --- a real GPU --------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fill_shared_edges", "depth_funcs", "blend_factors",
                                  "tex_min_filters", "cubemap", "render_to_texture", "bunny"])
def test_cupy_renders_like_numpy_on_a_gpu(name):
    if "cupy" not in backend.available_backends():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    frames, width, height = record_scene(name)
    host_images, host_counters = render_tilesim(frames, width, height)
    with backend.use_backend("cupy"):
        images, counters = render_tilesim(frames, width, height)
    for host, device in zip(host_images, images, strict=True):
        close = (np.abs(device.astype(int) - host.astype(int)) <= 2).all(axis=2)
        assert close.mean() >= 0.999
    for host, device in zip(host_counters, counters, strict=True):
        for key in ("fragments_rasterized", "fragments_shaded", "pixels_written"):
            assert abs(device[key] - host[key]) <= max(1, host[key] // 1000), key
