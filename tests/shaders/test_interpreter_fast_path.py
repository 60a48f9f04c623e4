"""The interpreter's fast path (decoded float32 ALU instructions reading register views) computes
bit for bit what its general path (``fetch`` / ``store``) computes: registers, statistics, trace.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from cupy_emulation import use_emulated_cupy
from tgsi_helpers import program_text, run

from tilesim import backend
from tilesim.shaders.interpreter import Interpreter, _handler
from tilesim.shaders.parser import parse

DECLS = ["DCL OUT[1], GENERIC[0]", "DCL CONST[0][0..7]", "DCL CONST[1][0]",
         "IMM[0] FLT32 {0.5, -1.0, 2.0, 0.0}", "IMM[1] UINT32 {0, 1, 3, 10}"]

PROGRAMS = {
    # A register read as a view while it is written: only safe views may be used.
    "aliasing": ["MOV TEMP[0], IN[0]", "MOV TEMP[0].yz, TEMP[0].xxyy",
                 "MOV TEMP[0].xy, TEMP[0].yzzz", "MOV TEMP[0].zw, TEMP[0].zwzw",
                 "MOV TEMP[0], TEMP[0].wzyx", "MOV TEMP[0].yw, TEMP[0].xxyy",
                 "ADD TEMP[0].yw, TEMP[0].xxxx, TEMP[0].yyww",
                 "MOV OUT[0], TEMP[0]", "MOV OUT[1].xzw, TEMP[0].yxwz"],
    # Replicated channels (one broadcast row), modifiers, saturate, constants, immediates.
    "broadcast": ["MUL TEMP[1], IN[0].xxxx, IN[1].yyyy",
                  "ADD TEMP[1].xz, TEMP[1].xxxx, -IN[1].wwww",
                  "MAD_SAT OUT[0], |TEMP[1]|, CONST[0][1].zzzz, IMM[0]",
                  "LRP OUT[1].yw, IMM[0].xxxx, CONST[0][0].yxwz, -|IN[2]|",
                  "RCP TEMP[2].yz, -IN[2].wxyz", "POW OUT[1].xz, TEMP[2].yyyy, IMM[0].zzzz",
                  "MOV_SAT TEMP[3], IN[0].zzzz", "ADD OUT[0].w, TEMP[3], TEMP[2]"],
    # Dot products: swizzled, replicated, uniform-only, into partial write masks.
    "dot": ["DP3 TEMP[3].y, CONST[0][0].zyxw, IN[0]", "DP4 OUT[1].xw, CONST[0][0], CONST[0][1]",
            "DP2 TEMP[3].xz, TEMP[3].yyyy, -IN[1]", "DP4_SAT OUT[0], TEMP[3], IN[2].wzyx"],
    # Constants beyond the buffer given (2 rows), a missing buffer, integer kinds, conversions.
    "integer": ["MOV TEMP[0], CONST[0][7]", "ADD OUT[0], TEMP[0], CONST[1][0].xyyy",
                "UADD TEMP[1], IN[0], -IN[1]", "IMAX TEMP[2], |IN[0]|, -IN[1].yxwz",
                "F2I TEMP[3].xy, IN[2]", "I2F OUT[1], TEMP[3].xyyx", "INEG OUT[1].z, IN[1]",
                "FSLT TEMP[0].yw, IN[0], IN[1]", "AND TEMP[1].x, TEMP[0].yyyy, IMM[1].zzzz",
                "USHR TEMP[2].z, TEMP[1].xxxx, IMM[1].yyyy", "U2F OUT[0].xyw, TEMP[2].zzxy"],
    # Divergent lanes: stores under a partial exec mask.
    "divergent": ["FSLT TEMP[2].x, IMM[0].wwww, IN[0].xxxx", "UIF TEMP[2].xxxx",
                  "MUL TEMP[0], IN[0], IN[1].xxxx", "MOV TEMP[1].yw, TEMP[0].xxyy",
                  "ELSE", "DP3 TEMP[0].xz, IN[1], IN[2]", "MOV TEMP[1], -IN[2].wzyx",
                  "ENDIF", "ADD OUT[0], TEMP[0], TEMP[1]", "MAD OUT[1].xz, TEMP[0], IN[1], IMM[0]"],
}


def _general_only(interp: Interpreter) -> Interpreter:
    """``interp`` with every instruction sent to the general path."""
    plans = []
    for plan in interp.plans:
        if not plan.flow:
            plan = replace(plan, sources=None, handler=_handler(plan.inst.opcode, plan.info, False))
        plans.append(plan)
    interp.plans = plans
    return interp


def _inputs(lanes: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    values = rng.normal(0, 4, (3, 4, lanes)).astype(np.float32)
    every_7th = values.reshape(-1)[::7]   # a view: special values here and there
    every_7th[:] = np.resize(np.float32([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, 3e38]),
                             every_7th.size)
    return values


def _run(interp: Interpreter, xp=np):
    constants = xp.asarray(np.float32([[1.5, -2.0, 0.25, 3.0], [-0.5, 4.0, 0.75, -1.0]]))
    execution = interp.run(xp.asarray(_inputs(12)), constants, record_trace=True)
    stats = execution.stats
    return [backend.to_host(a) for a in (
        execution.outputs.view(np.uint32), execution.killed, stats.lane_instructions,
        stats.warp_instructions, stats.warp_active_lanes, stats.texture_samples,
        *execution.trace)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fast_path_matches_the_general_path(name):
    program = parse(program_text(PROGRAMS[name], inputs=3, extra=DECLS))
    fast = Interpreter(program)
    assert any(plan.sources is not None for plan in fast.plans)
    general = _general_only(Interpreter(program))
    for got, expected in zip(_run(fast), _run(general), strict=True):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fast_path_is_identical_on_the_cupy_path(name):
    interp = Interpreter(parse(program_text(PROGRAMS[name], inputs=3, extra=DECLS)))
    host = _run(interp)
    with use_emulated_cupy() as cp:
        device = _run(interp, cp)
    for got, expected in zip(device, host, strict=True):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("copy, expected", [
    ("MOV TEMP[0].yz, TEMP[0].xxyy", [1.0, 1.0, 2.0, 4.0]),   # y <- x, z <- the old y
    ("MOV TEMP[0].yw, TEMP[0].xxyy", [1.0, 1.0, 3.0, 2.0]),   # y <- x, w <- the old y
])
def test_a_register_copied_onto_itself_reads_the_old_channels(copy, expected):
    out, _ = run(["MOV TEMP[0], IN[0]", copy, "MOV OUT[0], TEMP[0]"],
                 [[1.0], [2.0], [3.0], [4.0]])
    np.testing.assert_array_equal(out[:, 0], expected)
