"""Frame time of glmark2's bunny (about 70k triangles, light-basic shader) at 1920x1080.

tilesim renders the frames with every counter on; Mesa softpipe and llvmpipe draw the same
geometry with the same GLSL (glmark2's own "build" program from the corpus) in the same run,
each in a child process on an off-screen 1920x1080 RGBA8 + depth framebuffer, timed draw +
glFinish. The result is the ratio of frame times, and tilesim's peak memory (maximum resident
set size of this process). Timings are a benchmark, never a test.

    python benchmarks/render_bunny.py [--frames 3] [--size 1920x1080] [--backend numpy|cupy]
                                      [--json] [--no-mesa]

With ``--backend cupy`` tilesim renders on the GPU; each frame's time includes bringing its
image back to the host (which waits for the GPU), and the report adds the CuPy memory pool.

``--trace traces/runner-1920x1080.tsim`` times a recorded workload instead (textured,
blended): tilesim renders its first ``--frames`` frames, and Mesa replays the same frames
(tilesim.render.reference.replay_gl, in a child process, every command followed by glFinish);
a frame's Mesa time is the sum of its commands' times (the read-back at its end included, as
tilesim's frame time includes making its image).

The ratio ``tilesim_over_<driver>`` is per frame: the median, over the frames after the first
(the first includes loading compiled kernels and textures), of tilesim's time over the peer's
on the same frame, as the frames differ in work (the bunny turns and covers more pixels, a
trace moves); ``..._per_frame`` lists them, and ``..._best`` is each renderer's fastest frame
after the first against the other's (which may be another frame: the figure of the sessions
before 2026-11-30's eighth). llvmpipe compiles a pipeline state's code when it first meets it:
on the runner trace its second frame took 105-108 ms and its later ones 29-35, so time a trace
over 8 frames or more (`--frames 10`: 11.16x, against 8.56x over 5 frames).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.backend import use_backend  # noqa: E402
from tilesim.images import within_tolerance  # noqa: E402
from tilesim.mesa import child_environment  # noqa: E402
from tilesim.options import window_size  # noqa: E402
from tilesim.render.replay import render_frames  # noqa: E402
from tilesim.render.workloads.bunny import matrices, record  # noqa: E402
from tilesim.thresholds import CONFORMANCE_TOLERANCE  # noqa: E402


def time_tilesim(frames_cmds, width, height):
    times, results = [], []
    start = time.perf_counter()
    for result in render_frames(frames_cmds, width, height, source="bunny"):
        now = time.perf_counter()
        times.append(now - start)
        results.append(result)
        start = now
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return times, results, peak_kib * 1024


_CHILD = r"""
import json, sys, time, numpy as np, moderngl
spec = json.load(open(sys.argv[1]))
ctx = moderngl.create_standalone_context(backend="egl")
w, h = spec["width"], spec["height"]
prog = ctx.program(vertex_shader="#version 100\n" + spec["vs"],
                   fragment_shader="#version 100\n" + spec["fs"])
data = np.load(spec["mesh"])
vbo = ctx.buffer(data["vertices"].tobytes())
ibo = ctx.buffer(data["indices"].tobytes())
vao = ctx.vertex_array(prog, [(vbo, "3f 3f", "position", "normal")], ibo, index_element_size=4)
fbo = ctx.framebuffer(color_attachments=[ctx.renderbuffer((w, h), 4)],
                      depth_attachment=ctx.depth_renderbuffer((w, h)))
fbo.use()
ctx.enable(moderngl.DEPTH_TEST)
times = []
for mvp, normal in zip(spec["mvp"], spec["normal"]):
    prog["ModelViewProjectionMatrix"].write(np.asarray(mvp, np.float32).T.tobytes())
    prog["NormalMatrix"].write(np.asarray(normal, np.float32).T.tobytes())
    ctx.finish()
    start = time.perf_counter()
    fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
    vao.render()
    ctx.finish()
    times.append(time.perf_counter() - start)
image = np.frombuffer(fbo.read(components=4), np.uint8).reshape(h, w, 4)[::-1]
np.save(spec["image"], image)
print(json.dumps({"times": times, "renderer": ctx.info["GL_RENDERER"]}))
"""


def time_mesa(driver, program, mesh, frames, width, height):
    with tempfile.TemporaryDirectory() as tmp:
        mesh_path = Path(tmp, "mesh.npz")
        np.savez(mesh_path, vertices=mesh.interleaved(), indices=mesh.indices)
        mats = [matrices(f, width, height) for f in range(frames)]
        spec = {"width": width, "height": height, "vs": program.vertex_glsl,
                "fs": program.fragment_glsl, "mesh": str(mesh_path),
                "mvp": [m[0].tolist() for m in mats], "normal": [m[1].tolist() for m in mats],
                "image": str(Path(tmp, "image.npy"))}
        Path(tmp, "spec.json").write_text(json.dumps(spec))
        Path(tmp, "child.py").write_text(_CHILD)
        out = subprocess.run([sys.executable, str(Path(tmp, "child.py")),
                              str(Path(tmp, "spec.json"))], env=child_environment(driver),
                             capture_output=True,
                             text=True, timeout=600)
        if out.returncode:
            raise RuntimeError(f"{driver} child failed:\n{out.stderr[-2000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        result["image"] = np.load(spec["image"])
        return result


def ratios(driver: str, tilesim_s: list[float], peer_s: list[float]) -> dict:
    """tilesim's frame times over a peer's (``driver``) on the same frames: their median over
    the frames after the first (the headline), the list, and fastest against fastest."""
    later = slice(1, None) if min(len(tilesim_s), len(peer_s)) > 1 else slice(None)
    per_frame = [t / p for t, p in zip(tilesim_s[later], peer_s[later], strict=False)]
    return {f"tilesim_over_{driver}": round(float(np.median(per_frame)), 2),
            f"tilesim_over_{driver}_per_frame": [round(r, 2) for r in per_frame],
            f"tilesim_over_{driver}_best": round(min(tilesim_s[later]) / min(peer_s[later]), 2)}


def _threads() -> dict:
    """The threads each renderer may use: tilesim's kernels (``TILESIM_THREADS``, default
    every core) and llvmpipe's rasterizer (``LP_NUM_THREADS``, default every core)."""
    from tilesim.jit import default_threads, threads

    return {"tilesim_threads": threads(),
            "llvmpipe_threads": int(os.environ.get("LP_NUM_THREADS") or default_threads())}


def time_trace(path, frames: int, backend: str, mesa: bool,
               drivers=("softpipe", "llvmpipe")) -> dict:
    """tilesim and Mesa (each of ``drivers``) frame times of the first ``frames`` frames of a
    ``.tsim`` trace."""
    from tilesim.render.reference.replay_gl import replay
    from tilesim.render.replay import render_trace
    from tilesim.render.traces.trace_file import open_trace

    with open_trace(path) as trace:
        width, height = trace.width, trace.height
        depth_bits, stencil_bits = trace.depth_bits, trace.stencil_bits
        recorded = list(trace.frames(0, frames))
    times, results = [], []
    with use_backend(backend):
        start = time.perf_counter()
        for result in render_trace(path, frames=range(frames)):
            now = time.perf_counter()
            times.append(now - start)
            results.append(result)
            start = now
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report = {"trace": str(path), "size": [width, height], "backend": backend,
              "frames": frames, **_threads(),
              "tilesim_ms": [round(t * 1e3, 1) for t in times],
              "tilesim_peak_memory_mib": round(peak / 2**20, 1),
              "fragments_shaded": [r.counters.total("fragments_shaded") for r in results]}
    if mesa:
        for driver in drivers:
            peer = replay(recorded, driver=driver, width=width, height=height,
                          depth_bits=depth_bits, stencil_bits=stencil_bits,
                          time_commands=True)
            frame_seconds = [sum(commands) for commands in peer.command_seconds]
            report[f"{driver}_ms"] = [round(t * 1e3, 1) for t in frame_seconds]
            report.update(ratios(driver, times, frame_seconds))
            within, _ = within_tolerance(peer.images[-1], results[-1].image,
                                         CONFORMANCE_TOLERANCE)
            report[f"pixels_within_{CONFORMANCE_TOLERANCE}_of_{driver}"] = round(within, 5)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--size", default=None,
                        help="the bunny's window (default 1920x1080); a --trace renders at "
                             "its own size")
    parser.add_argument("--no-mesa", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default="numpy")
    parser.add_argument("--trace", type=Path, default=None,
                        help="time this .tsim trace (e.g. traces/runner-1920x1080.tsim) "
                             "instead of the bunny")
    args = parser.parse_args()
    if args.trace is not None and args.size is not None:
        parser.error("--size sets the bunny's window; a --trace renders at its own size "
                     "(pick the trace of the size wanted, e.g. traces/runner-1920x1080.tsim)")
    if args.trace is not None:
        return _print(time_trace(args.trace, args.frames, args.backend, not args.no_mesa),
                      args.json)
    width, height = window_size(args.size or "1920x1080")
    commands, mesh, program = record(args.frames, width, height)
    with use_backend(args.backend) as xp:
        times, results, peak = time_tilesim(commands, width, height)
        pool = (xp.get_default_memory_pool().total_bytes() if args.backend == "cupy" else None)
    report = {"size": [width, height], "backend": args.backend,
              "triangles": int(len(mesh.indices)), **_threads(),
              "frames": args.frames, "tilesim_ms": [round(t * 1e3, 1) for t in times],
              "tilesim_peak_memory_mib": round(peak / 2**20, 1),
              "fragments_shaded": [r.counters.total("fragments_shaded") for r in results]}
    if pool is not None:
        report["cupy_pool_mib"] = round(pool / 2**20, 1)
    if not args.no_mesa:
        for driver in ("softpipe", "llvmpipe"):
            peer = time_mesa(driver, program, mesh, args.frames, width, height)
            report[f"{driver}_ms"] = [round(t * 1e3, 1) for t in peer["times"]]
            report.update(ratios(driver, times, peer["times"]))
            within, _ = within_tolerance(peer["image"], results[-1].image,
                                         CONFORMANCE_TOLERANCE)
            report[f"pixels_within_{CONFORMANCE_TOLERANCE}_of_{driver}"] = round(within, 5)
    return _print(report, args.json)


def _print(report: dict, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:32s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
