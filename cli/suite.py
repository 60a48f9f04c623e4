"""``tilesim suite``: glmark2-es2 and es2gears captured, imported, rendered, compared."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tilesim.atomic import write_json
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK
from tilesim.options import first_frames_argument, window_size_argument
from tilesim.thresholds import SUITE_MIN_MSSIM


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "suite", help="capture, import, render and compare the glmark2-es2/es2gears suite",
        description="Run the real-workload suite: every entry is captured with apitrace, "
                    "imported, rendered by tilesim and compared per frame with Mesa's "
                    f"reference; an entry passes with MSSIM >= {SUITE_MIN_MSSIM} on every "
                    "frame. Needs apitrace, Xvfb, glmark2-es2 and Mesa.")
    p.add_argument("--work", default="out/suite", metavar="DIR",
                   help="folder for captures, imports and images (reused by reruns)")
    p.add_argument("--frames", type=first_frames_argument(), default=":20", metavar=":N",
                   help="frames of each entry: :N, the first N (default %(default)s)")
    p.add_argument("--size", type=window_size_argument(), default="800x600", metavar="WxH",
                   help="window size of the glmark2 entries (default %(default)s)")
    p.add_argument("--only", nargs="+", metavar="SPEC", help="run only these specs")
    p.add_argument("--driver", choices=("softpipe", "llvmpipe"), default="softpipe",
                   help="Mesa driver of the reference")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=_suite)


def _suite(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tilesim.studies.suite import SUITE, run_entry

    width, height = args.size
    work = Path(args.work)
    specs = args.only or list(SUITE)
    results = []
    for spec in tqdm(specs, desc="suite", unit="entry", disable=None):
        try:
            results.append(run_entry(spec, work, frames=args.frames, size=(width, height),
                                     driver=args.driver))
        except Exception as exc:  # an entry that cannot run is a failed entry, with why
            results.append({"spec": spec, "passed": False,
                            "error": f"{type(exc).__name__}: {exc}"})
    write_json(work / "suite.json", {"min_mssim": SUITE_MIN_MSSIM, "results": results})
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'entry':52s} {'frames':>6s} {'min MSSIM':>9s} {'mean':>8s}  result")
        for r in results:
            if "error" in r:
                print(f"{r['spec'][:52]:52s} {'':6s} {'':9s} {'':8s}  ERROR {r['error']}",
                      file=sys.stdout)
                continue
            low, mean = (("probes", "") if r["min_mssim"] is None else
                         (f"{r['min_mssim']:.5f}", f"{r['mean_mssim']:.5f}"))
            print(f"{r['spec'][:52]:52s} {r['frames']:6d} {low:>9s} {mean:>8s}  "
                  f"{'PASS' if r['passed'] else 'FAIL'}")
        print(f"{sum(r['passed'] for r in results)}/{len(results)} entries pass")
    return EXIT_OK if all(r["passed"] for r in results) else EXIT_FAILED_CHECK
