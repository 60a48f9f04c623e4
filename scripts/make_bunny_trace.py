"""Write the bundled default workload: glmark2's bunny ("build" scene), as traces/bunny.tsim.

Needs glmark2's model (Debian glmark2-data); the program comes from the shader corpus, so
no Mesa is needed. The trace is committed; this script documents how it was made.

    python scripts/make_bunny_trace.py [--frames 3] [--size 1920x1080] [-o traces/bunny.tsim]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.options import window_size_argument  # noqa: E402
from tilesim.render.traces.trace_file import write_trace  # noqa: E402
from tilesim.render.workloads.bunny import BUNNY, record  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--size", type=window_size_argument(), default="1920x1080")
    parser.add_argument("-o", "--out", default=str(ROOT / "traces" / "bunny.tsim"))
    args = parser.parse_args()
    width, height = args.size
    frames, mesh, _ = record(args.frames, width, height)
    write_trace(args.out, frames, width=width, height=height, name="bunny",
                source={"model": str(BUNNY), "triangles": int(len(mesh.indices)),
                        "program": "glmark2 build (light-basic), from shaders/corpus",
                        "made_by": "scripts/make_bunny_trace.py"})
    print(f"wrote {args.out}: {args.frames} frames at {width}x{height}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
