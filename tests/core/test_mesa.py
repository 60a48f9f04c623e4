"""One Mesa module (issue 13): ``tilesim.mesa`` is the only place that builds a Mesa process's
environment (Mesa's EGL vendor file pinned for every child), loads EGL or GLES, looks up GL
entry points and reads compile and link logs; every Mesa user goes through it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_mesa
from repo_paths import ROOT

from tilesim import mesa

PACKAGE_DIRS = ("tilesim", "shaders", "render", "timing")
# Environment variables that choose or configure Mesa (set other than through
# child_environment / program_environment), and what brings Mesa up or reads its logs: only
# tilesim/mesa.py names them in code (docstrings and comments may).
MESA_VARIABLES = {"GALLIUM_DRIVER", "__EGL_VENDOR_LIBRARY_FILENAMES", "EGL_PLATFORM",
                  "LIBGL_ALWAYS_SOFTWARE", "MESA_SHADER_CACHE_DISABLE",
                  "MESA_GLSL_CACHE_DISABLE", "WAFFLE_PLATFORM"}
MESA_CALLS = {"eglGetProcAddress", "eglGetPlatformDisplayEXT", "eglInitialize",
              "eglCreateContext", "eglMakeCurrent", "glGetShaderInfoLog",
              "glGetProgramInfoLog"}
MESA_LIBRARIES = ("libEGL", "libGL")   # loaded by ctypes.CDLL


def mesa_code(path: Path) -> list[str]:
    """What in ``path``'s code (not its docstrings) sets a Mesa variable or brings Mesa up."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in MESA_VARIABLES and \
                id(node) not in docstrings:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {k.arg}=" for k in node.keywords
                      if k.arg in MESA_VARIABLES and not name.endswith("_environment")]
            if name == "CDLL" and any(isinstance(a, ast.Constant) and
                                      str(a.value).startswith(MESA_LIBRARIES)
                                      for a in node.args):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: CDLL(libEGL/libGL)")
        elif isinstance(node, ast.Attribute) and node.attr in MESA_CALLS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    return found


@pytest.mark.slow
def test_only_tilesim_mesa_brings_up_mesa_or_sets_its_environment():
    files = [p for d in PACKAGE_DIRS for p in sorted((ROOT / d).rglob("*.py"))
             if p != ROOT / "tilesim" / "mesa.py"]
    assert len(files) > 50
    assert [hit for path in files for hit in mesa_code(path)] == []
    assert mesa_code(ROOT / "tilesim" / "mesa.py")   # the scan finds what it looks for


def test_every_mesa_environment_pins_mesas_egl_vendor_file(monkeypatch):
    monkeypatch.setattr(mesa, "MESA_EGL_VENDOR", Path(__file__))   # "installed"
    for noisy in ("MESA_DEBUG", "SOFTPIPE_DEBUG", "EGL_PLATFORM", "WAFFLE_PLATFORM"):
        monkeypatch.setenv(noisy, "1")
    monkeypatch.delenv("__EGL_VENDOR_LIBRARY_FILENAMES", raising=False)
    child = mesa.child_environment("softpipe", SOFTPIPE_DEBUG="vs,fs")
    program = mesa.program_environment("llvmpipe", WAFFLE_PLATFORM="surfaceless_egl")
    for env in (child, program):
        assert env["__EGL_VENDOR_LIBRARY_FILENAMES"] == str(Path(__file__))
        assert env["MESA_SHADER_CACHE_DISABLE"] == "true" and "MESA_DEBUG" not in env
    assert (child["GALLIUM_DRIVER"], child["EGL_PLATFORM"], child["SOFTPIPE_DEBUG"]) == (
        "softpipe", "surfaceless", "vs,fs")
    assert (program["GALLIUM_DRIVER"], program["LIBGL_ALWAYS_SOFTWARE"],
            program["WAFFLE_PLATFORM"]) == ("llvmpipe", "1", "surfaceless_egl")
    assert "EGL_PLATFORM" not in program           # the program's own platform (an X server)
    # a vendor file the caller chose stays; without Mesa's file installed, nothing is pinned
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/elsewhere.json")
    assert mesa.child_environment()["__EGL_VENDOR_LIBRARY_FILENAMES"] == "/elsewhere.json"
    monkeypatch.delenv("__EGL_VENDOR_LIBRARY_FILENAMES")
    monkeypatch.setattr(mesa, "MESA_EGL_VENDOR", Path("/nonexistent/50_mesa.json"))
    assert "__EGL_VENDOR_LIBRARY_FILENAMES" not in mesa.child_environment()
    with pytest.raises(ValueError, match="unknown Mesa driver 'radeonsi'"):
        mesa.child_environment("radeonsi")


LOGS = """
import sys
from tilesim.mesa import GL
gl = GL.create()
vs, ok = gl.compile_shader(0x8B31, "void main() { gl_Position = vec4(0.0); }")
assert ok and gl.shader_log(vs) == "", gl.shader_log(vs)
fs, ok = gl.compile_shader(0x8B30, "void main() { gl_FragColor = undeclared; }")
assert not ok
print("compile:", gl.shader_log(fs).strip().splitlines()[0])
program = gl.glCreateProgram()
gl.glAttachShader(program, vs)
gl.glLinkProgram(program)
assert not gl.linked(program)
print("link:", gl.program_log(program).strip().splitlines()[0])
"""


def test_compile_and_link_logs_in_a_clean_child():
    require_mesa()
    proc = subprocess.run([sys.executable, "-I", "-c", LOGS], capture_output=True, text=True,
                          env=mesa.child_environment("softpipe"), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    compile_line, link_line = proc.stdout.splitlines()
    assert "undeclared" in compile_line and "error" in compile_line
    assert link_line.startswith("link: ") and len(link_line) > len("link: ")
