"""The texture caches per bundled trace: accesses, misses, miss rate, and what the timing model
makes of the frames (GPU seconds and joules, ``tilesim.estimate``), mean over the frames.

Not a timing: a table of counters, to put beside the same table from another commit when the
cache model changes (docs/notes/texture-cache-order.md has one). The accesses depend only on
the textures and the sampling; the misses on the caches' order.

    python benchmarks/texture_misses.py [--frames 0:2] [--traces 'like_*'] [--json]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilesim  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="0:2", help="frames of each trace (default 0:2)")
    parser.add_argument("--traces", default="*", help="a pattern of bundled trace names")
    parser.add_argument("--json", action="store_true", help="one JSON object per trace")
    args = parser.parse_args(argv)
    traces = sorted(p for p in (ROOT / "traces").glob("*.tsim")
                    if fnmatch.fnmatch(p.stem, args.traces))
    if not args.json:
        print(f"{'trace':34s} {'accesses':>13s} {'misses':>11s} {'rate':>7s} {'GPU ms':>9s} "
              f"{'mJ':>8s}")
    for path in traces:
        frames = list(tilesim.render_frames(str(path), frames=args.frames))
        estimates = list(tilesim.estimate(frames))
        accesses = sum(f.counters.total("tex_cache_accesses") for f in frames)
        misses = sum(f.counters.total("tex_cache_misses") for f in frames)
        row = {"trace": path.stem, "frames": len(frames), "accesses": int(accesses),
               "misses": int(misses), "miss_rate": misses / accesses if accesses else 0.0,
               "seconds": sum(e.seconds for e in estimates) / len(estimates),
               "energy_j": sum(e.energy for e in estimates) / len(estimates)}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"{row['trace']:34s} {accesses:13,d} {misses:11,d} {row['miss_rate']:7.2%} "
                  f"{row['seconds'] * 1e3:9.3f} {row['energy_j'] * 1e3:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
