"""Everything that talks to Mesa, in one place: the environment of a Mesa child process (and of
a program captured on Mesa), EGL bring-up on Mesa's surfaceless platform, the table of GL
entry points with their C signatures, and shader compiles and links with their info logs.

tilesim uses Mesa three ways, always in a child process so that the Gallium driver chosen
cannot leak into the caller: softpipe compiles GLSL and prints its TGSI
(``tilesim.shaders.mesa_softpipe_child``), llvmpipe or softpipe replays command streams for
reference images (``tilesim.render.reference.replay_gl``, ``tilesim.shaders.mesa_fullscreen``),
and a desktop GL context counts samples for the conformance scenes. The children build their
environment with :func:`child_environment` and their context with :class:`GL`; programs
captured under apitrace (``tilesim.render.traces.capture``, ``tilesim.shaders.trace_capture``)
and apitrace's own replays run in :func:`program_environment`, bounded by :func:`run_program`.

Standard library only: a child imports this module first thing, and it must start fast.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from pathlib import Path

DRIVERS = ("llvmpipe", "softpipe")
EXIT_NO_MESA = 3            # a child's exit status when EGL, GLES or Mesa cannot be brought up
# glvnd's vendor file for Mesa: pinned so that a GPU vendor's EGL on the machine is never the
# one loaded (tilesim's references are Mesa's software drivers).
MESA_EGL_VENDOR = Path("/usr/share/glvnd/egl_vendor.d/50_mesa.json")
# Debug switches of the caller's environment that would flood a child's stderr (where the
# softpipe child reads its TGSI) or change what Mesa does.
NOISY_VARIABLES = ("MESA_DEBUG", "LIBGL_DEBUG", "SOFTPIPE_DEBUG", "LP_DEBUG", "NIR_DEBUG",
                   "MESA_GLSL", "ST_DEBUG")

EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_ES_API = 0x30A0
EGL_OPENGL_API = 0x30A2
EGL_CONTEXT_CLIENT_VERSION = 0x3098
EGL_NONE = 0x3038
GL_COMPILE_STATUS = 0x8B81
GL_LINK_STATUS = 0x8B82
GL_INFO_LOG_LENGTH = 0x8B84


class NoMesa(RuntimeError):
    """EGL, GLES or Mesa could not be loaded or brought up."""


def child_environment(driver: str = "llvmpipe", *, surfaceless: bool = True,
                      **extra: str) -> dict[str, str]:
    """The environment of a Mesa child process: the caller's, less Mesa's debug switches,
    with the Gallium ``driver``, EGL's surfaceless platform (``surfaceless=False``: the
    platform the program picks, an X server's for a captured program), no shader cache (a
    cache hit could skip a compile and its printout; runs stay identical), Mesa's EGL vendor
    file pinned, and ``extra`` on top."""
    if driver not in DRIVERS:
        raise ValueError(f"unknown Mesa driver {driver!r}: expected one of {DRIVERS}")
    env = dict(os.environ)
    for noisy in (*NOISY_VARIABLES, "EGL_PLATFORM", "WAFFLE_PLATFORM"):
        env.pop(noisy, None)
    env.update({"GALLIUM_DRIVER": driver, "MESA_SHADER_CACHE_DISABLE": "true",
                "MESA_GLSL_CACHE_DISABLE": "true"})
    if surfaceless:
        env["EGL_PLATFORM"] = "surfaceless"
    if "__EGL_VENDOR_LIBRARY_FILENAMES" not in env and MESA_EGL_VENDOR.exists():
        env["__EGL_VENDOR_LIBRARY_FILENAMES"] = str(MESA_EGL_VENDOR)
    env.update(extra)
    return env


def program_environment(driver: str = "llvmpipe", **extra: str) -> dict[str, str]:
    """The environment of a GLES2 program run on Mesa's software rasterizer (a program
    captured under apitrace, or apitrace replaying a capture): :func:`child_environment` on
    the platform the program picks (an X server's, or what ``extra`` names), with
    ``LIBGL_ALWAYS_SOFTWARE``."""
    return child_environment(driver, surfaceless=False, LIBGL_ALWAYS_SOFTWARE="1", **extra)


# --- GL entry points ----------------------------------------------------------------------

_U, _I, _F, _P = ctypes.c_uint, ctypes.c_int, ctypes.c_float, ctypes.c_void_p
_B, _S = ctypes.c_ubyte, ctypes.c_char_p
_IP, _UP = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint)
_SIZEIPTR = ctypes.c_ssize_t
# name -> (result type, argument types): the GLES 2.0 entry points tilesim calls, and the
# GLES 3.1 program-interface queries the softpipe child uses to read the varyings.
GL_FUNCTIONS = {
    "glGetError": (_U, []), "glGetString": (_S, [_U]), "glGetIntegerv": (None, [_U, _IP]),
    "glFlush": (None, []), "glFinish": (None, []),
    "glEnable": (None, [_U]), "glDisable": (None, [_U]),
    "glViewport": (None, [_I, _I, _I, _I]), "glScissor": (None, [_I, _I, _I, _I]),
    "glDepthFunc": (None, [_U]), "glDepthMask": (None, [_B]),
    "glDepthRangef": (None, [_F, _F]), "glClearColor": (None, [_F, _F, _F, _F]),
    "glClearDepthf": (None, [_F]), "glClearStencil": (None, [_I]), "glClear": (None, [_U]),
    "glColorMask": (None, [_B, _B, _B, _B]),
    "glBlendFuncSeparate": (None, [_U, _U, _U, _U]),
    "glBlendEquationSeparate": (None, [_U, _U]), "glBlendColor": (None, [_F, _F, _F, _F]),
    "glCullFace": (None, [_U]), "glFrontFace": (None, [_U]), "glLineWidth": (None, [_F]),
    "glPolygonOffset": (None, [_F, _F]),
    "glStencilFuncSeparate": (None, [_U, _U, _I, _U]),
    "glStencilOpSeparate": (None, [_U, _U, _U, _U]),
    "glStencilMaskSeparate": (None, [_U, _U]), "glHint": (None, [_U, _U]),
    "glPixelStorei": (None, [_U, _I]),
    "glReadPixels": (None, [_I, _I, _I, _I, _U, _U, _P]),
    "glGenBuffers": (None, [_I, _UP]), "glDeleteBuffers": (None, [_I, _UP]),
    "glBindBuffer": (None, [_U, _U]), "glBufferData": (None, [_U, _SIZEIPTR, _P, _U]),
    "glBufferSubData": (None, [_U, _SIZEIPTR, _SIZEIPTR, _P]),
    "glGenTextures": (None, [_I, _UP]), "glDeleteTextures": (None, [_I, _UP]),
    "glActiveTexture": (None, [_U]), "glBindTexture": (None, [_U, _U]),
    "glTexImage2D": (None, [_U, _I, _I, _I, _I, _I, _U, _U, _P]),
    "glTexSubImage2D": (None, [_U, _I, _I, _I, _I, _I, _U, _U, _P]),
    "glCompressedTexImage2D": (None, [_U, _I, _U, _I, _I, _I, _I, _P]),
    "glCompressedTexSubImage2D": (None, [_U, _I, _I, _I, _I, _I, _U, _I, _P]),
    "glCopyTexImage2D": (None, [_U, _I, _U, _I, _I, _I, _I, _I]),
    "glCopyTexSubImage2D": (None, [_U, _I, _I, _I, _I, _I, _I, _I]),
    "glTexParameteri": (None, [_U, _U, _I]), "glTexParameterf": (None, [_U, _U, _F]),
    "glGenerateMipmap": (None, [_U]),
    "glCreateShader": (_U, [_U]), "glShaderSource": (None, [_U, _I, ctypes.POINTER(_S), _IP]),
    "glCompileShader": (None, [_U]), "glGetShaderiv": (None, [_U, _U, _IP]),
    "glGetShaderInfoLog": (None, [_U, _I, _IP, _S]), "glDeleteShader": (None, [_U]),
    "glCreateProgram": (_U, []), "glAttachShader": (None, [_U, _U]),
    "glBindAttribLocation": (None, [_U, _U, _S]), "glLinkProgram": (None, [_U]),
    "glGetProgramiv": (None, [_U, _U, _IP]), "glGetProgramInfoLog": (None, [_U, _I, _IP, _S]),
    "glDeleteProgram": (None, [_U]), "glUseProgram": (None, [_U]),
    "glGetActiveAttrib": (None, [_U, _U, _I, _IP, _IP, _UP, _S]),
    "glGetActiveUniform": (None, [_U, _U, _I, _IP, _IP, _UP, _S]),
    "glGetAttribLocation": (_I, [_U, _S]), "glGetUniformLocation": (_I, [_U, _S]),
    **{f"glUniform{n}fv": (None, [_I, _I, _P]) for n in "1234"},
    **{f"glUniform{n}iv": (None, [_I, _I, _P]) for n in "1234"},
    **{f"glUniformMatrix{n}fv": (None, [_I, _I, _B, _P]) for n in "234"},
    "glVertexAttribPointer": (None, [_U, _I, _U, _B, _I, _P]),
    "glEnableVertexAttribArray": (None, [_U]), "glDisableVertexAttribArray": (None, [_U]),
    # OES_vertex_array_object's entry points under their GLES 3 / OpenGL 3 names (Mesa's
    # contexts are GLES 3.x and desktop GL with them)
    "glGenVertexArrays": (None, [_I, _UP]), "glDeleteVertexArrays": (None, [_I, _UP]),
    "glBindVertexArray": (None, [_U]),
    "glVertexAttrib4fv": (None, [_U, _P]),
    "glDrawArrays": (None, [_U, _I, _I]), "glDrawElements": (None, [_U, _I, _U, _P]),
    "glGenFramebuffers": (None, [_I, _UP]), "glDeleteFramebuffers": (None, [_I, _UP]),
    "glBindFramebuffer": (None, [_U, _U]),
    "glFramebufferTexture2D": (None, [_U, _U, _U, _U, _I]),
    "glFramebufferRenderbuffer": (None, [_U, _U, _U, _U]),
    "glCheckFramebufferStatus": (_U, [_U]),
    "glGenRenderbuffers": (None, [_I, _UP]), "glDeleteRenderbuffers": (None, [_I, _UP]),
    "glBindRenderbuffer": (None, [_U, _U]),
    "glRenderbufferStorage": (None, [_U, _U, _I, _I]),
    "glGetFramebufferAttachmentParameteriv": (None, [_U, _U, _U, _IP]),
    "glGetRenderbufferParameteriv": (None, [_U, _U, _IP]),
    # GLES 3.1 (Mesa's GLES2 context offers them): one-stage programs' interfaces.
    "glProgramParameteri": (None, [_U, _U, _I]),
    "glGetProgramInterfaceiv": (None, [_U, _U, _U, _IP]),
    "glGetProgramResourceiv": (None, [_U, _U, _U, _I, _UP, _I, _IP, _IP]),
    "glGetProgramResourceName": (None, [_U, _U, _U, _I, _IP, _S]),
}
# GL_EXT_disjoint_timer_query (GLES; Mesa's GLES2 contexts offer it on llvmpipe and softpipe):
# the elapsed time of the commands between begin and end, as the driver's pipeline sees it.
TIMER_QUERY_EXTENSION = "GL_EXT_disjoint_timer_query"
GL_TIME_ELAPSED_EXT = 0x88BF
GL_QUERY_RESULT_EXT = 0x8866
GL_GPU_DISJOINT_EXT = 0x8FBB
GL_EXTENSIONS = 0x1F03
GL_TIMER_QUERY_FUNCTIONS = {
    "glGenQueriesEXT": (None, [_I, _UP]), "glBeginQueryEXT": (None, [_U, _U]),
    "glEndQueryEXT": (None, [_U]),
    "glGetQueryObjectui64vEXT": (None, [_U, _U, ctypes.POINTER(ctypes.c_uint64)]),
}
# Desktop GL's occlusion queries (GL_SAMPLES_PASSED), for a desktop context.
GL_QUERY_FUNCTIONS = {
    "glGenQueries": (None, [_I, _UP]), "glBeginQuery": (None, [_U, _U]),
    "glEndQuery": (None, [_U]), "glGetQueryObjectui64v": (None, [_U, _U,
                                                                 ctypes.POINTER(ctypes.c_uint64)]),
}


def _default_signals() -> None:
    """In the child, before exec: SIGINT as a terminal would deliver it. A parent started in
    the background (CI runners, ``nohup``) hands its children SIGINT ignored, and a Dask
    worker hands them SIGINT blocked; es2gears is stopped with SIGINT, so it must act on it."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()  # its own process group, so that a timeout ends every process it started


def _kill_group(pid: int) -> None:
    """SIGKILL to the process group a :func:`run_program` child leads (gone already: fine)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_program(argv: list[str], *, timeout: float, env: dict[str, str], what: str,
                source: str) -> subprocess.CompletedProcess:
    """Run ``argv`` to its end or for ``timeout`` seconds at most. On timeout the whole process
    group is killed (xvfb-run's Xvfb and the traced program too, which would otherwise hold the
    output pipes open and keep running) and a ProgramTimedOut says what ran too long."""
    from tilesim.errors import ProgramTimedOut

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=_default_signals)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise ProgramTimedOut(f"{what} ran longer than {timeout:.0f} s",
                              source=source) from None
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _load(name: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(name)
    except OSError as exc:
        raise NoMesa(f"cannot load {name}: {exc}") from exc


def _egl() -> ctypes.CDLL:
    egl = _load("libEGL.so.1")
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    return egl


def proc_address(name: str) -> int:
    """The address of a GL or EGL entry point (``eglGetProcAddress``); NoMesa if none."""
    address = _egl().eglGetProcAddress(name.encode("ascii"))
    if not address:
        raise NoMesa(f"no entry point {name}")
    return address


class GL:
    """GL entry points as attributes, their C signatures set from :data:`GL_FUNCTIONS`.

    ``GL.create()`` brings up a current GLES 2 context on Mesa's surfaceless EGL platform in
    this process (set ``GALLIUM_DRIVER`` and the rest first: :func:`child_environment`);
    ``GL.create(api="gl")`` a desktop OpenGL (compatibility) context, whose entry points,
    the occlusion queries included, come from ``eglGetProcAddress``.
    """

    def __init__(self, lookup, functions: dict = GL_FUNCTIONS):
        for name, (restype, argtypes) in functions.items():
            function = lookup(name)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)

    @classmethod
    def create(cls, api: str = "gles2") -> GL:
        egl = _egl()
        get_display = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                                       ctypes.c_void_p)(proc_address("eglGetPlatformDisplayEXT"))
        display = get_display(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        if not display:
            raise NoMesa("eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA) failed")
        egl.eglInitialize.argtypes = [ctypes.c_void_p, _IP, _IP]
        major, minor = ctypes.c_int(), ctypes.c_int()
        if not egl.eglInitialize(display, ctypes.byref(major), ctypes.byref(minor)):
            raise NoMesa("eglInitialize failed on the surfaceless platform")
        egl.eglBindAPI.argtypes = [ctypes.c_uint]
        if not egl.eglBindAPI(EGL_OPENGL_ES_API if api == "gles2" else EGL_OPENGL_API):
            raise NoMesa(f"eglBindAPI({api}) failed")
        egl.eglCreateContext.restype = ctypes.c_void_p
        egl.eglCreateContext.argtypes = [ctypes.c_void_p] * 3 + [_IP]
        attributes = ((ctypes.c_int * 3)(EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE)
                      if api == "gles2" else (ctypes.c_int * 1)(EGL_NONE))
        context = egl.eglCreateContext(display, None, None, attributes)
        if not context:
            raise NoMesa(f"eglCreateContext({api}) failed")
        egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
        if not egl.eglMakeCurrent(display, None, None, context):
            raise NoMesa("eglMakeCurrent without a surface failed "
                         "(EGL_KHR_surfaceless_context)")
        if api == "gles2":
            gles = _load("libGLESv2.so.2")
            gl = cls(lambda name: getattr(gles, name))
        else:
            gl = cls(lambda name: ctypes.CFUNCTYPE(None)(proc_address(name)),
                     {**GL_FUNCTIONS, **GL_QUERY_FUNCTIONS})
        gl.egl, gl.egl_display, gl.egl_context = egl, display, context   # kept alive
        gl.api = api
        return gl

    def make_current(self) -> None:
        """Make this object's context current again: a process with several contexts (one
        per window surface, ``tilesim predict``'s multi-context traces) switches with it."""
        if not self.egl.eglMakeCurrent(self.egl_display, None, None, self.egl_context):
            raise NoMesa("eglMakeCurrent failed")

    def string(self, name: int) -> str:
        value = self.glGetString(name)
        return value.decode("utf-8", "replace") if value else ""

    def integer(self, pname: int) -> int:
        out = ctypes.c_int()
        self.glGetIntegerv(pname, ctypes.byref(out))
        return out.value

    # -- shaders and programs, with their info logs ---------------------------------------------

    def shader_parameter(self, shader: int, pname: int) -> int:
        out = ctypes.c_int()
        self.glGetShaderiv(shader, pname, ctypes.byref(out))
        return out.value

    def program_parameter(self, program: int, pname: int) -> int:
        out = ctypes.c_int()
        self.glGetProgramiv(program, pname, ctypes.byref(out))
        return out.value

    def compile_shader(self, kind: int, source: str) -> tuple[int, bool]:
        """A new shader object of ``kind`` compiled from ``source``, and whether it compiled
        (its info log: :meth:`shader_log`)."""
        shader = self.glCreateShader(kind)
        data = source.encode("utf-8")
        self.glShaderSource(shader, 1, (ctypes.c_char_p * 1)(data),
                            (ctypes.c_int * 1)(len(data)))
        self.glCompileShader(shader)
        return shader, bool(self.shader_parameter(shader, GL_COMPILE_STATUS))

    def linked(self, program: int) -> bool:
        """Whether the last glLinkProgram of ``program`` succeeded."""
        return bool(self.program_parameter(program, GL_LINK_STATUS))

    def shader_log(self, shader: int) -> str:
        """A shader's info log (Mesa's compile messages), as text."""
        size = max(self.shader_parameter(shader, GL_INFO_LOG_LENGTH), 1)
        buf = ctypes.create_string_buffer(size)
        self.glGetShaderInfoLog(shader, size, None, buf)
        return buf.value.decode("utf-8", "replace")

    def program_log(self, program: int) -> str:
        """A program's info log (Mesa's link messages), as text."""
        size = max(self.program_parameter(program, GL_INFO_LOG_LENGTH), 1)
        buf = ctypes.create_string_buffer(size)
        self.glGetProgramInfoLog(program, size, None, buf)
        return buf.value.decode("utf-8", "replace")

    def timer_query(self) -> TimerQuery | None:
        """A GL_TIME_ELAPSED timer of this (GLES) context (GL_EXT_disjoint_timer_query), or
        None where the context does not offer the extension."""
        if TIMER_QUERY_EXTENSION not in self.string(GL_EXTENSIONS).split():
            return None
        return TimerQuery(self)

    def gen(self, function) -> int:
        name = ctypes.c_uint()
        function(1, ctypes.byref(name))
        return name.value

    def delete(self, function, name: int) -> None:
        handle = ctypes.c_uint(name)
        function(1, ctypes.byref(handle))


class TimerQuery:
    """GL_EXT_disjoint_timer_query's GL_TIME_ELAPSED_EXT on the current context: ``begin()``,
    the commands, ``end()``, then ``seconds()`` (waits for the result). ``disjoint()``: whether
    the driver reported a disjoint event since the last call (the result is then invalid).
    Get one from :meth:`GL.timer_query`."""

    def __init__(self, gl: GL):
        for name, (restype, argtypes) in GL_TIMER_QUERY_FUNCTIONS.items():
            function = ctypes.CFUNCTYPE(restype, *argtypes)(proc_address(name))
            setattr(self, name, function)
        self.gl = gl
        self.query = gl.gen(self.glGenQueriesEXT)

    def begin(self) -> None:
        self.glBeginQueryEXT(GL_TIME_ELAPSED_EXT, self.query)

    def end(self) -> None:
        self.glEndQueryEXT(GL_TIME_ELAPSED_EXT)

    def seconds(self) -> float:
        value = ctypes.c_uint64()
        self.glGetQueryObjectui64vEXT(self.query, GL_QUERY_RESULT_EXT, ctypes.byref(value))
        return value.value * 1e-9

    def disjoint(self) -> bool:
        return bool(self.gl.integer(GL_GPU_DISJOINT_EXT))
