"""Interpreter throughput over the corpus, against Mesa llvmpipe and softpipe in the same run.

For every distinct corpus fragment program, the differential test's harness prepares one set
of inputs (varyings, uniforms, textures); Mesa draws the program on a full-screen quad of
SIZE x SIZE pixels, and the interpreter runs the same program on the very same per-pixel
inputs. Throughput is lane-instructions per second: the instructions the interpreter counts
for that work (ALU + TEX + flow, per active lane), divided by each one's best wall time. The
ratios (tilesim / llvmpipe, tilesim / softpipe) are the result; absolute rates depend on the
machine. Timings are a benchmark, never a test.

    python benchmarks/interpreter_throughput.py [--size 256] [--repeat 3] [--json]
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

import test_differential_mesa as harness  # noqa: E402  (the shared input preparation)

from tilesim.backend import set_backend, to_device, to_host  # noqa: E402
from tilesim.mesa import DRIVERS  # noqa: E402
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
        best = math.inf
        for _ in range(args.repeat):
            start = time.perf_counter()
            execution = interp.run(inputs, constants, sampler=sampler,
                                   system_values=system_values)
            if args.backend == "cupy":
                xp.cuda.Device().synchronize()
            best = min(best, time.perf_counter() - start)
        lane_instructions = int(to_host(execution.stats.lane_instructions).sum())
        rows.append({"program": p.case.id, "instructions": len(program.instructions),
                     "lane_instructions": lane_instructions, "tilesim_s": best})

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
    for d in peers:
        print(f"{d}: {summary[d + '_lane_instructions_per_s'] / 1e6:.1f} M lane-instructions/s"
              f" equivalent; tilesim is {summary['speed_vs_' + d + '_total']:.2f}x its speed "
              f"in total ({summary['speed_vs_' + d + '_geomean']:.2f}x geometric mean)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
