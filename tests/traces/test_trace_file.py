"""The .tsim trace format: round trips, laziness, blob dedup, atomic writes, and refusal of
every kind of broken or hostile file with an InputError (never another exception)."""

from __future__ import annotations

import io
import json
import os
import struct
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import require_mesa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.errors import InputError
from tilesim.render.gl.commands import Command, Recorder, make_command
from tilesim.render.traces import trace_file
from tilesim.render.traces.trace_file import TraceWriter, open_trace, read_frames, write_trace

VERTEX = """attribute vec2 position;
attribute vec2 uv;
varying vec2 v_uv;
void main() { v_uv = uv; gl_Position = vec4(position, 0.0, 1.0); }
"""
FRAGMENT = """precision mediump float;
uniform sampler2D tex;
uniform vec4 tint;
varying vec2 v_uv;
void main() { gl_FragColor = texture2D(tex, v_uv) * tint; }
"""


@dataclass
class FakeCompiled:
    """Stands in for tilesim.shaders.glsl_compile.CompiledProgram (no Mesa needed)."""

    vertex_tgsi: str = "VERT\nEND\n"
    fragment_tgsi: str = "FRAG\nEND\n"
    interface: dict = field(default_factory=lambda: {
        "attributes": [{"name": "position", "location": 0}, {"name": "uv", "location": 1}],
        "uniforms": [{"name": "tint"}], "samplers": [{"name": "tex"}]})


def record(frames: int = 3, *, compiled=None, texture_every_frame: bool = False) -> Recorder:
    """A small textured, indexed scene drawn ``frames`` times with a changing tint."""
    gl = Recorder(32, 24, name="scene")
    program = gl.createProgram(VERTEX, FRAGMENT, compiled=compiled or FakeCompiled())
    vbo = gl.createBuffer()
    vertices = np.array([[-1, -1, 0, 0], [1, -1, 1, 0], [1, 1, 1, 1], [-1, 1, 0, 1]],
                        dtype=np.float32)
    texels = np.arange(4 * 4 * 4, dtype=np.uint8).reshape(4, 4, 4)
    texture = gl.createTexture()
    for f in range(frames):
        if f == 0:
            gl.bindBuffer(gl.ARRAY_BUFFER, vbo)
            gl.bufferData(gl.ARRAY_BUFFER, vertices, gl.STATIC_DRAW)
        if f == 0 or texture_every_frame:
            gl.activeTexture(0x84C0)
            gl.bindTexture(gl.TEXTURE_2D, texture)
            gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, 4, 4, 0, gl.RGBA, gl.UNSIGNED_BYTE, texels)
            gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST)
        gl.clearColor(0.0, 0.1 * f, 0.5, 1.0)
        gl.clear(gl.COLOR_BUFFER_BIT, gl.DEPTH_BUFFER_BIT)
        gl.useProgram(program)
        gl.uniform4f(gl.getUniformLocation(program, "tint"), 1.0, 0.5, 0.25, f / 10)
        gl.uniform1i(gl.getUniformLocation(program, "tex"), 0)
        gl.vertexAttribPointer(0, 2, gl.FLOAT, False, 16, 0)
        gl.vertexAttribPointer(1, 2, gl.FLOAT, False, 16, 8)
        gl.enableVertexAttribArray(0)
        gl.enableVertexAttribArray(1)
        gl.drawElements(gl.TRIANGLES, 6, gl.UNSIGNED_SHORT,
                        np.array([0, 1, 2, 0, 2, 3], dtype=np.uint16))
        gl.endFrame()
    return gl


def write(path: Path, gl: Recorder, **kw) -> Path:
    return write_trace(path, gl.recorded_frames(), width=gl.width, height=gl.height, **kw)


def same_commands(a: list[Command], b: list[Command]) -> None:
    assert [c.op for c in a] == [c.op for c in b]
    for x, y in zip(a, b, strict=True):
        assert x.args.keys() == y.args.keys()
        for key in x.args:
            u, v = x.args[key], y.args[key]
            if isinstance(u, np.ndarray):
                assert isinstance(v, np.ndarray) and u.dtype == v.dtype and u.shape == v.shape
                assert np.array_equal(u, v)
            else:
                assert u == v and type(u) is type(v), (x.op, key, u, v)


@pytest.fixture
def valid(tmp_path) -> Path:
    return write(tmp_path / "valid.tsim", record(3), source={"tool": "test"})


# --- round trips -----------------------------------------------------------------------------


def test_round_trip(tmp_path):
    gl = record(4)
    path = write(tmp_path / "t.tsim", gl, source={"tool": "pytest", "seed": 1}, stencil_bits=8)
    with open_trace(path) as trace:
        assert (trace.width, trace.height, trace.depth_bits, trace.stencil_bits) == (32, 24, 24, 8)
        assert trace.frame_count == len(trace) == 4
        assert trace.name == "t" and trace.source == {"tool": "pytest", "seed": 1}
        assert trace.created_by.startswith("tilesim ")
        assert trace.frame_commands == [len(f) for f in gl.recorded_frames()]
        for original, loaded in zip(gl.recorded_frames(), trace.frames(), strict=True):
            same_commands(original, loaded)
        same_commands(trace.frame(-1), gl.recorded_frames()[-1])
        with pytest.raises(IndexError, match="frame 4 out of range"):
            trace.frame(4)
    assert len(read_frames(path)) == 4


def test_arrays_keep_dtype_and_shape(tmp_path):
    frame = [make_command("bufferData", {"target": "ARRAY_BUFFER", "usage": "STATIC_DRAW",
                                         "data": np.arange(12, dtype=">f8").reshape(3, 4),
                                         "size": 96}),
             make_command("bufferSubData", {"target": "ARRAY_BUFFER", "offset": 0,
                                            "data": np.asfortranarray(
                                                np.arange(6, dtype=np.int16).reshape(2, 3))}),
             make_command("endFrame", {})]
    path = write_trace(tmp_path / "a.tsim", [frame], width=4, height=4)
    loaded = read_frames(path)[0]
    same_commands(frame, loaded)
    assert not loaded[0].args["data"].flags.writeable


@pytest.mark.mesa
def test_round_trip_with_real_compile(tmp_path):
    require_mesa()
    from tilesim.render.gl.commands import compile_cached

    gl = record(2, compiled=compile_cached(VERTEX, FRAGMENT, {"position": 0, "uv": 1}))
    path = write(tmp_path / "mesa.tsim", gl)
    loaded = read_frames(path)
    for original, frame in zip(gl.recorded_frames(), loaded, strict=True):
        same_commands(original, frame)
    program = loaded[0][0]
    assert program.op == "createProgram" and "TEX" in program.args["fragment_tgsi"]
    assert program.args["interface"]["format"] == "tilesim-shader-interface"


def test_same_frames_same_bytes(tmp_path):
    a = write(tmp_path / "a.tsim", record(3), name="x")
    b = write(tmp_path / "b.tsim", record(3), name="x")
    assert a.read_bytes() == b.read_bytes()


def test_empty_trace(tmp_path):
    path = write_trace(tmp_path / "e.tsim", [], width=8, height=8, depth_bits=0)
    with open_trace(path) as trace:
        assert trace.frame_count == 0 and list(trace.frames()) == []


# --- laziness and dedup ----------------------------------------------------------------------


def test_frame_reads_only_its_members(valid, monkeypatch):
    opened: list[str] = []
    original = zipfile.ZipFile.open

    def spy(self, name, *args, **kw):
        opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return original(self, name, *args, **kw)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    with open_trace(valid, blob_cache_bytes=0) as trace:
        assert opened == ["manifest.json"]
        opened.clear()
        frame = trace.frame(2)
        blobs = {c.args[k] is not None and k for c in frame for k in
                 trace_file._BLOB_ARGS[c.op]} - {False}
        assert blobs == {"indices"}  # frame 2 references only its index array
        assert opened[0] == "frames/000002.json"
        assert [n.split("/")[0] for n in opened[1:]] == ["blobs"]
        assert len(opened) == 2


def test_hundred_frames_open_fast_and_dedup(tmp_path):
    gl = record(100, texture_every_frame=True)
    start = time.perf_counter()
    path = write(tmp_path / "long.tsim", gl)
    written = time.perf_counter() - start
    with zipfile.ZipFile(path) as z:
        blobs = [n for n in z.namelist() if n.startswith("blobs/")]
    # vertex data, texels and the index array: each stored once although texels and indices
    # are in every frame
    assert len(blobs) == 3
    start = time.perf_counter()
    with open_trace(path) as trace:
        opened = time.perf_counter() - start
        start = time.perf_counter()
        frame = trace.frame(73)
        one = time.perf_counter() - start
        assert frame[-1].op == "endFrame"
        # blobs are decoded once and shared between frames through the cache
        assert trace.frame(74)[2].args["data"] is trace.frame(75)[2].args["data"]
    assert written < 5 and opened < 0.5 and one < 0.5


# --- writing ---------------------------------------------------------------------------------


def test_writer_is_atomic(tmp_path):
    path = tmp_path / "t.tsim"
    path.write_bytes(b"previous")
    frames = record(2).recorded_frames()
    with pytest.raises(RuntimeError, match="capture died"):
        with TraceWriter(path, width=32, height=24) as writer:
            writer.add_frame(frames[0])
            raise RuntimeError("capture died")
    assert path.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["t.tsim"]
    with TraceWriter(path, width=32, height=24) as writer:
        for frame in frames:
            writer.add_frame(frame)
        assert path.read_bytes() == b"previous"  # not renamed before close
    assert open_trace(path).frame_count == 2
    assert os.listdir(tmp_path) == ["t.tsim"]


def test_writer_refuses_bad_frames(tmp_path):
    frame = record(1).recorded_frames()[0]
    with pytest.raises(InputError, match=r"w.tsim: frame 0, command 18: a frame must end"):
        write_trace(tmp_path / "w.tsim", [frame[:-1]], width=4, height=4)
    with pytest.raises(InputError, match=r"frame 0, command 0: a frame must end"):
        write_trace(tmp_path / "w.tsim", [[frame[-1], frame[-1]]], width=4, height=4)
    with pytest.raises(InputError, match="frame 0 is empty"):
        write_trace(tmp_path / "w.tsim", [[]], width=4, height=4)
    with pytest.raises(InputError, match="expected a Command"):
        write_trace(tmp_path / "w.tsim", [[("endFrame", {})]], width=4, height=4)
    with pytest.raises(InputError, match=r"frame 0, command 0: drawArrays: unknown or invalid"):
        write_trace(tmp_path / "w.tsim", [[Command("drawArrays", {
            "mode": "QUADS", "first": 0, "count": 4}), frame[-1]]], width=4, height=4)
    strings = Command("bufferSubData", {"target": "ARRAY_BUFFER", "offset": 0,
                                        "data": np.array(["a", "b"])})
    with pytest.raises(InputError, match="dtype <U1 cannot be stored"):
        write_trace(tmp_path / "w.tsim", [[strings, frame[-1]]], width=4, height=4)
    with pytest.raises(InputError, match="width must be an integer in 1..16384"):
        write_trace(tmp_path / "w.tsim", [], width=0, height=4)
    with pytest.raises(InputError, match="depth_bits must be one of"):
        write_trace(tmp_path / "w.tsim", [], width=4, height=4, depth_bits=12)
    with pytest.raises(InputError, match="source is not plain JSON"):
        write_trace(tmp_path / "w.tsim", [], width=4, height=4, source={"x": object()})
    assert not any(tmp_path.iterdir())


# --- refusing broken files -------------------------------------------------------------------


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def rebuild(path: Path, contents: dict[str, bytes], out: Path | None = None) -> Path:
    """A ZIP with exactly ``contents`` (name -> bytes), deflated, in the given order."""
    out = out or path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in contents.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    out.write_bytes(buffer.getvalue())
    return out


@dataclass
class Replace:
    """What an ``edit_json`` change returns to replace the whole value (else it mutates)."""

    value: object


def edit_json(path: Path, member: str, change) -> Path:
    contents = members(path)
    value = json.loads(contents[member])
    result = change(value)
    if isinstance(result, Replace):
        value = result.value
    contents[member] = json.dumps(value).encode()
    return rebuild(path, contents)


def load_all(path: Path) -> None:
    with open_trace(path) as trace:
        for _ in trace.frames():
            pass


def refused(path: Path, pattern: str) -> InputError:
    with pytest.raises(InputError, match=pattern) as info:
        load_all(path)
    assert str(path) in str(info.value)
    return info.value


def first_blob(path: Path) -> str:
    return next(n for n in members(path) if n.startswith("blobs/"))


def test_not_a_trace(tmp_path):
    refused(tmp_path / "missing.tsim", "no such trace file")
    refused(tmp_path, "is a folder")
    (tmp_path / "random.tsim").write_bytes(os.urandom(1000))
    refused(tmp_path / "random.tsim", "not a readable ZIP file")
    (tmp_path / "empty.tsim").write_bytes(b"")
    refused(tmp_path / "empty.tsim", "not a readable ZIP file")
    rebuild(tmp_path / "other.zip", {"README": b"hello"})
    refused(tmp_path / "other.zip", "unexpected member name")


@pytest.mark.parametrize("name", ["/etc/passwd", "../evil.json", "frames/../../x.json",
                                  "frames/0.json", "blobs/abc.npy", "run_me.py",
                                  "extra/../x", "extra/.hidden", "frames\\000000.json"])
def test_odd_member_names(valid, name):
    contents = members(valid)
    contents[name] = b"{}"
    refused(rebuild(valid, contents), "unexpected member name")


def test_extra_members_are_ignored(valid, tmp_path):
    # Provenance files under extra/ (TRACE_FORMAT.md: "readers ignore them") leave the header
    # and every frame exactly as without them, even when named like a trace's own members
    # and holding other valid trace content: another frame, another manifest, a blob.
    contents = members(valid)
    frame_names = sorted(n for n in contents if n.startswith("frames/"))
    manifest = json.loads(contents["manifest.json"])
    other_manifest = dict(manifest, width=7, height=5, name="other", source={"tool": "x"})
    blob = first_blob(valid)
    extras = {
        "extra/": b"",
        "extra/capture/": b"",
        "extra/capture/notes.txt": b"captured under Xvfb",
        "extra/manifest.json": json.dumps(other_manifest).encode(),
        "extra/frames/000001.json": contents[frame_names[0]],
        "extra/frames/000003.json": contents[frame_names[-1]],
        f"extra/{blob}": b"not a .npy file",
    }
    with_extras = rebuild(valid, {**contents, **extras}, out=tmp_path / "with_extras.tsim")
    with zipfile.ZipFile(with_extras) as z:
        assert set(extras) <= set(z.namelist())  # the extras really are in the file
    expected = record(3).recorded_frames()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with open_trace(with_extras) as trace:
            assert (trace.width, trace.height, trace.depth_bits, trace.stencil_bits) == (
                32, 24, 24, 0)
            assert (trace.name, trace.source) == ("valid", {"tool": "test"})
            assert trace.frame_count == len(trace) == 3
            assert trace.frame_commands == [len(f) for f in expected]
            loaded = list(trace.frames())
    assert len(loaded) == len(expected)
    for original, frame in zip(expected, loaded, strict=True):
        same_commands(original, frame)
    # and the same as the file without extras, frame by frame
    for without, frame in zip(read_frames(valid), loaded, strict=True):
        same_commands(without, frame)


def test_duplicate_member(valid):
    contents = members(valid)
    buffer = io.BytesIO()
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(buffer, "w") as z:
            for name, data in contents.items():
                z.writestr(name, data)
            z.writestr("frames/000001.json", b"[]")
    valid.write_bytes(buffer.getvalue())
    refused(valid, "'frames/000001.json': member appears twice")


def test_manifest_problems(valid, tmp_path):
    cases = [
        (lambda m: m.update(format="zip"), "format is 'zip', expected 'tilesim-trace'"),
        (lambda m: m.update(version=2), "version 2 \\(written by a newer tilesim\\?\\)"),
        (lambda m: m.update(version="1"), "version must be an integer"),
        (lambda m: m.pop("width"), "missing field\\(s\\) width"),
        (lambda m: m.update(width=1.5), "width must be an integer"),
        (lambda m: m.update(height=True), "height must be an integer"),
        (lambda m: m.update(depth_bits=24.0), "depth_bits must be one of"),
        (lambda m: m.update(source=[1]), "source must be a JSON object"),
        (lambda m: m.update(frames=2, frame_commands=m["frame_commands"][:2]),
         "frames/000002.json is not one of the 2 declared frames"),
        (lambda m: m.update(frames=4, frame_commands=m["frame_commands"] + [1]),
         "member frames/000003.json is missing"),
        (lambda m: m.update(frame_commands=[1, 2]), "frame_commands must list 3"),
        (lambda m: m.update(frame_commands=[14, 13, "13"]), "frame_commands must list 3"),
        (lambda m: Replace([]), "the manifest must be a JSON object"),
    ]
    original = valid.read_bytes()
    for change, pattern in cases:
        valid.write_bytes(original)
        refused(edit_json(valid, "manifest.json", change), pattern)
    contents = members(valid)
    contents["manifest.json"] = b'{"format": "tilesim-trace", '
    refused(rebuild(valid, contents), r"manifest.json:1:29: malformed JSON")
    del contents["manifest.json"]
    refused(rebuild(valid, contents), "no manifest.json")


def test_missing_frame_member(valid):
    contents = members(valid)
    del contents["frames/000001.json"]
    refused(rebuild(valid, contents), "member frames/000001.json is missing")


def test_missing_and_corrupt_blobs(valid):
    original = members(valid)
    blob = first_blob(valid)
    contents = dict(original)
    del contents[blob]
    error = refused(rebuild(valid, contents), f"{blob} is missing")
    assert "frame 0, command " in str(error)
    contents = dict(original)
    data = bytearray(contents[blob])
    data[-1] ^= 0xFF
    contents[blob] = bytes(data)
    refused(rebuild(valid, contents), "is corrupt: its SHA-256 does not match")


def npy_member(data: bytes) -> tuple[str, bytes]:
    import hashlib

    return f"blobs/{hashlib.sha256(data).hexdigest()}.npy", data


@pytest.mark.parametrize("payload,pattern", [
    (b"not numpy at all", "not a valid .npy array"),
    (b"\x93NUMPY\x01\x00" + struct.pack("<H", 70)
     + b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }".ljust(69) + b"\n"
     + b"\0" * 16, "not a valid .npy array"),
    (b"\x93NUMPY\x01\x00" + struct.pack("<H", 70)
     + b"{'descr': '<f4', 'fortran_order': False, 'shape': (9,), }".ljust(69) + b"\n"
     + b"\0" * 16, "needs 36 bytes, the member holds 16"),
    (b"\x93NUMPY\x01\x00" + struct.pack("<H", 70)
     + b"{'descr': __import__('os'), 'fortran_order': False, 'shape': (9,)}".ljust(69)
     + b"\n", "not a valid .npy array"),
])
def test_hostile_blob_content(valid, payload, pattern):
    contents = members(valid)
    old = first_blob(valid)
    new, data = npy_member(payload)
    del contents[old]
    contents[new] = data
    for name in [n for n in contents if n.startswith("frames/")]:
        contents[name] = contents[name].replace(old[6:-4].encode(), new[6:-4].encode())
    refused(rebuild(valid, contents), pattern)


@pytest.mark.parametrize("change,pattern", [
    (lambda f: Replace({"not": "a list"}), r"frame 0: a frame must be a JSON list"),
    (lambda f: f.pop(), r"frame 0: frame holds 19 commands, the manifest says 20"),
    (lambda f: f.__setitem__(3, ["clear"]), r"frame 0, command 3: a command must be"),
    (lambda f: f.__setitem__(3, ["glClear", {}]), r"frame 0, command 3: unknown command"),
    (lambda f: f.__setitem__(3, [7, {}]), r"frame 0, command 3: a command must be"),
    (lambda f: f[18][1].update(mode="QUADS"), r"frame 0, command 18: drawElements: unknown or "),
    (lambda f: f[18][1].update(count="6"), r"command 18: drawElements: argument 'count' must"),
    (lambda f: f[18][1].update(count=2 ** 70),
     r"frame 0 \(frames/000000.json\): integer 118059162071741130342"),
    (lambda f: f[18][1].update(extra=1), r"command 18: drawElements: unknown argument"),
    (lambda f: f[18][1].pop("type"), r"command 18: drawElements: missing argument"),
    (lambda f: f[18][1].update(indices={"blob": "x"}), r"command 18: drawElements: argument "
                                                      r"'indices' must be null or"),
    (lambda f: f[18][1].update(indices=[0, 1, 2]), r"'indices' must be null or"),
    (lambda f: f[18][1].update(indices={"blob": "0" * 64}),
     r"command 18: member blobs/0{64}.npy is missing"),
    (lambda f: f.insert(2, ["endFrame", {}]) or f.pop(3), r"command 2: a frame must end"),
    (lambda f: f[12][1].update(name="\ud800"), r"lone surrogate"),
])
def test_bad_frame_content(valid, change, pattern):
    # frame 0 of record(): 0 createProgram, ..., 12 uniform, ..., 18 drawElements, 19 endFrame
    refused(edit_json(valid, "frames/000000.json", change), pattern)


def test_frame_not_json(valid):
    contents = members(valid)
    contents["frames/000001.json"] = b"[[\"endFrame\", {}]"
    refused(rebuild(valid, contents), r"frame 1 \(frames/000001.json\):1:18: malformed JSON")
    contents["frames/000001.json"] = b"\xff\xfe[]"
    refused(rebuild(valid, contents), r"frame 1 \(frames/000001.json\): member is not UTF-8")
    contents["frames/000001.json"] = b"[" * 100000 + b"]" * 100000
    refused(rebuild(valid, contents), r"frame 1 \(frames/000001.json\): malformed JSON")


def _central_entries(data: bytes):
    """(offset of each central directory header, its file name)."""
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        yield at, data[at + 46:at + 46 + name_len].decode()
        at = data.find(b"PK\x01\x02", at + 46)


def test_zip_bomb_declared_size(valid):
    data = bytearray(valid.read_bytes())
    for at, name in _central_entries(bytes(data)):
        if name.startswith("blobs/"):
            struct.pack_into("<I", data, at + 24, 0xFFFFFFF0)  # uncompressed size ~4 GiB
            break
    valid.write_bytes(bytes(data))
    refused(valid, r"member 'blobs/[0-9a-f]+.npy': member declares 4294967280 bytes "
                   r"uncompressed, more than the 2147483648-byte limit")


def test_zip_bomb_real_ratio(valid, monkeypatch):
    contents = members(valid)
    name, data = npy_member(b"\x93NUMPY\x01\x00" + struct.pack("<H", 118)
                            + b"{'descr': '|u1', 'fortran_order': False, 'shape': (10000000,), }"
                            .ljust(117) + b"\n" + bytes(10_000_000))
    contents[name] = data  # 10 MB of zeros deflate to ~10 kB
    rebuild(valid, contents)
    monkeypatch.setattr(trace_file, "MAX_BLOB_BYTES", 1 << 20)
    refused(valid, "more than the 1048576-byte limit")


def test_encrypted_and_unsupported_compression(valid):
    data = bytearray(valid.read_bytes())
    at, _ = next(_central_entries(bytes(data)))
    flags = struct.unpack_from("<H", data, at + 8)[0]
    struct.pack_into("<H", data, at + 8, flags | 1)
    valid.write_bytes(bytes(data))
    refused(valid, "member is encrypted")
    struct.pack_into("<H", data, at + 8, flags)
    struct.pack_into("<H", data, at + 10, 14)  # LZMA
    valid.write_bytes(bytes(data))
    refused(valid, "compression method 14")


def test_bit_flip_in_deflated_member(valid):
    contents = members(valid)
    big = "frames/000000.json"
    contents[big] = contents[big] + b" " * 5000  # room to flip inside its deflate stream
    rebuild(valid, contents)
    data = bytearray(valid.read_bytes())
    for at, name in _central_entries(bytes(data)):
        if name == big:
            local = struct.unpack_from("<I", data, at + 42)[0]
            start = local + 30 + len(big) + struct.unpack_from("<H", data, local + 28)[0]
            data[start + 40] ^= 0x55
    valid.write_bytes(bytes(data))
    refused(valid, "frame 0: cannot read member frames/000000.json")


# --- property: anything either loads or is an InputError -------------------------------------

_VALID_CACHE: dict[str, bytes] = {}


def _valid_bytes(tmp: Path) -> bytes:
    if "v" not in _VALID_CACHE:
        _VALID_CACHE["v"] = write(tmp / "base.tsim", record(2)).read_bytes()
    return _VALID_CACHE["v"]


def _must_load_or_refuse(path: Path) -> None:
    try:
        load_all(path)
    except InputError:
        pass


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_bytes_give_input_error(tmp_path, data):
    blob = bytearray(_valid_bytes(tmp_path))
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = data.draw(st.integers(0, max(len(blob) - 1, 0)))
        if action == "flip" and blob:
            blob[at] ^= data.draw(st.integers(1, 255))
        elif action == "truncate":
            del blob[at:]
        elif action == "insert":
            blob[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            del blob[at:at + data.draw(st.integers(1, 16))]
    path = tmp_path / "fuzz.tsim"
    path.write_bytes(bytes(blob))
    _must_load_or_refuse(path)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=600))
def test_random_bytes_give_input_error(tmp_path, raw):
    path = tmp_path / "random.tsim"
    path.write_bytes(b"PK\x03\x04" + raw if raw[:1] == b"P" else raw)
    _must_load_or_refuse(path)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70)
    | st.floats(allow_nan=True) | st.text(max_size=8)
    | st.sampled_from(["TRIANGLES", "RGBA", "endFrame", "blob", "0" * 64]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12)


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, value
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, prefix + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))


@pytest.mark.slow
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_json_gives_input_error(tmp_path, data):
    path = tmp_path / "base.tsim"
    path.write_bytes(_valid_bytes(tmp_path))
    contents = members(path)
    names = sorted(n for n in contents if n.endswith(".json"))
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(names))
        value = json.loads(contents[name])
        spots = list(_paths(value))
        spot, _ = data.draw(st.sampled_from(spots))
        replacement = data.draw(_json_values)
        if not spot:
            value = replacement
        else:
            parent = value
            for key in spot[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()) or not isinstance(parent, (list, dict)):
                parent[spot[-1]] = replacement
            elif isinstance(parent, list):
                del parent[spot[-1]]
            else:
                del parent[spot[-1]]
        contents[name] = json.dumps(value).encode()
    _must_load_or_refuse(rebuild(path, contents))
