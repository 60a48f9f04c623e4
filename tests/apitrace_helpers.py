"""Hand-made ``apitrace pickle`` call streams, serialised as apitrace's PickleWriter writes
them, and a stand-in for Mesa's compiler: what the importer's tests
(tests/traces/test_trace_import.py, tests/traces/test_import_fuzz.py and
tests/render/test_gles2_extensions_mesa.py) feed the importer without apitrace or Mesa; and
:func:`capture_scene`, the real thing: a conformance scene replayed by Mesa under apitrace."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.render.traces.apitrace_import import import_pickle
from tilesim.render.traces.trace_file import read_frames
from tilesim.shaders.trace_capture import Pointer


def pickle_value(value) -> bytes:
    """One value as apitrace's PickleWriter writes it (protocol 2)."""
    if value is None:
        return b"N"
    if isinstance(value, Pointer):
        return (b"cunpickle\nPointer\nq\x01\x8a\x08" + struct.pack("<q", value) + b"\x85R")
    if isinstance(value, bool):
        return b"\x88" if value else b"\x89"
    if isinstance(value, int):
        if -2**63 <= value < 2**63:
            return b"\x8a\x08" + struct.pack("<q", value)
        size = (value.bit_length() + 8) // 8  # LONG1: wider than apitrace ever writes
        return b"\x8a" + bytes([size]) + value.to_bytes(size, "little", signed=True)
    if isinstance(value, float):
        return b"G" + struct.pack(">d", value)
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value)
        return b"C" + bytes([len(value)]) + value if len(value) < 256 else \
            b"B" + struct.pack("<I", len(value)) + value
    if isinstance(value, str):
        return pickle_value(value.encode("utf-8"))
    if isinstance(value, list):
        return b"](" + b"".join(pickle_value(v) for v in value) + b"e"
    if isinstance(value, tuple):
        return b"(" + b"".join(pickle_value(v) for v in value) + b"t"
    if isinstance(value, dict):
        return b"}(" + b"".join(pickle_value(k) + pickle_value(v)
                                for k, v in value.items()) + b"u"
    if isinstance(value, (set, frozenset)):  # protocol 4's EMPTY_SET + ADDITEMS
        return b"\x8f(" + b"".join(pickle_value(v) for v in value) + b"\x90"
    raise TypeError(value)


@dataclass
class Calls:
    """Builds a call list; ``add(function, ret=..., flags=..., **args)`` numbers calls
    from 0."""

    records: list[tuple] = field(default_factory=list)

    def add(self, function: str, /, *, ret=None, flags: int = 0, **args) -> int:
        number = len(self.records)
        self.records.append((number, function.encode(), [(k.encode(), v) for k, v in args.items()],
                             ret, flags))
        return number

    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(b"\x80\x02" + pickle_value(r) + b"." for r in self.records))
        return path


CTX, SURFACE, CONFIG = Pointer(0x5000), Pointer(0x6000), Pointer(0x7000)
VS = "attribute vec4 position;\nuniform mat4 mvp;\nvoid main() { gl_Position = mvp * position; }"
FS = "precision mediump float;\nuniform vec4 color[2];\nvoid main() { gl_FragColor = color[1]; }"


def start(calls: Calls, *, width=64, height=48, ctx=CTX) -> None:
    """EGL set-up as apitrace records it: context, window surface, make current, fake
    viewport and scissor with the surface size."""
    calls.add("eglGetDisplay", ret=Pointer(0x4000), display_id=0)
    calls.add("eglGetConfigAttrib", ret=1, dpy=Pointer(0x4000), config=CONFIG,
              attribute=0x3025, value=[24])
    calls.add("eglCreateContext", ret=ctx, dpy=Pointer(0x4000), config=CONFIG,
              share_context=0, attrib_list=[0x3098, 2, 0x3038])
    calls.add("eglCreateWindowSurface", ret=SURFACE, dpy=Pointer(0x4000), config=CONFIG,
              win=0x200002, attrib_list=[])
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=ctx)
    calls.add("glViewport", flags=1, x=0, y=0, width=width, height=height)
    calls.add("glScissor", flags=1, x=0, y=0, width=width, height=height)


def program(calls: Calls, name: int = 3, vs: str = VS, fs: str = FS) -> None:
    calls.add("glCreateShader", ret=1, type=0x8B31)
    calls.add("glShaderSource", shader=1, count=1, string=[vs.encode()], length=0)
    calls.add("glCompileShader", shader=1)
    calls.add("glCreateShader", ret=2, type=0x8B30)
    calls.add("glShaderSource", shader=2, count=1, string=[fs.encode()], length=0)
    calls.add("glCompileShader", shader=2)
    calls.add("glCreateProgram", ret=name)
    calls.add("glAttachShader", program=name, shader=1)
    calls.add("glAttachShader", program=name, shader=2)
    calls.add("glBindAttribLocation", flags=1, program=name, index=0, name=b"position")
    calls.add("glLinkProgram", program=name)


def swap(calls: Calls) -> int:
    return calls.add("eglSwapBuffers", ret=1, flags=48, dpy=Pointer(0x4000), surface=SURFACE)


@dataclass
class FakeCompiled:
    vertex_glsl: str
    fragment_glsl: str
    vertex_tgsi: str = "VERT\nEND\n"
    fragment_tgsi: str = "FRAG\nEND\n"
    interface: dict = field(default_factory=dict)


def fake_compiler(sources):
    """Stands in for Mesa: an interface with the uniform locations Mesa would give."""
    fake_compiler.calls.append(len(sources))
    return [FakeCompiled(s.vertex, s.fragment, interface={
        "bound_attrib_locations": dict(s.attrib_bindings or {}),
        "attributes": [{"name": "position", "type": "vec4", "location": 0,
                        "registers": ["IN[0]"], "components": "xyzw"}],
        "uniforms": [{"name": "mvp", "gl_name": "mvp", "type": "mat4", "array_size": None,
                      "location": 0},
                     {"name": "color", "gl_name": "color[0]", "type": "vec4",
                      "array_size": 2, "location": 1}],
        "samplers": []}) for s in sources]


fake_compiler.calls = []


def do_import(tmp_path: Path, calls: Calls, **options):
    source = calls.write(tmp_path / "capture.pkl")
    out = tmp_path / "out.tsim"
    summary = import_pickle(source, out, compiler=fake_compiler, **options)
    return summary, read_frames(out), out


def capture_scene(tmp_path: Path, scene: str) -> tuple[Path, int]:
    """(the apitrace capture ``tmp_path/capture.trace``, its frames) of Mesa llvmpipe replaying the
    conformance scene ``scene`` as a GLES 2.0 program (``tilesim.render.reference.replay_gl``
    in a child process): a real program's call stream, with the extensions and queries the
    scene makes. Needs apitrace and Mesa (the caller checks)."""
    import json
    import subprocess
    import sys

    from tilesim.mesa import child_environment
    from tilesim.render.traces.trace_file import write_trace
    from tilesim.render.workloads.conformance_scenes import record_scene

    frames, width, height = record_scene(scene)
    write_trace(tmp_path / "scene.tsim", frames, width=width, height=height)
    child = tmp_path / "child"
    child.mkdir()
    (child / "request.json").write_text(json.dumps({
        "trace": str(tmp_path / "scene.tsim"), "label": scene, "driver": "llvmpipe",
        "time_commands": False, "strict": True, "frames": None}))
    trace = tmp_path / "capture.trace"
    proc = subprocess.run(["apitrace", "trace", "--api", "egl", "-o", str(trace),
                           sys.executable, "-m", "tilesim.render.reference.replay_gl",
                           str(child / "request.json"), str(child)],
                          env=child_environment("llvmpipe", MESA_GLES_VERSION_OVERRIDE="2.0"),
                          capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0 and trace.exists(), proc.stderr.decode(errors="replace")
    return trace, len(frames)
