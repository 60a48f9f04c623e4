"""Where a frame's time goes: each pipeline stage's share of tilesim's frame on a trace.

Every stage function is wrapped by a timer that keeps its *exclusive* time (its own, less the
stages it calls), so the rows add up to the frame: draw set-up (vertex fetch and shading,
clipping, triangle set-up, binning), rasterization into quads, the rasterized counters, the
depth tests, plane interpolation of the fragment inputs, the shader programs outside texture
sampling (the interpreter, vertex programs included), texture sampling (with its lanes: the
lane loop's nanoseconds a lane), the live quads' selection and the shaded lanes' counters,
blending, the array selections between the stages (``Renderer._raster``'s own lines) and the
rest of the frame (commands, state, the frame's end). Frames after the first (the first loads
compiled kernels and textures); each row's time is the mean over them. The wrappers cost a
few microseconds a call, a fraction of a percent of a frame.

The peer is the frame itself: the shares are what each stage weighs in the same run (the
issue asks for them before and after each change; ``render_bunny.py --trace`` gives the
frame against Mesa softpipe and llvmpipe). Timings are a benchmark, never a test.

    python benchmarks/frame_stages.py [--trace traces/runner-1920x1080.tsim] [--frames 3]
                                      [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.jit import threads  # noqa: E402
from tilesim.render.pipeline import (  # noqa: E402
    fragment_shading,
    quad_stages,
    renderer,
    texture_sampler,
)
from tilesim.render.replay import render_trace  # noqa: E402
from tilesim.shaders import interpreter  # noqa: E402

# (owner, attribute, row): the functions timed, each charged to its row.
STAGES = (
    (renderer.Renderer, "_draw", "draw set-up: vertex, clipping, set-up, binning"),
    (renderer.Renderer, "_raster", "selections between the quad stages"),
    (quad_stages, "raster_fragments", "rasterization into quads"),
    (quad_stages, "count_rasterized", "rasterized counters"),
    (quad_stages, "early_depth_test", "depth tests"),
    (quad_stages, "depth_test", "depth tests"),
    (quad_stages, "shade", "shading: live quads selected, lanes counted"),
    (quad_stages, "_run_program", "shading glue (parts, statistics)"),
    (fragment_shading, "fragment_inputs", "plane interpolation"),
    (interpreter.Interpreter, "run", "shader programs, texture sampling aside"),
    (texture_sampler.TextureSampler, "sample", "texture sampling"),   # TEXTURE
    (quad_stages, "blend", "blending"),
)
OTHER = "rest of the frame: commands, state, frame end"
TEXTURE = "texture sampling"


class StageTimer:
    """Exclusive time per row of the functions wrapped by :meth:`wrap` (a call's time less
    that of the wrapped calls inside it), and the lanes of the outermost texture requests
    (``sample`` splits a large request into calls of its own)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.sampled_lanes = 0
        self._stack: list[tuple[str, float]] = []   # per open call: its row, its callees' time

    def wrap(self, owner, name: str, row: str) -> None:
        function = getattr(owner, name)
        timer = self

        @functools.wraps(function)
        def timed(*args, **kwargs):
            if row == TEXTURE and all(r != TEXTURE for r, _ in timer._stack):
                timer.sampled_lanes += int(args[1].coords.shape[1])
            timer._stack.append((row, 0.0))
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                _, inner = timer._stack.pop()
                timer.seconds[row] = timer.seconds.get(row, 0.0) + elapsed - inner
                if timer._stack:
                    outer, outer_inner = timer._stack[-1]
                    timer._stack[-1] = (outer, outer_inner + elapsed)

        setattr(owner, name, timed)


def measure(trace: Path, frames: int) -> dict:
    timer = StageTimer()
    for owner, name, row in STAGES:
        timer.wrap(owner, name, row)
    frame_seconds = []
    kept: dict[str, float] = {}
    lanes = 0
    start = time.perf_counter()
    for index, _ in enumerate(render_trace(trace, frames=range(frames))):
        now = time.perf_counter()
        if index:       # the first frame loads compiled kernels and textures
            frame_seconds.append(now - start)
            for row, seconds in timer.seconds.items():
                kept[row] = kept.get(row, 0.0) + seconds
            lanes += timer.sampled_lanes
        timer.seconds, timer.sampled_lanes = {}, 0
        start = time.perf_counter()
    counted = max(len(frame_seconds), 1)
    frame = sum(frame_seconds) / counted
    rows = {row: kept.get(row, 0.0) / counted for _, _, row in STAGES}
    rows[OTHER] = max(frame - sum(rows.values()), 0.0)
    texture = kept.get(TEXTURE, 0.0)
    return {
        "trace": str(trace), "frames_timed": len(frame_seconds), "threads": threads(),
        "frame_ms": round(frame * 1e3, 1),
        "stages_ms": {row: round(seconds * 1e3, 1) for row, seconds in
                      sorted(rows.items(), key=lambda item: -item[1])},
        "stages_share": {row: round(seconds / frame, 3) if frame else None
                         for row, seconds in sorted(rows.items(), key=lambda item: -item[1])},
        "texture_lanes_per_frame": lanes // counted,
        "texture_ns_per_lane": round(texture / lanes * 1e9, 1) if lanes else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=ROOT / "traces/runner-1920x1080.tsim")
    parser.add_argument("--frames", type=int, default=3,
                        help="frames rendered; all but the first are timed (default 3)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.frames < 2:
        parser.error("--frames: at least 2 (the first is not timed)")
    report = measure(args.trace, args.frames)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['trace']}: {report['frame_ms']} ms a frame "
          f"(mean of {report['frames_timed']} after the first, {report['threads']} "
          f"kernel thread{'s' if report['threads'] > 1 else ''})")
    for row, ms in report["stages_ms"].items():
        print(f"  {row:48s} {ms:8.1f} ms  {report['stages_share'][row]:6.1%}")
    if report["texture_ns_per_lane"] is not None:
        print(f"  texture sampling: {report['texture_lanes_per_frame']:,} lanes a frame, "
              f"{report['texture_ns_per_lane']} ns a lane")
    return 0


if __name__ == "__main__":
    sys.exit(main())
