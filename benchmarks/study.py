"""Wall time of a whole study, and how rendering scales with the window's pixels.

1. A study: `tilesim run` on one bundled workload, baseline and every technique over its first
   ``--frames`` frames (100 by default, 1196x768), then the estimates and the report, in a
   child process as a user runs it: its wall time, the CPU seconds of the process and its
   workers, and the load average (1 minute) before and after (other jobs on the machine
   stretch the wall time, less the CPU time). The peer, measured in the same run: Mesa softpipe
   replaying the same frames (tilesim.render.reference.replay_gl, every command followed by
   glFinish), once; the ratio says how many softpipe replays the whole study costs (a study
   renders the frames 9 times and compares, estimates and reports them).
2. Scaling: tilesim's baseline frame time of the same trace rendered into windows of
   ``--sizes`` (720p to 4K), the fastest of ``--scaling-frames`` frames after the first, and
   the exponent of time against pixels from a least-squares fit of log time on log pixels
   (1.0: linear in pixels), with the peak resident memory of each size's child process;
   each size on every thread count of ``--threads`` (``TILESIM_THREADS``; 1 and every core by
   default), the speedup beside it.

Timings are a benchmark, never a test.

    python benchmarks/study.py [--trace traces/runner-1196x768.tsim] [--frames 100]
                               [--sizes 1280x720,1920x1080,2560x1440,3840x2160]
                               [--scaling-frames 3] [--threads 1,2] [--no-mesa] [--no-study]
                               [--json]
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

from tilesim.options import window_size  # noqa: E402

_SCALING_CHILD = """
import json, resource, sys, time
from tilesim.render.replay import render_trace
trace, width, height, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times, start = [], time.perf_counter()
for result in render_trace(trace, frames=range(frames), size=(width, height)):
    now = time.perf_counter()
    times.append(now - start)
    start = now
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": times, "peak_bytes": peak}))
"""


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished children (the study's process and
    its Dask workers): on a machine other jobs load, a steadier figure than the wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_study(trace: str, frames: int, workers: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="tilesim-study-bench-") as tmp:
        argv = [sys.executable, "-m", "tilesim.cli", "run", "--trace", f"{trace}@0:{frames}",
                "--out", str(Path(tmp, "study"))]
        if workers:
            argv += ["--workers", str(workers)]
        load_before = os.getloadavg()[0]
        cpu_before = _children_cpu_s()
        start = time.perf_counter()
        run = subprocess.run(argv, capture_output=True, text=True, timeout=7200)
        wall = time.perf_counter() - start
        cpu = _children_cpu_s() - cpu_before
        if run.returncode not in (0, 1) or not Path(tmp, "study", "results.json").is_file():
            raise RuntimeError(f"tilesim run failed (exit {run.returncode}):\n"
                               f"{run.stderr[-2000:]}")
        results = json.loads(Path(tmp, "study", "results.json").read_text())
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "steps_s": results["seconds"],
            "runs": len(results["settings"]["techniques"]), "frames": frames,
            "checks_failed": results["checks"]["failed"]}


def time_softpipe(trace: str, frames: int) -> float:
    from tilesim.render.reference.replay_gl import replay
    from tilesim.render.traces.trace_file import open_trace

    with open_trace(trace) as t:
        recorded = list(t.frames(0, frames))
        size = dict(width=t.width, height=t.height, depth_bits=t.depth_bits,
                    stencil_bits=t.stencil_bits)
    peer = replay(recorded, driver="softpipe", time_commands=True, **size)
    return float(sum(sum(commands) for commands in peer.command_seconds))


def time_scaling(trace: str, sizes: list[tuple[int, int]], frames: int,
                 thread_counts: list[int]) -> dict:
    rows = []
    for width, height in sizes:
        for threads in thread_counts:
            run = subprocess.run([sys.executable, "-c", _SCALING_CHILD, trace, str(width),
                                  str(height), str(frames)], capture_output=True, text=True,
                                 timeout=3600, env={**os.environ, "TILESIM_THREADS": str(threads)})
            if run.returncode:
                raise RuntimeError(f"{width}x{height} on {threads} threads failed:\n"
                                   f"{run.stderr[-2000:]}")
            data = json.loads(run.stdout.strip().splitlines()[-1])
            best = min(data["seconds"][1:] or data["seconds"])
            rows.append({"size": f"{width}x{height}", "pixels": width * height,
                         "threads": threads, "frame_s": round(best, 3),
                         "peak_memory_mib": round(data["peak_bytes"] / 2**20)})
    fewest = [r for r in rows if r["threads"] == thread_counts[0]]
    for row in rows:
        one = next(r for r in fewest if r["size"] == row["size"])
        row["speedup"] = round(one["frame_s"] / row["frame_s"], 2)
    pixels = np.log([r["pixels"] for r in fewest])
    seconds = np.log([r["frame_s"] for r in fewest])
    exponent = float(np.polyfit(pixels, seconds, 1)[0]) if len(fewest) > 1 else None
    return {"frames": frames, "sizes": rows,
            "exponent": None if exponent is None else round(exponent, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default=str(ROOT / "traces" / "runner-1196x768.tsim"))
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--sizes", default="1280x720,1920x1080,2560x1440,3840x2160")
    parser.add_argument("--scaling-frames", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}",
                        help="thread counts of the scaling runs (default 1 and every core)")
    parser.add_argument("--no-mesa", action="store_true")
    parser.add_argument("--no-study", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict = {"trace": args.trace}
    if not args.no_study:
        report["study"] = time_study(args.trace, args.frames, args.workers)
        if not args.no_mesa:
            softpipe = time_softpipe(args.trace, args.frames)
            report["softpipe_replay_s"] = round(softpipe, 1)
            report["study_over_softpipe_replay"] = round(report["study"]["wall_s"] / softpipe,
                                                         2)
    sizes = [window_size(s) for s in args.sizes.split(",") if s]
    thread_counts = sorted({int(n) for n in args.threads.split(",") if n})
    report["scaling"] = time_scaling(args.trace, sizes, args.scaling_frames, thread_counts)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    if "study" in report:
        s = report["study"]
        print(f"study of {Path(args.trace).name}: {s['frames']} frames x {s['runs']} runs in "
              f"{s['wall_s']:.0f} s, {s['cpu_s']:.0f} CPU s ({s['steps_s']}; load average "
              f"{s['load_average'][0]} before, {s['load_average'][1]} after)")
        if "softpipe_replay_s" in report:
            print(f"softpipe replays the {s['frames']} frames in {report['softpipe_replay_s']} "
                  f"s: the study costs {report['study_over_softpipe_replay']}x one replay")
    sc = report["scaling"]
    for row in sc["sizes"]:
        print(f"  {row['size']:>10} on {row['threads']} threads: {row['frame_s']:.3f} s/frame "
              f"({row['speedup']}x), peak {row['peak_memory_mib']} MiB")
    print(f"time ~ pixels^{sc['exponent']} (on {min(r['threads'] for r in sc['sizes'])} "
          f"threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
