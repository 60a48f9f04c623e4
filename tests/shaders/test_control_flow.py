"""Structured control flow with per-lane execution masks, kill, and dynamic statistics."""

from __future__ import annotations

import numpy as np
import pytest
from tgsi_helpers import program_text, run

from tilesim.errors import InputError
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse

IMM = ["IMM[0] FLT32 {0.5, 1.0, 2.0, 0.0}", "IMM[1] UINT32 {0, 1, 3, 10}"]


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_if_else_takes_each_lanes_own_branch():
    body = ["IF IN[0].xxxx", "MOV OUT[0], IMM[0].yyyy", "ELSE", "MOV OUT[0], IMM[0].zzzz",
            "ENDIF"]
    out, ex = run(body, [1.0, 0.0, -0.0, 3.0, 0.0, 0.0, 0.0, 0.0], extra=IMM)
    same(out[0], [1.0, 2.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    # Warp 0 diverges (both branches issue); warp 1 takes only ELSE, so its IF-side MOV is not
    # issued: it executes IF, ELSE, MOV, ENDIF. Lanes execute IF, ELSE, one MOV, ENDIF.
    warp = ex.stats.warp_instructions.sum(axis=0)
    same(warp, [5, 4])
    lane = ex.stats.lane_instructions.sum(axis=0)
    same(lane, [4, 4, 4, 4, 4, 4, 4, 4])


def test_uif_tests_bits_not_float_value():
    body = ["UIF IN[0].xxxx", "MOV OUT[0], IMM[0].yyyy", "ENDIF"]
    out, _ = run(body, np.array([0, 0x80000000, 1, 0], np.uint32).view(np.float32), extra=IMM)
    same(out[0], [0.0, 1.0, 1.0, 0.0])  # -0.0 has bits set: UIF takes it


def test_nested_if_restores_masks():
    body = ["IF IN[0].xxxx", "IF IN[1].xxxx", "MOV OUT[0].x, IMM[0].yyyy", "ELSE",
            "MOV OUT[0].x, IMM[0].zzzz", "ENDIF", "ADD OUT[0].y, OUT[0].xxxx, IMM[0].yyyy",
            "ENDIF", "MOV OUT[0].z, IMM[0].xxxx"]
    out, _ = run(body, [1, 1, 0, 0], [1, 0, 1, 0], extra=IMM)
    same(out[0], [1, 2, 0, 0])
    same(out[1], [2, 3, 0, 0])
    same(out[2], [0.5] * 4)


def test_loop_with_per_lane_trip_counts_brk_and_cont():
    # TEMP[0].x counts iterations until it reaches IN[0].x; odd counters skip the add via CONT.
    body = [
        "MOV TEMP[0], IMM[0].wwww",
        "BGNLOOP",
        "FSGE TEMP[1].x, TEMP[0].xxxx, IN[0].xxxx",
        "UIF TEMP[1].xxxx", "BRK", "ENDIF",
        "ADD TEMP[0].x, TEMP[0].xxxx, IMM[0].yyyy",
        "FRC TEMP[2].x, TEMP[0].xxxx", "MUL TEMP[2].x, TEMP[0].xxxx, IMM[0].xxxx",
        "FRC TEMP[2].x, TEMP[2].xxxx",
        "FSNE TEMP[1].x, TEMP[2].xxxx, IMM[0].wwww",
        "UIF TEMP[1].xxxx", "CONT", "ENDIF",
        "ADD TEMP[0].y, TEMP[0].yyyy, IMM[0].yyyy",
        "ENDLOOP",
        "MOV OUT[0], TEMP[0]",
    ]
    out, ex = run(body, [0.0, 1.0, 4.0, 7.0], extra=IMM)
    same(out[0], [0, 1, 4, 7])      # iterations
    same(out[1], [0, 0, 2, 3])      # even counters only
    per_lane = ex.stats.lane_instructions.sum(axis=0)
    assert per_lane[0] < per_lane[1] < per_lane[2] < per_lane[3]


def test_runaway_loop_is_an_error_naming_the_line():
    body = ["BGNLOOP", "ADD TEMP[0].x, TEMP[0].xxxx, IMM[0].yyyy", "ENDLOOP", "MOV OUT[0], TEMP[0]"]
    with pytest.raises(InputError, match="did not finish"):
        run(body, [0.0], extra=IMM)


def test_subroutine_call_and_return():
    body = ["CAL :4", "MOV OUT[0].y, IMM[0].zzzz", "END", "NOP",
            "BGNSUB", "IF IN[0].xxxx", "MOV OUT[0].x, IMM[0].yyyy", "RET", "ENDIF",
            "MOV OUT[0].x, IMM[0].xxxx", "RET", "ENDSUB"]
    program = parse(program_text(body, extra=IMM))
    inputs = np.stack([np.repeat(np.float32([[1, 0]]), 4, 0)]).view(np.uint32)
    out = Interpreter(program).run(inputs).outputs[0]
    same(out[0], [1.0, 0.5])
    same(out[1], [2.0, 2.0])


def test_kill_if_marks_lanes_and_a_fully_killed_warp_stops():
    body = ["KILL_IF IN[0]", "MOV OUT[0], IMM[0].yyyy"]
    out, ex = run(body, [-1, 1, 1, 1, -1, -1, -1, -1], extra=IMM)
    same(ex.killed, [True, False, False, False, True, True, True, True])
    same(out[0], [1, 1, 1, 1, 0, 0, 0, 0])  # warp 0 goes on (helper lane), warp 1 stopped
    same(ex.stats.warp_instructions.sum(axis=0), [2, 1])


def test_unbalanced_flow_is_a_load_error_with_its_line():
    for body, message in ((["ENDIF"], "ENDIF without"), (["IF IN[0].xxxx"], "never closed"),
                          (["BRK"], "outside a loop"), (["ELSE"], "ELSE without IF")):
        with pytest.raises(InputError, match=message) as info:
            run(body, [0.0], extra=IMM)
        assert info.value.line is not None


def test_execution_is_deterministic():
    body = ["SIN TEMP[0].x, IN[0].xxxx", "TEX TEMP[1], IN[0], SAMP[0], 2D",
            "MAD OUT[0], TEMP[1], TEMP[0].xxxx, IN[1]"]
    rng = np.random.default_rng(3)
    a, b = rng.random((2, 4, 64), dtype=np.float32)
    first, ex1 = run(body, a, b, extra=["DCL SAMP[0]"])
    second, ex2 = run(body, a, b, extra=["DCL SAMP[0]"])
    assert first.tobytes() == second.tobytes()
    assert ex1.stats.lane_instructions.tobytes() == ex2.stats.lane_instructions.tobytes()


def test_trace_records_active_lanes_per_warp_per_instruction():
    body = ["IF IN[0].xxxx", "MOV OUT[0], IMM[0].yyyy", "ENDIF"]
    _, ex = run(body, [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], extra=IMM, record_trace=True)
    pcs, masks = ex.trace
    same(pcs, [0, 1, 2])
    same(masks, [[4, 4], [3, 0], [4, 4]])  # IF, MOV, ENDIF


# --- limits: no hang, no runaway memory (issue 12) ------------------------------------------

NESTED_LOOPS = [  # an outer and an inner loop of 60,000 iterations each: 3.6e9 steps
    "MOV TEMP[0].x, IMM[0].wwww", "BGNLOOP", "ADD TEMP[0].x, TEMP[0].xxxx, IMM[0].yyyy",
    "MOV TEMP[1].x, IMM[0].wwww", "BGNLOOP", "ADD TEMP[1].x, TEMP[1].xxxx, IMM[0].yyyy",
    "FSGE TEMP[1].y, TEMP[1].xxxx, IMM[2].xxxx", "UIF TEMP[1].yyyy", "BRK", "ENDIF", "ENDLOOP",
    "FSGE TEMP[0].y, TEMP[0].xxxx, IMM[2].xxxx", "UIF TEMP[0].yyyy", "BRK", "ENDIF", "ENDLOOP",
    "MOV OUT[0], TEMP[0]"]


def test_nested_loops_stop_at_the_instruction_budget():
    program = parse(program_text(NESTED_LOOPS, extra=IMM + ["IMM[2] FLT32 {60000, 0, 0, 0}"]))
    with pytest.raises(InputError, match="more than 5000 instructions in one invocation"):
        Interpreter(program, instruction_budget=5000).run(np.zeros((3, 4, 4), np.float32))


def test_the_budget_counts_instructions_not_loop_iterations():
    # 100 x 100 iterations of a 12-instruction body: within the default budget, past 10,000.
    body = [line.replace("IMM[2]", "IMM[3]") for line in NESTED_LOOPS]
    text = program_text(body, extra=IMM + ["IMM[2] FLT32 {0, 0, 0, 0}",
                                           "IMM[3] FLT32 {100, 0, 0, 0}"])
    out = Interpreter(parse(text)).run(np.zeros((3, 4, 4), np.float32)).outputs
    same(out[0, 0], [100.0] * 4)
    with pytest.raises(InputError, match="instruction budget"):
        Interpreter(parse(text), instruction_budget=10_000).run(np.zeros((3, 4, 4), np.float32))


def test_recursion_stops_at_the_call_depth_with_its_line():
    text = ("FRAG\nDCL OUT[0], COLOR\nDCL TEMP[0]\n  0: CAL :2\n  1: END\n  2: BGNSUB\n"
            "  3:   CAL :2\n  4: ENDSUB\n")
    with pytest.raises(InputError, match="nested deeper than 64") as info:
        Interpreter(parse(text)).run(lanes=4)
    assert info.value.line == 7


def test_the_limits_of_a_run_come_from_tilesim_options(monkeypatch):
    # tilesim --instruction-budget / --call-depth put them in the environment for the run's
    # processes; an Interpreter made without explicit limits takes them.
    program = parse(program_text(NESTED_LOOPS, extra=IMM + ["IMM[2] FLT32 {60000, 0, 0, 0}"]))
    monkeypatch.setenv("TILESIM_INSTRUCTION_BUDGET", "3000")
    with pytest.raises(InputError, match="more than 3000 instructions"):
        Interpreter(program).run(np.zeros((3, 4, 4), np.float32))
    recursion = parse("FRAG\nDCL OUT[0], COLOR\nDCL TEMP[0]\n  0: CAL :2\n  1: END\n"
                      "  2: BGNSUB\n  3:   CAL :2\n  4: ENDSUB\n")
    monkeypatch.setenv("TILESIM_CALL_DEPTH", "3")
    with pytest.raises(InputError, match="nested deeper than 3"):
        Interpreter(recursion).run(lanes=4)
    monkeypatch.setenv("TILESIM_CALL_DEPTH", "none")
    with pytest.raises(InputError, match="TILESIM_CALL_DEPTH: expected a positive integer"):
        Interpreter(recursion)


def test_cli_limit_options_reach_the_interpreter(tmp_path, monkeypatch, capsys):
    from tilesim.cli import main

    for name in ("TILESIM_INSTRUCTION_BUDGET", "TILESIM_CALL_DEPTH"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "loops.tgsi"
    path.write_text(program_text(NESTED_LOOPS, extra=IMM + ["IMM[2] FLT32 {60, 0, 0, 0}"]))
    assert main(["shader", "check", "--size", "2", str(path)]) == 0        # 3,600 iterations
    assert main(["--instruction-budget", "2000", "shader", "check", "--size", "2",
                 str(path)]) == 1
    assert "more than 2000 instructions" in capsys.readouterr().err
