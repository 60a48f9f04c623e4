"""Child process that compiles GLSL ES 1.00 programs with Mesa softpipe and lets Mesa print TGSI.

Run by :mod:`shaders.glsl_compile` as ``python -m shaders.mesa_softpipe_child REQUEST RESULT``
with ``GALLIUM_DRIVER=softpipe SOFTPIPE_DEBUG=vs,fs EGL_PLATFORM=surfaceless``. It creates a real
GLES2 context (EGL surfaceless, no window, no X server) through ctypes, then for each program
compiles, links and queries the GL interface (active attributes and uniforms).

Mesa prints the NIR and the TGSI of each shader on stderr when the program is linked. Mesa also
prints its internal blit shaders while the context is created, so before each link this process
writes a marker line straight to file descriptor 2 (unbuffered, so it interleaves correctly with
Mesa's own writes) and another after it; the parent parses only what lies between them.

REQUEST is a JSON file::

    {"programs": [{"vertex": "...", "fragment": "...", "attrib_bindings": {"position": 0}}]}

RESULT is a JSON file written by this process::

    {"renderer": "softpipe", "version": "OpenGL ES 3.1 Mesa 22.3.6",
     "programs": [{"status": "ok" | "compile_error" | "link_error", "stage": ..., "log": ...,
                   "attributes": [{"name", "size", "type", "location"}],
                   "uniforms": [{"name", "size", "type", "location"}]}]}

Exit status 0: RESULT written (compile errors are results, not failures); 3: EGL/GLES or Mesa
could not be loaded or initialised (the message on stderr says which). This module uses only the
standard library so that it starts fast and has nothing to import from the project.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

EXIT_NO_MESA = 3

# Markers written to fd 2 around each link. The parent matches them exactly.
MARKER_BEGIN = "@@tilesim-link-begin"
MARKER_END = "@@tilesim-link-end"

# EGL / GLES enums used below.
EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_ES_API = 0x30A0
EGL_CONTEXT_CLIENT_VERSION = 0x3098
EGL_NONE = 0x3038
GL_VERTEX_SHADER = 0x8B31
GL_FRAGMENT_SHADER = 0x8B30
GL_COMPILE_STATUS = 0x8B81
GL_LINK_STATUS = 0x8B82
GL_INFO_LOG_LENGTH = 0x8B84
GL_ACTIVE_UNIFORMS = 0x8B86
GL_ACTIVE_UNIFORM_MAX_LENGTH = 0x8B87
GL_ACTIVE_ATTRIBUTES = 0x8B89
GL_ACTIVE_ATTRIBUTE_MAX_LENGTH = 0x8B8A
GL_RENDERER = 0x1F01
GL_VERSION = 0x1F02

_c_uint_p = ctypes.POINTER(ctypes.c_uint)
_c_int_p = ctypes.POINTER(ctypes.c_int)


class NoMesa(Exception):
    """EGL/GLES could not be loaded or a context could not be made current."""


def _marker(text: str) -> None:
    # os.write bypasses Python's buffering, so the marker lands exactly between Mesa's writes.
    os.write(2, f"\n{text}\n".encode("ascii"))


class Gles2:
    """A current GLES2 context on Mesa's surfaceless EGL platform, with the few GL calls needed."""

    def __init__(self) -> None:
        try:
            egl = ctypes.CDLL("libEGL.so.1")
            gl = ctypes.CDLL("libGLESv2.so.2")
        except OSError as exc:
            raise NoMesa(f"cannot load libEGL.so.1 / libGLESv2.so.2: {exc}") from exc
        self.egl, self.gl = egl, gl
        egl.eglGetProcAddress.restype = ctypes.c_void_p
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
        addr = egl.eglGetProcAddress(b"eglGetPlatformDisplayEXT")
        if not addr:
            raise NoMesa("EGL has no eglGetPlatformDisplayEXT (EGL_EXT_platform_base)")
        get_platform_display = ctypes.CFUNCTYPE(
            ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p)(addr)
        dpy = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        if not dpy:
            raise NoMesa("eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA) failed")
        egl.eglInitialize.argtypes = [ctypes.c_void_p, _c_int_p, _c_int_p]
        major, minor = ctypes.c_int(), ctypes.c_int()
        if not egl.eglInitialize(dpy, ctypes.byref(major), ctypes.byref(minor)):
            raise NoMesa("eglInitialize failed on the surfaceless platform")
        egl.eglBindAPI.argtypes = [ctypes.c_uint]
        if not egl.eglBindAPI(EGL_OPENGL_ES_API):
            raise NoMesa("eglBindAPI(EGL_OPENGL_ES_API) failed")
        egl.eglCreateContext.restype = ctypes.c_void_p
        egl.eglCreateContext.argtypes = [ctypes.c_void_p] * 3 + [_c_int_p]
        attrs = (ctypes.c_int * 3)(EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE)
        ctx = egl.eglCreateContext(dpy, None, None, attrs)
        if not ctx:
            raise NoMesa("eglCreateContext(GLES 2) failed")
        egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
        if not egl.eglMakeCurrent(dpy, None, None, ctx):
            raise NoMesa("eglMakeCurrent without a surface failed (EGL_KHR_surfaceless_context)")
        self._declare_gl()

    def _declare_gl(self) -> None:
        gl = self.gl
        gl.glGetString.restype = ctypes.c_char_p
        gl.glGetString.argtypes = [ctypes.c_uint]
        gl.glCreateShader.restype = ctypes.c_uint
        gl.glCreateShader.argtypes = [ctypes.c_uint]
        gl.glShaderSource.argtypes = [ctypes.c_uint, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_char_p), _c_int_p]
        gl.glCompileShader.argtypes = [ctypes.c_uint]
        gl.glGetShaderiv.argtypes = [ctypes.c_uint, ctypes.c_uint, _c_int_p]
        gl.glGetShaderInfoLog.argtypes = [ctypes.c_uint, ctypes.c_int, _c_int_p, ctypes.c_char_p]
        gl.glCreateProgram.restype = ctypes.c_uint
        gl.glAttachShader.argtypes = [ctypes.c_uint, ctypes.c_uint]
        gl.glBindAttribLocation.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p]
        gl.glLinkProgram.argtypes = [ctypes.c_uint]
        gl.glGetProgramiv.argtypes = [ctypes.c_uint, ctypes.c_uint, _c_int_p]
        gl.glGetProgramInfoLog.argtypes = [ctypes.c_uint, ctypes.c_int, _c_int_p,
                                           ctypes.c_char_p]
        active_args = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int, _c_int_p, _c_int_p,
                       _c_uint_p, ctypes.c_char_p]
        gl.glGetActiveAttrib.argtypes = active_args
        gl.glGetActiveUniform.argtypes = active_args
        gl.glGetAttribLocation.restype = ctypes.c_int
        gl.glGetAttribLocation.argtypes = [ctypes.c_uint, ctypes.c_char_p]
        gl.glGetUniformLocation.restype = ctypes.c_int
        gl.glGetUniformLocation.argtypes = [ctypes.c_uint, ctypes.c_char_p]
        gl.glDeleteShader.argtypes = [ctypes.c_uint]
        gl.glDeleteProgram.argtypes = [ctypes.c_uint]

    def string(self, name: int) -> str:
        value = self.gl.glGetString(name)
        return value.decode("utf-8", "replace") if value else ""

    def _shader_iv(self, shader: int, pname: int) -> int:
        out = ctypes.c_int()
        self.gl.glGetShaderiv(shader, pname, ctypes.byref(out))
        return out.value

    def _program_iv(self, program: int, pname: int) -> int:
        out = ctypes.c_int()
        self.gl.glGetProgramiv(program, pname, ctypes.byref(out))
        return out.value

    def _shader_log(self, shader: int) -> str:
        size = max(self._shader_iv(shader, GL_INFO_LOG_LENGTH), 1)
        buf = ctypes.create_string_buffer(size)
        self.gl.glGetShaderInfoLog(shader, size, None, buf)
        return buf.value.decode("utf-8", "replace")

    def _program_log(self, program: int) -> str:
        size = max(self._program_iv(program, GL_INFO_LOG_LENGTH), 1)
        buf = ctypes.create_string_buffer(size)
        self.gl.glGetProgramInfoLog(program, size, None, buf)
        return buf.value.decode("utf-8", "replace")

    def _compile(self, kind: int, source: str) -> tuple[int, bool]:
        gl = self.gl
        shader = gl.glCreateShader(kind)
        data = source.encode("utf-8")
        strings = (ctypes.c_char_p * 1)(data)
        lengths = (ctypes.c_int * 1)(len(data))
        gl.glShaderSource(shader, 1, strings, lengths)
        gl.glCompileShader(shader)
        return shader, bool(self._shader_iv(shader, GL_COMPILE_STATUS))

    def _active(self, program: int, count_pname: int, length_pname: int, getter, locator):
        """Active attributes or uniforms as dicts (name, size, type enum, location)."""
        out = []
        size_max = max(self._program_iv(program, length_pname), 1) + 1
        for index in range(self._program_iv(program, count_pname)):
            buf = ctypes.create_string_buffer(size_max)
            length, size, gltype = ctypes.c_int(), ctypes.c_int(), ctypes.c_uint()
            getter(program, index, size_max, ctypes.byref(length), ctypes.byref(size),
                   ctypes.byref(gltype), buf)
            name = buf.value
            out.append({"name": name.decode("utf-8"), "size": size.value, "type": gltype.value,
                        "location": locator(program, name)})
        return out

    def build(self, index: int, program: dict) -> dict:
        """Compile and link one program; Mesa prints its NIR and TGSI between the markers."""
        gl = self.gl
        shaders = []
        try:
            for stage, kind in (("vertex", GL_VERTEX_SHADER), ("fragment", GL_FRAGMENT_SHADER)):
                shader, ok = self._compile(kind, program[stage])
                shaders.append(shader)
                if not ok:
                    return {"status": "compile_error", "stage": stage,
                            "log": self._shader_log(shader)}
            prog = gl.glCreateProgram()
            try:
                for shader in shaders:
                    gl.glAttachShader(prog, shader)
                for name, location in sorted(program.get("attrib_bindings", {}).items()):
                    gl.glBindAttribLocation(prog, int(location), name.encode("utf-8"))
                _marker(f"{MARKER_BEGIN} {index}")
                gl.glLinkProgram(prog)
                _marker(f"{MARKER_END} {index}")
                if not self._program_iv(prog, GL_LINK_STATUS):
                    return {"status": "link_error", "stage": None,
                            "log": self._program_log(prog)}
                return {
                    "status": "ok", "stage": None, "log": self._program_log(prog),
                    "attributes": self._active(prog, GL_ACTIVE_ATTRIBUTES,
                                               GL_ACTIVE_ATTRIBUTE_MAX_LENGTH,
                                               gl.glGetActiveAttrib, gl.glGetAttribLocation),
                    "uniforms": self._active(prog, GL_ACTIVE_UNIFORMS,
                                             GL_ACTIVE_UNIFORM_MAX_LENGTH,
                                             gl.glGetActiveUniform, gl.glGetUniformLocation),
                }
            finally:
                gl.glDeleteProgram(prog)
        finally:
            for shader in shaders:
                gl.glDeleteShader(shader)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m shaders.mesa_softpipe_child REQUEST.json RESULT.json",
              file=sys.stderr)
        return 2
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    try:
        ctx = Gles2()
    except NoMesa as exc:
        print(f"tilesim-mesa-child: {exc}", file=sys.stderr)
        return EXIT_NO_MESA
    result = {"renderer": ctx.string(GL_RENDERER), "version": ctx.string(GL_VERSION),
              "programs": [ctx.build(i, p) for i, p in enumerate(request["programs"])]}
    # The parent owns RESULT's temporary folder, so a plain write is enough here.
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
