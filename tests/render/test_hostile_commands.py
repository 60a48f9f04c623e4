"""A release's hostile-input sweep (docs/notes/release-hostile-inputs-2026-11-30.md): a
trace whose commands or program interface were tampered with is an InputError naming the
trace, the frame and the command, never a TypeError, IndexError or OverflowError from deep
in a draw, and never a silently wrong read (a negative offset wrapping round a buffer)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

import tilesim
from tilesim.errors import InputError
from tilesim.render.gl.commands import make_command


@pytest.fixture(scope="module")
def sphere(tmp_path_factory) -> Path:
    return sphere_trace(tmp_path_factory.mktemp("sphere") / "sphere.tsim", 1, size=(32, 24),
                        segments=(6, 4))


def tampered(sphere: Path, out: Path, change) -> Path:
    """A copy of ``sphere`` whose frame 0 (a JSON list of [op, args]) ``change`` edited."""
    with zipfile.ZipFile(sphere) as z:
        members = {name: z.read(name) for name in z.namelist()}
    frame = json.loads(members["frames/000000.json"])
    change(frame)
    manifest = json.loads(members["manifest.json"])
    manifest["frame_commands"] = [len(frame)]
    members["frames/000000.json"] = json.dumps(frame).encode()
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out


def first(frame, op: str) -> dict:
    return next(args for name, args in frame if name == op)


def render(path: Path) -> None:
    for _ in tilesim.render_frames(path, frames=range(1)):
        pass


def set_in(path: tuple, value):
    def change(frame):
        node = first(frame, "createProgram")["interface"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


@pytest.mark.parametrize("path, value, message", [
    (("attributes",), [], None),  # fine: no attribute read
    (("attributes",), None, r"attributes must be a list"),
    (("attributes", 0, "location"), None, r"attributes\[0\]\.location must be an integer"),
    (("attributes", 0, "registers"), "IN[0]", r"attributes\[0\]\.registers must be a list"),
    (("attributes", 0, "registers", 0), "IN[999]", r"is in IN\[999\], the vertex TGSI has"),
    (("uniforms",), "x", r"uniforms must be a list"),
    (("uniforms", 0, "type"), [], r"uniforms\[0\]\.type must be a GLSL type"),
    (("uniforms", 0, "array_size"), 1 << 50, r"uniforms\[0\]\.array_size must be an integer"),
    (("uniforms", 0, "vertex", "first_slot"), None, r"vertex\.first_slot must be an integer"),
    (("uniforms", 0, "vertex", "layout"), ["xyzq"], r"vertex\.layout must be a list of"),
])
def test_a_tampered_program_interface_is_an_input_error(sphere, tmp_path, path, value,
                                                        message):
    """Each was a TypeError, AttributeError, IndexError or ValueError in vertex fetch or the
    uniform table (and a huge array_size a runaway allocation)."""
    trace = tampered(sphere, tmp_path / "t.tsim", set_in(path, value))
    if message is None:
        render(trace)
        return
    with pytest.raises(InputError, match=message) as info:
        render(trace)
    assert str(info.value).startswith(f"{trace}: frame 0, command 0")
    assert "program 1: program interface: " in str(info.value)


def test_an_attribute_mesa_optimised_away_renders(sphere, tmp_path):
    """glsl_compile writes registers null for an attribute without registers: vertex fetch
    iterated over None."""
    render(tampered(sphere, tmp_path / "t.tsim", set_in(("attributes", 1, "registers"), None)))


def set_arg(op: str, name: str, value):
    def change(frame):
        first(frame, op)[name] = value
    return change


@pytest.mark.parametrize("op, name, value, message", [
    ("drawElements", "count", (1 << 63) - 1, r"drawElements: argument 'count' = \d+ does not fit"),
    ("vertexAttribPointer", "offset", -(1 << 62), r"'offset' = -4611686018427387904 does not"),
    ("vertexAttribPointer", "offset", -4, r"vertexAttribPointer: negative offset -4"),
    ("bufferData", "size", -1, None),  # ignored: the command carries its data
    ("vertexAttribPointer", "stride", 1 << 40, r"'stride' = 1099511627776 does not fit"),
])
def test_a_tampered_command_is_an_input_error(sphere, tmp_path, op, name, value, message):
    """A negative offset read the buffer's last bytes as vertex data (NumPy's negative
    indices) or raised IndexError; values past 64-bit arithmetic an OverflowError."""
    trace = tampered(sphere, tmp_path / "t.tsim", set_arg(op, name, value))
    if message is None:
        render(trace)
        return
    with pytest.raises(InputError, match=message) as info:
        render(trace)
    assert str(info.value).startswith(f"{trace}: frame 0, command ")


def test_draw_arrays_first_near_2_63_is_an_input_error():
    """np.arange(first, first + count) raised OverflowError."""
    with pytest.raises(InputError, match=r"'first' = 9223372036854775807 does not fit"):
        make_command("drawArrays", {"mode": "TRIANGLES", "first": (1 << 63) - 1, "count": 3},
                     "t.tsim: frame 0, command 5")


def test_integer_uniform_values_must_be_32_bit_integers():
    """1e308 in a glUniform1i was cast to int32 with a RuntimeWarning: a garbage unit."""
    with pytest.raises(InputError, match=r"uniform 'tex': values of glUniform1i must be"):
        make_command("uniform", {"name": "tex", "function": "1i", "values": [1e308]}, "t")
    make_command("uniform", {"name": "tex", "function": "1i", "values": [3]}, "t")


def _state():
    from tilesim.render.gl.state import GLState

    return GLState(16, 16, "t.tsim")


def test_negative_buffer_and_renderbuffer_sizes_are_input_errors():
    """bufferData(size=-1) was a ValueError from np.zeros; a negative renderbuffer size was
    an error naming neither the trace nor the command."""
    from tilesim.render.gl.commands import Command

    state = _state()
    state.where = "t.tsim: frame 0, command 3"
    state.apply(Command("bindBuffer", {"target": "ARRAY_BUFFER", "id": 1}))
    with pytest.raises(InputError, match=r"^t\.tsim: frame 0, command 3: bufferData: negative"):
        state.apply(Command("bufferData", {"target": "ARRAY_BUFFER", "data": None, "size": -1,
                                           "usage": "STATIC_DRAW"}))
    state.apply(Command("bindRenderbuffer", {"id": 2}))
    with pytest.raises(InputError, match=r"renderbufferStorage: negative size -1x8"):
        state.apply(Command("renderbufferStorage", {"internalformat": "RGBA4", "width": -1,
                                                    "height": 8}))


def test_drawing_into_a_framebuffer_of_an_empty_renderbuffer_names_the_draw(sphere, tmp_path):
    """It read 'render target fbo1 has an empty size 0x0': no trace, frame or command."""
    def change(frame):
        draw = next(k for k, (op, _) in enumerate(frame) if op == "drawElements")
        frame[draw:draw] = [
            ["createFramebuffer", {"id": 1}], ["bindFramebuffer", {"id": 1}],
            ["createRenderbuffer", {"id": 1}], ["bindRenderbuffer", {"id": 1}],
            ["renderbufferStorage", {"internalformat": "RGBA4", "width": 0, "height": 0}],
            ["framebufferRenderbuffer", {"attachment": "COLOR_ATTACHMENT0",
                                         "renderbuffer": 1}]]

    trace = tampered(sphere, tmp_path / "t.tsim", change)
    with pytest.raises(InputError, match=r"command \d+ \(drawElements\): framebuffer 1 is "
                                         r"incomplete: .* 0x0"):
        render(trace)
