"""Measure the thesis-regime workloads (traces/like_*.tsim) against their rows of Frame
Coherence Tables 3.3 and 3.4 and keep the result beside the rows:
render/workloads/thesis_games_measured.json.

Each trace is characterized as `tilesim characterize` does (the tile-based model's counters
over the frames given), and each banded column is compared with the row: draw calls per
frame, vertices per draw call, fragment-shader instructions per fragment, ALU:TEX, texels per
texture instruction and overshading. tests/studies/test_thesis_games.py holds the stored figures
within BAND of the rows and re-measures a frame of each workload.

    python scripts/measure_thesis_games.py [--frames 8] [--traces traces]
    python scripts/measure_thesis_games.py --from-study OUT/study   # a study's own
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.atomic import write_json  # noqa: E402
from tilesim.render.workloads import thesis_games, trace_name  # noqa: E402
from tilesim.studies.characterize import characterize  # noqa: E402

OUT = Path(thesis_games.__file__).with_name("thesis_games_measured.json")
# Each measured column against its row, as the issue asks (within 15%).
BAND = 0.15
BANDED = {"draw_calls_per_frame": "draw_calls_per_frame",
          "vertices_per_draw": "vertices_per_draw",
          "fs_instructions_per_fragment": "fs_instructions_per_fragment",
          "alu_tex_ratio": "alu_tex_ratio",
          "texels_per_fragment": "texels_per_fragment",
          "overshading": "overshading"}
# Reported beside them, not banded (they follow from the banded ones; see thesis_games).
REPORTED = {"attributes_per_vertex": "attributes_per_vertex",
            "vs_instructions_static": "vs_instructions",
            "primitives_per_draw": "primitives_per_draw",
            "primitives_per_tile": "primitives_per_tile",
            "fragments_per_primitive": "fragments_per_primitive"}


def compare(row, columns: dict) -> dict:
    """{column: {table, measured, error}} for the banded and reported columns."""
    out = {}
    for measured, table in {**BANDED, **REPORTED}.items():
        value, target = columns.get(measured), row.numbers[table]
        out[measured] = {"table": target, "measured": value,
                         "error": None if value is None else value / target - 1.0,
                         "banded": measured in BANDED}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 every column within its band, "
                                            "1 one outside, 2 bad usage.")
    parser.add_argument("--frames", default=8, type=int,
                        help="frames characterized from the first (default %(default)s)")
    parser.add_argument("--traces", default=str(ROOT / "traces"),
                        help="folder of the like_*.tsim traces (default: traces/)")
    parser.add_argument("--from-study", metavar="DIR",
                        help="take the characterizations a `tilesim run` of the traces made "
                             "(DIR/runs/NAME/characterization.json) instead of rendering")
    args = parser.parse_args(argv)
    rows, _profiles, suite = thesis_games.load_table()
    if args.frames < 1:
        parser.error("--frames must be at least 1")
    command = ("python scripts/measure_thesis_games.py "
               + (f"--from-study {args.from_study}" if args.from_study
                  else f"--frames {args.frames}"))
    report = {"command": command,
              "band": BAND, "workloads": {}}
    outside = []
    for key in suite:
        row = rows[key]
        path = Path(args.traces) / trace_name(row.name, *row.size)
        print(f"{row.name} ...", end="", flush=True)
        if args.from_study:
            made = Path(args.from_study) / "runs" / path.stem / "characterization.json"
            measured = json.loads(made.read_text(encoding="utf-8"))
        else:
            measured = characterize(str(path), range(args.frames))
        cols = compare(row, measured["columns"])
        report["workloads"][row.name] = {"row": key, "benchmark": row.benchmark,
                                         "size": list(row.size),
                                         "frames": measured["frames"], "columns": cols}
        bad = [k for k, c in cols.items() if c["banded"] and abs(c["error"]) > BAND]
        outside += [f"{row.name}: {k}" for k in bad]
        print(" " + ", ".join(f"{k} {c['measured']:.2f} ({c['error']:+.1%})"
                              for k, c in cols.items() if c["banded"]))
    write_json(OUT, report)
    print(f"wrote {OUT}")
    for line in outside:
        print(f"outside the band: {line}", file=sys.stderr)
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
