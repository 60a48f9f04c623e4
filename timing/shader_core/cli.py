"""``tilesim core``: one shader core running a TGSI program, cycle by cycle (Shader Core ch. 3).

    tilesim core PROGRAM --warps N [--config F] [--trace-cycles] [--json]
    tilesim core explore [PROGRAM...] [--warps N] [--out DIR] [--json]

PROGRAM is a ``.tgsi`` file, a corpus folder (its ``fragment.tgsi``, or ``--stage vertex``)
or a corpus program's name under ``shaders/corpus``. The warps run generated inputs (quads of
a block of pixels, smoothly varying inputs, the interpreter's procedural textures); the
interpreter records each warp's path and texel lines and the core runs them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tilesim.errors import EXIT_OK, InputError

MAX_WARPS = 1 << 20
CORPUS = Path(__file__).resolve().parent.parent.parent / "shaders" / "corpus"


def _warps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WARPS:
        raise argparse.ArgumentTypeError(f"expected a number of warps in [1, {MAX_WARPS}], "
                                         f"got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "core", help="one shader core, cycle by cycle, running a TGSI program",
        description="Run a TGSI program over N warps of generated inputs through the "
                    "cycle-level shader core of Shader Core ch. 3 (fetch, I-buffer, issue "
                    "and scoreboard, operand collector and register banks, functional "
                    "units, texture cache, writeback) and print its cycles, IPC, "
                    "occupancies, bank conflicts and time in the operand collector.")
    p.add_argument("program", metavar="PROGRAM", nargs="+",
                   help="a .tgsi file, a corpus folder, or a corpus program's name; or "
                        "'explore [PROGRAM...]': the three studies of Shader Core ch. 5 "
                        "(bank hash, warps, register-file size), plotted into --out")
    p.add_argument("--out", metavar="DIR", default="out/core-explore",
                   help="explore: folder for the plots and study.json")
    p.add_argument("--warps", type=_warps, default=256, metavar="N",
                   help="warps (quads) to run (default 256)")
    p.add_argument("--stage", choices=["fragment", "vertex"], default="fragment",
                   help="which program of a corpus folder (default fragment)")
    p.add_argument("--config", metavar="F",
                   help="shader core configuration (default: the shipped shader_core.toml)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    p.add_argument("--trace-cycles", action="store_true",
                   help="also give every instruction's cycle at each stage and the "
                        "occupancies of every cycle")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_command)


def resolve_program(name: str, stage: str = "fragment") -> Path:
    path = Path(name)
    if not path.exists() and (CORPUS / name).is_dir():
        path = CORPUS / name
    if path.is_dir():
        path = path / f"{stage}.tgsi"
    if not path.is_file():
        raise InputError("no such program (a .tgsi file, a corpus folder or a corpus "
                         "program's name)", source=name)
    return path


# explore's default programs: a spread of the corpus (a texture blit, a filtered texture,
# Phong lighting, bump mapping, branches, terrain, a blur), not yet a trace's own draws.
EXPLORE_PROGRAMS = ["glmark2-effect2d-f4ccd655",
                    "glmark2-texture-texture-filter-linear-shader-1821544b",
                    "glmark2-shading-phong-772f6c7a", "glmark2-bump-bump-render-normals-e476bf89",
                    "glmark2-conditionals-892afdc9", "glmark2-terrain-0c8e89aa",
                    "glmark2-desktop-effect-blur-blur-radius-5-separa-de3b5a93"]


def run_command(args: argparse.Namespace) -> int:
    from tilesim.timing.shader_core.config import load_core_config
    from tilesim.timing.shader_core.core import simulate
    from tilesim.timing.shader_core.workload import record_file

    cfg = load_core_config(args.config)
    if args.program[0] == "explore":
        return _explore(args, cfg)
    if len(args.program) > 1:
        raise InputError(f"one PROGRAM, got {len(args.program)} (several only with explore)")
    path = resolve_program(args.program[0], args.stage)
    workload = record_file(path, args.warps, seed=args.seed)
    trace = args.trace_cycles
    result = simulate(workload, cfg, timeline=trace,
                      trace_cycles=(1 << 20) if trace else 0)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return EXIT_OK
    occ = result.occupancy
    print(f"{result.name}: {result.warps} warps, {result.dynamic_instructions} warp "
          f"instructions (+{result.warps} end of program), {result.texture_instructions} TEX")
    print(f"cycles {result.cycles}  IPC {result.ipc:.3f}  cycles/warp "
          f"{result.cycles_per_warp:.2f}  warp latency {result.warp_latency:.1f}")
    print(f"occupancy: warps {occ['warps']:.1f}  I-buffer {occ['ibuffer']:.2f}  IS_OC "
          f"{occ['is_oc']:.2f}  CUs {occ['collector_units']:.2f}  OC_EX {occ['oc_ex']:.2f}  "
          f"registers {occ['registers']:.1f}")
    print(f"operand collector: {result.oc_cycles:.2f} cycles per instruction (lower bound "
          f"{result.oc_lower_bound:.2f}), {result.conflicts_per_cycle:.3f} conflicts per "
          f"cycle, bank reads {result.bank_reads}")
    caches = result.caches
    print(f"caches: instruction {caches['instruction']['misses']}/"
          f"{caches['instruction']['accesses']} missed, texture "
          f"{caches['texture']['misses']}/{caches['texture']['accesses']} missed")
    print(f"simulated at {result.cycles_per_second:,.0f} cycles/s"
          f"{'' if result.jit else ' (without Numba)'}")
    if trace:
        print("warp slot  pc opcode   " + " ".join(f"{n[:5]:>5s}" for n in
                                                   ("fetch", "decode", "issue", "alloc",
                                                    "read", "disp", "exec", "wb")))
        for row in result.timeline:
            print(f"{row['warp']:4d} {row['slot']:4d} {row['pc']:3d} {row['opcode']:8s} " +
                  " ".join(f"{row[k]:5d}" for k in ("fetch", "decode", "issue", "allocate",
                                                     "read", "dispatch", "execute",
                                                     "writeback")))
    return EXIT_OK


def _explore(args: argparse.Namespace, cfg) -> int:
    from tilesim.atomic import check_output, write_json
    from tilesim.timing.shader_core.explore import explore, plot

    names = args.program[1:] or [n for n in EXPLORE_PROGRAMS if (CORPUS / n).is_dir()]
    programs = [resolve_program(n, args.stage) for n in names]
    out = check_output(args.out, folder=True)
    out.mkdir(parents=True, exist_ok=True)
    study = explore(programs, cfg, warps=args.warps)
    write_json(out / "study.json", study)
    made = plot(study, out)
    if args.json:
        print(json.dumps(study, indent=1))
        return EXIT_OK
    for scheme, points in study["hash"].items():
        print(f"{scheme:10s} IPC by banks: " +
              "  ".join(f"{p['banks']}:{p['ipc']:.2f}" for p in points))
    print("IPC by warps: " + "  ".join(f"{p['warps']}:{p['ipc']:.2f}"
                                       for p in study["warps_study"]))
    print("registers in use by warps: " + "  ".join(f"{p['warps']}:{p['registers']:.0f}"
                                                    for p in study["warps_study"]))
    for total, points in study["registers_study"].items():
        print(f"{total:>5s} registers, IPC by warps: " +
              "  ".join(f"{p['warps']}:{p['ipc']:.2f}" for p in points))
    print("wrote " + ", ".join(str(m) for m in made) + f" and {out / 'study.json'}")
    return EXIT_OK
