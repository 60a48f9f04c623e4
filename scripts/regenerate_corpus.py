#!/usr/bin/env python3
"""Regenerate shaders/corpus/: the TGSI and interface of every glmark2-es2 and es2gears program.

Default (fast): recompile the committed GLSL sources with Mesa softpipe and rewrite the TGSI,
interface.json files and index.json (or, with --check, only report differences).

--capture: run every glmark2 benchmark listed in shaders/corpus.py and es2gears under Xvfb with
apitrace, recover the GLSL each program linked from the traces, deduplicate, compile, and rewrite
the whole corpus. Needs xvfb-run, apitrace, glmark2-es2 (+ glmark2-data) and es2gears_x11.

Exit codes: 0 success, 1 --check found differences, 2 bad input or a missing tool.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Runs from a checkout without installation: make the repository importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, TilesimError  # noqa: E402
from tilesim.shaders import corpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--capture", action="store_true",
                        help="trace glmark2-es2 and es2gears again (minutes) instead of only "
                             "recompiling the committed GLSL (seconds)")
    parser.add_argument("--check", action="store_true",
                        help="recompile and report differences from the committed files "
                             "without writing anything")
    parser.add_argument("--corpus", type=Path, default=corpus.CORPUS_DIR,
                        help="corpus folder (default: %(default)s)")
    parser.add_argument("--benchmark", action="append", metavar="SPEC",
                        help="with --capture: only this glmark2 benchmark (repeatable); "
                             "default: the full list in shaders/corpus.py")
    parser.add_argument("--no-es2gears", action="store_true",
                        help="with --capture: skip es2gears")
    parser.add_argument("--list", action="store_true",
                        help="print the glmark2 benchmarks that --capture runs, and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(corpus.GLMARK2_BENCHMARKS))
        return EXIT_OK
    if args.capture and args.check:
        parser.error("--capture and --check exclude each other")
    if not args.capture and (args.benchmark or args.no_es2gears):
        parser.error("--benchmark and --no-es2gears need --capture")
    started = time.monotonic()
    try:
        if args.capture:
            index = corpus.capture_corpus(args.corpus, benchmarks=args.benchmark,
                                          with_es2gears=not args.no_es2gears)
            print(f"corpus: {len(index['programs'])} distinct programs written to "
                  f"{args.corpus} in {time.monotonic() - started:.1f} s")
            return EXIT_OK
        changes = corpus.recompile_corpus(args.corpus, check=args.check)
    except TilesimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for change in changes:
        print(("differs: " if args.check else "updated: ") + change)
    print(f"{len(changes)} file(s) {'differ' if args.check else 'changed'} "
          f"({time.monotonic() - started:.1f} s)")
    return EXIT_FAILED_CHECK if args.check and changes else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
