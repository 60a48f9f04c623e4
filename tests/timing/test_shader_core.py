"""The cycle-level shader core (issue 14; Shader Core §4.2 validation as tests).

The timelines below are derived by hand from the stage rules of tilesim.timing.shader_core
with the shipped shader_core.toml (instruction cache: 1-cycle hit, 2-cycle miss penalty, 4
instructions per line; ALU latency 4; texture cache 1 cycle, miss 15, filter 4; 4 banks,
warp_shift). One warp, cold caches:

* cycle 0 the warp enters; 1 it fetches two instructions (an I-cache miss: they reach the
  I-buffer at 1 + 1 + 2 = 4); decode 4; issue 5; a collector unit 6; one operand read per
  cycle from 7; dispatch the cycle after the last read; execute the next cycle; writeback
  ``latency`` cycles later; a dependent instruction issues in its producer's writeback cycle.
* the end of the program issues when the warp's last instruction has written back, and the
  warp leaves at its writeback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from repo_paths import ROOT
from tgsi_helpers import program_text

from tilesim.cli.core import CORPUS
from tilesim.errors import InputError
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse
from tilesim.timing.shader_core.config import SHADER_CORE_TOML, load_core_config
from tilesim.timing.shader_core.core import simulate
from tilesim.timing.shader_core.throughput import program_throughput
from tilesim.timing.shader_core.warp_paths import from_trace, record, record_file

CFG = load_core_config()
STAGES = ("fetch", "decode", "issue", "allocate", "read", "dispatch", "execute", "writeback")


def timeline(body, inputs, *, n_inputs=2, cfg=CFG, extra=None):
    program = parse(program_text(body, inputs=n_inputs, extra=extra))
    x = np.asarray(inputs, dtype=np.float32)
    result = simulate(record(program, x, None, lanes=x.shape[-1]), cfg, timeline=True)
    return result, [(r["warp"], r["opcode"], [r[s] for s in STAGES]) for r in result.timeline]


ONE_WARP = np.ones((2, 4, 4))


@pytest.mark.slow
def test_dependency_chain():
    result, rows = timeline(["MOV TEMP[0], IN[0]", "ADD TEMP[1], TEMP[0], IN[0]"], ONE_WARP)
    assert rows == [
        (0, "MOV", [1, 4, 5, 6, 7, 8, 9, 13]),
        # RAW on TEMP[0]: issues in the MOV's writeback cycle; two operands, two reads
        (0, "ADD", [1, 4, 13, 14, 16, 17, 18, 22]),
        # fetched when the I-buffer empties (cycle 13, an I-cache hit); held until the ADD
        # has written back; no operand: dispatched the cycle after its CU
        (0, "EOP", [13, 14, 22, 23, 23, 24, 25, 26])]
    assert result.cycles == 27
    assert result.ipc == pytest.approx(3 / 27)


@pytest.mark.slow
def test_independent_instructions_issue_back_to_back():
    _, rows = timeline(["MOV TEMP[0], IN[0]", "MOV TEMP[1], IN[1]"], ONE_WARP)
    assert rows == [
        (0, "MOV", [1, 4, 5, 6, 7, 8, 9, 13]),
        (0, "MOV", [1, 4, 6, 7, 8, 9, 10, 14]),       # no wait for the first's result
        (0, "EOP", [6, 7, 14, 15, 15, 16, 17, 18])]


def test_bank_conflict_delays_the_younger_read():
    # Warp 0's registers: IN[0] = 0 (bank 0), IN[1] = 1 (bank 1). The ADD reads bank 0 at 7
    # (the wavefront's priority diagonal) and bank 1 at 8; the MOV, allocated at 7, also wants
    # bank 1 at 8: one conflict (002 §4.2.6), its read moves to 9.
    conflict, rows = timeline(["ADD TEMP[0], IN[0], IN[1]", "MOV TEMP[1], IN[1]"], ONE_WARP)
    assert rows[0] == (0, "ADD", [1, 4, 5, 6, 8, 9, 10, 14])
    assert rows[1] == (0, "MOV", [1, 4, 6, 7, 9, 10, 11, 15])
    # the same MOV reading bank 0 instead: no conflict, read at 8
    free, rows = timeline(["ADD TEMP[0], IN[0], IN[1]", "MOV TEMP[1], IN[0]"], ONE_WARP)
    assert rows[1] == (0, "MOV", [1, 4, 6, 7, 8, 9, 10, 14])
    # 3 cycles with requests (7, 8, 9), one conflict
    assert conflict.conflicts_per_cycle == pytest.approx(1 / 3)
    assert free.conflicts_per_cycle == 0
    assert conflict.oc_cycles > free.oc_cycles


def texture_workload(body, lines_per_call):
    program = parse(program_text(body, inputs=1, extra=["DCL SAMP[0]", "DCL SVIEW[0], 2D, FLOAT"]))
    execution = Interpreter(program).run(np.ones((1, 4, 4), np.float32), record_trace=True)
    pcs, masks = execution.trace
    calls = [(np.arange(4), np.full(4, line)) for line in lines_per_call]
    return from_trace(program, pcs, masks, calls)


def test_texture_miss_then_a_hit_on_the_line_in_flight():
    body = ["TEX TEMP[0], IN[0], SAMP[0], 2D", "TEX TEMP[1], IN[0], SAMP[0], 2D",
            "ADD OUT[0], TEMP[0], TEMP[1]"]
    result = simulate(texture_workload(body, [7, 7]), CFG, timeline=True)
    rows = [[r[s] for s in STAGES] for r in result.timeline]
    # miss: sent at 9, the line is there at 9 + 1 + 15 = 25, filtered by 29
    assert rows[0] == [1, 4, 5, 6, 7, 8, 9, 29]
    # the same line, sent at 10 while it is being filled: there at 25 too, filtered by 29;
    # the memory write port is taken at 29, so it writes back at 30
    assert rows[1] == [1, 4, 6, 7, 8, 9, 10, 30]
    assert rows[2][2] == 30                      # the ADD waits for both
    assert result.caches["texture"] == {"accesses": 2, "misses": 1}


def test_texture_hit_latency():
    body = ["TEX TEMP[0], IN[0], SAMP[0], 2D", "MOV OUT[0], TEMP[0]"]
    rows = simulate(texture_workload(body, [3]), CFG, timeline=True).timeline
    assert rows[0]["writeback"] - rows[0]["execute"] == 1 + 15 + 4
    # a line already in the cache: cache latency + filter
    warm = CFG.replace(**{"texture.miss_latency": 1})
    rows = simulate(texture_workload(body, [3]), warm, timeline=True).timeline
    assert rows[0]["writeback"] - rows[0]["execute"] == 1 + 1 + 4


def test_divergent_branch_paths_and_fetch_waits_for_branches():
    body = ["IF IN[0].xxxx", "MOV TEMP[0], IN[0]", "ELSE", "MOV TEMP[0], -IN[0]", "ENDIF",
            "MOV OUT[0], TEMP[0]"]
    lanes = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0], dtype=np.float32)
    result, rows = timeline(body, np.broadcast_to(lanes, (1, 4, 12)).copy(), n_inputs=1)
    paths = {w: [op for ww, op, _ in rows if ww == w] for w in range(3)}
    assert paths[0] == ["IF", "MOV", "ELSE", "ENDIF", "MOV", "EOP"]         # then only
    assert paths[1] == ["IF", "ELSE", "MOV", "ENDIF", "MOV", "EOP"]         # else only
    assert paths[2] == ["IF", "MOV", "ELSE", "MOV", "ENDIF", "MOV", "EOP"]  # both
    assert result.dynamic_instructions == result.interpreter_instructions == 5 + 5 + 6
    for w in range(3):
        stamps = [s for ww, _, s in rows if ww == w]
        ops = paths[w]
        for k, op in enumerate(ops[:-1]):
            if op in ("IF", "ELSE"):   # the next instruction is fetched once it executed
                assert stamps[k + 1][0] >= stamps[k][7]
    # warp 0's timeline, by hand: IF fetched at 1 and written back at 10; MOV and ELSE
    # fetched at 10 (ELSE may jump: the fetch stops there), ENDIF at ELSE's writeback 17
    assert [s[0] for _, _, s in rows[:4]] == [1, 10, 10, 17]


def test_fetch_without_waiting_for_branches_is_faster():
    body = ["IF IN[0].xxxx", "MOV TEMP[0], IN[0]", "ENDIF", "MOV OUT[0], TEMP[0]"]
    x = np.ones((1, 4, 16))
    waiting, _ = timeline(body, x, n_inputs=1)
    eager, _ = timeline(body, x, n_inputs=1, cfg=CFG.replace(**{"fetch.wait_for_branches": 0}))
    assert eager.cycles < waiting.cycles


PROGRAMS = ["glmark2-effect2d-f4ccd655", "glmark2-conditionals-892afdc9",
            "glmark2-loop-vertex-steps-5-fragment-steps-5-fra-94ae5c81",
            "glmark2-terrain-0c8e89aa", "glmark2-bump-bump-render-normals-e476bf89"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_program_invariants(name):
    """002 §4.2.2-4.2.7: instructions counted at every stage agree, dynamic counts equal the
    interpreter's, IPC within the issue width, occupancies within the buffers, OC time at
    least Eq. 4.1's bound."""
    workload = record_file(CORPUS / name, 48)
    r = simulate(workload, CFG)
    assert r.dynamic_instructions == r.interpreter_instructions == workload.dynamic_instructions
    counts = r.counts
    assert counts["entered_warps"] == counts["retired_warps"] == 48
    assert len({counts[k] for k in ("fetched", "decoded", "issued", "allocated", "dispatched",
                                    "executed", "written_back")}) == 1
    assert counts["issued"] == r.dynamic_instructions + 48
    assert 0 < r.ipc <= CFG["issue.width"]
    occ, lim = r.occupancy, r.limits
    assert occ["max_is_oc"] <= lim["is_oc"] and occ["max_oc_ex"] <= lim["oc_ex"]
    assert occ["max_collector_units"] <= lim["collector_units"]
    assert occ["max_ibuffer"] <= lim["ibuffer"]
    assert occ["registers"] <= lim["registers"]
    assert r.oc_cycles >= r.oc_lower_bound - 1e-9
    assert sum(r.bank_reads) > 0


def test_register_file_bounds_the_warps_in_flight():
    workload = record_file(CORPUS / PROGRAMS[1], 64)
    need = workload.registers_per_warp
    small = CFG.replace(**{"registers.total": 2 * need})
    r = simulate(workload, small)
    assert r.occupancy["registers"] <= 2 * need
    assert r.occupancy["warps"] <= 2
    assert r.cycles > simulate(record_file(CORPUS / PROGRAMS[1], 64), CFG).cycles
    with pytest.raises(InputError, match="registers"):
        simulate(workload, CFG.replace(**{"registers.total": need - 1}))


def test_bank_hashes_balance_reads():
    workload = record_file(CORPUS / PROGRAMS[2], 64)
    shift = simulate(workload, CFG).bank_reads
    assert max(shift) - min(shift) <= 0.1 * max(shift)      # 002 Fig. 5.2: near 100% balanced


def test_config_has_a_source_for_every_value_and_rejects_bad_files(tmp_path):
    assert all(s.strip() for s in CFG.sources.values())
    assert CFG["issue.width"] == 2 and CFG["operand_collector.collector_units"] == 16
    bad = tmp_path / "core.toml"
    text = SHADER_CORE_TOML.read_text()
    bad.write_text(text.replace('value = "warp_shift"', 'value = "modulo"'))
    with pytest.raises(InputError, match="bank_hash"):
        load_core_config(bad)
    bad.write_text(text + '\n[extra]\nx = { value = 1, unit = "count", source = "me" }\n')
    with pytest.raises(InputError, match="unknown"):
        load_core_config(bad)
    # the GPU configuration given for it: the first few keys, not 38 of them in one line
    from tilesim.timing.config import BASELINE_GPU

    with pytest.raises(InputError, match=r"missing key\(s\): execute.alu_latency, .* and 33 "
                                         r"more \(expected every key of shader_core.toml\)$"):
        load_core_config(BASELINE_GPU)
    bad.write_text(text.replace('{ value = 25, unit = "instructions"',
                                '{ value = 0, unit = "instructions"'))
    with pytest.raises(InputError, match="must be in"):
        load_core_config(bad)



def test_config_bounds_the_structures_the_core_builds(tmp_path, monkeypatch):
    """16M collector units passed the generic 2^24 bound and ran `tilesim core` for hours
    (Ctrl-C unheard in the compiled loop); the warps' instruction buffers are sized before
    they are allocated."""
    from tilesim.memory_budget import BUDGET_ENV

    bad = tmp_path / "core.toml"
    text = SHADER_CORE_TOML.read_text()
    bad.write_text(text.replace('collector_units = { value = 16,',
                                'collector_units = { value = 16777216,'))
    with pytest.raises(InputError, match=r"operand_collector.collector_units.value: must be "
                                         r"in \[1, 65536\], got 16777216") as info:
        load_core_config(bad)
    assert info.value.source == str(bad)
    # sizes in bytes and registers keep the large bound
    bad.write_text(text.replace('total = { value = 8000,', 'total = { value = 16777216,'))
    assert load_core_config(bad)["registers.total"] == 1 << 24
    # 65536 warps x 65536 instruction-buffer slots: 96 GiB of state, refused naming the file
    bad.write_text(text.replace('max_warps = { value = 32,', 'max_warps = { value = 65536,')
                   .replace('slots = { value = 2,', 'slots = { value = 65536,'))
    monkeypatch.setenv(BUDGET_ENV, "8G")
    with pytest.raises(InputError, match="warp slots and cache lines needs about 96.0 GiB"):
        load_core_config(bad)

def test_throughput_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    first = program_throughput(CORPUS / PROGRAMS[0], CFG, warps=32)
    assert first["cycles_per_instruction"] > 0 and first["cycles_per_tex"] > 0
    assert (tmp_path / "shader_core_throughput.json").exists()
    again = program_throughput(CORPUS / PROGRAMS[0], CFG, warps=32)
    assert again == first


def test_without_numba_the_same_cycles():
    """The loop in plain Python (TILESIM_JIT=0) gives the compiled loop's timeline."""
    code = ("import json; from tilesim.timing.shader_core.config import load_core_config;"
            "from tilesim.timing.shader_core.core import simulate;"
            "from tilesim.timing.shader_core.warp_paths import record_file;"
            f"r = simulate(record_file({str(CORPUS / PROGRAMS[1])!r}, 6), load_core_config(),"
            " timeline=True); print(json.dumps([r.cycles, r.timeline]))")
    env = {**os.environ, "TILESIM_JIT": "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    cycles, rows = json.loads(done.stdout)
    compiled = simulate(record_file(CORPUS / PROGRAMS[1], 6), CFG, timeline=True)
    assert cycles == compiled.cycles and rows == compiled.timeline


# --- the cycle loop in slices (Ctrl-C is heard between them) --------------------------------

def _without_wall_clock(result) -> dict:
    out = result.to_dict()
    del out["simulated_seconds"], out["cycles_per_second"]
    return out


def test_a_sliced_run_is_the_unsliced_run_bit_for_bit():
    """The compiled loop runs in slices of cycles, each resumed from the state the last left
    (Python sees Ctrl-C only between them); the slices change nothing: cycles, counts,
    occupancies, every instruction's stamps and every cycle's occupancies."""
    from tilesim.timing.shader_core.core import UNSLICED

    workload = record_file(CORPUS / PROGRAMS[1], 24)
    whole = simulate(workload, CFG, timeline=True, trace_cycles=1 << 12,
                     slice_cycles=UNSLICED)
    assert whole.cycles > 100 and whole.timeline and whole.cycle_trace
    for slice_cycles in (1, 7, 64, None):
        sliced = simulate(workload, CFG, timeline=True, trace_cycles=1 << 12,
                          slice_cycles=slice_cycles)
        assert _without_wall_clock(sliced) == _without_wall_clock(whole), slice_cycles


@pytest.mark.parametrize("stall_limit", [2, 5, 8])
def test_the_deadlock_watch_carries_across_slices(stall_limit):
    """The cycles without a move are counted across slices: a small stall limit stops a
    sliced run at the unsliced run's cycle (a count restarted per slice never would)."""
    from tilesim.timing.shader_core.core import UNSLICED, _warm_up, run_sliced
    from tilesim.timing.shader_core.state import S_CYCLE, S_ERROR, make_state

    _warm_up(CFG)
    workload = record_file(CORPUS / PROGRAMS[0], 1)
    ends = set()
    for slice_cycles in (UNSLICED, 1, 2, 3, None):
        st = make_state(CFG.params, workload)
        run_sliced(st, stall_limit, slice_cycles)
        ends.add((int(st.sc[S_CYCLE]), int(st.sc[S_ERROR])))
    assert len(ends) == 1 and ends.pop()[1] == 1


# Run in a child: prints a line as the cycle loop's first slice starts, so that the test
# knows the process is inside the compiled loop when it sends Ctrl-C.
_MARKED_CORE = """
import sys
from tilesim.timing.shader_core import core

loop = core.run_cycles
said = []

def marked(st, stall_limit, max_cycles):
    if max_cycles < core.UNSLICED and not said:
        said.append(1)
        print("in the loop", flush=True)
    return loop(st, stall_limit, max_cycles)

core.run_cycles = marked
from tilesim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_ctrl_c_ends_a_long_core_run_at_once_in_one_line(tmp_path):
    """A 65536-slot core runs ~4000 cycles/s: 20000 warps kept the compiled loop busy ~17 s,
    and Ctrl-C was heard only when it returned. Now it ends the run within a slice (~0.1 s)
    plus Python's exit: one line, exit 130."""
    import signal
    import time

    slow = tmp_path / "slow.toml"
    slow.write_text(SHADER_CORE_TOML.read_text().replace("max_warps = { value = 32,",
                                                         "max_warps = { value = 65536,"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _MARKED_CORE, "core", PROGRAMS[0], "--warps", "20000",
         "--config", str(slow)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # as from a terminal: a shell without job control hands children SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline() == "in the loop\n", proc.stderr.read()
        time.sleep(1.0)
        assert proc.poll() is None, "the run ended before the signal"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert (proc.returncode, stderr, stdout) == (130, "tilesim: interrupted\n", "")
    assert took < 4, took


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tilesim.cli", "core", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_json_help_and_errors(tmp_path):
    done = run_cli(PROGRAMS[0], "--warps", "8", "--json", "--trace-cycles")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["warps"] == 8 and len(out["timeline"]) == out["instructions"]
    assert len(out["cycle_trace"]["issued"]) == out["cycles"]
    assert run_cli("--help").returncode == 0
    for args in (["nope"], [PROGRAMS[0], "--warps", "0"], [PROGRAMS[0], "--config",
                                                           str(tmp_path / "missing.toml")]):
        done = run_cli(*args)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert "error" in lines[-1] and "Traceback" not in done.stderr
        if "usage" not in done.stderr:          # argparse prints its usage first
            assert len(lines) == 1


@pytest.mark.slow
def test_explore_studies_and_plots(tmp_path):
    from tilesim.timing.shader_core.explore import explore, plot

    study = explore([CORPUS / PROGRAMS[3]], CFG, warps=64)
    ipc = [p["ipc"] for p in study["warps_study"]]
    assert ipc[0] < ipc[-1] <= CFG["issue.width"]                 # more warps, more IPC
    regs = [p["registers"] for p in study["warps_study"]]
    assert regs == sorted(regs)                                    # 002 Fig. 5.4
    assert all(p["ipc"] <= 2 for points in study["hash"].values() for p in points)
    made = plot(study, tmp_path)
    assert all(m.stat().st_size > 0 for m in made)


# --- a trace's draws: the frame's own fragments and texel lines (tilesim.studies.core_draws) ---

RUNNER = ROOT / "traces" / "runner-1196x768.tsim"


@pytest.mark.slow
def test_a_frames_draws_run_what_the_renderer_shaded():
    """Every draw of a frame, all its quads: the core's dynamic instructions are the warp
    instructions the renderer counted for the frame, and textured draws carry the cache lines
    tilesim's texture sampler really read (not the nominal texture's)."""
    from tilesim.render.replay import render_trace
    from tilesim.studies.core_draws import frame_workloads
    from tilesim.timing.shader_core.warp_paths import UNIT_SPAN

    size = (160, 96)
    pairs = frame_workloads(RUNNER, 1, size=size)
    counters = list(render_trace(RUNNER, frames=[1], size=size))[-1].counters
    counted = sum(counters.total(f"fs_quad_{k}") for k in ("alu", "tex", "flow"))
    assert sum(w.dynamic_instructions for _, w in pairs) == counted > 0
    assert sum(c.quads_total for c, _ in pairs) == counters.total("quads_shaded")
    assert [c.index for c, _ in pairs] == sorted(c.index for c, _ in pairs)
    textured = [w for _, w in pairs if w.s_tex_count.sum()]
    assert textured
    # real texture addresses: byte addresses of tilesim's texture objects, below the nominal
    # textures' span (which starts unit 1 at UNIT_SPAN bytes)
    lines = np.concatenate([w.tex_lines for w in textured])
    assert lines.size and not np.isin(lines, np.arange(UNIT_SPAN // 64, 2 * UNIT_SPAN // 64)).all()
    for _, workload in pairs[:5]:
        result = simulate(workload, CFG)
        assert result.dynamic_instructions == workload.interpreter_instructions
        assert 0 < result.ipc <= CFG["issue.width"]
    # at most N warps per draw
    capped = frame_workloads(RUNNER, 1, size=size, max_warps=4)
    assert all(w.warps <= 4 for _, w in capped) and len(capped) == len(pairs)


@pytest.mark.slow
def test_core_cli_on_a_trace_frame(tmp_path):
    done = run_cli(str(RUNNER), "--frame", "1", "--size", "160x96", "--warps", "16",
                   "--draw", "0,1", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [d["draw"] for d in out["draws"]] == [0, 1]
    assert out["cycles"] == sum(d["cycles"] for d in out["draws"])
    for args in ([str(RUNNER), "--frame", "100"], [str(RUNNER), "--draw", "9999"],
                 [PROGRAMS[0], "--frame", "1"], [str(tmp_path / "none.tsim")]):
        done = run_cli(*args)
        assert done.returncode == 2, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    done = run_cli("explore", str(RUNNER), "--frame", "1", "--size", "160x96", "--warps",
                   "16", "--out", str(tmp_path / "study"), "--json")
    assert done.returncode == 0, done.stderr
    study = json.loads(done.stdout)
    assert all("draw" in name for name in study["programs"])
    assert (tmp_path / "study" / "warps.png").stat().st_size > 0
