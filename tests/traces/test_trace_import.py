"""apitrace capture -> .tsim import, reference frames and image comparison.

Unit tests feed hand-made ``apitrace pickle`` streams (serialised the way apitrace's
PickleWriter does, through the restricted unpickler) with a stand-in compiler, so they need
neither apitrace nor Mesa. The end-to-end tests capture es2gears and glmark2 for real, import
the capture, replay the import on Mesa and compare it with ``apitrace dump-images``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from apitrace_helpers import (
    CONFIG,
    CTX,
    FS,
    SURFACE,
    VS,
    Calls,
    capture_scene,
    do_import,
    fake_compiler,
    program,
    start,
    swap,
)
from conftest import require_mesa, require_tools
from PIL import Image
from repo_paths import ROOT

from tilesim.errors import InputError, ToolMissing
from tilesim.images import compare_images, read_png
from tilesim.mesa import program_environment
from tilesim.render.gl.commands import Recorder, make_command
from tilesim.render.traces.apitrace_import import import_pickle, skip_kind
from tilesim.render.traces.capture import (
    ES2GEARS_EXECUTABLES,
    glmark2_benchmark,
    parse_program_spec,
)
from tilesim.render.traces.trace_file import open_trace
from tilesim.shaders.trace_capture import Pointer
from tilesim.studies import compare


def ops(frame) -> list[str]:
    return [c.op for c in frame]


# --- unit tests ----------------------------------------------------------------------------


def test_frame_boundaries_at_swaps_and_frame_limit(tmp_path):
    calls = Calls()
    start(calls)
    for k in range(3):
        calls.add("glClearColor", red=0.25 * k, green=0.0, blue=0.0, alpha=1.0)
        calls.add("glClear", mask=0x4100)
        swap(calls)
    calls.add("glClear", mask=0x4000)  # after the last swap: not a complete frame
    calls.add("eglTerminate", ret=1, dpy=Pointer(0x4000))
    summary, frames, out = do_import(tmp_path, calls)
    assert summary.frames == len(frames) == 3
    assert summary.frame_end == "eglSwapBuffers"
    assert (summary.width, summary.height, summary.depth_bits) == (64, 48, 24)
    assert ops(frames[0]) == ["viewport", "scissor", "clearColor", "clear", "endFrame"]
    assert ops(frames[2]) == ["clearColor", "clear", "endFrame"]
    assert frames[1][0].args["red"] == 0.25
    assert frames[0][3].args["mask"] == ["COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT"]
    with open_trace(out) as trace:
        assert (trace.width, trace.height) == (64, 48)
        assert trace.source["frame_end"] == "eglSwapBuffers"
    _, frames, _ = do_import(tmp_path, calls, frames=2)
    assert len(frames) == 2


def test_off_screen_runs_end_frames_at_glfinish(tmp_path):
    calls = Calls()
    start(calls)
    for _ in range(2):
        calls.add("glClear", mask=0x4000)
        calls.add("glFinish")
    summary, frames, _ = do_import(tmp_path, calls)
    assert summary.frame_end == "glFinish"
    assert [ops(f)[-2:] for f in frames] == [["clear", "endFrame"]] * 2


def test_uniform_locations_become_names(tmp_path):
    fake_compiler.calls.clear()
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glGetUniformLocation", ret=0, program=3, name=b"mvp")
    calls.add("glGetUniformLocation", ret=5, program=3, name=b"color[1]")
    calls.add("glUniformMatrix4fv", location=0, count=1, transpose=0,
              value=[float(i) for i in range(16)])
    calls.add("glUniform4fv", location=5, count=1, value=[0.5, 0.25, 0.0, 1.0])
    calls.add("glUniform4f", location=1, v0=1.0, v1=2.0, v2=3.0, v3=4.0)  # never queried
    calls.add("glUniform1i", location=-1, v0=7)  # GL ignores location -1
    swap(calls)
    summary, frames, _ = do_import(tmp_path, calls)
    assert fake_compiler.calls == [1]  # one compile request for the whole capture
    uniforms = [c.args for c in frames[0] if c.op == "uniform"]
    assert [(u["name"], u["function"]) for u in uniforms] == [
        ("mvp", "Matrix4f"), ("color[1]", "4f"), ("color[0]", "4f")]
    assert uniforms[0]["values"] == list(range(16))
    create = next(c for c in frames[0] if c.op == "createProgram")
    assert create.args["vertex_glsl"] == VS and create.args["fragment_glsl"] == FS
    assert create.args["interface"]["bound_attrib_locations"] == {"position": 0}
    assert summary.folded["glGetUniformLocation"] == 2
    assert summary.folded["glShaderSource"] == 2


def test_client_arrays_and_client_indices(tmp_path):
    vertices = np.arange(12, dtype="<f4").tobytes()
    indices = np.array([0, 1, 2], dtype="<u2").tobytes()
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glGenBuffers", n=1, buffers=[7])
    calls.add("glBindBuffer", target=0x8892, buffer=7)
    calls.add("glEnableVertexAttribArray", index=0)
    # What apitrace writes before a draw that reads user memory: fake unbind, fake pointer
    # with the memory as a blob, fake re-bind.
    calls.add("glBindBuffer", flags=1, target=0x8892, buffer=0)
    calls.add("glVertexAttribPointer", flags=1, index=0, size=4, type=0x1406, normalized=0,
              stride=0, pointer=vertices)
    calls.add("glBindBuffer", flags=1, target=0x8892, buffer=7)
    calls.add("glDrawElements", flags=8, mode=0x0004, count=3, type=0x1403, indices=indices)
    calls.add("glVertexAttribPointer", index=0, size=2, type=0x1406, normalized=0, stride=8,
              pointer=Pointer(16))
    calls.add("glDrawArrays", mode=0x0005, first=0, count=4)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    pointers = [c.args for c in frames[0] if c.op == "vertexAttribPointer"]
    assert pointers[0]["data"].tobytes() == vertices and pointers[0]["offset"] == 0
    assert pointers[1]["data"] is None and pointers[1]["offset"] == 16
    draw = next(c.args for c in frames[0] if c.op == "drawElements")
    assert draw["indices"].tobytes() == indices and draw["type"] == "UNSIGNED_SHORT"
    binds = [c.args["id"] for c in frames[0] if c.op == "bindBuffer"]
    assert binds == [1, 0, 1]  # application name 7 is trace buffer 1


def test_unrecorded_client_memory_is_an_error(tmp_path):
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glEnableVertexAttribArray", index=0)
    calls.add("glVertexAttribPointer", index=0, size=4, type=0x1406, normalized=0, stride=0,
              pointer=Pointer(0x7FFF0000))
    number = calls.add("glDrawArrays", mode=4, first=0, count=3)
    swap(calls)
    with pytest.raises(InputError, match=rf"call {number}: glDrawArrays: .*position"):
        do_import(tmp_path, calls)


def test_skipped_calls_are_counted(tmp_path):
    calls = Calls()
    start(calls)
    calls.add("eglQueryString", ret=b"1.5", dpy=Pointer(0x4000), name=0x3054)
    calls.add("glGetString", ret=b"Mesa", name=0x1F01)
    for _ in range(3):
        calls.add("glGetError", ret=0)
    calls.add("glGetIntegerv", pname=0x0BA2, params=[0, 0, 64, 48])
    calls.add("glIsEnabled", ret=0, cap=0x0B71)
    calls.add("glCheckFramebufferStatus", ret=0x8CD5, target=0x8D40)
    calls.add("glClear", mask=0x4000)
    calls.add("glReadPixels", x=0, y=0, width=1, height=1, format=0x1908, type=0x1401,
              pixels=b"\0\0\0\0")
    swap(calls)
    summary, frames, out = do_import(tmp_path, calls)
    assert summary.skipped == {"eglGetConfigAttrib": 1, "eglGetDisplay": 1,
                               "eglQueryString": 1, "glCheckFramebufferStatus": 1,
                               "glGetError": 3, "glGetIntegerv": 1, "glGetString": 1,
                               "glIsEnabled": 1, "glReadPixels": 1}
    assert ops(frames[0]) == ["viewport", "scissor", "clear", "endFrame"]
    with zipfile.ZipFile(out) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["source"]["skipped_calls"]["glGetError"] == 3
    assert manifest["source"]["translated_calls"]["glClear"] == 1
    assert "glGetError" in summary.describe()
    assert skip_kind("glGetActiveUniform") == "skipped"
    assert skip_kind("eglSwapBuffers") is None
    assert skip_kind("glDrawArrays") is None


def test_queried_limits_go_into_the_trace_and_the_renderer(tmp_path):
    """Issue 31 item 2: a program that queried 192 combined texture units (Mesa llvmpipe) and
    resets unit 100 imports; the trace carries what it queried, the renderer applies it."""
    from tilesim.render.pipeline.renderer import Renderer

    calls = Calls()
    start(calls)
    calls.add("glGetIntegerv", pname=0x8B4D, params=[192])
    calls.add("glGetFloatv", pname=0x846E, params=[1.0, 255.0])
    calls.add("glActiveTexture", texture=0x84C0 + 100)
    calls.add("glBindTexture", target=0x0DE1, texture=0)
    calls.add("glActiveTexture", texture=0x84C0)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    summary, frames, out = do_import(tmp_path, calls)
    assert ("activeTexture", 100) in [(c.op, c.args.get("unit")) for c in frames[0]]
    with open_trace(out) as trace:
        assert trace.limits == {"texture_units": 192, "point_size_max": 255.0}
        renderer = Renderer(trace.width, trace.height, limits=trace.limits)
        assert renderer.state.MAX_TEXTURE_UNITS == 192
        list(renderer.render(trace.frames()))
    assert "limits: texture_units 192 (queried at call 7), point_size_max 255 (queried at " \
           "call 8)" in summary.describe()

    calls = Calls()
    start(calls)
    number = calls.add("glActiveTexture", texture=0x84C0 + 40)
    swap(calls)
    with pytest.raises(InputError, match=rf"call {number}: glActiveTexture: texture unit 0x84E8 "
                                         r"is not GL_TEXTURE0..GL_TEXTURE31 \(the units"):
        do_import(tmp_path, calls)
    summary, _, out = do_import(tmp_path, Calls(calls.records[:-2] + calls.records[-1:]))
    assert "limits: texture_units 32 (the GPU configuration's), point_size_max 255 (the GPU " \
           "configuration's)" in summary.describe()
    with open_trace(out) as trace:
        assert trace.limits == {}


def test_queried_viewport_and_renderbuffer_limits_clamp_and_refuse(tmp_path):
    """Issue 31 item 2: GL_MAX_VIEWPORT_DIMS and GL_MAX_RENDERBUFFER_SIZE as the program
    queried them go into the trace; the renderer clamps glViewport's size to the first (ES 2.0
    §2.12.1) and refuses larger renderbuffer storage (§4.4.3: INVALID_VALUE); without a query
    the GPU configuration's 16384 (Mesa's) is reported and applied."""
    from tilesim.render.pipeline.renderer import Renderer

    calls = Calls()
    start(calls)
    calls.add("glGetIntegerv", pname=0x0D3A, params=[40, 32])
    calls.add("glGetIntegerv", pname=0x84E8, params=[16])
    calls.add("glViewport", x=0, y=0, width=64, height=48)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    summary, _, out = do_import(tmp_path, calls)
    assert "viewport_max_width 40 (queried at call 7), viewport_max_height 32 (queried at " \
           "call 7), renderbuffer_size_max 16 (queried at call 8)" in summary.describe()
    with open_trace(out) as trace:
        assert trace.limits == {"viewport_max_width": 40, "viewport_max_height": 32,
                                "renderbuffer_size_max": 16}
        renderer = Renderer(trace.width, trace.height, limits=trace.limits)
        list(renderer.render(trace.frames()))
        assert renderer.state.viewport == (0, 0, 40, 32)
    renderer.state.apply(make_command("createRenderbuffer", {"id": 9}, "t"))
    renderer.state.apply(make_command("bindRenderbuffer", {"id": 9}, "t"))
    renderer.state.apply(make_command("renderbufferStorage", {
        "internalformat": "RGBA4", "width": 16, "height": 8}, "t"))
    with pytest.raises(InputError, match="exceeds GL_MAX_RENDERBUFFER_SIZE 16"):
        renderer.state.apply(make_command("renderbufferStorage", {
            "internalformat": "RGBA4", "width": 17, "height": 8}, "t"))
    assert Renderer(8, 8).limits["viewport_max_width"] == 16384


def test_unpack_subimage_state_is_translated_and_reset_for_a_new_context(tmp_path):
    """EXT_unpack_subimage's glPixelStorei pnames become pixelStorei commands; a second
    context starts from their initial value, 0 (the alignments' is 4)."""
    calls = Calls()
    start(calls)
    for pname, value in ((0x0CF2, 37), (0x0CF3, 2), (0x0CF4, 5), (0x0CF5, 1)):
        calls.add("glPixelStorei", pname=pname, param=value)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=Pointer(0x5001))
    calls.add("glClear", mask=0x4000)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    stores = [[(c.args["pname"], c.args["value"]) for c in frame if c.op == "pixelStorei"]
              for frame in frames]
    assert stores[0] == [("UNPACK_ROW_LENGTH", 37), ("UNPACK_SKIP_ROWS", 2),
                         ("UNPACK_SKIP_PIXELS", 5), ("UNPACK_ALIGNMENT", 1)]
    assert sorted(stores[1]) == [("UNPACK_ALIGNMENT", 4), ("UNPACK_ROW_LENGTH", 0),
                                 ("UNPACK_SKIP_PIXELS", 0), ("UNPACK_SKIP_ROWS", 0)]


def test_bgra_textures_import(tmp_path):
    """EXT_texture_format_BGRA8888: GL_BGRA_EXT (0x80E1) as internal format and format."""
    calls = Calls()
    start(calls)
    calls.add("glBindTexture", target=0x0DE1, texture=5)
    calls.add("glTexImage2D", target=0x0DE1, level=0, internalformat=0x80E1, width=1,
              height=1, border=0, format=0x80E1, type=0x1401, pixels=b"\x01\x02\x03\x04")
    calls.add("glTexSubImage2D", target=0x0DE1, level=0, xoffset=0, yoffset=0, width=1,
              height=1, format=0x80E1, type=0x1401, pixels=b"\x05\x06\x07\x08")
    calls.add("glClear", mask=0x4000)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    uploads = [(c.op, c.args.get("internalformat"), c.args["format"]) for c in frames[0]
               if c.op.startswith("tex")]
    assert uploads == [("texImage2D", "BGRA_EXT", "BGRA_EXT"),
                       ("texSubImage2D", None, "BGRA_EXT")]


def test_etc1_compressed_textures_import(tmp_path):
    """OES_compressed_ETC1_RGB8_texture: glCompressedTexImage2D with GL_ETC1_RGB8_OES
    (0x8D64) keeps its blocks; an imageSize that is not the recorded data's is an error;
    glCompressedTexSubImage2D (EXT_compressed_ETC1_RGB8_sub_texture) imports too."""
    blocks = bytes(range(16))

    def capture(image_size):
        calls = Calls()
        start(calls)
        calls.add("glBindTexture", target=0x0DE1, texture=5)
        calls.add("glCompressedTexImage2D", target=0x0DE1, level=0, internalformat=0x8D64,
                  width=8, height=3, border=0, imageSize=image_size, data=blocks)
        swap(calls)
        return calls

    _, frames, _ = do_import(tmp_path, capture(16))
    upload = next(c for c in frames[0] if c.op == "compressedTexImage2D")
    assert (upload.args["internalformat"], upload.args["width"], upload.args["height"]) == \
        ("ETC1_RGB8_OES", 8, 3)
    assert upload.args["data"].tobytes() == blocks
    with pytest.raises(InputError, match="glCompressedTexImage2D: imageSize is 24 but apitrace "
                                         "recorded 16 bytes"):
        do_import(tmp_path, capture(24))
    calls = capture(16)
    calls.records.pop()                                  # the swap, added again below
    calls.add("glCompressedTexSubImage2D", target=0x0DE1, level=0, xoffset=4, yoffset=0,
              width=4, height=3, format=0x8D64, imageSize=8, data=blocks[8:])
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    sub = next(c for c in frames[0] if c.op == "compressedTexSubImage2D")
    assert (sub.args["xoffset"], sub.args["width"], sub.args["format"]) == \
        (4, 4, "ETC1_RGB8_OES")


@pytest.mark.parametrize("internalformat, name, block", [
    (0x83F0, "COMPRESSED_RGB_S3TC_DXT1_EXT", 8), (0x83F1, "COMPRESSED_RGBA_S3TC_DXT1_EXT", 8),
    (0x83F2, "COMPRESSED_RGBA_S3TC_DXT3_EXT", 16), (0x83F3, "COMPRESSED_RGBA_S3TC_DXT5_EXT", 16)])
def test_s3tc_compressed_textures_import(tmp_path, internalformat, name, block):
    """EXT_texture_compression_s3tc (/ _dxt1, ANGLE_texture_compression_dxt3 / _dxt5):
    glCompressedTexImage2D and glCompressedTexSubImage2D with 0x83F0..0x83F3 keep their
    blocks, 8 bytes (DXT1) or 16 (DXT3, DXT5) each."""
    blocks = bytes(range(4 * block))
    calls = Calls()
    start(calls)
    calls.add("glBindTexture", target=0x0DE1, texture=5)
    calls.add("glCompressedTexImage2D", target=0x0DE1, level=0, internalformat=internalformat,
              width=8, height=7, border=0, imageSize=len(blocks), data=blocks)
    calls.add("glCompressedTexSubImage2D", target=0x0DE1, level=0, xoffset=4, yoffset=4,
              width=4, height=3, format=internalformat, imageSize=block, data=blocks[:block])
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    upload, sub = (c for c in frames[0] if c.op.startswith("compressed"))
    assert (upload.args["internalformat"], upload.args["data"].tobytes()) == (name, blocks)
    assert (sub.args["format"], sub.args["data"].tobytes()) == (name, blocks[:block])


def test_max_anisotropy_imports_as_a_float_parameter(tmp_path):
    """EXT_texture_filter_anisotropic: glTexParameterf(TEXTURE_MAX_ANISOTROPY_EXT, 16) is
    a texParameterf command; a non-number is a one-line error."""
    def capture(value):
        calls = Calls()
        start(calls)
        calls.add("glBindTexture", target=0x0DE1, texture=5)
        calls.add("glTexParameterf", target=0x0DE1, pname=0x84FE, param=value)
        swap(calls)
        return calls

    _, frames, _ = do_import(tmp_path, capture(16.0))
    command = next(c for c in frames[0] if c.op == "texParameterf")
    assert command.args == {"target": "TEXTURE_2D", "pname": "TEXTURE_MAX_ANISOTROPY_EXT",
                            "value": 16.0}
    with pytest.raises(InputError, match="param of TEXTURE_MAX_ANISOTROPY_EXT must be a "
                                         "number"):
        do_import(tmp_path, capture("x"))


def test_half_float_vertex_attributes_import(tmp_path):
    """OES_vertex_half_float: glVertexAttribPointer with type 0x8D61 (HALF_FLOAT_OES) from a
    buffer object is an attribute array of that type."""
    calls = Calls()
    start(calls)
    calls.add("glGenBuffers", n=1, buffers=[1])
    calls.add("glBindBuffer", target=0x8892, buffer=1)
    calls.add("glVertexAttribPointer", index=0, size=3, type=0x8D61, normalized=0, stride=6,
              pointer=0)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    pointer = next(c for c in frames[0] if c.op == "vertexAttribPointer")
    assert (pointer.args["type"], pointer.args["size"], pointer.args["stride"]) == \
        ("HALF_FLOAT_OES", 3, 6)


def test_vertex_array_objects_import_with_their_own_element_buffers(tmp_path):
    """OES_vertex_array_object: glGenVertexArraysOES / glBindVertexArrayOES /
    glDeleteVertexArraysOES become commands; each object keeps its ELEMENT_ARRAY_BUFFER, so
    a glDrawElements with an offset reads the bound object's, and the default object's
    client indices still need their recorded blob."""
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glGenVertexArraysOES", n=2, arrays=[7, 8])
    calls.add("glGenBuffers", n=2, buffers=[1, 2])
    calls.add("glBindVertexArrayOES", array=7)
    calls.add("glBindBuffer", target=0x8892, buffer=1)
    calls.add("glVertexAttribPointer", index=0, size=2, type=0x1406, normalized=0, stride=0,
              pointer=0)
    calls.add("glEnableVertexAttribArray", index=0)
    calls.add("glBindBuffer", target=0x8893, buffer=2)
    calls.add("glBindVertexArrayOES", array=0)
    calls.add("glBindVertexArray", array=7)       # the GLES 3 name of the same call
    calls.add("glDrawElements", mode=0x0004, count=3, type=0x1403, indices=0)
    calls.add("glDeleteVertexArraysOES", n=2, arrays=[7, 8])
    number = calls.add("glDrawElements", mode=0x0004, count=3, type=0x1403, indices=0)
    swap(calls)
    with pytest.raises(InputError, match=rf"call {number}: glDrawElements: indices point to "
                                         "client memory"):
        do_import(tmp_path, calls)
    calls.records = calls.records[:number] + calls.records[number + 1:]
    _, frames, _ = do_import(tmp_path, calls)
    vao = [(c.op, c.args["id"]) for c in frames[0] if "VertexArray" in c.op]
    assert vao == [("createVertexArray", 1), ("createVertexArray", 2), ("bindVertexArray", 1),
                   ("bindVertexArray", 0), ("bindVertexArray", 1), ("deleteVertexArray", 1),
                   ("deleteVertexArray", 2)]


def test_unsupported_call_is_an_error_naming_it_and_its_number(tmp_path):
    calls = Calls()
    start(calls)
    # ASTC 4x4 (KHR_texture_compression_astc_ldr): a compressed format tilesim does not decode
    number = calls.add("glCompressedTexImage2D", target=0x0DE1, level=0,
                       internalformat=0x93B0, width=4, height=4, border=0, imageSize=16,
                       data=b"\0" * 16)
    swap(calls)
    with pytest.raises(InputError) as error:
        do_import(tmp_path, calls)
    assert "\n" not in str(error.value) and "0x93B0 is not supported" in str(error.value)
    assert f"call {number}" in str(error.value)
    assert "glCompressedTexImage2D" in str(error.value)
    assert "capture.pkl" in str(error.value)
    assert not (tmp_path / "out.tsim").exists()  # nothing half-written

    calls = Calls()
    start(calls)
    number = calls.add("glEnable", cap=0x8DB9)  # GL_FRAMEBUFFER_SRGB_EXT: changes the image
    swap(calls)
    with pytest.raises(InputError, match=rf"call {number}: glEnable: cap 0x8DB9"):
        do_import(tmp_path, calls)


def test_hostile_pickle_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    command = f"touch {marker}".encode()
    hostile = tmp_path / "capture.pkl"
    hostile.write_bytes(b"\x80\x02cos\nsystem\nq\x01U" + bytes([len(command)]) + command
                        + b"\x85R.")
    with pytest.raises(InputError, match=r"os\.system"):
        import_pickle(hostile, tmp_path / "out.tsim", compiler=fake_compiler)
    assert not marker.exists()
    assert not (tmp_path / "out.tsim").exists()
    # bytearray(n) would allocate n bytes on the file's say-so: refused too
    hostile.write_bytes(b"\x80\x02c__builtin__\nbytearray\nq\x01J\x00\x00\x00\x40\x85R.")
    with pytest.raises(InputError, match="bytearray"):
        import_pickle(hostile, tmp_path / "out.tsim", compiler=fake_compiler)


def test_mapped_buffer_writes_become_buffer_sub_data(tmp_path):
    data = bytes(range(32))
    calls = Calls()
    start(calls)
    calls.add("glGenBuffers", n=2, buffers=[1, 2])
    calls.add("glBindBuffer", target=0x8892, buffer=1)
    calls.add("glBufferData", target=0x8892, size=64, data=0, usage=0x88E8)
    calls.add("glMapBufferOES", ret=Pointer(0x9000), target=0x8892, access=0x88B9)
    calls.add("memcpy", flags=1, dest=Pointer(0x9010), src=data, n=32)
    calls.add("glUnmapBufferOES", ret=1, target=0x8892)
    calls.add("glBindBuffer", target=0x8892, buffer=2)
    calls.add("glBufferData", target=0x8892, size=64, data=b"\1" * 64, usage=0x88E4)
    calls.add("glMapBufferRangeEXT", ret=Pointer(0xA000), target=0x8892, offset=8, length=16,
              access=0x2)
    calls.add("glBindBuffer", target=0x8892, buffer=1)  # another buffer bound meanwhile
    calls.add("memcpy", flags=1, dest=Pointer(0xA004), src=data[:4], n=4)
    swap(calls)
    summary, frames, _ = do_import(tmp_path, calls)
    subs = [(c.args["offset"], c.args["data"].tobytes()) for c in frames[0]
            if c.op == "bufferSubData"]
    assert subs == [(16, data), (12, data[:4])]
    tail = [(c.op, c.args.get("id")) for c in frames[0] if c.op in ("bindBuffer",
                                                                     "bufferSubData")][-3:]
    assert tail == [("bindBuffer", 2), ("bufferSubData", None), ("bindBuffer", 1)]
    assert summary.folded["glMapBufferOES"] == 1

    calls.records.insert(-1, (len(calls.records), b"memcpy",
                              [(b"dest", Pointer(0xDEAD)), (b"src", b"x"), (b"n", 1)],
                              None, 1))
    with pytest.raises(InputError, match="memcpy: a write to memory that is not a mapped"):
        do_import(tmp_path, calls)


def test_new_context_resets_state_and_maps_names_per_share_group(tmp_path):
    calls = Calls()
    start(calls)
    calls.add("glEnable", cap=0x0B71)
    calls.add("glDepthFunc", func=0x0203)
    calls.add("glGenTextures", n=1, textures=[1])
    calls.add("glActiveTexture", texture=0x84C1)
    calls.add("glBindTexture", target=0x0DE1, texture=1)
    calls.add("glClear", mask=0x4000)
    calls.add("eglDestroyContext", ret=1, dpy=Pointer(0x4000), ctx=CTX)
    calls.add("eglCreateContext", ret=Pointer(0x5100), dpy=Pointer(0x4000), config=CONFIG,
              share_context=0, attrib_list=[])
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=Pointer(0x5100))
    calls.add("glGenTextures", n=1, textures=[1])  # the new context numbers from 1 again
    calls.add("glBindTexture", target=0x0DE1, texture=1)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    commands = [(c.op, c.args) for c in frames[0]]
    reset = commands[[op for op, _ in commands].index("clear") + 1:]
    names = [op for op, _ in reset]
    assert ("disable", {"cap": "DEPTH_TEST"}) in reset
    assert ("depthFunc", {"func": "LESS"}) in reset
    assert ("bindTexture", {"target": "TEXTURE_2D", "id": 0}) in reset
    assert names.index("activeTexture") < names.index("deleteTexture")
    assert ("deleteTexture", {"id": 1}) in reset  # the destroyed context's texture
    assert reset[-3:-1] == [("createTexture", {"id": 2}),
                            ("bindTexture", {"target": "TEXTURE_2D", "id": 2})]


LOADER, PBUFFER = Pointer(0x5200), Pointer(0x6200)


def _shared_contexts(calls: Calls) -> None:
    """The draw context (window) sets state; a loader context sharing its objects, current
    on a pbuffer of its own, sets other state, uploads, clears its pbuffer and swaps it; the
    draw context is made current again and draws."""
    start(calls)
    calls.add("eglCreateContext", ret=LOADER, dpy=Pointer(0x4000), config=CONFIG,
              share_context=CTX, attrib_list=[])
    calls.add("eglCreatePbufferSurface", ret=PBUFFER, dpy=Pointer(0x4000), config=CONFIG,
              attrib_list=[0x3057, 16, 0x3056, 16, 0x3038])
    calls.add("glGenTextures", n=1, textures=[5])
    calls.add("glActiveTexture", texture=0x84C0 + 2)
    calls.add("glBindTexture", target=0x0DE1, texture=5)
    calls.add("glGenBuffers", n=1, buffers=[7])
    calls.add("glBindBuffer", target=0x8892, buffer=7)
    calls.add("glBufferData", target=0x8892, size=16, data=bytes(16), usage=0x88E4)
    calls.add("glVertexAttribPointer", index=0, size=2, type=0x1406, normalized=0, stride=8,
              pointer=0)
    calls.add("glEnableVertexAttribArray", index=0)
    calls.add("glBindBuffer", target=0x8892, buffer=0)
    calls.add("glEnable", cap=0x0B71)
    calls.add("glClearColor", red=0.25, green=0.5, blue=0.75, alpha=1.0)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=PBUFFER, read=PBUFFER,
              ctx=LOADER)
    calls.add("glViewport", flags=1, x=0, y=0, width=16, height=16)
    calls.add("glClearColor", red=1.0, green=0.0, blue=1.0, alpha=1.0)
    calls.add("glEnable", cap=0x0BE2)
    calls.add("glBindTexture", target=0x0DE1, texture=5)  # the draw context's texture
    calls.add("glTexImage2D", target=0x0DE1, level=0, internalformat=0x1908, width=1,
              height=1, border=0, format=0x1908, type=0x1401, pixels=bytes(4))
    calls.add("glClear", mask=0x4000)   # its own pbuffer: never shown
    calls.add("eglSwapBuffers", ret=1, dpy=Pointer(0x4000), surface=PBUFFER)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=CTX)
    calls.add("glClear", mask=0x4000)


def test_switching_back_to_a_context_puts_its_state_back(tmp_path):
    """Issue 31 item 2: a context made current again gets its own state back (EGL 1.4
    §3.7.3), not the loader's, and keeps the share group's objects (§3.7.1)."""
    calls = Calls()
    _shared_contexts(calls)
    swap(calls)
    summary, frames, _ = do_import(tmp_path, calls)
    assert summary.frames == 1 and summary.skipped["glClear (another EGL surface)"] == 1
    commands = [(c.op, c.args) for c in frames[0]]
    back = commands[[op for op, _ in commands].index("texImage2D") + 1:]
    assert [op for op, _ in back].count("clear") == 1   # the loader's clear is not drawn
    before = back[:[op for op, _ in back].index("clear")]
    # the loader's state reset, then the draw context's put back, pointer with its buffer
    assert ("disable", {"cap": "BLEND"}) in before
    assert before.index(("bindBuffer", {"target": "ARRAY_BUFFER", "id": 1})) < \
        [op for op, _ in before].index("vertexAttribPointer") < \
        before.index(("bindBuffer", {"target": "ARRAY_BUFFER", "id": 0}))
    assert ("clearColor", {"red": 0.25, "green": 0.5, "blue": 0.75, "alpha": 1.0}) in before
    assert ("enable", {"cap": "DEPTH_TEST"}) in before
    assert ("enableVertexAttribArray", {"index": 0}) in before
    unit = before.index(("activeTexture", {"unit": 2}))
    assert before[unit + 1] == ("bindTexture", {"target": "TEXTURE_2D", "id": 1})
    assert ("viewport", {"x": 0, "y": 0, "width": 64, "height": 48}) in before
    assert "deleteTexture" not in [op for op, _ in before]   # the group's objects live on


def test_a_binding_the_context_deleted_is_not_put_back(tmp_path):
    """Deleting a bound object unbinds it in the deleting context (ES 2.0 §3.8.12): a switch
    back does not bind the deleted texture again."""
    calls = Calls()
    _shared_contexts(calls)
    calls.add("glDeleteTextures", n=1, textures=[5])
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=PBUFFER, read=PBUFFER,
              ctx=LOADER)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=CTX)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    ops = [(c.op, c.args) for c in frames[0]]
    after = ops[ops.index(("deleteTexture", {"id": 1})):]
    assert ("bindTexture", {"target": "TEXTURE_2D", "id": 1}) not in after


def test_only_the_shown_surface_s_swaps_end_frames(tmp_path):
    """The loader's eglSwapBuffers of its pbuffer ends no frame; the window is the first
    window surface made current, even when a pbuffer was current before it."""
    calls = Calls()
    _shared_contexts(calls)
    swap(calls)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=PBUFFER, read=PBUFFER,
              ctx=LOADER)
    calls.add("eglSwapBuffers", ret=1, dpy=Pointer(0x4000), surface=PBUFFER)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=SURFACE, read=SURFACE,
              ctx=CTX)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    summary, frames, _ = do_import(tmp_path, calls)
    assert summary.frames == 2 and (summary.width, summary.height) == (64, 48)


def test_window_size_is_the_latest_the_capture_told_before_the_first_swap(tmp_path):
    """A window resized after it was made current: apitrace's fake glViewport says the size
    at eglMakeCurrent (320x200), the program's later eglQuerySurface the size it shows
    (320x240, EGL 1.4 §3.5.6); the later one is the window's."""
    calls = Calls()
    start(calls, width=320, height=200)
    calls.add("eglQuerySurface", ret=1, dpy=Pointer(0x4000), surface=SURFACE,
              attribute=0x3057, value=[320])
    calls.add("eglQuerySurface", ret=1, dpy=Pointer(0x4000), surface=SURFACE,
              attribute=0x3056, value=[240])
    calls.add("glClear", mask=0x4000)
    swap(calls)
    calls.add("eglQuerySurface", ret=1, dpy=Pointer(0x4000), surface=SURFACE,
              attribute=0x3056, value=[100])   # after the first frame: not the window's
    calls.add("glClear", mask=0x4000)
    swap(calls)
    summary, _, _ = do_import(tmp_path, calls)
    assert (summary.width, summary.height) == (320, 240)
    calls = Calls()
    start(calls, width=320, height=200)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    summary, _, _ = do_import(tmp_path, calls)
    assert (summary.width, summary.height) == (320, 200)


def test_relink_is_delete_then_create_with_the_same_id(tmp_path):
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    calls.add("glShaderSource", shader=2, count=1,
              string=[FS.replace("color[1]", "color[0]").encode()], length=0)
    calls.add("glCompileShader", shader=2)
    calls.add("glLinkProgram", program=3)
    calls.add("glDeleteProgram", program=3)  # in use: GL defers the deletion
    calls.add("glClear", mask=0x4000)
    calls.add("glUseProgram", program=0)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    program_ops = [(c.op, c.args.get("id")) for c in frames[0]
                   if c.op in ("createProgram", "deleteProgram", "useProgram", "clear")]
    assert program_ops == [("createProgram", 1), ("useProgram", 1), ("deleteProgram", 1),
                           ("createProgram", 1), ("useProgram", 1), ("clear", None),
                           ("useProgram", 0), ("deleteProgram", 1)]


def test_window_size_must_be_known(tmp_path):
    calls = Calls()
    calls.add("glClear", mask=0x4000)
    swap(calls)
    with pytest.raises(InputError, match="window size"):
        do_import(tmp_path, calls)
    summary, frames, _ = do_import(tmp_path, calls, size=(32, 16))
    assert (summary.width, summary.height) == (32, 16)


def test_program_specs():
    assert parse_program_spec("glmark2-es2:shading:shading=phong").benchmark == \
        "shading:shading=phong"
    assert parse_program_spec("es2gears").app == "es2gears"
    with pytest.raises(InputError, match="unknown program spec"):
        parse_program_spec("quake3")
    assert glmark2_benchmark("build:use-vbo=false", 3) == "build:use-vbo=false:nframes=3"
    assert glmark2_benchmark("shading:nframes=9", 2) == "shading:nframes=2"
    assert glmark2_benchmark("", 4) == ":nframes=4"


def test_missing_tools_name_their_debian_package(monkeypatch, tmp_path):
    from tilesim.render.traces import capture as capture_module

    monkeypatch.setattr(capture_module.shutil, "which", lambda name: None)
    with pytest.raises(ToolMissing, match=r"xvfb-run \(Debian package xvfb\).*apitrace "
                                          r"\(Debian package apitrace\).*glmark2-es2-x11"):
        capture_module.capture("glmark2-es2:build", tmp_path / "x.trace", frames=1)
    with pytest.raises(ToolMissing, match="mesa-utils-bin"):
        capture_module.capture("es2gears", tmp_path / "x.trace", frames=1)


# --- compare -------------------------------------------------------------------------------


def _png(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)


@pytest.mark.slow
def test_compare_pairs_render_and_reference_layouts(tmp_path):
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 256, (24, 32, 3), dtype=np.uint8) for _ in range(3)]
    for k, image in enumerate(frames):
        alpha = np.full((24, 32, 1), 255, np.uint8)
        _png(tmp_path / "render" / "frames" / f"{k:06d}.png",
             np.concatenate([image, alpha], axis=2))  # tilesim render: RGBA
        changed = image.copy()
        if k == 1:
            changed[4:8, 4:8] = 255 - changed[4:8, 4:8]
        _png(tmp_path / "ref" / f"frame_{k:06d}.png", changed)
    _png(tmp_path / "ref" / "frame_000003.png", frames[0])
    result = compare.compare_folders(tmp_path / "render", tmp_path / "ref")
    assert [f.frame for f in result.frames] == [0, 1, 2] and result.only_b == [3]
    assert result.frames[0].mssim == 1.0 and math.isinf(result.frames[0].psnr)
    assert result.frames[1].mssim < 0.99 and result.frames[1].max_diff > 100
    summary = result.summary()
    assert summary["worst_frame"] == 1 and summary["max_diff"] == result.frames[1].max_diff

    from skimage.metrics import structural_similarity

    expected = structural_similarity(frames[1], np.asarray(Image.open(
        tmp_path / "ref" / "frame_000001.png")), channel_axis=-1, gaussian_weights=True,
        sigma=1.5, use_sample_covariance=False, data_range=255)
    assert result.frames[1].mssim == pytest.approx(expected)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", "compare", *args],
                              capture_output=True, text=True, cwd=ROOT)

    ok = cli(str(tmp_path / "render"), str(tmp_path / "ref"), "--min-mssim", "0.5", "--json")
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["passed"] and report["frames"][0]["psnr"] is None
    failed = cli(str(tmp_path / "render"), str(tmp_path / "ref"), "--min-mssim", "0.999")
    assert failed.returncode == 1 and "FAILED" in failed.stdout
    empty = cli(str(tmp_path / "render"), str(tmp_path / "nowhere"))
    assert empty.returncode == 2 and "no such folder" in empty.stderr


def test_compare_refuses_different_sizes(tmp_path):
    _png(tmp_path / "a" / "000000.png", np.zeros((16, 16, 3), np.uint8))
    _png(tmp_path / "b" / "000000.png", np.zeros((16, 20, 3), np.uint8))
    with pytest.raises(InputError, match="sizes differ"):
        compare.compare_folders(tmp_path / "a", tmp_path / "b")


@pytest.mark.slow
def test_compare_judges_frames_below_the_ssim_window_as_probes(tmp_path):
    """Issue 31 item 3: 1x1 and 3x2 frames (a test program's glReadPixels probes) compare by
    their largest difference and the pixels over a tolerance, instead of an error."""
    pixel = np.array([[[10, 200, 30]]], np.uint8)
    _png(tmp_path / "a" / "frame_000000.png", pixel)
    _png(tmp_path / "b" / "frame_000000.png", pixel)
    strip = np.full((2, 3, 3), 90, np.uint8)
    _png(tmp_path / "a" / "frame_000001.png", strip)
    strip[1, 2, 0] += 2
    _png(tmp_path / "b" / "frame_000001.png", strip)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", "compare",
                               str(tmp_path / "a"), str(tmp_path / "b"), *args],
                              capture_output=True, text=True, cwd=ROOT)

    done = cli("--min-mssim", "0.99", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] and report["tolerance"] == 2
    assert [(f["method"], f["mssim"], f["max_diff"], f["over_tolerance"])
            for f in report["frames"]] == [("probe", None, 0, 0.0), ("probe", None, 2, 0.0)]
    assert report["summary"]["min_mssim"] is None
    exact = cli("--tolerance", "0")
    assert exact.returncode == 1, exact.stderr
    assert "     1     probe     " in exact.stdout and "16.67% of pixels over 0" in exact.stdout
    assert "2 frame(s) below the 11x11 SSIM window compared as probes within 0/255: 1 with " \
           "pixels over it (1)" in exact.stdout
    assert "FAILED: probes within 0/255 required" in exact.stdout
    assert cli().returncode == 0  # no check asked for: a report only
    bad = cli("--tolerance", "300")
    assert bad.returncode == 2 and "expected a value in 0..255" in bad.stderr


@pytest.mark.mesa
@pytest.mark.slow
def test_a_1x1_glreadpixels_capture_compares_exactly_with_mesa(tmp_path):
    """A real program whose frames are a 1x1 glReadPixels (as piglit's probes read) imports,
    renders and compares with Mesa's reference and with what the program read."""
    require_tools("apitrace")
    require_mesa()
    trace = tmp_path / "probe.trace"
    proc = subprocess.run(["apitrace", "trace", "--api", "egl", "-o", str(trace),
                           sys.executable, str(OFFSCREEN_PROGRAM), "--mode", "fbo", "--frames",
                           "2", "--rect", "80,60,1,1", "--out", str(tmp_path / "read")],
                          capture_output=True, timeout=120, env=program_environment(),
                          check=False)
    assert proc.returncode == 0 and trace.exists(), proc.stderr.decode(errors="replace")

    def tilesim(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, check=False)

    for command in (["import", str(trace), "-o", str(tmp_path / "x.tsim")],
                    ["render", str(tmp_path / "x.tsim"), "--out", str(tmp_path / "render")],
                    ["reference", str(trace), "--out", str(tmp_path / "ref"), "--driver",
                     "llvmpipe"]):
        done = tilesim(*command)
        assert done.returncode == 0, (command, done.stderr)
    # Mesa's replay of the capture is exactly what the program read (both llvmpipe); tilesim's
    # pixel of the interpolated triangle is within piglit's probe tolerance of it.
    for a, b, tolerance, largest in (("ref", "read", "0", 0), ("render", "ref", "2", 2)):
        done = tilesim("compare", str(tmp_path / a), str(tmp_path / b), "--tolerance",
                       tolerance, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        frames = json.loads(done.stdout)["frames"]
        assert [f["method"] for f in frames] == ["probe"] * 2, frames
        assert all(f["max_diff"] <= largest and f["over_tolerance"] == 0 for f in frames)


# --- real captures -------------------------------------------------------------------------


def _es2gears_installed() -> bool:
    import shutil

    return any(shutil.which(n) for n in ES2GEARS_EXECUTABLES)


@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("spec,size", [("es2gears", None),
                                       ("glmark2-es2:build:use-vbo=false", (160, 120))])
def test_real_capture_imports_faithfully(tmp_path, spec, size):
    """Capture 3 frames, import, replay the import on Mesa: it must look like apitrace's
    own replay of the capture."""
    require_tools("apitrace", "xvfb-run")
    if spec.startswith("glmark2"):
        require_tools("glmark2-es2")
    elif not _es2gears_installed():
        require_tools("es2gears_x11")  # skips (fails in CI) naming the program
    require_mesa()
    from tilesim.render.reference.replay_gl import replay
    from tilesim.render.traces.apitrace_import import import_apitrace
    from tilesim.render.traces.capture import capture, reference_frames

    captured = capture(spec, tmp_path / "x.trace", frames=3, size=size)
    assert captured.frames == 3
    summary = import_apitrace(tmp_path / "x.trace", tmp_path / "x.tsim")
    assert summary.frames == 3 and summary.programs == 1
    assert summary.skipped  # both programs query GL state that cannot change the image
    references = reference_frames(tmp_path / "x.trace", tmp_path / "ref")
    assert [p.name for p in references] == [f"frame_{k:06d}.png" for k in range(3)]
    result = replay(tmp_path / "x.tsim")
    assert len(result.images) == 3
    comparison = compare_images(
        result.images, {n: read_png(p) for n, p in
                        compare.frame_files(tmp_path / "ref").items()})
    assert comparison.summary()["min_mssim"] >= 0.99, comparison.frames
    assert result.images[2][:, :, :3].max() > 0  # something was drawn


@pytest.mark.mesa
@pytest.mark.slow
def test_an_es2gears_start_that_hangs_is_tried_once_more(tmp_path, monkeypatch):
    """A capture whose first start never comes up (killed at its bound with everything it
    started) is run once more; a second hang is the one-line error."""
    require_tools("apitrace", "xvfb-run")
    if not _es2gears_installed():
        require_tools("es2gears_x11")
    from tilesim.errors import ProgramTimedOut
    from tilesim.render.traces import capture as capture_module

    real, calls = capture_module._run_traced, []

    def first_hangs(*args):
        calls.append(args)
        if len(calls) == 1:
            raise ProgramTimedOut("es2gears ran longer than 61 s", source="timeout es2gears")
        return real(*args)

    monkeypatch.setattr(capture_module, "_run_traced", first_hangs)
    assert capture_module.capture("es2gears", tmp_path / "x.trace", frames=2).frames == 2
    assert len(calls) >= 2

    def always_hangs(*args):
        raise ProgramTimedOut("es2gears ran longer than 61 s", source="timeout es2gears")

    monkeypatch.setattr(capture_module, "_run_traced", always_hangs)
    with pytest.raises(ProgramTimedOut, match="ran longer than"):
        capture_module.capture("es2gears", tmp_path / "y.trace", frames=2)


@pytest.mark.mesa
def test_commands_added_for_imports_replay_on_mesa():
    """copyTexSubImage2D and depth textures (added to the schema for imported traces) replay
    on Mesa without GL errors (the replay is strict)."""
    require_mesa()
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.reference.replay_gl import replay

    gl = Recorder(8, 8)
    gl.clearColor(1.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    color = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", color)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 8, 8, 0, "RGBA", "UNSIGNED_BYTE", None)
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 0, 0, 0, 0, 8, 8)
    depth = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", depth)
    gl.texImage2D("TEXTURE_2D", 0, "DEPTH_COMPONENT", 8, 8, 0, "DEPTH_COMPONENT",
                  "UNSIGNED_INT", None)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer(fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", color)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth)
    gl.clearColor(0.0, 0.0, 1.0, 1.0)
    gl.clear("DEPTH_BUFFER_BIT")
    gl.bindFramebuffer(0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()
    result = replay(gl)  # strict: any GL error raises
    assert result.images[0][0, 0].tolist() == [0, 0, 255, 255]


@pytest.mark.mesa
def test_a_program_mesa_compiles_but_tilesim_cannot_run_is_one_line_naming_the_link(tmp_path):
    """Issue 31 item 5: a second gl_FragData (EXT_draw_buffers) in a captured program is a
    one-line InputError naming the capture, the program and its glLinkProgram call, not a
    traceback."""
    require_mesa()
    calls = Calls()
    start(calls)
    program(calls, fs="#extension GL_EXT_draw_buffers : require\n"
                      "precision mediump float;\nvoid main() { gl_FragData[0] = vec4(1.0); "
                      "gl_FragData[1] = vec4(0.5); }\n")
    swap(calls)
    source = calls.write(tmp_path / "capture.pkl")
    with pytest.raises(InputError) as info:
        import_pickle(source, tmp_path / "out.tsim")
    assert str(info.value) == (
        f"{source}: program 3 (glLinkProgram call 17): the fragment shader writes "
        "gl_FragData (EXT_draw_buffers: more than one color output), which tilesim does not "
        "implement")
    assert not (tmp_path / "out.tsim").exists()


@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("scene", ["bgra_textures", "unpack_subimage", "texture_units_high",
                                   "vertex_array_objects", "point_size_255"])
def test_captured_extension_programs_import_render_and_match_mesa(tmp_path, scene):
    """Issue 31: a real GLES2 program, Mesa's replay of a conformance scene (GL_BGRA_EXT
    sub-rectangle uploads, EXT_unpack_subimage, texture units 8..31 after querying 192,
    OES_vertex_array_object, 255-pixel points), captured with apitrace: the capture imports
    (keeping the limits it queried), renders and matches Mesa's reference of it."""
    require_tools("apitrace")
    require_mesa()
    trace, frames = capture_scene(tmp_path, scene)

    def tilesim(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, check=False)

    done = tilesim("import", str(trace), "-o", str(tmp_path / "x.tsim"))
    assert done.returncode == 0, done.stderr
    assert "limits: texture_units 192 (queried at call" in done.stdout
    for command in (["render", str(tmp_path / "x.tsim"), "--out", str(tmp_path / "render")],
                    ["reference", str(trace), "--out", str(tmp_path / "ref"), "--driver",
                     "llvmpipe"]):
        done = tilesim(*command)
        assert done.returncode == 0, (command, done.stderr)
    summary = compare.compare_folders(tmp_path / "render", tmp_path / "ref").summary()
    assert summary["frames"] == frames and summary["min_mssim"] >= 0.995, summary


SHARED_CONTEXTS_PROGRAM = ROOT / "scripts" / "shared_contexts_gles2.py"


@pytest.mark.mesa
@pytest.mark.slow
def test_shared_context_program_imports_renders_and_matches_mesa(tmp_path):
    """Issue 31 item 2: a real program (scripts/shared_contexts_gles2.py) that switches every
    frame between a loader context, which uploads GL_BGRA_EXT sub-rectangles with
    EXT_unpack_subimage into a shared texture on a pbuffer of its own, and the draw context,
    which samples it from unit 37 of the 192 it queried: the capture imports (3 frames: the
    loader's swaps end none), renders and matches Mesa's reference of it."""
    require_tools("apitrace")
    require_mesa()
    trace = tmp_path / "shared.trace"
    proc = subprocess.run(["apitrace", "trace", "--api", "egl", "-o", str(trace),
                           sys.executable, str(SHARED_CONTEXTS_PROGRAM), "--frames", "3"],
                          capture_output=True, timeout=120, env=program_environment(),
                          check=False)
    assert proc.returncode == 0 and trace.exists(), proc.stderr.decode(errors="replace")

    def tilesim(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, check=False)

    done = tilesim("import", str(trace), "-o", str(tmp_path / "x.tsim"))
    assert done.returncode == 0, done.stderr
    assert "imported 3 frame(s) of 96x64" in done.stdout
    assert "texture_units 192 (queried at call" in done.stdout
    for command in (["render", str(tmp_path / "x.tsim"), "--out", str(tmp_path / "render")],
                    ["reference", str(trace), "--out", str(tmp_path / "ref")]):
        done = tilesim(*command)
        assert done.returncode == 0, (command, done.stderr)
    summary = compare.compare_folders(tmp_path / "render", tmp_path / "ref").summary()
    assert summary["frames"] == 3 and summary["min_mssim"] >= 0.995, summary


# --- programs that never swap: frames at glReadPixels ----------------------------------------


def read_pixels(calls: Calls, x=0, y=0, width=64, height=48) -> int:
    return calls.add("glReadPixels", x=x, y=y, width=width, height=height, format=0x1908,
                     type=0x1401, pixels=Pointer(0x9000))


def test_frames_end_at_glreadpixels_when_the_capture_never_swaps(tmp_path):
    calls = Calls()
    start(calls)
    for k in range(3):
        calls.add("glClearColor", red=0.25 * k, green=0.0, blue=0.0, alpha=1.0)
        calls.add("glClear", mask=0x4000)
        read_pixels(calls, 4, 2, 16, 8)
    calls.add("glClear", mask=0x4000)  # after the last read: not a complete frame
    summary, frames, out = do_import(tmp_path, calls)
    assert summary.frame_end == "glReadPixels" and summary.frames == len(frames) == 3
    assert ops(frames[1]) == ["clearColor", "clear", "readPixels", "endFrame"]
    assert frames[1][2].args == {"x": 4, "y": 2, "width": 16, "height": 8}
    assert (summary.width, summary.height) == (64, 48)  # the window's, not the rectangle's
    with open_trace(out) as trace:
        assert trace.source["frame_end"] == "glReadPixels"
    _, frames, _ = do_import(tmp_path, calls, frames=2)
    assert len(frames) == 2


def test_swaps_win_in_auto_and_frame_end_can_be_chosen(tmp_path):
    calls = Calls()
    start(calls)
    for _ in range(2):
        calls.add("glClear", mask=0x4000)
        read_pixels(calls, 0, 0, 8, 8)
        swap(calls)
    summary, frames, _ = do_import(tmp_path, calls)
    assert summary.frame_end == "eglSwapBuffers" and summary.skipped["glReadPixels"] == 2
    assert "readPixels" not in ops(frames[0]) + ops(frames[1])
    summary, frames, _ = do_import(tmp_path, calls, frame_end="readpixels")
    assert summary.frame_end == "glReadPixels" and len(frames) == 2
    assert ops(frames[1]) == ["clear", "readPixels", "endFrame"]
    assert summary.folded["eglSwapBuffers"] == 1  # the second swap follows the last read
    with pytest.raises(InputError, match=r"capture\.pkl: the capture holds no complete frame "
                                         r"\(no glFinish to end one\)"):
        do_import(tmp_path, calls, frame_end="finish")
    with pytest.raises(InputError, match="--frame-end 'never'"):
        do_import(tmp_path, calls, frame_end="never")


def test_surfaceless_program_reading_a_framebuffer_object(tmp_path):
    """No window at all (EGL_KHR_surfaceless_context): frames are what it read from its
    framebuffer object; the trace's window is the smallest holding every rectangle read."""
    calls = Calls()
    calls.add("eglCreateContext", ret=CTX, dpy=Pointer(0x4000), config=CONFIG, share_context=0,
              attrib_list=[0x3098, 2, 0x3038])
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=0, read=0, ctx=CTX)
    calls.add("glGenFramebuffers", n=1, framebuffers=[7])
    calls.add("glBindFramebuffer", target=0x8D40, framebuffer=7)
    calls.add("glClear", mask=0x4000)
    read_pixels(calls, 8, 4, 20, 10)
    calls.add("glClear", mask=0x4000)
    read_pixels(calls, 0, 0, 30, 12)
    summary, frames, out = do_import(tmp_path, calls)
    assert (summary.frames, summary.width, summary.height) == (2, 30, 14)
    calls.records[-1] = calls.records[-1][:2] + ([(k, 20000 if k == b"width" else v)
                                                  for k, v in calls.records[-1][2]],
                                                 *calls.records[-1][3:])
    with pytest.raises(InputError, match=rf"capture\.pkl: call {len(calls.records) - 1}: the "
                                         r"window is 20000x14, larger than the 16384x16384"):
        do_import(tmp_path, calls)
    assert ops(frames[0]) == ["createFramebuffer", "bindFramebuffer", "clear", "readPixels",
                              "endFrame"]
    with open_trace(out) as trace:
        assert trace.source["surfaceless"] is True


def test_glfinish_ending_a_frame_with_a_framebuffer_object_bound_is_an_error(tmp_path):
    calls = Calls()
    start(calls)
    calls.add("glGenFramebuffers", n=1, framebuffers=[1])
    calls.add("glBindFramebuffer", target=0x8D40, framebuffer=1)
    calls.add("glClear", mask=0x4000)
    number = calls.add("glFinish")
    with pytest.raises(InputError, match=rf"capture\.pkl: call {number}: glFinish ends frame 0 "
                                         r"while framebuffer 1 is bound.*--frame-end readpixels"):
        do_import(tmp_path, calls)
    calls = Calls()
    start(calls)
    calls.add("glClear", mask=0x4000)
    number = read_pixels(calls, 0, 0, 0, 8)
    with pytest.raises(InputError, match=rf"call {number}: glReadPixels ends frame 0 but reads "
                                         r"the 0x8 rectangle"):
        do_import(tmp_path, calls)


def _readpixels_frames():
    """Frames that end with readPixels of a framebuffer object's sub-rectangle, of the window,
    and a frame without one (its image: the window)."""
    from tilesim.render.gl.commands import Recorder

    gl = Recorder(24, 16)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 20, 12, 0, "RGBA", "UNSIGNED_BYTE", None)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer(fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture)
    gl.clearColor(1.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("SCISSOR_TEST")
    gl.scissor(2, 3, 5, 4)
    gl.clearColor(0.0, 0.0, 1.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.disable("SCISSOR_TEST")
    gl.readPixels(1, 2, 8, 6)
    gl.endFrame()
    gl.bindFramebuffer(0)
    gl.clearColor(0.0, 1.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.readPixels(0, 0, 24, 16)
    gl.endFrame()
    gl.clearColor(1.0, 1.0, 1.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()
    return gl


def _expected_readpixels_images():
    first = np.zeros((6, 8, 4), np.uint8)
    first[...] = (255, 0, 0, 255)
    # the scissored clear covers x 2..6, y 3..6 of the framebuffer: x 1..5, y 1..4 of the read,
    # whose row 0 is its top (y 7 of the framebuffer)
    first[6 - 5:6 - 1, 1:6] = (0, 0, 255, 255)
    return [first, np.full((16, 24, 4), (0, 255, 0, 255), np.uint8),
            np.full((16, 24, 4), 255, np.uint8)]


def test_renderer_images_are_what_readpixels_read():
    from tilesim.render.pipeline.renderer import Renderer

    gl = _readpixels_frames()
    images = [r.image for r in Renderer(24, 16).render(gl.recorded_frames())]
    for image, expected in zip(images, _expected_readpixels_images(), strict=True):
        assert image.shape == expected.shape and (image == expected).all()
    bad = [[make_command("readPixels", {"x": 20, "y": 0, "width": 8, "height": 4}),
            make_command("endFrame", {})]]
    with pytest.raises(InputError, match=r"frame 0, command 0 \(readPixels\): readPixels: the "
                                         r"8x4 rectangle at \(20, 0\) does not lie inside the "
                                         r"24x16 framebuffer"):
        list(Renderer(24, 16).render(bad))


def test_readpixels_of_a_buffer_without_alpha_reads_alpha_one():
    """ES 2.0 §4.3.1: an RGB8_OES (OES_rgb8_rgba8) or RGB565 color buffer reads alpha as 1
    (what llvmpipe returns; conformance scene rgb8_rgba8_renderbuffers compares it)."""
    from tilesim.render.pipeline.renderer import Renderer

    for fmt, alpha in (("RGB8", 255), ("RGB565", 255), ("RGBA8", 64)):
        gl = Recorder(8, 4)
        gl.bindFramebuffer("FRAMEBUFFER", gl.createFramebuffer())
        rb = gl.createRenderbuffer()
        gl.bindRenderbuffer("RENDERBUFFER", rb)
        gl.renderbufferStorage("RENDERBUFFER", fmt, 8, 4)
        gl.framebufferRenderbuffer("FRAMEBUFFER", "COLOR_ATTACHMENT0", "RENDERBUFFER", rb)
        gl.clearColor(0.0, 1.0, 0.0, 0.25)
        gl.clear("COLOR_BUFFER_BIT")
        gl.readPixels(0, 0, 8, 4)
        gl.endFrame()
        image = next(iter(Renderer(8, 4).render(gl.recorded_frames()))).image
        assert (image[..., 3] == alpha).all() and (image[..., 1] == 255).all(), fmt


@pytest.mark.slow
@pytest.mark.mesa
def test_mesa_replay_images_are_what_readpixels_read():
    require_mesa()
    from tilesim.render.reference.replay_gl import replay

    result = replay(_readpixels_frames())
    for image, expected in zip(result.images, _expected_readpixels_images(), strict=True):
        assert image.shape == expected.shape and (image == expected).all()
    with pytest.raises(InputError, match="does not lie inside the 24x16 framebuffer"):
        replay([[make_command("readPixels", {"x": 0, "y": 10, "width": 4, "height": 8}),
                 make_command("endFrame", {})]], width=24, height=16)


OFFSCREEN_PROGRAM = ROOT / "scripts" / "offscreen_gles2.py"


def _capture_offscreen(tmp_path: Path, mode: str, frames: int) -> Path:
    """Capture scripts/offscreen_gles2.py (a real GLES2 program that never swaps) with
    apitrace on Mesa llvmpipe; what it read is saved in tmp_path/read."""
    trace = tmp_path / f"{mode}.trace"
    proc = subprocess.run(["apitrace", "trace", "--api", "egl", "-o", str(trace),
                           sys.executable, str(OFFSCREEN_PROGRAM), "--mode", mode, "--frames",
                           str(frames), "--out", str(tmp_path / "read")],
                          capture_output=True, timeout=120, env=program_environment(),
                          check=False)
    assert proc.returncode == 0 and trace.exists(), proc.stderr.decode(errors="replace")
    return trace


@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("mode,frame_end", [("fbo", "glReadPixels"),
                                            ("window", "glReadPixels"), ("finish", "glFinish")])
def test_program_that_never_swaps_imports_renders_and_matches_mesa(tmp_path, mode, frame_end):
    """A real capture whose frames end in glReadPixels (of a framebuffer object's
    sub-rectangle on a surfaceless context, or of a pbuffer window) or glFinish: import,
    reference, tilesim's frames against Mesa's, and Mesa's reference against what the program
    itself read."""
    require_tools("apitrace")
    require_mesa()
    from tilesim.render.pipeline.renderer import Renderer
    from tilesim.render.reference.replay_gl import replay
    from tilesim.render.traces.apitrace_import import import_apitrace
    from tilesim.render.traces.capture import reference_frames

    frames = 4
    trace = _capture_offscreen(tmp_path, mode, frames)
    summary = import_apitrace(trace, tmp_path / "x.tsim")
    assert (summary.frames, summary.frame_end) == (frames, frame_end)
    reference = reference_frames(trace, tmp_path / "ref")
    assert [p.name for p in reference] == [f"frame_{k:06d}.png" for k in range(frames)]
    mesa = {n: read_png(p) for n, p in compare.frame_files(tmp_path / "ref").items()}
    with open_trace(tmp_path / "x.tsim") as opened:
        images = [r.image for r in Renderer(opened.width, opened.height,
                                            depth_bits=opened.depth_bits,
                                            source=str(opened.path)).render(opened.frames())]
    size = (60, 80) if mode == "fbo" else (120, 160)  # the middle half, or the whole window
    assert all(image.shape[:2] == size for image in images)
    tilesim = compare_images(images, mesa).summary()
    assert tilesim["frames"] == frames and tilesim["min_mssim"] >= 0.99, tilesim
    # the .tsim replayed on Mesa is Mesa's replay of the capture
    replayed = compare_images(replay(tmp_path / "x.tsim", driver="softpipe").images,
                                      mesa).summary()
    assert replayed["max_diff"] <= 1, replayed
    if mode != "finish":  # the reference is what the program read (both on llvmpipe)
        reference_frames(trace, tmp_path / "ref-llvmpipe", driver="llvmpipe")
        own = compare.compare_folders(tmp_path / "read", tmp_path / "ref-llvmpipe").summary()
        assert own["frames"] == frames and own["max_diff"] == 0, own


@pytest.mark.mesa
@pytest.mark.slow
def test_cli_frame_end_option_and_one_line_errors(tmp_path):
    require_tools("apitrace")
    require_mesa()
    trace = _capture_offscreen(tmp_path, "fbo", 2)

    def tilesim(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, check=False)

    done = tilesim("import", str(trace), "-o", str(tmp_path / "x.tsim"), "--frame-end",
                   "readpixels")
    assert done.returncode == 0 and "frames end at glReadPixels" in done.stdout, done.stderr
    done = tilesim("reference", str(trace), "--out", str(tmp_path / "ref"), "--frame-end",
                   "readpixels")
    assert done.returncode == 0 and "wrote 2 reference frame(s)" in done.stdout, done.stderr
    for command, call in itertools.product(
            (["import", str(trace), "-o", str(tmp_path / "y.tsim")],
             ["reference", str(trace), "--out", str(tmp_path / "ref2")]),
            ("glFinish", "eglSwapBuffers")):  # neither is called here
        done = tilesim(*command, "--frame-end", "finish" if call == "glFinish" else "swap")
        assert done.returncode == 2 and not (tmp_path / "y.tsim").exists()
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert f"{trace}: the capture holds no complete frame (no {call} to end one)" in \
            done.stderr


# --- malformed and cut captures (issue 12) ---------------------------------------------------


def _frames_with(bad: tuple | None = None) -> tuple[Calls, int]:
    """A two-frame capture whose call ``number`` (in frame 1) is replaced by ``bad`` (a raw
    record, or (function, args dict, ret, flags))."""
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    number = calls.add("glClear", mask=0x4000)
    swap(calls)
    if bad is not None:
        calls.records[number] = bad
    return calls, number


# (the record that replaces call N, as a function of N; what the one-line error says)
MALFORMED_RECORDS = [
    (lambda n: (n, b"glClear", [(b"mask", 0x4000)], None, [1]),
     r"call {n}: glClear: the call flags must be a 32-bit unsigned integer, got \[1\]"),
    (lambda n: (n, b"glClear", [(b"mask", 0x4000)], None, 2**40),
     r"call {n}: glClear: the call flags must be a 32-bit unsigned integer, got 1099511627776"),
    (lambda n: (n, b"glClear", {b"mask": 0x4000}, None, 0),
     r"call {n}: glClear: the arguments must be a list of \(name, value\) pairs, got a dict"),
    (lambda n: (n, b"glClear", [(b"mask", 0x4000, 1)], None, 0),
     r"call {n}: glClear: argument 0 must be a \(name, value\) pair, got "
     r"\(b'mask', 16384, 1\)"),
    (lambda n: (n, b"glClear", [(b"mask", 0x4000), (b"mask", 0x100)], None, 0),
     r"call {n}: glClear: argument 'mask' appears twice"),
    (lambda n: (n, b"glClear", [(7, 0x4000)], None, 0),
     r"call {n}: glClear: argument 0 has no identifier for a name, got 7"),
    (lambda n: (n, b"gl\xffClear", [(b"mask", 0x4000)], None, 0),
     r"call {n}: the function name must be an ASCII identifier, got b'gl\\xffClear'"),
    (lambda n: (n, b"glClear", [(b"mask", {1, 2})], None, 0),
     r"call {n}: glClear: argument 'mask' holds a set of 2 item\(s\), not a value apitrace"),
    (lambda n: (n, b"glClear", [(b"mask", 2**64)], None, 0),
     r"call {n}: glClear: argument 'mask' holds 18446744073709551616, wider than the 64 bits"),
    (lambda n: (n, b"glClear", [(b"mask", 0x4000)], [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]
                                                       ]]]]]]]]]]]]]]]]]]]]]]]]], 0),
     r"call {n}: glClear: the return value nests lists more than 32 deep"),
    (lambda n: (b"12", b"glClear", [(b"mask", 0x4000)], None, 0),
     r"record {n} \(after call {p}\): the call number must be a non-negative integer, "
     r"got b'12'"),
    (lambda n: [n, b"glClear", [(b"mask", 0x4000)], None, 0],
     r"record {n} \(after call {p}\): expected an apitrace call \(number, name, arguments, "
     r"return value, flags\), got a list of 5"),
    (lambda n: (n, b"glClear", [(b"mask", 0x4000)], None),
     r"record {n} \(after call {p}\): expected an apitrace call"),
]


@pytest.mark.parametrize("record,message", MALFORMED_RECORDS)
def test_malformed_records_are_one_line_errors_naming_the_call(tmp_path, record, message):
    """Each record is checked where it is read: its shape, number, name, flags, arguments and
    the types of their values (the issue's example: flags that are a list)."""
    calls, number = _frames_with()
    calls.records[number] = record(number)
    with pytest.raises(InputError) as error:
        do_import(tmp_path, calls)
    text = str(error.value)
    assert "\n" not in text and text.startswith(str(tmp_path / "capture.pkl"))
    assert re.search(message.format(n=number, p=number - 1), text), text
    assert not (tmp_path / "out.tsim").exists()


# (call, arguments that replace its own, what the error says about them)
BAD_ARGUMENTS = [
    ("glViewport", {"x": 0, "y": 0, "width": [64], "height": 48},
     r"glViewport: argument 'width' must be an integer, got \[64\]"),
    ("glViewport", {"x": 0, "y": 0, "width": 2**40, "height": 48},
     r"glViewport: argument 'width' is 1099511627776, outside 0\.\.2147483647"),
    ("glViewport", {"x": 0, "y": 0, "height": 48},
     r"glViewport: argument 'width' is missing"),
    ("glDrawArrays", {"mode": 4, "first": 0, "count": -3},
     r"glDrawArrays: argument 'count' is -3, outside 0\.\.2147483647"),
    ("glBufferData", {"target": 0x8892, "size": -1, "data": None, "usage": 0x88E4},
     r"glBufferData: argument 'size' is -1, outside 0\.\."),
    ("glTexImage2D", {"target": 0x0DE1, "level": 0, "internalformat": 0x1908, "width": -2,
                      "height": 2, "border": 0, "format": 0x1908, "type": 0x1401,
                      "pixels": None},
     r"glTexImage2D: argument 'width' is -2, outside"),
    ("glClearColor", {"red": math.nan, "green": 0.0, "blue": 0.0, "alpha": 1.0},
     r"clearColor: argument 'red' is not finite \(nan\)"),
    ("glClearColor", {"red": "0.5", "green": 0.0, "blue": 0.0, "alpha": 1.0},
     r"glClearColor: argument 'red' must be a number, got b'0\.5'"),
    ("glUniform1i", {"location": 0, "v0": math.nan},
     r"glUniform1i: uniform value 0 must be an integer, got nan"),
    ("glUniform4f", {"location": 1, "v0": 1.0, "v1": 2.0, "v2": 3.0},
     r"glUniform4f: argument 'v3' is missing"),
    ("glVertexAttribPointer", {"index": 0, "size": 7, "type": 0x1406, "normalized": 0,
                               "stride": 0, "pointer": b"\0" * 16},
     r"glVertexAttribPointer: argument 'size' is 7, outside 1\.\.4"),
    ("glShaderSource", {"shader": 1, "count": 1, "string": 2**40, "length": None},
     r"glShaderSource: argument 'string' must be a byte string or a list of them"),
    ("glBindAttribLocation", {"program": 3, "index": 0, "name": b"\xff\xfe"},
     r"glBindAttribLocation: argument 'name' is not UTF-8 text"),
    ("glEnable", {"cap": 2**33}, r"glEnable: cap 8589934592 is not a GL enumerant"),
    ("glGenBuffers", {"n": 1, "buffers": [1.5]},
     r"glGenBuffers: item 0 of argument 'buffers' must be an integer, got 1\.5"),
    ("eglMakeCurrent", {"dpy": 1, "draw": SURFACE, "read": SURFACE, "ctx": "ctx"},
     r"eglMakeCurrent: argument 'ctx' must be an integer, got b'ctx'"),
    ("eglGetConfigAttrib", {"dpy": 1, "config": CONFIG, "attribute": 0x3025,
                            "value": {"a": 1}},
     r"eglGetConfigAttrib: argument 'value' must be a list of integers, got a dict"),
]


@pytest.mark.parametrize("function,args,message", BAD_ARGUMENTS)
def test_wrong_typed_or_out_of_range_arguments_name_the_call_and_argument(
        tmp_path, function, args, message):
    """A list where an integer belongs, an integer wider than its GL type, NaN, a negative
    size, a missing argument: an InputError naming the call number and the argument, never
    a TypeError, ValueError or OverflowError from deeper in the translation."""
    calls = Calls()
    start(calls)
    program(calls)
    calls.add("glUseProgram", program=3)
    number = calls.add(function, **args)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    with pytest.raises(InputError) as error:
        do_import(tmp_path, calls)
    text = str(error.value)
    assert "\n" not in text
    assert re.search(rf"capture\.pkl: call {number}: {message}", text), text


@pytest.mark.parametrize("name", ["error", "emit", "feed", "key", "int"])
def test_a_call_named_like_an_importer_helper_is_an_unknown_call(tmp_path, name):
    """Records are dispatched by name: one named after a helper of the translator or of the
    program tracker ("error" returned an exception object as a frame) is an unknown call."""
    calls, number = _frames_with()
    calls.records[number] = (number, name.encode(), [(b"x", 1)], None, 0)
    with pytest.raises(InputError, match=rf"capture\.pkl: call {number}: {name} is not "
                                         "supported by the importer"):
        do_import(tmp_path, calls)


def test_capture_ending_mid_frame_warns_with_the_calls_dropped(tmp_path):
    calls, _ = _frames_with()
    calls.add("glClearColor", red=1.0, green=0.0, blue=0.0, alpha=1.0)
    calls.add("glClear", mask=0x4000)
    calls.add("glGetError", ret=0)
    summary, frames, out = do_import(tmp_path, calls)
    assert len(frames) == 2 and summary.dropped_calls == 3
    assert summary.warnings == ["capture ends mid-frame: 3 call(s) after frame 1 dropped "
                                "(1 of them draw or clear, with no eglSwapBuffers after them)"]
    with open_trace(out) as trace:
        assert trace.source["warnings"] == summary.warnings
        assert trace.source["calls_after_last_frame"] == 3
    assert "not imported: 3 call(s) after the last frame end" in summary.describe()
    # asking for the frames before it: nothing was dropped that was asked for
    summary, _, _ = do_import(tmp_path, calls, frames=2)
    assert summary.warnings == [] and summary.dropped_calls == 0
    # a program's teardown after its last frame is counted, not warned about
    calls, _ = _frames_with()
    calls.add("glDeleteProgram", program=3)
    calls.add("eglMakeCurrent", ret=1, dpy=Pointer(0x4000), draw=0, read=0, ctx=0)
    calls.add("eglTerminate", ret=1, dpy=Pointer(0x4000))
    summary, _, _ = do_import(tmp_path, calls)
    assert summary.warnings == [] and summary.dropped_calls == 3


def test_cut_pickle_stream_keeps_the_complete_frames_and_warns(tmp_path):
    calls, number = _frames_with()
    calls.records[number + 1:] = []  # frame 1 has its glClear but lost its swap
    calls.add("glDrawArrays", mode=4, first=0, count=3)
    path = calls.write(tmp_path / "capture.pkl")
    data = path.read_bytes()
    for cut in (len(data) - 1, len(data) - 9):  # inside the last record's opcodes
        path.write_bytes(data[:cut])
        summary = import_pickle(path, tmp_path / "out.tsim", compiler=fake_compiler)
        assert summary.frames == 1
        assert summary.warnings == [
            f"the call stream ends inside record {number + 1} (after call {number}): the file "
            "is cut; the calls before it are kept",
            "capture ends mid-frame: 1 call(s) after frame 0 dropped (1 of them draw or "
            "clear, with no eglSwapBuffers after them)"]


def test_empty_or_callless_capture_is_an_error_saying_so(tmp_path):
    empty = tmp_path / "capture.pkl"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"capture\.pkl: the capture holds no calls \(an "
                                         r"empty or cut file, or not an apitrace capture\)$"):
        import_pickle(empty, tmp_path / "out.tsim", compiler=fake_compiler)
    calls, _ = _frames_with()
    data = calls.write(empty).read_bytes()
    empty.write_bytes(data[:20])  # cut inside the first record
    with pytest.raises(InputError, match=r"holds no calls \(an empty or cut file, or not an "
                                         r"apitrace capture\); the call stream ends inside "
                                         r"record 0 \(the first\)"):
        import_pickle(empty, tmp_path / "out.tsim", compiler=fake_compiler)
    from tilesim.render.traces.apitrace_import import import_apitrace

    empty.with_suffix(".trace").write_bytes(b"")
    with pytest.raises(InputError, match=r"capture\.trace: the capture holds no calls \(the "
                                         r"file is empty\)"):
        import_apitrace(empty.with_suffix(".trace"), tmp_path / "out.tsim")
    assert not (tmp_path / "out.tsim").exists()


@pytest.mark.mesa
@pytest.mark.slow
def test_cut_real_capture_passes_on_apitrace_warning_and_says_what_was_dropped(tmp_path):
    """A glmark2 capture cut short (as a crash or a full disk leaves it): tilesim import keeps
    the complete frames, exits 0 and prints apitrace's 'unexpected end of file' and the
    mid-frame warning on stderr, one line each, and tilesim reference prints the same lines;
    an empty file and a file that is no capture are one-line errors (exit 2)."""
    require_tools("apitrace", "xvfb-run", "glmark2-es2")
    require_mesa()
    from tilesim.render.traces.capture import capture

    trace = tmp_path / "x.trace"
    capture("glmark2-es2:build:use-vbo=false", trace, frames=8, size=(64, 48))
    data = trace.read_bytes()

    def tilesim(*args):
        return subprocess.run([sys.executable, "-m", "tilesim.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, check=False)

    imported = 0
    for fraction in (0.9, 0.75, 0.5):
        cut = tmp_path / f"cut{int(fraction * 100)}.trace"
        cut.write_bytes(data[:int(len(data) * fraction)])
        done = tilesim("import", str(cut), "-o", str(tmp_path / "cut.tsim"))
        lines = done.stderr.strip().split("\n")
        if done.returncode == 0:
            imported += 1
            assert len(lines) == 2, done.stderr
            assert lines[0] == (f"tilesim: warning: {cut}: apitrace: warning: unexpected end "
                                "of file while reading trace")
            assert re.fullmatch(rf"tilesim: warning: {re.escape(str(cut))}: capture ends "
                                r"mid-frame: \d+ call\(s\) after frame \d+ dropped \(.*\)",
                                lines[1]), lines[1]
            # tilesim reference reads the same capture: the same warnings, one line each
            reference = tilesim("reference", str(cut), "--out", str(tmp_path / f"ref{cut.stem}"))
            assert reference.returncode == 0, reference.stderr
            assert reference.stderr.strip().split("\n") == lines, reference.stderr
        else:  # cut before the first frame's end
            assert done.returncode == 2 and len(lines) == 1, done.stderr
            assert "no complete frame" in lines[0] and "unexpected end of file" in lines[0]
    assert imported >= 1
    done = tilesim("import", str(cut), "-o", str(tmp_path / "cut.tsim"), "--json")
    if done.returncode == 0:
        assert any("unexpected end of file" in w for w in json.loads(done.stdout)["warnings"])
    empty = tmp_path / "empty.trace"
    empty.write_bytes(b"")
    text = tmp_path / "text.trace"
    text.write_text("not a capture\n")
    for path, message in ((empty, "the capture holds no calls (the file is empty)"),
                          (text, "apitrace cannot read it")):
        done = tilesim("import", str(path), "-o", str(tmp_path / "bad.tsim"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"tilesim: error: {path}: {message}" in done.stderr
    # the whole capture imports without a warning (its teardown is counted, not warned)
    done = tilesim("import", str(trace), "-o", str(tmp_path / "whole.tsim"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    done = tilesim("reference", str(trace), "--out", str(tmp_path / "ref-whole"))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_import_warns_of_extensions_the_modelled_gpu_does_not_offer(tmp_path):
    """Issue 31: a capture that used S3TC (offered by Mesa, not by a Mali-400) imports with
    one warning line naming the extension; ETC1, which the Mali-400 offers, warns nothing."""
    def capture(internalformat, size):
        calls = Calls()
        start(calls)
        calls.add("glBindTexture", target=0x0DE1, texture=5)
        calls.add("glCompressedTexImage2D", target=0x0DE1, level=0,
                  internalformat=internalformat, width=4, height=4, border=0,
                  imageSize=size, data=bytes(size))
        swap(calls)
        return calls

    summary, _, _ = do_import(tmp_path, capture(0x83F3, 16))
    warnings = [w for w in summary.warnings if "extension" in w]
    assert warnings == ["the capture uses 1 extension(s) the modelled GPU (mali-400) does not "
                        "offer: GL_EXT_texture_compression_s3tc (compressedTexImage2D); tilesim "
                        "replays them as the capture's driver drew them"]
    summary, _, _ = do_import(tmp_path, capture(0x8D64, 8))
    assert not [w for w in summary.warnings if "extension" in w]


def test_texture_3d_calls_are_one_line_errors(tmp_path):
    """OES_texture_3D: a glTexImage3DOES the extension does not allow (a 2D target) is a
    one-line error naming the call (the calls themselves import:
    tests/render/test_gles2_extensions_mesa.py)."""
    calls = Calls()
    start(calls)
    number = calls.add("glTexImage3DOES", target=0x0DE1, level=0, internalformat=0x1908,
                       width=2, height=2, depth=2, border=0, format=0x1908, type=0x1401,
                       pixels=bytes(32))
    swap(calls)
    with pytest.raises(InputError) as error:
        do_import(tmp_path, calls)
    assert "\n" not in str(error.value)
    assert f"call {number}: glTexImage3DOES" in str(error.value)


def test_a_bounded_program_ends_with_everything_it_started(tmp_path):
    """A timeout kills the whole process group: a grandchild holding the output pipe open
    (as xvfb-run's Xvfb does) cannot keep the capture waiting."""
    import time

    from tilesim.mesa import run_program

    started = time.monotonic()
    with pytest.raises(InputError, match=r"^sh: sleeper ran longer than 1 s$"):
        run_program(["sh", "-c", "sleep 300 & sleep 300"], timeout=1.0, env=dict(os.environ),
                    what="sleeper", source="sh")
    assert time.monotonic() - started < 10


def test_a_bounded_program_takes_sigint_though_its_parent_ignores_and_blocks_it():
    """Runners that start the suite in the background hand children SIGINT ignored, Dask
    workers hand it blocked; es2gears is stopped with SIGINT, so the child gets it back."""
    import signal

    from tilesim.mesa import run_program

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        done = run_program(["timeout", "-s", "INT", "0.2", "sleep", "30"], timeout=5,
                           env=dict(os.environ), what="sleep", source="sleep")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)
    assert done.returncode == 124  # timeout's "the command timed out"
