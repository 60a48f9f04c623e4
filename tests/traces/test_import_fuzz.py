"""Fuzzing the apitrace importer (issue 12): type-mutated ``apitrace pickle`` call streams.

A capture's call stream (a hand-made one that reaches most of the translator, and a real
glmark2 capture where apitrace and Mesa are installed) is serialised record by record as
apitrace's PickleWriter does, then mutated: a value becomes a list, a dict, a string, None, a
huge integer, NaN, a set, a deeply nested list; arguments, fields and whole records are
dropped, renamed, reshaped or swapped between calls; the byte stream is cut anywhere. Every
case must import, or stop with one :class:`~tilesim.errors.InputError` line that names the
file and the call (or the record) at fault, within a hard time limit (SIGALRM), so a hang
fails the test instead of stalling CI.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from apitrace_helpers import CONFIG, CTX, SURFACE, Calls, fake_compiler, program, start, swap
from conftest import require_mesa, require_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.errors import InputError
from tilesim.render.traces.apitrace_import import import_pickle
from tilesim.shaders.trace_capture import Pointer, ProgramTracker, linked_programs, read_calls

CASE_LIMIT_S = 30  # hard limit per case (a hang would run for hours)

# --- apitrace's pickle encoding, extended to what a hostile file may hold ------------------


@dataclass(frozen=True)
class Raw:
    """Bytes put into the stream as they are (a cut record, an opcode apitrace never writes)."""

    data: bytes


def encode(value) -> bytes:
    """``value`` as pickle opcodes: apitrace's own (protocol 2; strings and blobs as bytes,
    pointers through unpickle.Pointer, blobs through __builtin__.bytearray), plus the types
    a hand-edited or corrupted file may hold (dicts, sets, unicode, integers of any size)."""
    if isinstance(value, Raw):
        return value.data
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"\x88" if value else b"\x89"
    if isinstance(value, Pointer):
        return b"cunpickle\nPointer\n" + encode(int(value)) + b"\x85R"
    if isinstance(value, int):
        if -2**63 <= value < 2**63:
            return b"\x8a\x08" + struct.pack("<q", value)
        size = (value.bit_length() + 8) // 8
        data = value.to_bytes(size, "little", signed=True)
        return (b"\x8a" + bytes([size]) if size < 256 else b"\x8b" + struct.pack("<i", size)) \
            + data
    if isinstance(value, float):
        return b"G" + struct.pack(">d", value)
    if isinstance(value, bytearray):
        return b"c__builtin__\nbytearray\n" + encode(bytes(value)) + b"\x85R"
    if isinstance(value, bytes):
        return (b"C" + bytes([len(value)]) if len(value) < 256
                else b"B" + struct.pack("<I", len(value))) + value
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return b"X" + struct.pack("<I", len(data)) + data
    if isinstance(value, list):
        return b"](" + b"".join(encode(v) for v in value) + b"e"
    if isinstance(value, tuple):
        return b"(" + b"".join(encode(v) for v in value) + b"t"
    if isinstance(value, dict):
        return b"}(" + b"".join(encode(k) + encode(v) for k, v in value.items()) + b"u"
    if isinstance(value, (set, frozenset)):
        return b"\x8f(" + b"".join(encode(v) for v in value) + b"\x90"
    raise TypeError(type(value))


def encode_record(record) -> bytes:
    return b"\x80\x02" + encode(record) + b"."


def deep_list(depth: int) -> Raw:
    """A list nested ``depth`` deep (its repr alone overflows Python's recursion limit)."""
    return Raw(b"]" * depth + b"a" * (depth - 1))


# Replacement values: every type the restricted unpickler lets through, at the edges.
ODD_VALUES = [
    [], [1, 2], [[]], [None], [1.5], [b"x"], {}, {b"k": 1}, {1: [2]}, "text", "é", b"bytes",
    b"\xff\xfe", bytearray(b"\0" * 3), None, True, False, 0, -1, 1, 7, -2**31 - 1, 2**31,
    2**32, 2**63, 2**64, -2**63 - 1, 2**64 + 1, 2**200, -2**200, 10**5000, 0.5, -0.0, 1e300,
    math.nan, math.inf, -math.inf, Pointer(0), Pointer(2**63 + 5), set(), frozenset({1}),
    (1, 2), (), deep_list(3000), Raw(b"\x8c\x05hello"),
]


# --- the streams ---------------------------------------------------------------------------


def rich_capture() -> Calls:
    """A hand-made capture that reaches most translator paths: two frames with buffers,
    client arrays, textures, a framebuffer object, mapped buffers, uniforms, state, a
    second context; eglTerminate after the last swap."""
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glGetUniformLocation", ret=0, program=3, name=b"mvp")
    calls.add("glGetUniformLocation", ret=5, program=3, name=b"color[1]")
    calls.add("glUniformMatrix4fv", location=0, count=1, transpose=0,
              value=[float(i) for i in range(16)])
    calls.add("glUniform4fv", location=5, count=1, value=[0.5, 0.25, 0.0, 1.0])
    calls.add("glUniform4f", location=1, v0=1.0, v1=2.0, v2=3.0, v3=4.0)
    calls.add("glUniform1i", location=-1, v0=7)
    calls.add("glGenBuffers", n=2, buffers=[7, 8])
    calls.add("glBindBuffer", target=0x8892, buffer=7)
    calls.add("glBufferData", target=0x8892, size=48, data=bytes(48), usage=0x88E4)
    calls.add("glBufferSubData", target=0x8892, offset=8, size=8, data=bytes(range(8)))
    calls.add("glMapBufferOES", ret=Pointer(0x9000), target=0x8892, access=0x88B9)
    calls.add("memcpy", flags=1, dest=Pointer(0x9010), src=bytes(16), n=16)
    calls.add("glUnmapBufferOES", ret=1, target=0x8892)
    calls.add("glEnableVertexAttribArray", index=0)
    calls.add("glVertexAttribPointer", index=0, size=2, type=0x1406, normalized=0, stride=8,
              pointer=Pointer(16))
    calls.add("glGenTextures", n=1, textures=[1])
    calls.add("glActiveTexture", texture=0x84C1)
    calls.add("glBindTexture", target=0x0DE1, texture=1)
    calls.add("glPixelStorei", pname=0x0CF5, param=1)
    calls.add("glTexImage2D", target=0x0DE1, level=0, internalformat=0x1908, width=2,
              height=2, border=0, format=0x1908, type=0x1401, pixels=bytes(16))
    calls.add("glTexSubImage2D", target=0x0DE1, level=0, xoffset=0, yoffset=0, width=1,
              height=1, format=0x1908, type=0x1401, pixels=bytes(4))
    calls.add("glTexParameteri", target=0x0DE1, pname=0x2801, param=0x2601)
    calls.add("glTexParameterf", target=0x0DE1, pname=0x2802, param=float(0x812F))
    calls.add("glTexParameteriv", target=0x0DE1, pname=0x2803, params=[0x2901])
    calls.add("glGenerateMipmap", target=0x0DE1)
    calls.add("glEnable", cap=0x0B71)
    calls.add("glDepthFunc", func=0x0203)
    calls.add("glDepthMask", flag=1)
    calls.add("glDepthRangef", n=0.0, f=1.0)
    calls.add("glBlendFunc", sfactor=0x0302, dfactor=0x0303)
    calls.add("glBlendFuncSeparate", sfactorRGB=1, dfactorRGB=0, sfactorAlpha=1,
              dfactorAlpha=0)
    calls.add("glBlendEquation", mode=0x8006)
    calls.add("glBlendColor", red=0.0, green=0.5, blue=1.0, alpha=1.0)
    calls.add("glColorMask", red=1, green=1, blue=1, alpha=0)
    calls.add("glCullFace", mode=0x0405)
    calls.add("glFrontFace", mode=0x0901)
    calls.add("glLineWidth", width=1.0)
    calls.add("glPolygonOffset", factor=1.0, units=2.0)
    calls.add("glStencilFunc", func=0x0207, ref=1, mask=0xFF)
    calls.add("glStencilOp", fail=0x1E00, zfail=0x1E00, zpass=0x1E01)
    calls.add("glStencilMask", mask=0xFF)
    calls.add("glHint", target=0x8192, mode=0x1101)
    calls.add("glVertexAttrib4f", index=1, x=0.0, y=1.0, z=0.0, w=1.0)
    calls.add("glVertexAttrib2fv", index=2, v=[0.5, 0.5])
    calls.add("glClearColor", red=0.1, green=0.2, blue=0.3, alpha=1.0)
    calls.add("glClearDepthf", d=1.0)
    calls.add("glClearStencil", s=0)
    calls.add("glClear", mask=0x4500)
    calls.add("glDrawArrays", mode=0x0004, first=0, count=3)
    calls.add("glBindBuffer", target=0x8893, buffer=8)
    calls.add("glBufferData", target=0x8893, size=6, data=bytes([0, 0, 1, 0, 2, 0]),
              usage=0x88E4)
    calls.add("glDrawElements", mode=0x0004, count=3, type=0x1403, indices=Pointer(0))
    calls.add("glViewport", x=0, y=0, width=32, height=24)
    calls.add("glScissor", x=1, y=1, width=8, height=8)
    calls.add("glGetError", ret=0)
    calls.add("glReadPixels", x=0, y=0, width=1, height=1, format=0x1908, type=0x1401,
              pixels=b"\0\0\0\0")
    swap(calls)
    calls.add("glGenFramebuffers", n=1, framebuffers=[4])
    calls.add("glBindFramebuffer", target=0x8D40, framebuffer=4)
    calls.add("glGenRenderbuffers", n=1, renderbuffers=[5])
    calls.add("glBindRenderbuffer", target=0x8D41, renderbuffer=5)
    calls.add("glRenderbufferStorage", target=0x8D41, internalformat=0x81A5, width=8,
              height=8)
    calls.add("glFramebufferTexture2D", target=0x8D40, attachment=0x8CE0, textarget=0x0DE1,
              texture=1, level=0)
    calls.add("glFramebufferRenderbuffer", target=0x8D40, attachment=0x8D00,
              renderbuffertarget=0x8D41, renderbuffer=5)
    calls.add("glClear", mask=0x4000)
    calls.add("glCopyTexSubImage2D", target=0x0DE1, level=0, xoffset=0, yoffset=0, x=0, y=0,
              width=1, height=1)
    calls.add("glBindFramebuffer", target=0x8D40, framebuffer=0)
    calls.add("glDeleteFramebuffers", n=1, framebuffers=[4])
    calls.add("glDeleteRenderbuffers", n=1, renderbuffers=[5])
    calls.add("glFlush")
    calls.add("glFinish")
    calls.add("eglCreateContext", ret=Pointer(0x5100), dpy=Pointer(0x4000), config=CONFIG,
              share_context=CTX, attrib_list=[0x3098, 2, 0x3038])
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=Pointer(0x5100))
    calls.add("glUseProgram", program=3)
    calls.add("glUniform4fv", location=1, count=2, value=[0.0] * 8)
    calls.add("glDeleteProgram", program=3)
    calls.add("glDeleteBuffers", n=2, buffers=[7, 8])
    calls.add("glDeleteTextures", n=1, textures=[1])
    calls.add("glClear", mask=0x4000)
    swap(calls)
    calls.add("eglTerminate", ret=1, dpy=Pointer(0x4000))
    return calls


# --- mutations -----------------------------------------------------------------------------


def edge_value(rnd: random.Random, value):
    """A value of the same type as ``value`` at an edge of its range."""
    if isinstance(value, bool) or value is None:
        return rnd.choice([None, True, False, 0, 2])
    if isinstance(value, int):
        return rnd.choice([0, 1, -1, 2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1, -2**63,
                           2**64 - 1, value + 1, value - 1, value * 1024])
    if isinstance(value, float):
        return rnd.choice([math.nan, math.inf, -math.inf, -0.0, 1e38, -1e-45, value * 1e30])
    if isinstance(value, (bytes, bytearray)):
        return rnd.choice([b"", bytes(value[:1]), bytes(value) * 3, b"\0" * 4])
    if isinstance(value, list):
        if value and rnd.random() < 0.7:
            k = rnd.randrange(len(value))
            return value[:k] + [edge_value(rnd, value[k])] + value[k + 1:]
        return rnd.choice([[], value * 2, value[:1]])
    return odd_value(rnd)


def odd_value(rnd: random.Random):
    if rnd.random() < 0.15:
        return rnd.choice([rnd.randint(-2**70, 2**70), rnd.uniform(-1e6, 1e6),
                           bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 6)))])
    return rnd.choice(ODD_VALUES)


def mutate(records: list, rnd: random.Random, targets: list[int]) -> tuple[bytes, list[str]]:
    """1-3 mutations of ``records`` (each a value or a Raw); returns the stream's bytes and
    what was done (for the failure message). ``targets``: the record indices worth
    mutating most (the GL calls of a real capture, not its eglGetProcAddress calls)."""
    records = [[*r[:2], list(r[2]), *r[3:]] if isinstance(r, tuple) and len(r) == 5
               and isinstance(r[2], list) else r for r in records]  # the base stays whole
    done = []
    cut = None
    for _ in range(rnd.randint(1, 3)):
        index = rnd.choice(targets) if rnd.random() < 0.9 else rnd.randrange(len(records))
        record = records[index]
        kind = rnd.choice(["value"] * 6 + ["drop", "key", "pair", "field", "fields",
                                           "record", "args", "name", "cut"])
        call = isinstance(record, list) and len(record) == 5 and isinstance(record[2], list)
        if not call:   # a record an earlier mutation of this case already replaced or cut
            kind = "cut" if kind == "cut" else "record"
        args = record[2] if call else None
        pairs = [k for k, a in enumerate(args or ()) if isinstance(a, tuple) and len(a) == 2]
        if kind in ("value", "drop", "key", "pair") and not pairs:
            kind = "field"
        if kind == "value":
            k = rnd.choice(pairs)
            args[k] = (args[k][0], edge_value(rnd, args[k][1]) if rnd.random() < 0.4
                       else odd_value(rnd))
        elif kind == "drop":
            del args[rnd.choice(pairs)]
        elif kind == "key":
            k = rnd.choice(pairs)
            args[k] = (rnd.choice([args[pairs[0]][0], 5, None, b"\xff", "str", b"", b"a b"]),
                       args[k][1])
        elif kind == "pair":
            k = rnd.choice(pairs)
            args[k] = rnd.choice([(args[k][0],), (args[k][0], args[k][1], 1), list(args[k]),
                                  None, args[k][0], {args[k][0]: args[k][1]}])
        elif kind == "field":
            k = rnd.randrange(5)
            record[k] = edge_value(rnd, record[k]) if rnd.random() < 0.3 else odd_value(rnd)
        elif kind == "fields":
            records[index] = record[:rnd.randrange(5)] if rnd.random() < 0.8 else record + [0]
        elif kind == "record":
            records[index] = odd_value(rnd)
        elif kind == "args":
            record[2] = rnd.choice([{}, None, b"args", tuple(args or ()),
                                    dict(a for a in args or () if isinstance(a, tuple)
                                         and len(a) == 2 and isinstance(a[0], bytes))])
        elif kind == "name":  # another call's name, or a name the importer uses itself
            other = records[rnd.choice(targets)]
            record[1] = other[1] if isinstance(other, list) and len(other) == 5 and \
                rnd.random() < 0.7 else rnd.choice([b"error", b"emit", b"feed", b"key",
                                                    b"_end_frame", b"glBogus", b"int"])
        if kind == "cut":
            cut = index
        done.append(f"{kind} at record {index}")
    chunks = [encode_record(tuple(r) if isinstance(r, list) else r) for r in records]
    data = b"".join(chunks)
    if cut is not None:
        start_at = sum(len(c) for c in chunks[:cut])
        data = data[:start_at + rnd.randrange(len(chunks[cut]) + 1)]
        done.append(f"stream cut at byte {len(data)}")
    return data, done


# --- running cases -------------------------------------------------------------------------


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int):
    """Raise CaseTimeout in the main thread after ``seconds`` (a hang fails, never stalls)."""
    def expire(signum, frame):
        raise CaseTimeout(f"ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# An error that is about the capture as a whole names no call.
WHOLE_CAPTURE = ("the capture holds no complete frame", "cannot tell the window size",
                 "the capture holds no calls")


@dataclass
class Tally:
    imported: int = 0
    errors: int = 0
    warned: int = 0
    slowest: float = 0.0
    messages: dict = field(default_factory=dict)

    def report(self) -> str:
        return (f"{self.imported + self.errors} cases: {self.imported} imported "
                f"({self.warned} with warnings), {self.errors} refused with an InputError; "
                f"slowest {self.slowest:.2f} s")


def run_case(data: bytes, folder: Path, tally: Tally, done: list[str], compiler) -> None:
    source = folder / "capture.pkl"
    out = folder / "out.tsim"
    source.write_bytes(data)
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    with time_limit(CASE_LIMIT_S):
        try:
            summary = import_pickle(source, out, compiler=compiler)
        except InputError as error:
            message = str(error)
            tally.errors += 1
            assert "\n" not in message, (done, message)
            assert message.startswith(f"{source}"), (done, message)
            assert re.search(r"\bcall \d+|\brecord \d+", message) or \
                any(text in message for text in WHOLE_CAPTURE), (done, message)
            assert not out.exists(), done  # nothing half-written
            key = re.sub(r"\d+", "N", error.bare_message)[:60]
            tally.messages[key] = tally.messages.get(key, 0) + 1
        else:
            tally.imported += 1
            tally.warned += bool(summary.warnings)
            assert out.exists() and summary.frames >= 1, done
            assert all("\n" not in w for w in summary.warnings), summary.warnings
    elapsed = time.perf_counter() - started
    tally.slowest = max(tally.slowest, elapsed)
    assert elapsed < CASE_LIMIT_S, (done, elapsed)


# --- the tests -----------------------------------------------------------------------------


def test_the_time_limit_turns_a_hang_into_a_failure():
    started = time.perf_counter()
    with pytest.raises(CaseTimeout), time_limit(1):
        while True:
            pass
    assert time.perf_counter() - started < 10
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nothing left armed


HAND_MADE_CASES = 300


@pytest.mark.slow
def test_type_mutated_hand_made_streams_import_or_name_the_call(tmp_path, capsys):
    base = rich_capture().records
    # the original imports whole: it is a sound base to mutate
    tally = Tally()
    run_case(b"".join(encode_record(r) for r in base), tmp_path, tally, [], fake_compiler)
    assert tally.imported == 1
    targets = list(range(len(base)))

    @settings(max_examples=HAND_MADE_CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(rnd=st.randoms(use_true_random=False))
    def case(rnd):
        data, done = mutate(base, rnd, targets)
        run_case(data, tmp_path, tally, done, fake_compiler)

    tally = Tally()
    case()
    with capsys.disabled():
        print(f"\nhand-made stream: {tally.report()}")
    assert tally.imported + tally.errors >= HAND_MADE_CASES
    assert tally.imported > 0 and tally.errors > 0
    assert tally.slowest < CASE_LIMIT_S


REAL_CASES = 120


@pytest.fixture(scope="module")
def real_capture(tmp_path_factory):
    """A glmark2 capture (2 frames of the texture scene at 64x48): its raw pickle records,
    and a compiler that compiles its programs once with Mesa."""
    require_tools("apitrace", "xvfb-run", "glmark2-es2")
    require_mesa()
    import subprocess

    from tilesim.render.traces.apitrace_import import compile_links, scan_calls
    from tilesim.render.traces.capture import capture
    from tilesim.shaders.trace_capture import RestrictedUnpickler, read_calls

    folder = tmp_path_factory.mktemp("real")
    trace = folder / "x.trace"
    capture("glmark2-es2:texture", trace, frames=2, size=(64, 48))
    data = subprocess.run(["apitrace", "pickle", str(trace)], capture_output=True,
                          check=True, timeout=120).stdout
    import io

    stream = io.BytesIO(data)
    records = []
    unpickler = RestrictedUnpickler(stream, encoding="bytes")
    while stream.tell() < len(data):
        records.append(unpickler.load())
    # Pointers come back as tilesim.shaders.trace_capture.Pointer: encode() writes them as apitrace
    assert b"".join(encode_record(r) for r in records)  # every record re-encodes
    scan = scan_calls(read_calls(io.BytesIO(data), source=str(trace)), str(trace))
    compiled = compile_links(scan.links, str(trace))
    known = {(links.vertex, links.fragment): program for links, program in
             zip(scan.links.values(), (compiled[n] for n in scan.links), strict=True)}

    def compiler(sources):
        # the capture's own programs as Mesa compiled them; a mutated one as fake_compiler
        return [known.get((s.vertex, s.fragment)) or fake_compiler([s])[0] for s in sources]

    return records, compiler


@pytest.mark.mesa
@pytest.mark.slow
def test_type_mutated_real_capture_imports_or_names_the_call(tmp_path, capsys, real_capture):
    records, compiler = real_capture
    tally = Tally()
    run_case(b"".join(encode_record(r) for r in records), tmp_path, tally, [], compiler)
    assert tally.imported == 1
    boring = {b"eglGetConfigAttrib", b"eglGetProcAddress"}
    targets = [i for i, r in enumerate(records) if r[1] not in boring]

    @settings(max_examples=REAL_CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(rnd=st.randoms(use_true_random=False))
    def case(rnd):
        data, done = mutate(records, rnd, targets)
        run_case(data, tmp_path, tally, done, compiler)

    tally = Tally()
    case()
    with capsys.disabled():
        print(f"\nglmark2 capture: {tally.report()}")
    assert tally.imported > 0 and tally.errors > 0
    assert tally.slowest < CASE_LIMIT_S


# --- the corpus capture's reader (tilesim.shaders.trace_capture) ---------------------------
# `scripts/regenerate_corpus.py --capture` reads its glmark2 captures with linked_programs:
# the same checked reader as the import, then ProgramTracker, which checks each call's
# arguments before it reads them. A malformed record is one InputError line naming the file
# and the call (or the record's place), never a TypeError or ValueError from deeper.


def program_capture() -> Calls:
    """Two contexts, each linking a program: every call ProgramTracker follows."""
    calls = Calls()
    start(calls)
    program(calls)
    swap(calls)
    start(calls, ctx=Pointer(0x5100))
    program(calls, name=4)
    swap(calls)
    return calls


def linked_from(data: bytes, source: str) -> list:
    import io

    return list(ProgramTracker(source).feed(read_calls(io.BytesIO(data), source=source)))


def _with(record: tuple, **changes) -> tuple:
    number, name, args, ret, flags = record
    fields = {"number": number, "name": name, "args": args, "ret": ret, "flags": flags}
    fields.update(changes)
    return tuple(fields.values())


def _with_arg(record: tuple, key: bytes, value) -> tuple:
    return _with(record, args=[(k, value if k == key else v) for k, v in record[2]])


def corpus_reader_cases() -> list[tuple[str, list, str]]:
    """(what, records, the message expected): each failed with a TypeError, ValueError or
    AttributeError traceback (or not at all) in the corpus reader before it shared the
    import's checks."""
    base = program_capture().records
    shader_source = next(i for i, r in enumerate(base) if r[1] == b"glShaderSource")
    create = next(i for i, r in enumerate(base) if r[1] == b"glCreateShader")
    bind = next(i for i, r in enumerate(base) if r[1] == b"glBindAttribLocation")
    link = next(i for i, r in enumerate(base) if r[1] == b"glLinkProgram")

    def changed(index, record):
        records = list(base)
        records[index] = record
        return records

    return [
        ("flags a list", changed(link, _with(base[link], flags=[1])),
         rf"call {link}: glLinkProgram: the call flags must be a 32-bit unsigned integer"),
        ("call number a string", changed(link, _with(base[link], number=b"7")),
         rf"record {link} \(after call {link - 1}\): the call number must be"),
        ("call number a bool", changed(1, _with(base[1], number=True)),
         r"record 1 \(after call 0\): the call number must be"),
        ("name not an identifier", changed(link, _with(base[link], name=b"gl Link")),
         rf"call {link}: the function name must be an ASCII identifier"),
        ("arguments a dict", changed(link, _with(base[link], args={b"program": 3})),
         rf"call {link}: glLinkProgram: the arguments must be a list"),
        ("argument not a pair", changed(link, _with(base[link], args=[(b"program",)])),
         rf"call {link}: glLinkProgram: argument 0 must be a \(name, value\) pair"),
        ("record a list", changed(0, list(base[0])),
         r"record 0 \(the first\): expected an apitrace call"),
        ("record too short", changed(2, base[2][:3]),
         r"record 2 \(after call 1\): expected an apitrace call"),
        ("value nested 3000 deep", changed(link, _with(base[link], ret=deep_list(3000))),
         rf"call {link}: glLinkProgram: the return value nests lists more than 32 deep"),
        ("integer wider than 64 bits", changed(link, _with_arg(base[link], b"program", 2**70)),
         rf"call {link}: glLinkProgram: argument 'program' holds \d+, wider than the 64 bits"),
        ("program a list", changed(link, _with_arg(base[link], b"program", [3])),
         rf"call {link}: glLinkProgram: argument 'program' must be an integer, got \[3\]"),
        ("count a list", changed(shader_source,
                                 _with_arg(base[shader_source], b"count", [1])),
         rf"call {shader_source}: glShaderSource: argument 'count' must be an integer"),
        ("strings an integer", changed(shader_source,
                                       _with_arg(base[shader_source], b"string", 5)),
         rf"call {shader_source}: glShaderSource: argument 'string' must be a byte string"),
        ("new shader's name missing", changed(create, _with(base[create], ret=None)),
         rf"call {create}: glCreateShader: the return value \(the new object's name\) is "
         "missing"),
        ("shader type a float", changed(create, _with_arg(base[create], b"type", 0.5)),
         rf"call {create}: glCreateShader: argument 'type' must be an integer"),
        ("attribute name an integer", changed(bind, _with_arg(base[bind], b"name", 7)),
         rf"call {bind}: glBindAttribLocation: argument 'name' must be a byte string"),
        ("attribute name not UTF-8", changed(bind, _with_arg(base[bind], b"name", b"\xff")),
         rf"call {bind}: glBindAttribLocation: argument 'name' is not UTF-8 text"),
        ("context a string", changed(4, _with_arg(base[4], b"ctx", b"x")),
         r"call 4: eglMakeCurrent: argument 'ctx' must be an integer"),
    ]


@pytest.mark.parametrize("what, records, expected",
                         corpus_reader_cases(), ids=[c[0] for c in corpus_reader_cases()])
def test_corpus_reader_names_the_place_of_a_malformed_record(what, records, expected):
    data = b"".join(encode_record(r) for r in records)
    with time_limit(CASE_LIMIT_S), pytest.raises(InputError) as caught:
        linked_from(data, "glmark2.trace")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("glmark2.trace: ")
    assert re.search(expected, message), message


def test_corpus_reader_reads_the_whole_capture():
    linked = linked_from(b"".join(encode_record(r) for r in program_capture().records), "x")
    assert [(p.program, p.attrib_bindings) for p in linked] == [(3, {"position": 0}),
                                                                (4, {"position": 0})]


CORPUS_READER_CASES = 300


@pytest.mark.slow
def test_type_mutated_streams_give_programs_or_name_the_call_in_the_corpus_reader(capsys):
    base = program_capture().records
    targets = list(range(len(base)))
    tally = Tally()

    @settings(max_examples=CORPUS_READER_CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(rnd=st.randoms(use_true_random=False))
    def case(rnd):
        data, done = mutate(base, rnd, targets)
        started = time.perf_counter()
        with time_limit(CASE_LIMIT_S):
            try:
                linked_from(data, "capture.trace")
            except InputError as error:
                message = str(error)
                tally.errors += 1
                assert "\n" not in message, (done, message)
                assert message.startswith("capture.trace: "), (done, message)
                assert re.search(r"\bcall \d+|\brecord \d+", message), (done, message)
            else:
                tally.imported += 1
        tally.slowest = max(tally.slowest, time.perf_counter() - started)

    case()
    with capsys.disabled():
        print(f"\ncorpus reader: {tally.report()}")
    assert tally.imported + tally.errors >= CORPUS_READER_CASES
    assert tally.imported > 0 and tally.errors > 0


FAKE_APITRACE = """#!/bin/sh
# `apitrace pickle X` prints X (these tests' captures are pickle streams already)
[ "$1" = pickle ] && exec cat "$2"
echo "fake apitrace: $1 not supported" >&2
exit 1
"""


@pytest.fixture
def fake_apitrace(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "apitrace").write_text(FAKE_APITRACE)
    (folder / "apitrace").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return folder


@pytest.mark.slow
def test_malformed_capture_is_one_line_error_in_linked_programs_and_the_cli(tmp_path,
                                                                             fake_apitrace):
    records = program_capture().records
    link = next(i for i, r in enumerate(records) if r[1] == b"glLinkProgram")
    records[link] = _with(records[link], flags=[1])   # was a TypeError in the corpus reader
    trace = tmp_path / "bad.trace"
    trace.write_bytes(b"".join(encode_record(r) for r in records))
    with pytest.raises(InputError, match=rf"^{re.escape(str(trace))}: call {link}: "
                                         "glLinkProgram: the call flags must be"):
        linked_programs(trace)
    proc = subprocess.run([sys.executable, "-m", "tilesim.cli", "import", str(trace), "-o",
                           str(tmp_path / "x.tsim")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"call {link}: glLinkProgram: the call flags must be" in proc.stderr
    assert not (tmp_path / "x.tsim").exists()
