"""``tilesim goldens``: check, update and add golden frames."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tilesim.atomic import check_output
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError, ToolMissing
from tilesim.options import default_workers, positive_int
from tilesim.studies.defaults import DEFAULT_TECHNIQUES, MANIFEST_HELP
from tilesim.thresholds import DSR_MIN_MSSIM, GOLDEN_ACCEPT_MSSIM

if TYPE_CHECKING:
    from tilesim.studies.goldens import Manifest


def register(subparsers) -> None:
    p = subparsers.add_parser("goldens", help="check or remake golden frames",
                              description="Golden frames of .tsim traces, listed in a manifest "
                                          "anywhere on disk (tilesim's own by default): 'check' "
                                          "re-renders them (bit-exact; with --technique, "
                                          "with frame-coherence techniques), 'update' remakes "
                                          "them on purpose after accepting each against "
                                          "Mesa (or, with --no-mesa, as tilesim renders them "
                                          "now), 'add' registers new ones. A manifest that "
                                          "lists no goldens is an error (exit 2).")
    sub = p.add_subparsers(dest="goldens_command", metavar="COMMAND", required=True)
    c = sub.add_parser("check", help="re-render every golden and compare bit for bit",
                       description="Re-render every golden at baseline and compare it bit for "
                                   "bit; with --technique or --all-techniques, render each "
                                   "golden's trace (from its first frame) with each technique "
                                   "and require lossless ones (te, re, evr, re+evr, memo) to "
                                   "be bit-identical and the others (dsr, memo/32, re/xor) "
                                   f"to keep MSSIM >= {DSR_MIN_MSSIM}. Exit 1 when a check "
                                   "fails.")
    which = c.add_mutually_exclusive_group()
    which.add_argument("--technique", action="append", metavar="T",
                       help="check the goldens rendered with technique T (te, re, evr, "
                            "re+evr, dsr, memo, memo/32, re/xor, ...); repeat for several")
    which.add_argument("--all-techniques", action="store_true",
                       help="baseline and every technique of `tilesim coherence` "
                            f"({', '.join(DEFAULT_TECHNIQUES)})")
    c.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="with techniques: render the (trace, technique) pairs on a local Dask "
                        "cluster of N processes (default: the CPU count, capped by the "
                        "pairs; 1: one after the other)")
    c.add_argument("--manifest", metavar="FILE", help=MANIFEST_HELP)
    c.add_argument("--results", metavar="DIR",
                   help="write each failed check's obtained, expected and difference images "
                        "and an index.html summary to DIR")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=_check)
    u = sub.add_parser("update", help="remake every golden (tilesim, accepted against Mesa)",
                       description="Render every golden of the manifest again and write its "
                                   "PNG, after accepting it against Mesa llvmpipe (MSSIM >= "
                                   f"{GOLDEN_ACCEPT_MSSIM}; needs Mesa); exit 1 when one is "
                                   "refused (its PNG is left as it was).")
    u.add_argument("--manifest", metavar="FILE", help=MANIFEST_HELP)
    u.add_argument("--no-mesa", action="store_true",
                   help="no acceptance against Mesa: the goldens are what tilesim renders now "
                        "(regression goldens)")
    u.set_defaults(func=_update)
    a = sub.add_parser("add", help="register goldens: TRACE:FRAME[,FRAME...] (then update)",
                       description="Register frames of traces (anywhere on disk) as goldens "
                                   "of the manifest, creating it when it does not exist; "
                                   "'tilesim goldens update' then makes their PNGs.")
    a.add_argument("specs", nargs="+", metavar="TRACE:FRAMES",
                   help="a .tsim trace and frame numbers, e.g. traces/spin.tsim:0,5 (golden "
                        "names: the trace's stem and the frame, spin-0005)")
    a.add_argument("--manifest", metavar="FILE", help=MANIFEST_HELP)
    a.set_defaults(func=_add)


def _open(args: argparse.Namespace, *, write: bool = False) -> Manifest:
    """The command's manifest, with at least one golden (InputError otherwise: a check of
    nothing must not pass); ``write``: checked as an output first."""
    from tilesim.studies.goldens import default_manifest, open_manifest

    path = default_manifest() if args.manifest is None else Path(args.manifest)
    if write:
        check_output(path, folder=False)
    manifest = open_manifest(path)
    if not manifest.goldens:
        raise InputError("the manifest lists no goldens (add some with 'tilesim goldens add')",
                         source=str(manifest.path))
    return manifest


def _check(args: argparse.Namespace) -> int:
    from tilesim.studies.goldens import check_techniques

    manifest = _open(args)
    goldens, folder = manifest.goldens, manifest.folder
    results = None if args.results is None else check_output(args.results, folder=True)
    if args.technique or args.all_techniques:
        return _check_techniques(args, manifest, results)
    rows = check_techniques(goldens, ["baseline"], folder=folder, root=manifest.root,
                            results=results)
    by_name = {g.name: g for g in goldens}
    failures = [(by_name[r["golden"]], r) for r in rows if not r["passed"]]
    if args.json:
        print(json.dumps({"goldens": len(goldens),
                          "failed": [{"name": g.name, "pixels": r["pixels"]}
                                     for g, r in failures]}))
    else:
        for g, r in failures:
            # a golden of another size: "768 pixels differ" counted the frame's every pixel
            what = ("the frame's size differs from the golden" if r["max_diff"] is None
                    else f"{r['pixels']} pixels differ from")
            print(f"FAILED {g.name}: {what} {folder / g.png}", file=sys.stderr)
        print(f"{len(goldens) - len(failures)} of {len(goldens)} goldens identical")
    if failures:
        _point_to_results(results)
    return EXIT_FAILED_CHECK if failures else EXIT_OK


def _point_to_results(results: Path | None) -> None:
    print(f"obtained and difference images: {results / 'index.html'}" if results is not None
          else "(--results DIR writes the obtained and difference images)", file=sys.stderr)


def _check_techniques(args: argparse.Namespace, manifest: Manifest,
                      results: Path | None) -> int:
    from tilesim.studies.goldens import check_techniques, technique_names

    goldens = manifest.goldens
    names = (["baseline", *DEFAULT_TECHNIQUES] if args.all_techniques
             else technique_names(args.technique))   # unknown names: exit 2 before rendering
    rows = check_techniques(goldens, names, folder=manifest.folder, root=manifest.root,
                            results=results, workers=args.workers or default_workers(),
                            progress=True)
    failed = [r for r in rows if not r["passed"]]
    summary = {"checks": len(rows), "passed": len(rows) - len(failed), "failed": len(failed),
               "techniques": names, "goldens": len(goldens), "mssim_floor": DSR_MIN_MSSIM}
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
    else:
        _print_rows(rows)
        print(f"{summary['passed']} of {len(rows)} checks passed ({len(names)} techniques, "
              f"{len(goldens)} goldens)")
    if failed:
        print("goldens check failed: " + ", ".join(f"{r['technique']} {r['golden']}"
                                                   for r in failed), file=sys.stderr)
        _point_to_results(results)
        return EXIT_FAILED_CHECK
    return EXIT_OK


def _print_rows(rows: list[dict]) -> None:
    table = [("technique", "golden", "frame", "identical", "MSSIM", "max diff", "check",
              "result")]
    for r in rows:
        table.append((r["technique"], r["golden"], str(r["frame"]),
                      "yes" if r["bit_identical"] else "no",
                      "-" if r["mssim"] is None else f"{r['mssim']:.6f}",
                      "-" if r["max_diff"] is None else str(r["max_diff"]),
                      r["criterion"], "pass" if r["passed"] else "FAIL"))
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    for row in table:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
              .rstrip())


def _update(args: argparse.Namespace) -> int:
    from tilesim.studies.goldens import update

    manifest = _open(args, write=True)
    for path in (manifest.folder / g.png for g in manifest.goldens):
        check_output(path, folder=False)   # before any rendering
    try:
        _, refused = update(manifest.goldens, folder=manifest.folder, root=manifest.root,
                            mesa=not args.no_mesa)
    except ToolMissing as exc:   # met at the first trace, before any PNG is written
        raise ToolMissing(f"{exc} (--no-mesa makes the goldens without Mesa's "
                          "acceptance)") from None
    manifest.save()
    for line in refused:
        print(f"REFUSED {line}", file=sys.stderr)
    return EXIT_FAILED_CHECK if refused else EXIT_OK


def _add(args: argparse.Namespace) -> int:
    from tilesim.studies.goldens import default_manifest, open_manifest

    path = default_manifest(create=True) if args.manifest is None else Path(args.manifest)
    check_output(path, folder=False)
    manifest = open_manifest(path, create=True)
    for spec in args.specs:
        trace, _, frames = spec.rpartition(":")
        if not trace or not frames:
            raise InputError(f"expected TRACE:FRAME[,FRAME...], got {spec!r}")
        numbers = []
        for text in frames.split(","):
            try:
                numbers.append(int(text))
            except ValueError:
                raise InputError(f"frame {text!r} is not a number", source=spec) from None
        manifest.register(trace, numbers)
    manifest.save()
    print(f"{len(manifest.goldens)} goldens registered in {manifest.path}; run 'tilesim "
          f"goldens update' to make them")
    return EXIT_OK
