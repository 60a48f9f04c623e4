"""Print a study's technique averages over its thesis-regime workloads (like_*) beside Frame
Coherence's, by the benchmark set each technique was evaluated on and by 2D/3D, with what
bounds each workload (studies/thesis_comparison.py; results.json's
``thesis_comparison``).

    python scripts/thesis_comparison.py OUT/study [OUT/study2 ...] [--json] [--markdown FILE]

Several studies (say, the chapter 4-5 rows and the chapter 6 rows run apart) are compared as
one: their workloads together.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.studies.thesis_comparison import compare, markdown  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 written, 2 bad usage or input.")
    parser.add_argument("studies", nargs="+", metavar="study",
                        help="`tilesim run` folders (their results.json)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables to FILE")
    args = parser.parse_args(argv)
    workloads = []
    for study in args.studies:
        path = Path(study) / "results.json"
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{path}: cannot read a study's results ({exc})", file=sys.stderr)
            return 2
        workloads += results.get("workloads", [])
    report = compare(workloads)
    if report is None:
        print(f"{', '.join(args.studies)}: no thesis-regime workload (like_*) in these "
              "studies", file=sys.stderr)
        return 2
    text = markdown(report)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    print(json.dumps(report, indent=1) if args.json else text, end="\n" if args.json else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
