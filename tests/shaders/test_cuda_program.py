"""The CUDA target of the compiled programs (tilesim.shaders.cuda_program) against the
interpreter: the same output bits, killed lanes and every DynamicStats array.

- Under Numba's CUDA simulator, in a child process (``cuda_program_checks``: the simulator is
  chosen when numba.cuda is first imported), on the hand-made programs of
  test_compiled_program (NaN / inf / denormal inputs, divergent flow, loops, kills,
  derivatives, texture lookups between kernels, fp16) and on corpus programs in fp32 and fp16
  modes: every 25th in the fast loop, all of them in the slow one.
- The PTX of the kernels, compiled here by NVVM without a GPU: no fused multiply-add, no
  flushed denormals, every float operation explicitly rounded.
- On a real GPU with CuPy arrays: the same comparison, skipped where there is none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from cuda_program_checks import FORBIDDEN_PTX, compare, corpus, hand_made, kernel_ptx
from repo_paths import ROOT
from tgsi_helpers import program_text

from tilesim import jit
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="needs Numba (TILESIM_JIT on)")


def simulate(*args: str) -> dict:
    """``python -m cuda_program_checks ARGS`` under the CUDA simulator; its JSON report."""
    paths = [str(ROOT / "tests"), str(ROOT / "tests" / "shaders")]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-m", "cuda_program_checks", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["simulator"] is True
    return report


def assert_identical_and_launched(cases: dict) -> int:
    """Every case ran as CUDA kernels (one launch a kernel step: no silent fallback to the
    interpreter) and equals the interpreter; returns the kernels launched."""
    launched = 0
    for name, result in cases.items():
        assert "fallback" not in result, (name, result)
        assert not result.get("declined"), (name, "a kernel hit a bound")
        assert result["differences"] == [], (name, result["differences"])
        kernels = result["steps"].count("kernel")
        assert result["launches"] == kernels, name
        if kernels:
            assert result["kernel_types"] in (["FakeCUDAKernel"], ["CUDADispatcher"]), name
        launched += result["launches"]
    return launched


@pytest.fixture(scope="module")
def simulated_hand_made() -> dict:
    return simulate("hand-made")


def test_hand_made_programs_match_the_interpreter_under_the_simulator(simulated_hand_made):
    cases = simulated_hand_made["cases"]
    assert len(cases) == 10
    assert_identical_and_launched(cases)


def test_the_kernels_are_cuda_kernels_and_ran(simulated_hand_made):
    """Not vacuous: each hand-made program ran at least one simulated CUDA kernel, and the
    texture program ran its lookups between three kernel launches."""
    cases = simulated_hand_made["cases"]
    for name, result in cases.items():
        assert result["launches"] >= 1, name
        assert result["kernel_types"] == ["FakeCUDAKernel"], name
    assert cases["texture_segments"]["steps"] == ["kernel", "op", "op", "kernel", "op",
                                                  "kernel"]
    assert simulated_hand_made["launches"] == sum(r["launches"] for r in cases.values())


def test_sampled_corpus_programs_match_under_the_simulator():
    report = simulate("corpus", "--every", "25")
    cases = report["cases"]
    assert len(cases) == 14   # 7 programs, fp32 and fp16
    assert not [name for name, r in cases.items() if "cpu_fallback" in r]
    assert assert_identical_and_launched(cases) > 0


@pytest.mark.slow
def test_every_corpus_program_matches_under_the_simulator():
    """All corpus programs the CPU target compiles, fp32 and fp16, 32 lanes each (about 15 s
    on the simulator)."""
    report = simulate("corpus")
    cases = report["cases"]
    assert len(cases) >= 340
    compared = {n: r for n, r in cases.items() if "cpu_fallback" not in r}
    assert len(compared) == len(cases)     # the CPU target compiles the whole corpus
    assert assert_identical_and_launched(compared) > 0
    with_kernels = [n for n, r in compared.items() if r["launches"]]
    assert len(with_kernels) >= 0.95 * len(compared)


# -- PTX: what NVVM makes of the kernels, without a GPU ------------------------------------


@pytest.fixture
def ptx_compiler(monkeypatch):
    """numba.cuda outside the simulator, with NVVM; a stand-in current device (compute
    capability 9.0) where there is no GPU, as Numba asks for one to compile device
    functions."""
    from numba import cuda

    from tilesim.shaders import cuda_program

    if cuda_program.SIMULATOR:
        pytest.skip("NUMBA_ENABLE_CUDASIM is set in this process")
    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVVM means no toolkit
        pytest.skip(f"no CUDA toolkit NVVM to compile PTX ({type(exc).__name__})")
    if not cuda.is_available():
        import numba.cuda.dispatcher as dispatcher

        class Device:
            compute_capability = (9, 0)

        monkeypatch.setattr(dispatcher, "get_current_device", lambda: Device())
    monkeypatch.setattr("tilesim.shaders.compiled_program.KERNEL_MINIMUM", 1)
    return cuda_program


def _hand_made_interp(name: str):
    from test_compiled_program import HAND_MADE

    body, inputs, options = HAND_MADE[name]()
    program = parse(program_text(body, inputs=max(len(inputs), 1), extra=options.get("extra")))
    precision = options.get("precision")
    if precision is not None:
        precision = precision + ["----"] * (len(program.instructions) - len(precision))
    return Interpreter(program, mediump=options.get("mediump", "fp32"), precision=precision)


def assert_exact_ptx(compiled) -> str:
    """The kernels' PTX, checked against FORBIDDEN_PTX; returns it."""
    texts = kernel_ptx(compiled)
    assert texts
    for text in texts:
        bad = [line.strip() for line in text.splitlines() if FORBIDDEN_PTX.search(line)]
        assert bad == [], bad[:5]
    return "\n".join(texts)


def test_fp16_float_kernels_compile_to_exactly_rounded_ptx(ptx_compiler):
    """The float opcodes in fp16 mode (every float template, the fp16 rounding, mediump
    products): add/sub/mul/div/sqrt with .rn, no FMA, no .ftz (about 2 s of NVVM)."""
    text = assert_exact_ptx(ptx_compiler.compiled_for(_hand_made_interp("float_fp16")))
    for op in ("add.rn.f32", "sub.rn.f32", "mul.rn.f32", "div.rn.f32", "sqrt.rn.f32"):
        assert op in text, op


@pytest.mark.slow
def test_every_hand_made_and_sampled_corpus_kernel_compiles_to_exact_ptx(ptx_compiler):
    from repo_paths import CORPUS
    from test_compiled_program import HAND_MADE

    from tilesim.shaders.parser import parse_file

    for name in HAND_MADE:
        assert_exact_ptx(ptx_compiler.compiled_for(_hand_made_interp(name)))
    for path in sorted(CORPUS.rglob("*.tgsi"))[::25]:
        for mode in ("fp32", "fp16"):
            compiled = ptx_compiler.compiled_for(Interpreter(parse_file(path), mediump=mode))
            assert compiled is not None
            if any(step[0] == "kernel" for step in compiled.steps):
                assert_exact_ptx(compiled)


# -- a real GPU ------------------------------------------------------------------------------


@pytest.fixture
def gpu():
    """CuPy and a CUDA GPU that Numba sees (not the simulator)."""
    from numba import cuda

    from tilesim.shaders import cuda_program

    if cuda_program.SIMULATOR:
        pytest.skip("NUMBA_ENABLE_CUDASIM is set in this process: no real GPU")
    if not cuda.is_available():
        pytest.skip("no CUDA GPU: numba.cuda.is_available() is False")
    cupy = pytest.importorskip("cupy", reason="CuPy (the gpu extra) is missing")
    return cupy


def assert_match_on_gpu(cases: dict) -> None:
    """A program whose every step is a kernel must match the NumPy interpreter; one with
    steps run by the interpreter's handlers on CuPy between kernels must match where the CuPy
    interpreter itself matches the NumPy one (CuPy's sin or NaNs are not NumPy's bits)."""
    compared, unmatched = 0, []
    for name, result in cases.items():
        if "cpu_fallback" in result:
            continue
        assert "fallback" not in result, (name, result)
        assert not result.get("declined"), name
        assert result["launches"] == result["steps"].count("kernel"), name
        if "op" in result["steps"] and result["device_interpreter_differences"]:
            unmatched.append(name)
            continue
        assert result["differences"] == [], (name, result["differences"])
        compared += 1
    print(f"\n{compared} programs compared on the GPU; {len(unmatched)} not comparable "
          f"(the CuPy interpreter differs from NumPy's): {unmatched}")
    assert compared >= len(cases) // 2


@pytest.mark.gpu
def test_cuda_kernels_match_the_interpreter_on_a_gpu(gpu, monkeypatch):
    """The hand-made programs and every 10th corpus program (fp32, fp16) as CUDA kernels on
    CuPy arrays against the interpreter on NumPy (about 150 kernels for NVVM to compile)."""
    monkeypatch.setattr("tilesim.shaders.compiled_program.KERNEL_MINIMUM", 1)
    assert_match_on_gpu({**hand_made(gpu), **corpus(every=10, xp=gpu)})


@pytest.mark.gpu
@pytest.mark.slow
def test_every_corpus_program_matches_the_interpreter_on_a_gpu(gpu, monkeypatch):
    """All 340 corpus runs (about 1,400 kernels to compile: many minutes in a fresh cache)."""
    monkeypatch.setattr("tilesim.shaders.compiled_program.KERNEL_MINIMUM", 1)
    assert_match_on_gpu(corpus(xp=gpu))


@pytest.mark.gpu
def test_the_interpreter_takes_the_cuda_kernels_for_cupy_arrays(gpu, monkeypatch):
    from tilesim.shaders import compiled_program as cp
    from tilesim.shaders import cuda_program

    monkeypatch.setattr(cp, "SHADER_KERNELS", True)
    monkeypatch.setattr(cp, "COMPILE_AFTER_LANES", 0)
    interp = Interpreter(parse(program_text(["MAD OUT[0], IN[0], IN[0], IN[0]"], inputs=1)))
    before = cuda_program.launches
    values = np.linspace(-3, 3, 64, dtype=np.float32).reshape(1, 1, 64).repeat(4, axis=1)
    got = interp.run(gpu.asarray(values))
    assert cuda_program.launches == before + 1
    with jit.disabled():
        want = interp.run(values)
    np.testing.assert_array_equal(gpu.asnumpy(got.outputs).view(np.uint32),
                                  want.outputs.view(np.uint32))


# -- the hook, on any machine ----------------------------------------------------------------


class _DeviceArray:
    """Stands for a CuPy array: what the interpreter's compiled-path entry checks for."""

    __cuda_array_interface__ = {}
    shape = (1, 4, 8)


def test_device_arrays_go_to_the_cuda_target_and_fall_back_without_a_gpu(monkeypatch):
    from tilesim.shaders import compiled_program as cp
    from tilesim.shaders import cuda_program

    monkeypatch.setattr(cp, "SHADER_KERNELS", True)
    calls = []
    real = cuda_program.run_compiled
    monkeypatch.setattr(cuda_program, "run_compiled",
                        lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(cuda_program, "gpu_present", lambda: False)
    interp = Interpreter(parse(program_text(["ADD OUT[0], IN[0], IN[0]"], inputs=1)))
    assert cp.run_compiled(interp, _DeviceArray(), None, None, None, {}) is None
    assert len(calls) == 1
    # NumPy arrays stay on the CPU path, untouched by the CUDA target
    interp.run(np.ones((1, 4, 8), np.float32))
    assert len(calls) == 1


def test_compare_runs_the_cuda_target_on_numpy_arrays_only_under_the_simulator():
    """Outside the simulator the CUDA target refuses host arrays (the interpreter runs)."""
    from tilesim.shaders import cuda_program

    if cuda_program.SIMULATOR:
        pytest.skip("NUMBA_ENABLE_CUDASIM is set in this process")
    assert not cuda_program.CUDA.usable(np.zeros(4, np.uint32))
    interp = _hand_made_interp("partial_warp")
    values = np.ones((1, 4, 8), np.uint32)
    from tilesim.shaders.sampling import ProceduralSampler

    assert compare(interp, values, None, 8, ProceduralSampler(), {}).get("declined")


def test_the_gpu_benchmark_says_when_there_is_no_gpu():
    """benchmarks/render_gpu.py without a GPU: exit 0, one JSON record saying why."""
    from tilesim.shaders import cuda_program

    if cuda_program.gpu_present():
        pytest.skip("a GPU is present: the benchmark would run")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "render_gpu.py"), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["gpu"] is False and record["reason"]
