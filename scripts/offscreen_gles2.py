"""A small real OpenGL ES 2.0 program that never calls eglSwapBuffers (for capture tests).

Test programs and off-screen renderers end their work with ``glReadPixels`` (or ``glFinish``)
instead of a swap. This one draws N frames of a spinning, depth-tested pair of triangles
and ends every frame the way such programs do:

- ``--mode window``: into an EGL pbuffer surface (the window-system framebuffer), then
  ``glReadPixels`` of the whole surface;
- ``--mode fbo``: into a framebuffer object (a texture for color, a renderbuffer for depth) on a
  surfaceless context (no window-system framebuffer at all), then ``glReadPixels`` of a
  sub-rectangle of it (``--rect X,Y,W,H``, default the middle half);
- ``--mode finish``: into a pbuffer surface, then ``glFinish`` only (nothing is read).

``--out DIR`` saves what each ``glReadPixels`` returned as ``DIR/frame_NNNNNN.png`` (RGB, row 0
the top of the image), the layout ``tilesim compare`` reads: the images a reference must match.
Capture it with apitrace (``tilesim.render.traces.capture.capture_program`` does this)::

    apitrace trace --api egl -o x.trace python3 scripts/offscreen_gles2.py --mode fbo --frames 4

It needs only the standard library and Mesa's libEGL / libGLESv2 (Debian libegl1, libgles2,
libgl1-mesa-dri); it runs on EGL's surfaceless platform, without an X server. Exit status 0 on
success, 3 when EGL / GLES2 cannot be set up (the message says why), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import ctypes
import struct
import sys
import zlib
from pathlib import Path

EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_ES_API = 0x30A0
EGL_CONTEXT_CLIENT_VERSION = 0x3098
EGL_SURFACE_TYPE, EGL_PBUFFER_BIT = 0x3033, 0x0001
EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT = 0x3040, 0x0004
EGL_RED_SIZE, EGL_GREEN_SIZE, EGL_BLUE_SIZE, EGL_ALPHA_SIZE = 0x3024, 0x3023, 0x3022, 0x3021
EGL_DEPTH_SIZE, EGL_WIDTH, EGL_HEIGHT, EGL_NONE = 0x3025, 0x3057, 0x3056, 0x3038

GL_VERTEX_SHADER, GL_FRAGMENT_SHADER = 0x8B31, 0x8B30
GL_COMPILE_STATUS, GL_LINK_STATUS = 0x8B81, 0x8B82
GL_ARRAY_BUFFER, GL_STATIC_DRAW = 0x8892, 0x88E4
GL_FLOAT, GL_FALSE, GL_TRIANGLES = 0x1406, 0, 0x0004
GL_COLOR_BUFFER_BIT, GL_DEPTH_BUFFER_BIT = 0x4000, 0x0100
GL_DEPTH_TEST = 0x0B71
GL_TEXTURE_2D, GL_RGBA, GL_UNSIGNED_BYTE = 0x0DE1, 0x1908, 0x1401
GL_TEXTURE_MIN_FILTER, GL_TEXTURE_MAG_FILTER, GL_NEAREST = 0x2801, 0x2800, 0x2600
GL_FRAMEBUFFER, GL_RENDERBUFFER = 0x8D40, 0x8D41
GL_COLOR_ATTACHMENT0, GL_DEPTH_ATTACHMENT = 0x8CE0, 0x8D00
GL_DEPTH_COMPONENT16 = 0x81A5
GL_FRAMEBUFFER_COMPLETE = 0x8CD5
GL_PACK_ALIGNMENT = 0x0D05

VERTEX = b"""attribute vec3 position;
attribute vec3 color;
uniform float angle;
varying vec3 v_color;
void main() {
    float c = cos(angle), s = sin(angle);
    gl_Position = vec4(c * position.x - s * position.y, s * position.x + c * position.y,
                       position.z, 1.0);
    v_color = color;
}
"""
FRAGMENT = b"""precision mediump float;
varying vec3 v_color;
uniform float shade;
void main() { gl_FragColor = vec4(v_color * shade, 1.0); }
"""
# Two overlapping triangles at different depths (x, y, z, r, g, b).
VERTICES = [
    -0.8, -0.7, 0.2, 1.0, 0.2, 0.1, 0.8, -0.6, 0.2, 0.9, 0.8, 0.1, 0.0, 0.8, 0.2, 0.2, 0.3, 1.0,
    -0.7, 0.6, -0.3, 0.1, 0.9, 0.4, 0.7, 0.5, 0.5, 0.1, 0.9, 0.4, 0.0, -0.9, -0.3, 0.9, 0.9, 0.9,
]

EXIT_BAD_ARGS = 2
EXIT_NO_GL = 3


class Unavailable(Exception):
    """EGL or GLES2 could not be set up."""


def _c_ints(*values: int):
    return (ctypes.c_int * len(values))(*values)


def surfaceless_config(depth_bits: int):
    """libEGL and libGLESv2 loaded, Mesa's surfaceless EGL display initialized for OpenGL ES
    and its first pbuffer config with RGBA8 and ``depth_bits`` of depth: (egl, gl, display,
    config); Unavailable saying which step failed."""
    try:
        egl = ctypes.CDLL("libEGL.so.1")
        gl = ctypes.CDLL("libGLESv2.so.2")
    except OSError as exc:
        raise Unavailable(f"cannot load libEGL.so.1 / libGLESv2.so.2: {exc}") from exc
    vp = ctypes.c_void_p
    egl.eglGetProcAddress.restype = vp
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    address = egl.eglGetProcAddress(b"eglGetPlatformDisplayEXT")
    if not address:
        raise Unavailable("EGL has no eglGetPlatformDisplayEXT")
    display = ctypes.CFUNCTYPE(vp, ctypes.c_uint, vp, vp)(address)(
        EGL_PLATFORM_SURFACELESS_MESA, None, None)
    if not display:
        raise Unavailable("no EGL display on the surfaceless platform")
    egl.eglInitialize.argtypes = [vp, vp, vp]
    if not egl.eglInitialize(display, None, None):
        raise Unavailable("eglInitialize failed")
    egl.eglBindAPI.argtypes = [ctypes.c_uint]
    egl.eglBindAPI(EGL_OPENGL_ES_API)
    egl.eglChooseConfig.argtypes = [vp, vp, vp, ctypes.c_int, vp]
    config, count = vp(), ctypes.c_int()
    attribs = _c_ints(EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                      EGL_OPENGL_ES2_BIT, EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8,
                      EGL_BLUE_SIZE, 8, EGL_ALPHA_SIZE, 8, EGL_DEPTH_SIZE, depth_bits, EGL_NONE)
    if not egl.eglChooseConfig(display, attribs, ctypes.byref(config), 1,
                               ctypes.byref(count)) or count.value < 1:
        raise Unavailable(f"no EGL config with a pbuffer, RGBA8 and {depth_bits} depth bits")
    return egl, gl, display, config


class Context:
    """A current GLES2 context on Mesa's surfaceless EGL platform, with a pbuffer surface of
    ``size`` (width, height) or none (``size`` None: only framebuffer objects can be drawn to)."""

    def __init__(self, size: tuple[int, int] | None):
        self.egl, self.gl, display, config = surfaceless_config(depth_bits=24)
        egl, self.display = self.egl, display
        vp = ctypes.c_void_p
        egl.eglCreateContext.restype = vp
        egl.eglCreateContext.argtypes = [vp, vp, vp, vp]
        context = egl.eglCreateContext(display, config, None,
                                       _c_ints(EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE))
        if not context:
            raise Unavailable("eglCreateContext (OpenGL ES 2) failed")
        surface = None
        if size is not None:
            egl.eglCreatePbufferSurface.restype = vp
            egl.eglCreatePbufferSurface.argtypes = [vp, vp, vp]
            surface = egl.eglCreatePbufferSurface(
                display, config, _c_ints(EGL_WIDTH, size[0], EGL_HEIGHT, size[1], EGL_NONE))
            if not surface:
                raise Unavailable(f"eglCreatePbufferSurface {size[0]}x{size[1]} failed")
        egl.eglMakeCurrent.argtypes = [vp, vp, vp, vp]
        if not egl.eglMakeCurrent(display, surface, surface, context):
            raise Unavailable("eglMakeCurrent failed")
        self.context, self.surface = context, surface
        gl = self.gl
        gl.glCreateShader.restype = ctypes.c_uint
        gl.glCreateProgram.restype = ctypes.c_uint
        gl.glGetUniformLocation.restype = ctypes.c_int
        gl.glCheckFramebufferStatus.restype = ctypes.c_uint
        gl.glShaderSource.argtypes = [ctypes.c_uint, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_char_p), vp]
        gl.glVertexAttribPointer.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                             ctypes.c_ubyte, ctypes.c_int, vp]
        gl.glBufferData.argtypes = [ctypes.c_uint, ctypes.c_ssize_t, vp, ctypes.c_uint]
        gl.glUniform1f.argtypes = [ctypes.c_int, ctypes.c_float]
        gl.glClearColor.argtypes = [ctypes.c_float] * 4
        gl.glTexImage2D.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, vp]
        gl.glReadPixels.argtypes = [ctypes.c_int] * 4 + [ctypes.c_uint] * 2 + [vp]

    def close(self) -> None:
        egl, vp = self.egl, ctypes.c_void_p
        egl.eglMakeCurrent(self.display, None, None, None)
        egl.eglDestroyContext.argtypes = [vp, vp]
        egl.eglDestroyContext(self.display, self.context)
        if self.surface:
            egl.eglDestroySurface.argtypes = [vp, vp]
            egl.eglDestroySurface(self.display, self.surface)
        egl.eglTerminate.argtypes = [vp]
        egl.eglTerminate(self.display)


def _shader(gl, kind: int, source: bytes) -> int:
    shader = gl.glCreateShader(kind)
    gl.glShaderSource(shader, 1, (ctypes.c_char_p * 1)(source), None)
    gl.glCompileShader(shader)
    status = ctypes.c_int()
    gl.glGetShaderiv(shader, GL_COMPILE_STATUS, ctypes.byref(status))
    if not status.value:
        raise Unavailable("shader compilation failed")
    return shader


def _gen(function) -> int:
    name = ctypes.c_uint()
    function(1, ctypes.byref(name))
    return name.value


def write_png(path: Path, rgba: bytes, width: int, height: int) -> None:
    """``rgba`` as GL reads it (rows bottom-up, 4 bytes a pixel) -> an RGB PNG, top row first."""
    rows = []
    for y in range(height - 1, -1, -1):
        row = rgba[y * width * 4:(y + 1) * width * 4]
        rgb = bytearray(width * 3)
        rgb[0::3], rgb[1::3], rgb[2::3] = row[0::4], row[1::4], row[2::4]
        rows.append(b"\0" + bytes(rgb))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b""))


def run(mode: str, frames: int, size: tuple[int, int], rect: tuple[int, int, int, int],
        out: Path | None) -> None:
    width, height = size
    ctx = Context(None if mode == "fbo" else size)
    gl = ctx.gl
    program = gl.glCreateProgram()
    for kind, source in ((GL_VERTEX_SHADER, VERTEX), (GL_FRAGMENT_SHADER, FRAGMENT)):
        gl.glAttachShader(program, _shader(gl, kind, source))
    gl.glBindAttribLocation(program, 0, b"position")
    gl.glBindAttribLocation(program, 1, b"color")
    gl.glLinkProgram(program)
    status = ctypes.c_int()
    gl.glGetProgramiv(program, GL_LINK_STATUS, ctypes.byref(status))
    if not status.value:
        raise Unavailable("program link failed")
    gl.glUseProgram(program)
    angle, shade = gl.glGetUniformLocation(program, b"angle"), \
        gl.glGetUniformLocation(program, b"shade")
    data = (ctypes.c_float * len(VERTICES))(*VERTICES)
    buffer = _gen(gl.glGenBuffers)
    gl.glBindBuffer(GL_ARRAY_BUFFER, buffer)
    gl.glBufferData(GL_ARRAY_BUFFER, ctypes.sizeof(data), data, GL_STATIC_DRAW)
    gl.glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 24, None)
    gl.glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, 24, ctypes.c_void_p(12))
    gl.glEnableVertexAttribArray(0)
    gl.glEnableVertexAttribArray(1)
    if mode == "fbo":
        texture = _gen(gl.glGenTextures)
        gl.glBindTexture(GL_TEXTURE_2D, texture)
        gl.glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                        None)
        gl.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST)
        gl.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST)
        depth = _gen(gl.glGenRenderbuffers)
        gl.glBindRenderbuffer(GL_RENDERBUFFER, depth)
        gl.glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT16, width, height)
        fbo = _gen(gl.glGenFramebuffers)
        gl.glBindFramebuffer(GL_FRAMEBUFFER, fbo)
        gl.glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture,
                                  0)
        gl.glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER,
                                     depth)
        if gl.glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE:
            raise Unavailable("framebuffer object incomplete")
        read = rect
    else:
        read = (0, 0, width, height)
    gl.glViewport(0, 0, width, height)
    gl.glEnable(GL_DEPTH_TEST)
    gl.glPixelStorei(GL_PACK_ALIGNMENT, 1)
    pixels = (ctypes.c_ubyte * (read[2] * read[3] * 4))()
    for frame in range(frames):
        gl.glClearColor(0.1, 0.1 + 0.15 * (frame % 4), 0.3, 1.0)
        gl.glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT)
        gl.glUniform1f(angle, 0.35 * frame)
        gl.glUniform1f(shade, 1.0 - 0.1 * (frame % 5))
        gl.glDrawArrays(GL_TRIANGLES, 0, 6)
        if mode == "finish":
            gl.glFinish()
            continue
        gl.glReadPixels(*read, GL_RGBA, GL_UNSIGNED_BYTE, pixels)
        if out is not None:
            write_png(out / f"frame_{frame:06d}.png", bytes(pixels), read[2], read[3])
    ctx.close()


def _pair(text: str, count: int, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        values = ()
    if len(values) != count or min(values) < 0:
        raise argparse.ArgumentTypeError(f"{what} {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("window", "fbo", "finish"), default="fbo")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--size", type=lambda t: _pair(t, 2, "--size WxH"), default=(160, 120),
                        help="pbuffer or framebuffer-object size (default 160x120)")
    parser.add_argument("--rect", type=lambda t: _pair(t, 4, "--rect X,Y,W,H"), default=None,
                        help="what --mode fbo reads (default: the middle half)")
    parser.add_argument("--out", type=Path, default=None,
                        help="save what each glReadPixels returned as DIR/frame_NNNNNN.png")
    args = parser.parse_args(argv)
    width, height = args.size
    rect = args.rect or (width // 4, height // 4, width // 2, height // 2)
    if args.frames < 1 or min(width, height) < 1 or rect[2] < 1 or rect[3] < 1 or \
            rect[0] + rect[2] > width or rect[1] + rect[3] > height:
        print("offscreen_gles2: --frames must be >= 1 and --rect inside --size",
              file=sys.stderr)
        return EXIT_BAD_ARGS
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    try:
        run(args.mode, args.frames, (width, height), rect, args.out)
    except Unavailable as exc:
        print(f"offscreen_gles2: {exc}", file=sys.stderr)
        return EXIT_NO_GL
    return 0


if __name__ == "__main__":
    sys.exit(main())
