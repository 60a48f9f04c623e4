"""``tilesim shader``: compile GLSL, check and inspect TGSI."""

from __future__ import annotations

import argparse
import json
import sys

from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK
from tilesim.memory_budget import check_memory
from tilesim.options import positive_int


def register(subparsers) -> None:
    shader = subparsers.add_parser(
        "shader", help="the TGSI shader language: compile GLSL, check and inspect TGSI",
        description="Work with TGSI programs: compile GLSL ES through Mesa, run the corpus, "
                    "print statistics.")
    sub = shader.add_subparsers(dest="shader_command", metavar="COMMAND", required=True)

    p = sub.add_parser("compile", help="compile a GLSL ES 1.00 program to TGSI with Mesa",
                       description="Compile VERT and FRAG (GLSL ES 1.00) with Mesa softpipe in "
                                   "a subprocess; write vertex.tgsi, fragment.tgsi, both "
                                   "sources and interface.json to DIR.")
    p.add_argument("vertex", metavar="VERT", help="vertex shader source file")
    p.add_argument("fragment", metavar="FRAG", help="fragment shader source file")
    p.add_argument("-o", "--out", metavar="DIR", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the interface as JSON")
    p.set_defaults(func=_compile)

    p = sub.add_parser("check", help="parse and run every TGSI file under the given paths",
                       description="Parse every *.tgsi file under PATH and run it on generated "
                                   "inputs; exit 1 if any fails.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="TGSI files or folders")
    p.add_argument("--size", type=positive_int, default=32, metavar="N",
                   help="run each program over an N x N block of lanes (default 32)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    p.add_argument("--json", action="store_true", help="print per-file results as JSON")
    p.set_defaults(func=_check)

    p = sub.add_parser("stats", help="static instruction statistics of TGSI files",
                       description="Print per-program static statistics: ALU, TEX and flow "
                                   "instructions, registers, opcode histogram.")
    p.add_argument("files", nargs="+", metavar="FILE", help="TGSI files")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_stats)


def _compile(args: argparse.Namespace) -> int:
    from tilesim.shaders.glsl_compile import compile_files

    compiled = compile_files(args.vertex, args.fragment, args.out)
    if args.json:
        print(json.dumps(compiled.interface, indent=2))
    else:
        print(f"wrote {args.out}/vertex.tgsi, fragment.tgsi and interface.json")
    return EXIT_OK


# Memory one lane of a checked program takes, about: its inputs, registers and the
# interpreter's temporaries (200 bytes measured on es2gears at --size 1000; programs with more
# registers take more)
LANE_BYTES = 1024


def _check(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tilesim.shaders.check import check_file, find_tgsi

    # before any program runs: --size 100000 grew to 24 GB until the kernel killed it
    check_memory(f"running programs over {args.size}x{args.size} lanes",
                 args.size * args.size * LANE_BYTES, "--size")
    files = find_tgsi(args.paths)
    results = []
    for path in tqdm(files, desc="shader check", unit="shader", disable=None, leave=False):
        results.append(check_file(path, width=args.size, height=args.size, seed=args.seed))
    failed = [r for r in results if not r.ok]
    if args.json:
        print(json.dumps({"ok": len(results) - len(failed), "failed": len(failed),
                          "results": [r.to_dict() for r in results]}, indent=2))
    else:
        for r in failed:
            print(f"FAILED {r.error}", file=sys.stderr)
        print(f"{len(results) - len(failed)} shaders ok" +
              (f", {len(failed)} failed" if failed else ""))
    if not results:
        print("no *.tgsi files found", file=sys.stderr)
        return EXIT_FAILED_CHECK
    return EXIT_FAILED_CHECK if failed else EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    from tilesim.shaders.parser import parse_file
    from tilesim.shaders.stats import static_stats

    table = {}
    for f in args.files:
        table[f] = static_stats(parse_file(f)).to_dict()
    if args.json:
        print(json.dumps(table if len(table) > 1 else next(iter(table.values())), indent=2))
    else:
        print(f"{'file':50s} {'proc':5s} {'alu':>5s} {'tex':>5s} {'flow':>5s} {'total':>6s}")
        for f, s in table.items():
            print(f"{f[-50:]:50s} {s['processor']:5s} {s['alu']:5d} {s['tex']:5d} "
                  f"{s['flow']:5d} {s['total']:6d}")
    return EXIT_OK
