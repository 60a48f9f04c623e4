"""Fuzzing the TGSI front end and interpreter (issue 12): random programs with structured
control flow, loops that may never end, calls that may recurse, and register indices in and
out of their declarations. Each must parse and run, or stop with a positioned InputError,
within its instruction budget: no hang, no traceback, no runaway memory."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.errors import TilesimError
from tilesim.shaders.interpreter import MAX_CALL_DEPTH, Interpreter
from tilesim.shaders.parser import parse

BUDGET = 20_000
HEADER = ["FRAG", "DCL IN[0..1], GENERIC[0], PERSPECTIVE", "DCL OUT[0], COLOR",
          "DCL CONST[0][0..1]", "DCL TEMP[0..3]",
          "IMM[0] FLT32 {    0.5000,     1.0000,     2.0000,    -1.0000}"]
SLOWEST = [0.0]

# Declared registers; ``program`` then puts an index out of range in some of them.
LAST = {"TEMP": 3, "IN": 1, "CONST": 1, "IMM": 0}
swizzle = st.sampled_from(["", ".xxxx", ".yzwx", ".x", ".wzyx"])


@st.composite
def source(draw) -> str:
    file = draw(st.sampled_from(["TEMP", "TEMP", "IN", "CONST", "IMM"]))
    i = draw(st.integers(0, LAST[file]))
    reg = f"CONST[0][{i}]" if file == "CONST" else f"{file}[{i}]"
    reg += draw(swizzle)
    modifier = draw(st.sampled_from(["", "", "-", "|", "-|"]))
    return f"{modifier}{reg}|" if "|" in modifier else modifier + reg


@st.composite
def dest(draw) -> str:
    if draw(st.booleans()):
        return "OUT[0]"
    return f"TEMP[{draw(st.integers(0, 3))}]" + draw(st.sampled_from(["", ".x", ".xy", ".w"]))


@st.composite
def alu(draw) -> list[str]:
    op, arity = draw(st.sampled_from([("MOV", 1), ("ADD", 2), ("MUL", 2), ("MAD", 3),
                                      ("FLR", 1), ("FRC", 1), ("MIN", 2), ("MAX", 2),
                                      ("DP3", 2), ("SLT", 2), ("FSGE", 2), ("RCP", 1)]))
    sat = "_SAT" if draw(st.booleans()) and op not in ("FSGE",) else ""
    args = ", ".join([draw(dest())] + [draw(source()) for _ in range(arity)])
    return [f"{op}{sat} {args}"]


def block(depth: int):
    statement = alu() if depth >= 3 else st.one_of(
        alu(), alu(), if_else(depth + 1), loop(depth + 1),
        st.sampled_from([["CAL :SUB"], ["RET"], ["KILL_IF " + "IN[0].xxxx"]]))
    return st.lists(statement, min_size=1, max_size=4).map(lambda parts: sum(parts, []))


@st.composite
def if_else(draw, depth: int) -> list[str]:
    lines = [f"IF {draw(source())}"] + draw(block(depth))
    if draw(st.booleans()):
        lines += ["ELSE"] + draw(block(depth))
    return lines + ["ENDIF"]


@st.composite
def loop(draw, depth: int) -> list[str]:
    body = draw(block(depth))
    exit_ = draw(st.sampled_from([[], ["BRK"], [f"IF {draw(source())}", "BRK", "ENDIF"],
                                  ["CONT"]]))
    at = draw(st.integers(0, len(body)))
    return ["BGNLOOP"] + body[:at] + exit_ + body[at:] + ["ENDLOOP"]


@st.composite
def program(draw) -> str:
    main = draw(block(0))
    sub = draw(block(1))
    lines = main + ["END"]
    sub_at = len(lines)
    lines += ["BGNSUB"] + sub + ["RET", "ENDSUB"]
    numbered = [f"{n:3d}: {text.replace(':SUB', f':{sub_at}')}" for n, text in enumerate(lines)]
    if draw(st.integers(0, 3)) == 0:   # a quarter: one operand out of its declaration
        at = draw(st.integers(0, len(numbered) - 1))
        bad = draw(st.sampled_from([-1, -7, 4, 9, 4096, 99999999]))
        numbered[at] = re.sub(r"(?<=[A-Z]\[)\d+(?=\])", str(bad), numbered[at], count=1)
    return "\n".join(HEADER + numbered) + "\n"


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=program())
def test_random_programs_run_or_stop_with_a_positioned_error(text):
    started = time.perf_counter()
    try:
        prog = parse(text, source="fuzz.tgsi")
        rng = np.random.default_rng(0)
        inputs = rng.uniform(-2, 2, (2, 4, 8)).astype(np.float32)
        constants = rng.uniform(-2, 2, (2, 4)).astype(np.float32)
        result = Interpreter(prog, instruction_budget=BUDGET).run(inputs, constants)
        assert result.outputs.shape == (1, 4, 8)
    except TilesimError as err:
        assert err.source == "fuzz.tgsi" and err.line is not None, str(err)
    elapsed = time.perf_counter() - started
    SLOWEST[0] = max(SLOWEST[0], elapsed)
    # The budget bounds every case: 20,000 issued instructions of 8 lanes take well under a
    # minute even on a loaded machine (a hang would run for hours).
    assert elapsed < 60, f"{elapsed:.1f} s for:\n{text}"


def test_recursion_and_endless_loops_are_among_the_cases():
    # The generator reaches the two hazards it is for: a self-call and a loop with no exit.
    text = "\n".join(HEADER + ["  0: CAL :2", "  1: END", "  2: BGNSUB", "  3: CAL :2",
                               "  4: RET", "  5: ENDSUB"]) + "\n"
    try:
        Interpreter(parse(text, "r.tgsi"), instruction_budget=BUDGET).run(lanes=4)
    except TilesimError as err:
        assert f"deeper than {MAX_CALL_DEPTH}" in str(err)
    else:
        raise AssertionError("recursion ran to completion")
    endless = "\n".join(HEADER + ["  0: BGNLOOP", "  1: ADD TEMP[0], TEMP[0], IMM[0]",
                                  "  2: ENDLOOP", "  3: END"]) + "\n"
    try:
        Interpreter(parse(endless, "l.tgsi"), instruction_budget=BUDGET).run(lanes=4)
    except TilesimError as err:
        assert "instruction budget" in str(err) or "did not finish" in str(err)
    else:
        raise AssertionError("an endless loop ran to completion")
