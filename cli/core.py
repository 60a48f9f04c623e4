"""``tilesim core``: one shader core running a TGSI program, cycle by cycle (Shader Core ch. 3).

    tilesim core PROGRAM --warps N [--config F] [--trace-cycles] [--json]
    tilesim core X.tsim --frame N [--draw K,...] [--warps N] [--json]
    tilesim core explore [PROGRAM... | X.tsim --frame N] [--warps N] [--out DIR] [--json]

PROGRAM is a ``.tgsi`` file, a corpus folder (its ``fragment.tgsi``, or ``--stage vertex``)
or a corpus program's name under ``shaders/corpus``: its warps run generated inputs (quads of
a block of pixels, smoothly varying inputs, the interpreter's procedural textures). A
``.tsim`` trace runs the fragment programs of frame N's draws on the quads each draw really
shaded, with the cache lines its texture instructions really read
(``tilesim.studies.core_draws``). The interpreter records each warp's path and texel lines
and the core (``tilesim.timing.shader_core``) runs them. A study: it renders and times.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tilesim.errors import EXIT_OK, InputError
from tilesim.options import window_size_argument

MAX_WARPS = 1 << 20
CORPUS = Path(__file__).resolve().parents[1] / "shaders" / "corpus"


def _warps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WARPS:
        raise argparse.ArgumentTypeError(f"expected a number of warps in [1, {MAX_WARPS}], "
                                         f"got {text!r}")
    return value


def _draw_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected draw numbers like 0,3,5, got {text!r}")
    return values


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "core", help="one shader core, cycle by cycle, running a TGSI program",
        description="Run a TGSI program over N warps of generated inputs through the "
                    "cycle-level shader core of Shader Core ch. 3 (fetch, I-buffer, issue "
                    "and scoreboard, operand collector and register banks, functional "
                    "units, texture cache, writeback) and print its cycles, IPC, "
                    "occupancies, bank conflicts and time in the operand collector.")
    p.add_argument("program", metavar="PROGRAM", nargs="+",
                   help="a .tgsi file, a corpus folder, a corpus program's name, or a .tsim "
                        "trace (with --frame: its draws' real fragments); or 'explore "
                        "[PROGRAM...]': the three studies of Shader Core ch. 5 (bank hash, "
                        "warps, register-file size), plotted into --out")
    p.add_argument("--out", metavar="DIR", default="out/core-explore",
                   help="explore: folder for the plots and study.json")
    p.add_argument("--warps", type=_warps, default=256, metavar="N",
                   help="warps (quads) to run (default 256); a trace: at most N per draw")
    p.add_argument("--frame", type=int, default=None, metavar="N",
                   help="a trace: the frame whose draws run (default 0)")
    p.add_argument("--draw", type=_draw_list, default=None, metavar="K,...",
                   help="a trace: only these draws of the frame (0-based; default every "
                        "draw that shaded fragments)")
    p.add_argument("--size", type=window_size_argument(), metavar="WxH",
                   help="a trace: render window size instead of the trace's own")
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
    from tilesim.timing.shader_core.warp_paths import record_file

    cfg = load_core_config(args.config)
    if args.program[0] == "explore":
        return _explore(args, cfg)
    if len(args.program) > 1:
        raise InputError(f"one PROGRAM, got {len(args.program)} (several only with explore)")
    if _is_trace(args.program[0]):
        return _trace_draws(args, cfg)
    _trace_options_unused(args)
    path = resolve_program(args.program[0], args.stage)
    workload = record_file(path, args.warps, seed=args.seed)
    trace = args.trace_cycles
    result = simulate(workload, cfg, timeline=trace,
                      trace_cycles=(1 << 20) if trace else 0)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return EXIT_OK
    _print_result(result, trace)
    return EXIT_OK


def _is_trace(name: str) -> bool:
    return name.endswith(".tsim")


def _trace_options_unused(args: argparse.Namespace) -> None:
    for option, value in (("--frame", args.frame), ("--draw", args.draw), ("--size", args.size)):
        if value is not None:
            raise InputError(f"{option} applies to a .tsim trace only",
                             source="tilesim core")


def _frame_workloads(args: argparse.Namespace, trace: str):
    from tilesim.studies.core_draws import frame_workloads

    if not Path(trace).is_file():
        raise InputError("no such trace file", source=trace)
    frame = 0 if args.frame is None else args.frame
    return frame, frame_workloads(trace, frame, size=args.size, max_warps=args.warps,
                                  draws=args.draw)


def _trace_draws(args: argparse.Namespace, cfg) -> int:
    """Every draw of the frame through the core: per draw figures and the frame's sums."""
    from tilesim.timing.shader_core.core import simulate

    trace = args.program[0]
    frame, pairs = _frame_workloads(args, trace)
    if not pairs:
        raise InputError(f"frame {frame} shaded no fragments with a color output",
                         source=trace)
    rows, cycles, instructions = [], 0, 0
    for captured, workload in pairs:
        result = simulate(workload, cfg)
        cycles += result.cycles
        instructions += result.instructions
        rows.append({"draw": captured.index, "program": captured.program,
                     "quads_shaded": captured.quads_total} | result.to_dict())
    summary = {"trace": trace, "frame": frame, "draws": rows, "cycles": cycles,
               "instructions": instructions, "ipc": instructions / cycles if cycles else 0.0}
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    print(f"{trace} frame {frame}: {len(rows)} draws, {cycles} cycles, IPC "
          f"{summary['ipc']:.3f} (at most {args.warps} warps per draw)")
    print(" draw prog  quads  warps  cycles   IPC  cyc/warp  tex miss/acc  OC cyc/instr")
    for row in rows:
        tex = row["caches"]["texture"]
        print(f"{row['draw']:5d} {row['program']:4d} {row['quads_shaded']:6d} "
              f"{row['warps']:6d} {row['cycles']:7d} {row['ipc']:5.2f} "
              f"{row['cycles_per_warp']:9.2f} {tex['misses']:5d}/{tex['accesses']:<6d} "
              f"{row['oc_cycles']:8.2f}")
    return EXIT_OK


def _print_result(result, trace: bool) -> None:
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


def _explore(args: argparse.Namespace, cfg) -> int:
    from tilesim.atomic import check_output, write_json
    from tilesim.timing.shader_core.explore import explore, plot

    names = args.program[1:] or [n for n in EXPLORE_PROGRAMS if (CORPUS / n).is_dir()]
    traces = [n for n in names if _is_trace(n)]
    if traces:
        if len(names) > 1:
            raise InputError("explore runs one trace's frame, or corpus programs, not both")
        _, pairs = _frame_workloads(args, traces[0])
        programs = [workload for _, workload in pairs]
        if not programs:
            raise InputError("the frame shaded no fragments with a color output",
                             source=traces[0])
    else:
        _trace_options_unused(args)
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
