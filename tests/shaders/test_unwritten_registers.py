"""Registers a run leaves uninitialized (``Program.registers_read_unwritten``): the interpreter
zeroes only the registers a program may read before it has certainly written them, and every
result is the one of a run that zeroes them all.

The proof does not trust the allocator: a fresh page reads as zero, so a register wrongly left
uninitialized would usually still read 0. The tests fill every register the run leaves
uninitialized with a pattern (a NaN's bits, ``POISON``) and require the same outputs, kills
and counters as a run that zeroes everything, on the whole corpus (real GLSL from Mesa's
compiler), hand-made control flow and a rendered frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from repo_paths import CORPUS, TRACES
from tgsi_helpers import program_text

from tilesim.shaders import interpreter
from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse, parse_file
from tilesim.shaders.synthetic_inputs import generate, load_interface

POISON = np.uint32(0x7FC0DEAD)          # a quiet NaN: arithmetic on it shows


def _unwritten(body, **kwargs):
    return parse(program_text(body, **kwargs)).registers_read_unwritten()


def test_straight_line_writes_need_no_zeros():
    assert _unwritten(["MOV TEMP[0], IN[0]", "ADD TEMP[1].xy, TEMP[0], IN[1]",
                       "MOV TEMP[1].zw, IN[2]", "MUL OUT[0], TEMP[1], TEMP[0]"]) == \
        {"TEMP": set(), "OUT": set(), "ADDR": set()}


def test_a_channel_read_before_its_write_is_zeroed():
    # TEMP[1].z is read by the swizzle before any write of z
    found = _unwritten(["MOV TEMP[1].xy, IN[0]", "MOV OUT[0], TEMP[1].xyzx"])
    assert found["TEMP"] == {1}
    # an output channel never written is read by the caller
    assert _unwritten(["MOV OUT[0].xyz, IN[0]"])["OUT"] == {0}


def test_writes_after_flow_control_or_a_kill_are_not_certain():
    in_if = ["IF IN[0].xxxx", "MOV TEMP[0], IN[1]", "ENDIF", "MOV OUT[0], TEMP[0]"]
    # OUT[0] too: written after flow control, which is never certain
    assert _unwritten(in_if) == {"TEMP": {0}, "OUT": {0}, "ADDR": set()}
    after_if = ["IF IN[0].xxxx", "ENDIF", "MOV TEMP[0], IN[1]", "MOV OUT[0], TEMP[0]"]
    assert _unwritten(after_if)["TEMP"] == {0}
    # a killed quad stops being written: what it reads after the kill may be the initial value
    after_kill = ["KILL_IF IN[0].xxxx", "MOV TEMP[2], IN[1]", "MOV OUT[0], TEMP[2]"]
    assert _unwritten(after_kill) == {"TEMP": {2}, "OUT": {0}, "ADDR": set()}


def test_a_register_read_through_an_address_reads_its_whole_file():
    body = ["ARL ADDR[0].x, IN[0].xxxx", "MOV TEMP[0], IN[1]",
            "MOV OUT[0], TEMP[ADDR[0].x+1]"]
    found = _unwritten(body, temps=4, extra=["DCL ADDR[0]"])
    assert found["TEMP"] == {0, 1, 2, 3}
    assert found["ADDR"] == set()
    # an address read before it was written
    assert _unwritten(["MOV OUT[0], TEMP[ADDR[0].x]", "MOV TEMP[0], IN[0]"],
                      extra=["DCL ADDR[0]"])["ADDR"] == {0}


def test_a_register_read_in_a_loop_before_its_write_in_the_loop_is_zeroed():
    body = ["MOV TEMP[0], IN[0]", "BGNLOOP", "ADD TEMP[1], TEMP[1], TEMP[0]",
            "MOV TEMP[1], IN[1]", "BRK", "ENDLOOP", "MOV OUT[0], TEMP[1]"]
    assert _unwritten(body)["TEMP"] == {1}


@pytest.fixture
def poisoned(monkeypatch):
    """Runs whose uninitialized registers hold ``POISON``."""
    real = interpreter._registers

    def poisoned_registers(xp, count, n, zeroed):
        registers = real(xp, count, n, zeroed)
        for index in range(count):
            if index not in zeroed:
                registers[index] = POISON
        return registers

    monkeypatch.setattr(interpreter, "_registers", poisoned_registers)


def _zeroing_all(monkeypatch):
    monkeypatch.setattr(interpreter, "_registers",
                        lambda xp, count, n, zeroed: xp.zeros((count, 4, n), np.uint32))


def _outcome(program, g, sampler):
    interp = Interpreter(program)
    execution = interp.run(g.inputs, g.constants, lanes=g.lanes, sampler=sampler,
                           system_values=g.system_values)
    stats = execution.stats
    return (np.asarray(execution.outputs).view(np.uint32).copy(),
            np.asarray(execution.killed).copy(),
            {name: np.asarray(v).copy() for name, v in vars(stats).items()
             if isinstance(v, np.ndarray)} if stats is not None else None)


def _assert_same_outcome(a, b, where):
    np.testing.assert_array_equal(a[0], b[0], f"{where}: outputs")
    np.testing.assert_array_equal(a[1], b[1], f"{where}: kills")
    assert (a[2] is None) == (b[2] is None), where
    if a[2] is not None:
        assert a[2].keys() == b[2].keys(), where
        for name in a[2]:
            np.testing.assert_array_equal(a[2][name], b[2][name], f"{where}: {name}")


def _corpus_check(paths, monkeypatch):
    from tilesim.shaders.sampling import ProceduralSampler

    for path in paths:
        program = parse_file(path)
        g = generate(program, width=8, height=8, interface=load_interface(path))
        with monkeypatch.context() as m:
            _zeroing_all(m)
            expected = _outcome(program, g, ProceduralSampler())
        _assert_same_outcome(_outcome(program, g, ProceduralSampler()), expected, str(path))


def test_every_corpus_program_reads_no_uninitialized_register(poisoned, monkeypatch):
    paths = sorted(Path(CORPUS).rglob("*.tgsi"))
    assert len(paths) >= 170
    _corpus_check(paths, monkeypatch)


@pytest.mark.slow
def test_a_rendered_frame_reads_no_uninitialized_register(poisoned, monkeypatch):
    """A frame of the runner trace and conformance scenes with kills, a depth output,
    multi-tap and depth-texture programs: images and every counter as with every register
    zeroed."""
    from render_snapshots import assert_same_renders, render_snapshot

    from tilesim.render.traces.trace_file import read_frames
    from tilesim.render.workloads.conformance_scenes import record_scene

    cases = [(read_frames(TRACES / "runner-1196x768.tsim")[:1], 1196, 768)]
    for scene in ("discard", "frag_depth", "rtt_post_chain", "shadow_map"):
        cases.append(record_scene(scene))
    for frames, width, height in cases:
        poisoned_render = render_snapshot(frames, width, height, None)
        with monkeypatch.context() as m:
            _zeroing_all(m)
            assert_same_renders(render_snapshot(frames, width, height, None), poisoned_render)
