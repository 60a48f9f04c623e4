"""Interpreter throughput over the corpus, against Mesa llvmpipe and softpipe in the same run.

For every distinct corpus fragment program, the differential test's harness prepares one set
of inputs (varyings, uniforms, textures); Mesa draws the program on a full-screen quad of
SIZE x SIZE pixels, and the interpreter runs the same program on the very same per-pixel
inputs. Throughput is lane-instructions per second: the instructions the interpreter counts
for that work (ALU + TEX + flow, per active lane), divided by each one's best wall time. The
ratios (tilesim / llvmpipe, tilesim / softpipe) are the result; absolute rates depend on the
machine. Timings are a benchmark, never a test.

``--compiled`` also times each program on the compiled path (tilesim.shaders.compiled_program,
compiled before timing; the plain interpreter then runs under ``jit.disabled()``), checks
that both give the same output bits and counters, and reports both rates.

    python benchmarks/interpreter_throughput.py [--size 256] [--repeat 3] [--json]
                                                [--compiled] [--no-mesa]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "shaders"))   # the harness moved with the shader tests

import test_differential_mesa as harness  # noqa: E402  (the shared input preparation)

from tilesim import jit  # noqa: E402
from tilesim.backend import set_backend, to_device, to_host  # noqa: E402
from tilesim.mesa import DRIVERS  # noqa: E402
from tilesim.shaders import compiled_program  # noqa: E402
from tilesim.shaders import mesa_fullscreen as mf  # noqa: E402
from tilesim.shaders.interpreter import Interpreter  # noqa: E402
from tilesim.shaders.parser import parse  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="pixels per side (default 256)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default="numpy")
    parser.add_argument("--no-mesa", action="store_true", help="skip the Mesa peers")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--compiled", action="store_true",
                        help="time the compiled path too (and check it against the interpreter)")
    args = parser.parse_args()
    xp = set_backend(args.backend)
    size = args.size
    harness.WIDTH = harness.HEIGHT = size

    prepared, errors = harness.prepare(harness.corpus_cases())
    probe_passes, main_passes, first = [], [], {}
    for p in prepared:
        first[p.case.id] = len(probe_passes)
        vertex = p.geometry.vertex_shader()
        probe_passes += [mf.Pass(vertex, fs) for fs in p.geometry.probe_shaders()]
        uniforms = {name: ("float" if v.dtype == np.float32 else "int", v.tolist())
                    for name, v in p.values.items()}
        main_passes.append(mf.Pass(vertex, mf.highp_source(p.case.fragment_glsl), uniforms,
                                   list(p.textures.values())))
    probes = mf.render(probe_passes, size, size)

    rows = []
    for p in prepared:
        count = len(p.geometry.probe_shaders())
        images = probes.images[first[p.case.id]:first[p.case.id] + count]
        program = parse(p.tgsi, source=p.case.id)
        probe = harness.Probe.from_images(p.geometry.probe_labels(), images)
        inputs, system_values = harness.fragment_inputs(program, p.interface, probe, size)
        constants = harness.constant_buffer(program, p.interface, p.values, size)
        inputs = to_device(inputs)
        system_values = {k: to_device(v) for k, v in system_values.items()}
        constants = {k: to_device(v) for k, v in constants.items()} if isinstance(
            constants, dict) else to_device(constants)
        interp = Interpreter(program)
        sampler = harness.TexelSampler(p.textures)

        def timed(interp=interp, sampler=sampler, inputs=inputs, constants=constants,
                  system_values=system_values):
            best, execution = math.inf, None
            for _ in range(args.repeat):
                start = time.perf_counter()
                execution = interp.run(inputs, constants, sampler=sampler,
                                       system_values=system_values)
                if args.backend == "cupy":
                    xp.cuda.Device().synchronize()
                best = min(best, time.perf_counter() - start)
            return best, execution

        with jit.disabled() if args.compiled else _nothing():
            best, execution = timed()
        lane_instructions = int(to_host(execution.stats.lane_instructions).sum())
        row = {"program": p.case.id, "instructions": len(program.instructions),
               "lane_instructions": lane_instructions, "tilesim_s": best}
        if args.compiled:
            compiled = compiled_program.compiled_for(interp)
            row["compiled"] = compiled is not None
            if compiled is not None:
                interp.run(inputs, constants, sampler=sampler, system_values=system_values)
                row["compiled_s"], fast = timed()
                row["identical"] = _identical(execution, fast)
        rows.append(row)

    if args.compiled:
        done = [r for r in rows if r.get("compiled")]
        summary_compiled = {
            "compiled_programs": len(done),
            "identical": all(r["identical"] for r in done),
            "compiled_lane_instructions_per_s":
                sum(r["lane_instructions"] for r in done) / sum(r["compiled_s"] for r in done),
            "interpreted_lane_instructions_per_s_same_programs":
                sum(r["lane_instructions"] for r in done) / sum(r["tilesim_s"] for r in done),
            "speedup_geomean": float(np.exp(np.mean(
                [np.log(r["tilesim_s"] / r["compiled_s"]) for r in done]))),
        }
    peers = [] if args.no_mesa else list(DRIVERS)
    for driver in peers:
        result = mf.render(main_passes, size, size, processes=1, driver=driver,
                           repeat=args.repeat)
        for row, seconds in zip(rows, result.seconds, strict=True):
            row[f"{driver}_s"] = seconds

    total = {"lane_instructions": sum(r["lane_instructions"] for r in rows),
             "tilesim_s": sum(r["tilesim_s"] for r in rows)}
    summary = {"programs": len(rows), "lanes": size * size, "backend": args.backend,
               "skipped": errors,
               "tilesim_lane_instructions_per_s":
                   total["lane_instructions"] / total["tilesim_s"]}
    for driver in peers:
        times = [r[f"{driver}_s"] for r in rows if r.get(f"{driver}_s")]
        summary[f"{driver}_lane_instructions_per_s"] = total["lane_instructions"] / sum(times)
        ratios = [r[f"{driver}_s"] / r["tilesim_s"] for r in rows if r.get(f"{driver}_s")]
        summary[f"speed_vs_{driver}_geomean"] = float(np.exp(np.mean(np.log(ratios))))
        summary[f"speed_vs_{driver}_total"] = sum(times) / total["tilesim_s"]
    if args.compiled:
        summary.update(summary_compiled)
    if args.json:
        print(json.dumps({"summary": summary, "programs": rows}, indent=2))
        return 0
    header = f"{'program':48s} {'instr':>5s} {'Mlane-instr':>11s} {'tilesim ms':>10s}"
    header += "".join(f" {d + ' ms':>12s}" for d in peers)
    print(header)
    for r in rows:
        line = (f"{r['program'][:48]:48s} {r['instructions']:5d} "
                f"{r['lane_instructions'] / 1e6:11.2f} {r['tilesim_s'] * 1e3:10.2f}")
        line += "".join(f" {(r.get(d + '_s') or math.nan) * 1e3:12.2f}" for d in peers)
        print(line)
    print(f"\n{summary['programs']} programs, {size}x{size} lanes, backend {args.backend}")
    print(f"tilesim: {summary['tilesim_lane_instructions_per_s'] / 1e6:.1f} M "
          "lane-instructions/s")
    if args.compiled:
        print(f"compiled: {summary['compiled_programs']} programs, "
              f"{summary['compiled_lane_instructions_per_s'] / 1e6:.1f} M lane-instructions/s "
              f"(interpreted, same programs: "
              f"{summary['interpreted_lane_instructions_per_s_same_programs'] / 1e6:.1f} M), "
              f"{summary['speedup_geomean']:.1f}x per program (geometric mean), "
              f"bit-identical: {summary['identical']}")
    for d in peers:
        print(f"{d}: {summary[d + '_lane_instructions_per_s'] / 1e6:.1f} M lane-instructions/s"
              f" equivalent; tilesim is {summary['speed_vs_' + d + '_total']:.2f}x its speed "
              f"in total ({summary['speed_vs_' + d + '_geomean']:.2f}x geometric mean)")
    return 0


def _nothing():
    import contextlib
    return contextlib.nullcontext()


def _identical(a, b) -> bool:
    """Same output bits, killed lanes and counters (the compiled path's promise)."""
    same = np.array_equal(to_host(a.outputs).view(np.uint32), to_host(b.outputs).view(np.uint32))
    same &= np.array_equal(to_host(a.killed), to_host(b.killed))
    for name in ("lane_instructions", "warp_instructions", "warp_active_lanes",
                 "texture_samples"):
        same &= np.array_equal(to_host(getattr(a.stats, name)), to_host(getattr(b.stats, name)))
    return bool(same)


if __name__ == "__main__":
    sys.exit(main())
