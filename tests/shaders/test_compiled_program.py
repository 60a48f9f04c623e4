"""Compiled TGSI programs (tilesim.shaders.compiled_program) against the interpreter: the same
output bits, killed lanes and every DynamicStats counter, on the whole corpus in fp32 and
fp16 modes and on hand-made programs for what the corpus lacks (divergent IF/ELSE, loops with
BRK and CONT, KILL inside flow, derivatives, integer opcodes, NaN / inf / denormal inputs).
The interpreter is the reference: each run is repeated under ``jit.disabled()``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from repo_paths import CORPUS
from tgsi_helpers import program_text

from tilesim import jit
from tilesim.errors import InputError
from tilesim.shaders import compiled_program as cp
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse, parse_file
from tilesim.shaders.synthetic_inputs import generate, load_interface

# Slow as a module: every test compiles programs with Numba (seconds each in a fresh cache).
pytestmark = [pytest.mark.skipif(not jit.AVAILABLE, reason="needs Numba (TILESIM_JIT on)"),
              pytest.mark.slow]

STATS = ("lane_instructions", "warp_instructions", "warp_active_lanes", "texture_samples")


@pytest.fixture(autouse=True)
def every_instruction_in_kernels(monkeypatch):
    """Kernels even for single instructions between texture lookups (which the renderer
    leaves to the interpreter, ``KERNEL_MINIMUM``): the generated code is what is proven."""
    monkeypatch.setattr(cp, "KERNEL_MINIMUM", 1)


def assert_same(interp: Interpreter, *args, **kwargs):
    """Run compiled (forced) and interpreted; every result bit and counter equal. Returns the
    compiled Execution."""
    compiled = cp.compiled_for(interp)
    assert compiled is not None, cp.fallback_reason(interp)
    got = compiled.run(interp, *args, **kwargs)
    assert got is not None
    with jit.disabled():
        want = interp.run(*args[:2], lanes=args[2], sampler=args[3], system_values=args[4])
    np.testing.assert_array_equal(got.outputs.view(np.uint32), want.outputs.view(np.uint32))
    np.testing.assert_array_equal(got.killed, want.killed)
    for name in STATS:
        a, b = getattr(got.stats, name), getattr(want.stats, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    return got


def run_both(body, *inputs, extra=None, constants=None, sampler=None, mediump="fp32",
             precision=None, temps=4, lanes=None):
    program = parse(program_text(body, inputs=max(len(inputs), 1), extra=extra, temps=temps))
    if precision is not None:
        precision = precision + ["----"] * (len(program.instructions) - len(precision))
    interp = Interpreter(program, mediump=mediump, precision=precision)
    regs = np.stack([np.asarray(v, dtype=np.float32).view(np.uint32) for v in inputs])
    from tilesim.shaders.sampling import ProceduralSampler
    return assert_same(interp, regs, constants, lanes or regs.shape[-1],
                       sampler or ProceduralSampler(), {})


def lanes4(rng, n, scale=2.0):
    return (rng.standard_normal((4, n)) * scale).astype(np.float32)


IMM = ["IMM[0] FLT32 {0.5, 1.0, 2.0, 0.0}", "IMM[1] UINT32 {0, 1, 3, 10}",
       "IMM[2] FLT32 {-1.0, 3.0, 0.25, 8.0}"]


# -- the corpus ------------------------------------------------------------------------


def corpus_programs():
    return sorted(Path(CORPUS).rglob("*.tgsi"))


# Every 25th corpus program: compiling all 170 takes about 10 minutes a mode in a fresh
# cache. The whole corpus, both modes, is checked by
# ``python benchmarks/interpreter_throughput.py --compiled --no-mesa`` (170 of 170 in each
# when it was written: docs/notes/compiled-programs.md).
def sampled_corpus():
    return corpus_programs()[::25]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fp32", "fp16"])
def test_corpus_programs_compile_and_match_the_interpreter(mode):
    """All corpus programs, 16x16 generated fragments (32x8 lanes for vertex programs) with the
    procedural sampler; fp16 with each program's precision from interface.json."""
    from tilesim.shaders.sampling import ProceduralSampler

    fallbacks, native, total = {}, 0, 0
    assert len(corpus_programs()) >= 170
    paths = sampled_corpus()
    for path in paths:
        program = parse_file(path)
        interface = load_interface(path)
        precision = None
        if mode == "fp16" and interface and "precision" in interface:
            stage = "vertex" if program.processor == "VERT" else "fragment"
            precision = interface["precision"][stage]["instructions"]
        interp = Interpreter(program, precision=precision, mediump=mode)
        compiled = cp.compiled_for(interp)
        if compiled is None:
            fallbacks[str(path)] = cp.fallback_reason(interp)
            continue
        native += compiled.native
        total += compiled.total
        g = generate(program, width=16, height=16, interface=interface)
        assert_same(interp, g.inputs, g.constants, g.lanes, ProceduralSampler(),
                    g.system_values)
    print(f"\n{mode}: {len(paths) - len(fallbacks)} of {len(paths)} programs compiled, "
          f"{native} of {total} instructions native; fallbacks: {fallbacks}")
    assert not fallbacks


# -- control flow, kill, derivatives -----------------------------------------------------


# The hand-made programs as (body, inputs, run_both keywords), each built with its own seed;
# the CUDA target's tests run the same (tests/cuda_program_checks.py).


def divergent_if_else_and_nested_ifs():
    rng = np.random.default_rng(1)
    body = ["IF IN[0].xxxx", "ADD TEMP[0], IN[1], IMM[0].yyyy",
            "IF IN[0].yyyy", "MUL OUT[0].xy, TEMP[0], IN[1]", "ELSE",
            "MOV OUT[0].zw, -|IN[1].yxzw|", "ENDIF",
            "ELSE", "MAD OUT[0], IN[1], IMM[0].zzzz, IMM[2]", "ENDIF",
            "MOV_SAT OUT[0].y, OUT[0].xxxx"]
    a = np.where(rng.random((4, 64)) < 0.5, 0.0, 1.0).astype(np.float32)
    return body, [a, lanes4(rng, 64)], {"extra": IMM}


def loops_with_brk_and_cont():
    # TEMP[0].x counts to IN[0].x; odd counts skip the accumulation through CONT.
    body = ["MOV TEMP[0], IMM[0].wwww", "MOV TEMP[3], IMM[0].wwww",
            "BGNLOOP",
            "FSGE TEMP[1].x, TEMP[0].xxxx, IN[0].xxxx",
            "UIF TEMP[1].xxxx", "BRK", "ENDIF",
            "ADD TEMP[0].x, TEMP[0].xxxx, IMM[0].yyyy",
            "MUL TEMP[2].x, TEMP[0].xxxx, IMM[0].xxxx", "FRC TEMP[2].x, TEMP[2].xxxx",
            "FSNE TEMP[1].x, TEMP[2].xxxx, IMM[0].wwww",
            "UIF TEMP[1].xxxx", "CONT", "ENDIF",
            "ADD TEMP[3].x, TEMP[3].xxxx, IN[1].xxxx",
            "ENDLOOP",
            "MOV OUT[0], TEMP[3].xxxx", "MOV OUT[0].y, TEMP[0].xxxx"]
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 9, (4, 64)).astype(np.float32)
    return body, [counts, lanes4(rng, 64)], {"extra": IMM}


def nested_loops_with_breaks():
    body = ["MOV TEMP[0], IMM[0].wwww", "MOV TEMP[2], IMM[0].wwww",
            "BGNLOOP",
            "FSGE TEMP[1].x, TEMP[0].xxxx, IN[0].xxxx", "UIF TEMP[1].xxxx", "BRK", "ENDIF",
            "MOV TEMP[0].y, IMM[0].wwww",
            "BGNLOOP",
            "FSGE TEMP[1].y, TEMP[0].yyyy, IN[0].yyyy", "UIF TEMP[1].yyyy", "BRK", "ENDIF",
            "ADD TEMP[2].x, TEMP[2].xxxx, IN[1].xxxx",
            "ADD TEMP[0].y, TEMP[0].yyyy, IMM[0].yyyy",
            "ENDLOOP",
            "ADD TEMP[0].x, TEMP[0].xxxx, IMM[0].yyyy",
            "ENDLOOP", "MOV OUT[0], TEMP[2].xxxx", "MOV OUT[0].zw, TEMP[0].xxyy"]
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 5, (4, 64)).astype(np.float32)
    return body, [counts, lanes4(rng, 64)], {"extra": IMM}


def kill_if_inside_a_branch():
    body = ["IF IN[0].xxxx", "KILL_IF IN[1]", "ENDIF",
            "ADD OUT[0], IN[1], IMM[0].yyyy", "KILL_IF -IN[0].yyyy",
            "MUL OUT[0].x, OUT[0].xxxx, IMM[0].zzzz"]
    rng = np.random.default_rng(4)
    a = np.where(rng.random((4, 128)) < 0.7, 1.0, 0.0).astype(np.float32)
    b = rng.uniform(-0.3, 1, (4, 128)).astype(np.float32)
    return body, [a, b], {"extra": IMM}


def kill_and_derivatives_in_quads():
    body = ["DDX TEMP[0], IN[0]", "DDY TEMP[1].xy, IN[0].yxzw", "DDX TEMP[2].x, IMM[0].yyyy",
            "IF IN[1].xxxx", "DDY_FINE TEMP[1].zw, IN[0]", "KILL", "ENDIF",
            "ADD OUT[0], TEMP[0], TEMP[1]", "MOV OUT[0].w, TEMP[2].xxxx"]
    rng = np.random.default_rng(5)
    a = lanes4(rng, 64)
    a[:, 5] = [np.inf, -np.inf, np.nan, 0]
    cond = np.where(rng.random((4, 64)) < 0.3, 1.0, 0.0).astype(np.float32)
    return body, [a, cond], {"extra": IMM}


def lanes_not_in_whole_warps():
    body = ["ADD OUT[0], IN[0], IMM[0].yyyy", "IF IN[0].xxxx", "MOV OUT[0].x, IMM[0].zzzz",
            "ENDIF", "KILL_IF IN[0]"]
    rng = np.random.default_rng(6)
    return body, [lanes4(rng, 23)], {"extra": IMM}


TEXTURE_BODY = ["MUL TEMP[0], IN[0], IMM[0].xxxx", "TEX TEMP[1], TEMP[0], SAMP[0], 2D",
                "SIN TEMP[2].x, TEMP[1].xxxx", "KILL_IF TEMP[1].xyzw",
                "TXB TEMP[3], IN[0], SAMP[0], 2D", "ADD OUT[0], TEMP[1], TEMP[3]",
                "MAD OUT[0].x, TEMP[2].xxxx, IMM[0].zzzz, OUT[0].xxxx"]


def texture_between_segments():
    rng = np.random.default_rng(7)
    return TEXTURE_BODY, [lanes4(rng, 64)], {"extra": IMM + ["DCL SAMP[0]"]}


def test_divergent_if_else_and_nested_ifs():
    body, inputs, options = divergent_if_else_and_nested_ifs()
    run_both(body, *inputs, **options)


def test_loops_with_brk_and_cont_per_lane_trip_counts():
    body, inputs, options = loops_with_brk_and_cont()
    run_both(body, *inputs, **options)


def test_nested_loops_with_breaks():
    body, inputs, options = nested_loops_with_breaks()
    run_both(body, *inputs, **options)


def test_kill_if_inside_a_branch_stops_whole_quads():
    body, inputs, options = kill_if_inside_a_branch()
    got = run_both(body, *inputs, **options)
    assert got.killed.any() and not got.killed.all()


def test_kill_and_derivatives_in_quads():
    body, inputs, options = kill_and_derivatives_in_quads()
    run_both(body, *inputs, **options)


def test_lanes_not_in_whole_warps():
    body, inputs, options = lanes_not_in_whole_warps()
    run_both(body, *inputs, **options)


def test_texture_between_segments_and_sin_through_the_interpreter():
    body, inputs, options = texture_between_segments()
    got = run_both(body, *inputs, **options)
    assert got.stats.texture_samples.sum() > 0
    program = parse(program_text(body, extra=IMM + ["DCL SAMP[0]"]))
    steps = [s[0] for s in cp.compiled_for(Interpreter(program)).steps]
    assert steps == ["kernel", "op", "op", "kernel", "op", "kernel"]


# -- arithmetic --------------------------------------------------------------------------


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 1e-45, 3.4e38, -3.4e38,
                    1.0, -1.0, 0.5, 65504.0, 65520.0, 6e-8, 2.9e-8, -7.5, 1e10, 2.5],
                   dtype=np.float32)


def special_inputs(rng, n=64):
    values = np.concatenate([SPECIAL, rng.standard_normal(n).astype(np.float32) * 100,
                             rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(
                                 np.uint32).view(np.float32)])
    return [rng.choice(values, (4, 4 * n)).astype(np.float32) for _ in range(3)]


FLOAT_BODY = [
    "ADD TEMP[0], IN[0], IN[1]", "MUL TEMP[1], IN[0], -IN[2]", "MAD TEMP[2], IN[0], IN[1], IN[2]",
    "DIV TEMP[3], IN[0], IN[1]", "MIN OUT[0].x, IN[0].xxxx, IN[1].xxxx",
    "MAX OUT[0].y, IN[1].yyyy, |IN[2].yyyy|", "FRC OUT[0].z, IN[0].zzzz",
    "FLR TEMP[0].x, IN[2].xxxx", "CEIL TEMP[0].y, IN[2].yyyy", "TRUNC TEMP[1].z, IN[1].xxxx",
    "ROUND TEMP[2].w, IN[0].wwww", "SSG TEMP[3].x, IN[1].xxxx",
    "CMP TEMP[3].y, IN[0], IN[1], IN[2]",
    "LRP TEMP[3].zw, IN[0], IN[1], IN[2]", "FMA TEMP[1].x, IN[0].xxxx, IN[1].xxxx, IN[2].xxxx",
    "SLT TEMP[1].y, IN[0].xxxx, IN[1].xxxx", "SNE TEMP[1].w, IN[0], IN[1]",
    "RCP TEMP[0].z, IN[0].yyyy", "RSQ TEMP[0].w, IN[1].zzzz", "SQRT TEMP[2].x, IN[2].wwww",
    "EX2 TEMP[2].y, IN[0].xxxx", "LG2 TEMP[2].z, IN[1].xxxx",
    "POW TEMP[3].x, IN[0].xxxx, IN[1].yyyy",
    "DP3 TEMP[2].w, TEMP[0], TEMP[1]", "DP4_SAT OUT[0].w, TEMP[2], TEMP[3]",
    "DP2 TEMP[1].z, TEMP[2], IN[0]", "MUL_SAT TEMP[0], TEMP[0], TEMP[1]",
    "ADD TEMP[0], TEMP[0], TEMP[2]", "ADD TEMP[0], TEMP[0], TEMP[3]",
    "ADD OUT[0].xy, OUT[0], TEMP[0]", "MOV_SAT OUT[0].z, TEMP[0].wwww",
]


def float_opcodes(mediump: str):
    rng = np.random.default_rng(8)
    precision = None
    if mediump == "fp16":  # a mix of lowered channels and mediump products
        letters = ["mmmm", "hmhm", "llll", "mhhh", "mmmm", "mmmm", "mmmm", "mhmh"]
        precision = [letters[i % len(letters)] for i in range(len(FLOAT_BODY))]
        precision[2] = "hhhh/mmhh"
    return FLOAT_BODY, special_inputs(rng), {"mediump": mediump, "precision": precision}


@pytest.mark.parametrize("mediump", ["fp32", "fp16"])
def test_float_opcodes_on_nan_inf_and_denormal_inputs(mediump):
    body, inputs, options = float_opcodes(mediump)
    run_both(body, *inputs, **options)


INT_BODY = [
    "UADD TEMP[0], IN[0], IN[1]", "UMUL TEMP[1], IN[0], IN[1]", "UMAD TEMP[2], IN[0], IN[1], IN[2]",
    "IMUL_HI TEMP[3].x, IN[0].xxxx, IN[1].xxxx", "UMUL_HI TEMP[3].y, IN[0].yyyy, IN[1].yyyy",
    "IDIV TEMP[3].z, IN[0].zzzz, IN[1].zzzz", "UDIV TEMP[3].w, IN[0].wwww, IN[1].wwww",
    "MOD TEMP[0].x, IN[0].xxxx, IN[2].xxxx", "UMOD TEMP[0].y, IN[1].yyyy, IN[2].yyyy",
    "INEG TEMP[0].z, IN[0].zzzz", "IABS TEMP[0].w, -IN[1].wwww", "ISSG TEMP[1].x, IN[2].xxxx",
    "IMIN TEMP[1].y, IN[0].yyyy, IN[1].yyyy", "UMAX TEMP[1].z, IN[0].zzzz, IN[1].zzzz",
    "ISLT TEMP[1].w, IN[0].wwww, IN[1].wwww", "USGE TEMP[2].x, IN[0].xxxx, IN[1].xxxx",
    "AND TEMP[2].y, IN[0].yyyy, IN[1].yyyy", "XOR TEMP[2].z, IN[0].zzzz, -IN[1].zzzz",
    "NOT TEMP[2].w, IN[0].wwww", "SHL TEMP[3].x, IN[0].xxxx, IN[1].xxxx",
    "ISHR TEMP[3].y, IN[0].yyyy, IN[1].yyyy", "USHR TEMP[3].z, IN[0].zzzz, IN[1].zzzz",
    "UCMP TEMP[3].w, IN[0].wwww, IN[1].wwww, IN[2].wwww", "I2F OUT[0].x, IN[0].xxxx",
    "U2F OUT[0].y, IN[1].yyyy", "F2I OUT[0].z, IN[2].zzzz", "F2U OUT[0].w, IN[2].wwww",
    "FSLT TEMP[0].x, IN[2].xxxx, IN[1].xxxx", "FSEQ TEMP[0].y, IN[2], IN[2]",
    "OR TEMP[0], TEMP[0], TEMP[1]", "XOR TEMP[0], TEMP[0], TEMP[2]",
    "UADD TEMP[0], TEMP[0], TEMP[3]", "XOR OUT[0], OUT[0], TEMP[0]",
]


def integer_opcodes():
    rng = np.random.default_rng(9)
    edges = np.array([0, 1, 2, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 7,
                      0x3F800000, 0x7F800000, 0x7FC00000, 0xCF000000, 0x4F800000],
                     dtype=np.uint32)
    values = np.concatenate([edges, rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(
        np.uint32)])
    ins = [rng.choice(values, (4, 256)).view(np.float32) for _ in range(3)]
    return INT_BODY, ins, {}


def test_integer_opcodes_on_edge_values():
    body, inputs, options = integer_opcodes()
    run_both(body, *inputs, **options)


HAND_MADE = {
    "divergent_if_else": divergent_if_else_and_nested_ifs,
    "loops_brk_cont": loops_with_brk_and_cont,
    "nested_loops": nested_loops_with_breaks,
    "kill_in_branch": kill_if_inside_a_branch,
    "kill_derivatives": kill_and_derivatives_in_quads,
    "partial_warp": lanes_not_in_whole_warps,
    "texture_segments": texture_between_segments,
    "float_fp32": lambda: float_opcodes("fp32"),
    "float_fp16": lambda: float_opcodes("fp16"),
    "integer": integer_opcodes,
}


def test_half_rounding_matches_numpy_on_every_nan_and_a_wide_sample():
    """``_half`` against ``astype(float16).astype(float32)``: all 2^24 NaN patterns, the
    neighbourhood of every fp16 rounding boundary, random patterns (the whole 2^32 range was
    checked when the kernel was written)."""
    rng = np.random.default_rng(10)
    nan = (np.arange(1, 1 << 23, dtype=np.uint32) | np.uint32(0x7F800000))
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    edges = halves.astype(np.float32).view(np.uint32)
    near = (edges[:, None].astype(np.int64) + np.arange(-3, 4)).ravel() % (1 << 32)
    bits = np.concatenate([nan, nan | np.uint32(0x80000000), near.astype(np.uint32),
                           (near.astype(np.uint32) + np.uint32(0x1000)),
                           rng.integers(0, 1 << 32, 1 << 22, dtype=np.uint64).astype(np.uint32)])
    values = bits.view(np.float32)
    with np.errstate(all="ignore"):
        want = values.astype(np.float16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(_halves(values).view(np.uint32), want)


if jit.AVAILABLE:
    import numba

    @numba.njit
    def _halves(values):  # pragma: no cover - compiled
        out = np.empty_like(values)
        for i in range(values.shape[0]):
            out[i] = cp._half(values[i])
        return out


# -- fallbacks and the switch ------------------------------------------------------------


@pytest.mark.parametrize("body, why", [
    (["IF IN[0].xxxx", "TEX TEMP[0], IN[0], SAMP[0], 2D", "ENDIF"], "inside flow control"),
    (["CAL :3", "MOV OUT[0], IN[0]", "END", "BGNSUB", "RET", "ENDSUB"], "subroutines"),
    (["BGNLOOP", "UIF IN[0].xxxx", "CONT", "ENDIF", "BGNLOOP", "BRK", "ENDLOOP", "BRK",
      "ENDLOOP"], "CONT around another loop"),
])
def test_what_falls_back_says_why(body, why):
    program = parse(program_text(body, extra=["DCL SAMP[0]"]))
    interp = Interpreter(program)
    assert cp.compiled_for(interp) is None
    assert why in cp.fallback_reason(interp)


def test_top_level_texture_and_unsupported_opcodes_are_segment_boundaries():
    body = ["ARL ADDR[0].x, IN[0].xxxx", "MOV TEMP[0], CONST[0][ADDR[0].x]",
            "ADD OUT[0], TEMP[0], IN[0]"]
    consts = np.arange(32, dtype=np.float32).reshape(8, 4)
    ins = np.random.default_rng(11).uniform(-1, 9, (1, 4, 64)).astype(np.float32)
    program = parse(program_text(body, inputs=1, extra=["DCL CONST[0][0..7]", "DCL ADDR[0]"]))
    from tilesim.shaders.sampling import ProceduralSampler
    interp = Interpreter(program)
    assert_same(interp, ins.view(np.uint32), consts, 64, ProceduralSampler(), {})
    assert [s[0] for s in cp.compiled_for(interp).steps] == ["op", "op", "kernel"]


def test_loop_limits_raise_the_interpreters_error():
    body = ["BGNLOOP", "ADD TEMP[0].x, TEMP[0].xxxx, IN[0].xxxx", "ENDLOOP"]
    program = parse(program_text(body, inputs=1))
    interp = Interpreter(program, instruction_budget=5000)
    assert cp.compiled_for(interp) is not None
    with pytest.raises(InputError, match="more than 5000 instructions"):
        interp.run(np.ones((1, 4, 8), np.float32), lanes=8)


def test_the_renderer_takes_the_compiled_path_only_when_switched_on(monkeypatch):
    body = ["ADD OUT[0], IN[0], IN[0]"]
    interp = Interpreter(parse(program_text(body, inputs=1)))
    monkeypatch.setattr(cp, "COMPILE_AFTER_LANES", 0)
    monkeypatch.setattr(cp, "SHADER_KERNELS", False)
    interp.run(np.ones((1, 4, 16), np.float32))
    assert "_compiled_state" not in interp.__dict__


def test_the_jit_switch_turns_the_compiled_path_off(monkeypatch):
    monkeypatch.setattr(cp, "SHADER_KERNELS", True)
    body = ["ADD OUT[0], IN[0], IN[0]"]
    interp = Interpreter(parse(program_text(body, inputs=1)))
    calls = []
    real = cp.CompiledProgram.run
    monkeypatch.setattr(cp.CompiledProgram, "run",
                        lambda self, *a: calls.append(1) or real(self, *a))
    monkeypatch.setattr(cp, "COMPILE_AFTER_LANES", 0)
    ins = np.ones((1, 4, 16), np.float32)
    with jit.disabled():
        interp.run(ins)
    assert not calls
    interp.run(ins)
    assert calls == [1]


def test_a_program_is_compiled_once_it_has_run_enough_lanes(monkeypatch):
    monkeypatch.setattr(cp, "SHADER_KERNELS", True)
    monkeypatch.setattr(cp, "COMPILE_AFTER_LANES", 100)
    body = ["MUL OUT[0], IN[0], IN[0].wzyx", "ADD OUT[0].x, OUT[0].xxxx, IN[0].yyyy"]
    interp = Interpreter(parse(program_text(body, inputs=1)))
    ins = np.ones((1, 4, 64), np.float32)
    interp.run(ins)
    assert "cpu" not in interp._compiled_state
    interp.run(ins)
    assert interp._compiled_state["cpu"] is not None
