"""Frame time of a recorded trace on the GPU: tilesim's CuPy backend with the shader programs
as CUDA kernels (tilesim.shaders.cuda_program), and Mesa llvmpipe on the same frames in the
same run.

    python benchmarks/render_gpu.py [--trace traces/runner-1920x1080.tsim] [--frames 4]
                                    [--json] [--no-mesa] [--interpreted]

tilesim renders the trace's first ``--frames`` frames with ``--backend cupy`` and
``TILESIM_SHADER_KERNELS=1`` (each frame's time includes bringing its image back to the host);
llvmpipe replays the same frames in a child process, each command followed by glFinish
(render_bunny.time_trace, whose report this is, with the kernels launched and the programs
compiled for CUDA added). ``--interpreted`` adds a run with the shader kernels off (the CuPy
interpreter) and whether its images equal the kernels' run. Ratios use each renderer's fastest
frame after the first (the first compiles the kernels: NVVM, about a second a program).

Without a CUDA GPU (or without CuPy) it prints one line saying so and exits 0; with ``--json``
that line is a JSON record with ``"gpu": false``. Timings are a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from render_bunny import _print, time_trace  # noqa: E402

from tilesim.backend import BackendUnavailable, available_backends  # noqa: E402
from tilesim.shaders import compiled_program, cuda_program  # noqa: E402

DEFAULT_TRACE = ROOT / "traces" / "runner-1920x1080.tsim"


def gpu_missing() -> str | None:
    """Why this machine cannot run the benchmark (None: it can)."""
    if not cuda_program.gpu_present():
        return "no CUDA GPU (numba.cuda.is_available() is False or the CUDA simulator is on)"
    try:
        if "cupy" not in available_backends():
            return "CuPy finds no CUDA device"
    except (ImportError, BackendUnavailable) as exc:  # pragma: no cover - environment
        return f"CuPy is not usable ({exc})"
    return None


def _images(path: Path, frames: int) -> list[np.ndarray]:
    """The frames' images from a CuPy render, on the host."""
    from tilesim.backend import to_host, use_backend
    from tilesim.render.replay import render_trace

    with use_backend("cupy"):
        return [to_host(r.image) for r in render_trace(path, frames=range(frames))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-mesa", action="store_true")
    parser.add_argument("--interpreted", action="store_true",
                        help="also render with the shader kernels off (CuPy interpreter)")
    args = parser.parse_args()
    why = gpu_missing()
    if why is not None:
        if args.json:
            print(json.dumps({"benchmark": "render_gpu", "gpu": False, "reason": why}))
        else:
            print(f"render_gpu: skipped, {why}")
        return 0
    report: dict = {"benchmark": "render_gpu", "gpu": True}
    if args.interpreted:
        compiled_program.SHADER_KERNELS = False
        start = time.perf_counter()
        interpreted = time_trace(args.trace, args.frames, "cupy", False)
        report["interpreted_tilesim_ms"] = interpreted["tilesim_ms"]
        report["interpreted_seconds"] = round(time.perf_counter() - start, 1)
        reference = _images(args.trace, args.frames)
    compiled_program.SHADER_KERNELS = True
    before = cuda_program.launches
    report.update(time_trace(args.trace, args.frames, "cupy", not args.no_mesa,
                             drivers=("llvmpipe",)))
    programs = list(cuda_program._COMPILED.values())
    report["cuda_kernel_launches"] = cuda_program.launches - before
    report["cuda_programs"] = sum(p is not None for p in programs)
    report["cuda_programs_interpreted"] = sum(p is None for p in programs)
    if args.interpreted:
        images = _images(args.trace, args.frames)
        report["images_equal_to_interpreted"] = all(
            np.array_equal(a, b) for a, b in zip(images, reference, strict=True))
    return _print(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
