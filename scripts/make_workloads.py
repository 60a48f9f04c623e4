"""Write the game-like synthetic workloads as traces: traces/<name>-<W>x<H>.tsim.

Each workload of tilesim.render.workloads.WORKLOADS (match3, sidescroller, runner,
render_to_texture, and a like_<game> program per row of the thesis's suite) is built at its
sizes (by default the hand-written four at 1196x768, the screen of Frame Coherence chapters
4-5, and 1920x1080, chapter 6; a thesis row at its chapter set's screen) for 100 frames with
the given seed, and written atomically. Building compiles the
GLSL ES shaders through Mesa softpipe (libgl1-mesa-dri, libegl1); the traces it writes need
no Mesa. The same seed gives byte-identical files.

    python scripts/make_workloads.py [--workloads match3,runner] [--sizes 1196x768]
                                     [--frames 100] [--seed 0] [--out-dir traces]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.errors import InputError  # noqa: E402
from tilesim.options import window_size  # noqa: E402
from tilesim.render.workloads import (  # noqa: E402
    DEFAULT_FRAMES,
    NATIVE_SIZES,
    WORKLOADS,
    trace_name,
    write_workload,
)

BUDGET_BYTES = 40 << 20  # all traces together should stay below this


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Exit codes: 0 written, 2 bad usage.")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated names (default: all: {', '.join(WORKLOADS)})")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated WxH sizes (default: each workload's own: both "
                             "1196x768 and 1920x1080 for the hand-written four, the chapter "
                             "set's screen for a thesis row)")
    parser.add_argument("--frames", type=int, default=DEFAULT_FRAMES,
                        help="frames per trace (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice, "
                        "recorded in each trace's source (default %(default)s)")
    parser.add_argument("--out-dir", default=str(ROOT / "traces"),
                        help="output folder (default: traces/ of the repository)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    try:
        sizes = None if args.sizes is None else [
            window_size(s, option="--sizes") for s in args.sizes.split(",") if s.strip()]
    except InputError as exc:
        parser.error(exc.bare_message)
    if args.frames < 1:
        parser.error("--frames must be at least 1")
    out = Path(args.out_dir)
    jobs = [(n, w, h) for n in names for w, h in (sizes or NATIVE_SIZES[n])]
    total = 0
    for k, (name, width, height) in enumerate(jobs, start=1):
        path = out / trace_name(name, width, height)
        started = time.perf_counter()
        print(f"[{k}/{len(jobs)}] {name} {width}x{height}, {args.frames} frames, "
              f"seed {args.seed} ...", end="", flush=True)
        write_workload(name, path, width, height, args.frames, args.seed)
        size = path.stat().st_size
        total += size
        print(f" {path} ({size / 1e6:.2f} MB, {time.perf_counter() - started:.1f} s)",
              flush=True)
    print(f"total {total / 1e6:.2f} MB in {len(jobs)} trace(s)")
    if total > BUDGET_BYTES:
        print(f"note: more than {BUDGET_BYTES / 1e6:.0f} MB together", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
