"""A small real OpenGL ES 2.0 program with two EGL contexts of one share group (for capture tests).

Programs that stream textures (video players, toolkits, compositors) upload on a loader
context and draw on the one that owns the window, switching back and forth every frame.
This one does, on EGL's surfaceless platform (no X server), N frames of:

1. the **loader** context (created sharing the draw context's objects, EGL 1.4 §3.7.1),
   current on a 16x16 pbuffer of its own, sets state of its own (clear color, blending, unit
   3, row length) and uploads a BGRA sub-rectangle (EXT_texture_format_BGRA8888) of a
   larger client image (EXT_unpack_subimage: UNPACK_ROW_LENGTH / SKIP_PIXELS / SKIP_ROWS)
   into the shared 32x32 texture, then swaps its own pbuffer (nothing shown);
2. the **draw** context, current again on the window (a 96x64 pbuffer whose size the
   program asks eglQuerySurface), draws a quad sampling the shared texture from unit 37 of
   the GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS it queried (every unit from 0 up to it was given
   a texture at start-up, as game engines do), then a blended triangle, and swaps.

None of the loader's state may leak into the draw context: a replay that forgot to put the
draw context's state back would clear to the loader's color, blend the quad or sample unit 3.

    apitrace trace --api egl -o x.trace python3 scripts/shared_contexts_gles2.py --frames 3

Needs only the standard library and Mesa's libEGL / libGLESv2 (Debian libegl1, libgles2,
libgl1-mesa-dri). Exit status 0 on success, 3 when EGL / GLES2 cannot be set up.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from offscreen_gles2 import (  # noqa: E402  (the sibling script's EGL and GL helpers)
    EGL_CONTEXT_CLIENT_VERSION,
    EGL_HEIGHT,
    EGL_NONE,
    EGL_WIDTH,
    EXIT_NO_GL,
    GL_ARRAY_BUFFER,
    GL_COLOR_BUFFER_BIT,
    GL_FALSE,
    GL_FLOAT,
    GL_FRAGMENT_SHADER,
    GL_LINK_STATUS,
    GL_NEAREST,
    GL_RGBA,
    GL_STATIC_DRAW,
    GL_TEXTURE_2D,
    GL_TEXTURE_MAG_FILTER,
    GL_TEXTURE_MIN_FILTER,
    GL_TRIANGLES,
    GL_UNSIGNED_BYTE,
    GL_VERTEX_SHADER,
    Unavailable,
    _c_ints,
    _gen,
    _shader,
    surfaceless_config,
)

GL_BGRA_EXT = 0x80E1
GL_UNPACK_ROW_LENGTH, GL_UNPACK_SKIP_ROWS, GL_UNPACK_SKIP_PIXELS = 0x0CF2, 0x0CF3, 0x0CF4
GL_UNPACK_ALIGNMENT = 0x0CF5
GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS = 0x8B4D
GL_TEXTURE0, GL_BLEND = 0x84C0, 0x0BE2
GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE = 0x0302, 0x0303, 1
GL_TRIANGLE_STRIP = 0x0005
EGL_DRAW = 0x3059

UNIT = 37          # the unit the quad samples (needs 38+ units; Mesa offers 192)
TEXTURE_SIZE = 32  # the shared texture; the loader replaces a 12x10 sub-rectangle a frame
SOURCE_WIDTH = 40  # the client image the sub-rectangles are cut from (UNPACK_ROW_LENGTH)

VERTEX = b"""attribute vec2 position;
varying vec2 v_uv;
uniform vec2 offset;
void main() { v_uv = position * 0.5 + 0.5; gl_Position = vec4(position * 0.8 + offset, 0.0, 1.0); }
"""
FRAGMENT = b"""precision mediump float;
varying vec2 v_uv;
uniform sampler2D image;
uniform vec4 tint;
void main() { gl_FragColor = texture2D(image, v_uv) * tint; }
"""


class Egl:
    """Mesa's surfaceless EGL display, one RGBA8 pbuffer config."""

    def __init__(self):
        self.egl, self.gl, self.display, self.config = surfaceless_config(depth_bits=0)
        egl, vp = self.egl, ctypes.c_void_p
        egl.eglCreateContext.restype = vp
        egl.eglCreateContext.argtypes = [vp, vp, vp, vp]
        egl.eglCreatePbufferSurface.restype = vp
        egl.eglCreatePbufferSurface.argtypes = [vp, vp, vp]
        egl.eglMakeCurrent.argtypes = [vp, vp, vp, vp]
        egl.eglSwapBuffers.argtypes = [vp, vp]
        egl.eglQuerySurface.argtypes = [vp, vp, ctypes.c_int, vp]

    def context(self, share=None):
        context = self.egl.eglCreateContext(self.display, self.config, share,
                                            _c_ints(EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE))
        if not context:
            raise Unavailable("eglCreateContext (OpenGL ES 2) failed")
        return context

    def pbuffer(self, width: int, height: int):
        surface = self.egl.eglCreatePbufferSurface(
            self.display, self.config, _c_ints(EGL_WIDTH, width, EGL_HEIGHT, height, EGL_NONE))
        if not surface:
            raise Unavailable(f"eglCreatePbufferSurface {width}x{height} failed")
        return surface

    def make_current(self, surface, context) -> None:
        if not self.egl.eglMakeCurrent(self.display, surface, surface, context):
            raise Unavailable("eglMakeCurrent failed")

    def size(self, surface) -> tuple[int, int]:
        width, height = ctypes.c_int(), ctypes.c_int()
        self.egl.eglQuerySurface(self.display, surface, EGL_WIDTH, ctypes.byref(width))
        self.egl.eglQuerySurface(self.display, surface, EGL_HEIGHT, ctypes.byref(height))
        return width.value, height.value


def _source_image() -> bytes:
    """A SOURCE_WIDTH x SOURCE_WIDTH BGRA client image: blue rises with x, green with y."""
    pixels = bytearray()
    for y in range(SOURCE_WIDTH):
        for x in range(SOURCE_WIDTH):
            pixels += bytes((x * 6 % 256, y * 6 % 256, 200 - 4 * ((x + y) % 40), 255))
    return bytes(pixels)


def run(frames: int, size: tuple[int, int]) -> None:
    egl = Egl()
    gl = egl.gl
    gl.glShaderSource.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                  ctypes.c_void_p]
    gl.glCreateShader.restype = gl.glCreateProgram.restype = ctypes.c_uint
    gl.glVertexAttribPointer.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                         ctypes.c_ubyte, ctypes.c_int, ctypes.c_void_p]
    gl.glBufferData.argtypes = [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint]
    gl.glClearColor.argtypes = [ctypes.c_float] * 4
    gl.glUniform2f.argtypes = [ctypes.c_int, ctypes.c_float, ctypes.c_float]
    gl.glUniform4f.argtypes = [ctypes.c_int] + [ctypes.c_float] * 4
    gl.glTexImage2D.argtypes = [ctypes.c_uint] + [ctypes.c_int] * 5 + [ctypes.c_uint] * 2 + \
        [ctypes.c_void_p]
    gl.glTexSubImage2D.argtypes = [ctypes.c_uint] + [ctypes.c_int] * 5 + [ctypes.c_uint] * 2 \
        + [ctypes.c_void_p]

    draw_ctx = egl.context()
    window = egl.pbuffer(*size)
    loader_ctx = egl.context(share=draw_ctx)
    loader_surface = egl.pbuffer(16, 16)

    egl.make_current(window, draw_ctx)
    width, height = egl.size(window)
    units = ctypes.c_int()
    gl.glGetIntegerv(GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS, ctypes.byref(units))
    if units.value <= UNIT:
        raise Unavailable(f"only {units.value} texture units (needs {UNIT + 1})")
    program = gl.glCreateProgram()
    for kind, source in ((GL_VERTEX_SHADER, VERTEX), (GL_FRAGMENT_SHADER, FRAGMENT)):
        gl.glAttachShader(program, _shader(gl, kind, source))
    gl.glBindAttribLocation(program, 0, b"position")
    gl.glLinkProgram(program)
    status = ctypes.c_int()
    gl.glGetProgramiv(program, GL_LINK_STATUS, ctypes.byref(status))
    if not status.value:
        raise Unavailable("program link failed")
    gl.glUseProgram(program)
    offset, tint = (gl.glGetUniformLocation(program, n) for n in (b"offset", b"tint"))
    gl.glUniform1i(gl.glGetUniformLocation(program, b"image"), UNIT)
    quad = (ctypes.c_float * 8)(-1, -1, 1, -1, -1, 1, 1, 1)
    buffer = _gen(gl.glGenBuffers)
    gl.glBindBuffer(GL_ARRAY_BUFFER, buffer)
    gl.glBufferData(GL_ARRAY_BUFFER, ctypes.sizeof(quad), quad, GL_STATIC_DRAW)
    gl.glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, None)
    gl.glEnableVertexAttribArray(0)
    # every unit up to the one used gets a texture (a 1x1 grey one), as engines reset them
    grey = (ctypes.c_ubyte * 4)(90, 90, 90, 255)
    for unit in range(UNIT):
        gl.glActiveTexture(GL_TEXTURE0 + unit)
        gl.glBindTexture(GL_TEXTURE_2D, _gen(gl.glGenTextures))
        gl.glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, 1, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, grey)
        gl.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST)
    shared = _gen(gl.glGenTextures)
    gl.glActiveTexture(GL_TEXTURE0 + UNIT)
    gl.glBindTexture(GL_TEXTURE_2D, shared)
    gl.glTexImage2D(GL_TEXTURE_2D, 0, GL_BGRA_EXT, TEXTURE_SIZE, TEXTURE_SIZE, 0, GL_BGRA_EXT,
                    GL_UNSIGNED_BYTE, bytes([40, 40, 160, 255]) * TEXTURE_SIZE ** 2)
    gl.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST)
    gl.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST)
    gl.glViewport(0, 0, width, height)
    gl.glClearColor(0.1, 0.2, 0.25, 1.0)
    gl.glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA)

    image = _source_image()
    egl.make_current(loader_surface, loader_ctx)
    gl.glClearColor(1.0, 0.0, 1.0, 1.0)   # the loader's own state: must not leak
    gl.glEnable(GL_BLEND)
    gl.glBlendFunc(GL_ONE, GL_ONE)
    gl.glViewport(0, 0, 16, 16)
    gl.glPixelStorei(GL_UNPACK_ALIGNMENT, 1)
    gl.glPixelStorei(GL_UNPACK_ROW_LENGTH, SOURCE_WIDTH)
    gl.glActiveTexture(GL_TEXTURE0 + 3)
    gl.glBindTexture(GL_TEXTURE_2D, shared)
    gl.glClear(GL_COLOR_BUFFER_BIT)        # its own surface, never shown
    for frame in range(frames):
        egl.make_current(loader_surface, loader_ctx)
        gl.glPixelStorei(GL_UNPACK_SKIP_PIXELS, 3 + 5 * frame)
        gl.glPixelStorei(GL_UNPACK_SKIP_ROWS, 2 + 4 * frame)
        gl.glTexSubImage2D(GL_TEXTURE_2D, 0, 2 + 7 * frame, 3 + 6 * frame, 12, 10, GL_BGRA_EXT,
                           GL_UNSIGNED_BYTE, image)
        egl.egl.eglSwapBuffers(egl.display, loader_surface)
        egl.make_current(window, draw_ctx)
        gl.glClear(GL_COLOR_BUFFER_BIT)
        gl.glDisable(GL_BLEND)
        gl.glUniform2f(offset, 0.0, 0.0)
        gl.glUniform4f(tint, 1.0, 1.0, 1.0, 1.0)
        gl.glDrawArrays(GL_TRIANGLE_STRIP, 0, 4)
        gl.glEnable(GL_BLEND)
        gl.glUniform2f(offset, 0.4 - 0.2 * frame, 0.3)
        gl.glUniform4f(tint, 1.0, 0.8, 0.3, 0.5)
        gl.glDrawArrays(GL_TRIANGLES, 0, 3)
        egl.egl.eglSwapBuffers(egl.display, window)
    egl.make_current(None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        run(max(1, args.frames), (96, 64))
    except Unavailable as exc:
        print(f"shared_contexts_gles2: {exc}", file=sys.stderr)
        return EXIT_NO_GL
    return 0


if __name__ == "__main__":
    sys.exit(main())
