"""The CUDA target's programs (tilesim.shaders.cuda_program) against the interpreter, for
``test_cuda_program.py``: under Numba's CUDA simulator in a child process (NUMBA_ENABLE_CUDASIM
must be set before numba.cuda is first imported, so the simulator cannot share the test
process), and in the test process on a real GPU with CuPy arrays.

    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=tests:tests/shaders \\
        python -m cuda_program_checks hand-made|corpus [--every K] [--modes fp32,fp16]

prints one JSON line: per program, the kernels launched, the steps, the kinds of the kernel
objects, and every difference from the interpreter (outputs' bits, killed lanes, each
DynamicStats array's dtype and values). The inputs are those of test_compiled_program's
hand-made programs (NaN, inf, denormals, divergent flow, kills, derivatives) and the corpus
programs' synthetic inputs on 8x4 lanes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

STATS = ("lane_instructions", "warp_instructions", "warp_active_lanes", "texture_samples")


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _device(value, xp):
    if value is None or xp is np:
        return value
    if isinstance(value, dict):
        return {k: xp.asarray(v) for k, v in value.items()}
    return xp.asarray(value)


def differences(got, want) -> list[str]:
    """What differs between two Executions (empty: bit-identical, counters and dtypes too)."""
    found = []
    a, b = _host(got.outputs).view(np.uint32), _host(want.outputs).view(np.uint32)
    if a.shape != b.shape or (a != b).any():
        bad = np.argwhere(a != b)[:3].tolist() if a.shape == b.shape else "shape"
        found.append(f"outputs differ at {bad}")
    if (_host(got.killed) != _host(want.killed)).any():
        found.append("killed differs")
    for name in STATS:
        x, y = _host(getattr(got.stats, name)), _host(getattr(want.stats, name))
        if x.dtype != y.dtype:
            found.append(f"{name} dtype {x.dtype} != {y.dtype}")
        elif x.shape != y.shape or (x != y).any():
            found.append(f"{name} differs")
    return found


def compare(interp, inputs, constants, lanes, sampler, system_values, xp=np) -> dict:
    """Run ``interp``'s program as CUDA kernels (arrays of ``xp``: NumPy under the simulator,
    CuPy on a GPU) and through the interpreter on NumPy, the reference."""
    from tilesim import jit
    from tilesim.shaders import cuda_program

    compiled = cuda_program.compiled_for(interp)
    if compiled is None:
        return {"fallback": cuda_program.fallback_reason(interp)}
    before = cuda_program.launches
    got = compiled.run(interp, _device(inputs, xp), _device(constants, xp), lanes, sampler,
                       _device(system_values, xp))
    result = {"launches": cuda_program.launches - before,
              "steps": [step[0] for step in compiled.steps],
              "kernel_types": sorted({type(s[1]).__name__ for s in compiled.steps
                                      if s[0] == "kernel"})}
    if got is None:
        return {**result, "declined": True}
    with jit.disabled():
        want = interp.run(inputs, constants, lanes=lanes, sampler=sampler,
                          system_values=system_values)
        result["differences"] = differences(got, want)
        if xp is not np:
            # The handlers between kernels run on the device arrays: where CuPy's interpreter
            # differs from NumPy's, so may they.
            on_device = interp.run(_device(inputs, xp), _device(constants, xp), lanes=lanes,
                                   sampler=sampler, system_values=_device(system_values, xp))
            result["device_interpreter_differences"] = differences(on_device, want)
    return result


def hand_made(xp=np) -> dict:
    """test_compiled_program's hand-made programs, each compared (``HAND_MADE``)."""
    from test_compiled_program import HAND_MADE
    from tgsi_helpers import program_text

    from tilesim.shaders.interpreter import Interpreter
    from tilesim.shaders.parser import parse
    from tilesim.shaders.sampling import ProceduralSampler

    results = {}
    for name, build in HAND_MADE.items():
        body, inputs, options = build()
        program = parse(program_text(body, inputs=max(len(inputs), 1),
                                     extra=options.get("extra")))
        precision = options.get("precision")
        if precision is not None:
            precision = precision + ["----"] * (len(program.instructions) - len(precision))
        interp = Interpreter(program, mediump=options.get("mediump", "fp32"),
                             precision=precision)
        regs = np.stack([np.asarray(v, dtype=np.float32).view(np.uint32) for v in inputs])
        results[name] = compare(interp, regs, None, regs.shape[-1], ProceduralSampler(), {},
                                xp)
    return results


def corpus(every: int = 1, modes=("fp32", "fp16"), xp=np, width=8, height=4) -> dict:
    """Every ``every``-th corpus program the CPU target compiles, in each precision mode,
    on ``width`` x ``height`` lanes of synthetic inputs (test_compiled_program's corpus test
    at a size the simulator runs in seconds)."""
    from repo_paths import CORPUS

    from tilesim.shaders import compiled_program as cp
    from tilesim.shaders.interpreter import Interpreter
    from tilesim.shaders.parser import parse_file
    from tilesim.shaders.sampling import ProceduralSampler
    from tilesim.shaders.synthetic_inputs import generate, load_interface

    results = {}
    for path in sorted(Path(CORPUS).rglob("*.tgsi"))[::every]:
        program = parse_file(path)
        interface = load_interface(path)
        for mode in modes:
            precision = None
            if mode == "fp16" and interface and "precision" in interface:
                stage = "vertex" if program.processor == "VERT" else "fragment"
                precision = interface["precision"][stage]["instructions"]
            interp = Interpreter(program, precision=precision, mediump=mode)
            name = f"{path.parent.name}/{path.stem}[{mode}]"
            try:   # what the CPU target compiles (its structure; no Numba compile needed)
                cp._items(interp, cp.libm_agrees())
            except cp._Unsupported as why:
                results[name] = {"cpu_fallback": str(why)}
                continue
            g = generate(program, width=width, height=height, interface=interface)
            results[name] = compare(interp, g.inputs, g.constants, g.lanes,
                                    ProceduralSampler(), g.system_values, xp)
    return results


# PTX the kernels must not hold: a fused multiply-add (contraction), flushed denormals,
# approximate division or square root, min/max/abs/neg of floats (PTX leaves their NaNs
# unspecified), or a float add/sub/mul/div/sqrt without an explicit rounding (ptxas may
# fuse those).
FORBIDDEN_PTX = re.compile(r"\bfma\.|\.ftz\b|\.approx\b|\b(min|max|abs|neg)\.f32\b"
                           r"|\b(add|sub|mul|div|sqrt)\.f32\b")


def kernel_ptx(compiled, cc=(9, 0)) -> list[str]:
    """The PTX of each of a CUDA CompiledProgram's kernels, for compute capability ``cc``,
    with the argument types CompiledProgram.run passes (NVVM of the CUDA toolkit; no GPU
    needed, but Numba asks the current device for its compute capability when it compiles a
    device function: the caller stands one in where there is none)."""
    from numba import cuda
    from numba import types as nt

    registers, table = nt.uint32[:, :, ::1], nt.uint32[:, ::1]
    signature = (nt.int64, nt.boolean, nt.int64, nt.int64, *[registers] * 5, table,
                 *[table] * len(compiled.buffers), nt.boolean[::1], nt.int32[:, ::1],
                 nt.int32[:, ::1], nt.int64[::1], nt.int64[::1])
    return [cuda.compile_ptx(step[1].py_func, signature, cc=cc)[0]
            for step in compiled.steps if step[0] == "kernel"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("which", choices=["hand-made", "corpus"])
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--modes", default="fp32,fp16")
    args = parser.parse_args(argv)
    # NumPy scalars in the simulator's threads warn where the interpreter's arrays, under
    # np.errstate, do not (an overflow or NaN is the result being checked, not an error).
    warnings.simplefilter("ignore", RuntimeWarning)
    from tilesim.shaders import compiled_program as cp
    from tilesim.shaders import cuda_program

    cp.KERNEL_MINIMUM = 1    # every instruction in kernels, as test_compiled_program does
    start = time.perf_counter()
    if args.which == "hand-made":
        cases = hand_made()
    else:
        cases = corpus(args.every, tuple(args.modes.split(",")))
    print(json.dumps({"simulator": cuda_program.SIMULATOR, "cases": cases,
                      "launches": cuda_program.launches,
                      "seconds": round(time.perf_counter() - start, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
