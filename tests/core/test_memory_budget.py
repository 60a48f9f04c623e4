"""The memory budget (issue 12): inputs that ask for more memory than the budget are refused
with a one-line error before anything is allocated; the CLI turns OSError and MemoryError into
one line and exit code 2."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tilesim.memory_budget as memory_module
from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.memory_budget import BUDGET_ENV, format_bytes, memory_budget
from tilesim.options import byte_size
from tilesim.render.gl.commands import Command, Recorder
from tilesim.render.gl.state import GLState
from tilesim.render.pipeline.renderer import Renderer
from tilesim.render.traces.trace_file import open_trace, write_trace


@pytest.mark.parametrize("text, expected", [
    ("1024", 1024), ("512K", 512 << 10), ("8G", 8 << 30), ("1.5GiB", 3 << 29),
    ("2 mb", 2 << 20), ("1T", 1 << 40)])
def test_sizes_parse(text, expected):
    assert byte_size(text) == expected


@pytest.mark.parametrize("text", ["", "-1G", "0", "8X", "G", "1e9"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(ValueError, match="expected a size"):
        byte_size(text)


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "3M")
    assert memory_budget() == 3 << 20
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(InputError, match=BUDGET_ENV):
        memory_budget()
    monkeypatch.delenv(BUDGET_ENV)
    assert memory_budget() >= 1 << 30


def test_a_framebuffer_beyond_the_budget_is_refused_before_allocation(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "64M")
    Renderer(256, 256, source="small.tsim")             # 25 MiB at 400 B/pixel: fits
    with pytest.raises(InputError) as info:
        Renderer(16384, 16384, source="huge.tsim")     # 100 GiB, and 3 of texture caches
    message = str(info.value)
    assert message.startswith("huge.tsim: rendering a 16384x16384 framebuffer in 16-pixel "
                              "tiles needs about 103.0 GiB, more than the memory budget of "
                              "64.0 MiB")
    assert "--memory-budget" in message and "\n" not in message


def test_an_fbo_beyond_the_budget_is_refused_at_its_first_draw(monkeypatch):
    gl = Recorder(64, 64)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 4096, 4096, 0, "RGBA", "UNSIGNED_BYTE", None)
    gl.bindFramebuffer("FRAMEBUFFER", gl.createFramebuffer())
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()
    monkeypatch.setenv(BUDGET_ENV, "1G")     # the texture (384 MiB) fits, rendering into it not
    renderer = Renderer(64, 64, source="fbo.tsim")
    with pytest.raises(InputError, match=r"fbo\.tsim: frame 0, command \d+ \(clear\): rendering "
                                         r"into the 4096x4096 framebuffer 1 needs about 6\.4 GiB"):
        list(renderer.render(gl.recorded_frames()))


def test_textures_beyond_the_budget_are_refused_counting_those_already_held(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "40M")    # 24 bytes a texel: 1024x1024 is 24 MiB
    state = GLState(16, 16, "tex.tsim")
    for ident in (1, 2):
        state.apply(Command("bindTexture", {"target": "TEXTURE_2D", "id": ident}))
        args = {"target": "TEXTURE_2D", "level": 0, "internalformat": "RGBA", "width": 1024,
                "height": 1024, "format": "RGBA", "type": "UNSIGNED_BYTE", "data": None}
        if ident == 1:
            state.apply(Command("texImage2D", args))
        else:
            with pytest.raises(InputError, match="1024x1024 texels beside the 1048576 texels"):
                state.apply(Command("texImage2D", args))
    state.apply(Command("deleteTexture", {"id": 1}))   # freed: the second one fits now
    state.apply(Command("texImage2D", args))


def test_blobs_beyond_the_budget_are_refused_when_the_trace_opens(tmp_path, monkeypatch):
    data = np.zeros(3 << 20, np.uint8)                  # 3 MiB that compress to a few KiB
    frames = [[Command("createBuffer", {"id": 1}),
               Command("bindBuffer", {"target": "ARRAY_BUFFER", "id": 1}),
               Command("bufferData", {"target": "ARRAY_BUFFER", "data": data + k, "size": data.size,
                                      "usage": "STATIC_DRAW"}),
               Command("endFrame", {})] for k in range(2)]
    path = write_trace(tmp_path / "zeros.tsim", frames, width=8, height=8)
    assert path.stat().st_size < 100_000
    monkeypatch.setenv(BUDGET_ENV, "5M")
    with pytest.raises(InputError, match=r"zeros\.tsim: decompressing the trace's 2 blobs needs "
                                         r"about 6\.0 MiB, more than the memory budget"):
        open_trace(path)
    monkeypatch.setenv(BUDGET_ENV, "7M")
    open_trace(path).close()


def test_cli_budget_option_and_one_line_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)    # main() sets it: undone after the test
    path = write_trace(tmp_path / "big.tsim", [[Command("endFrame", {})]], width=4096,
                       height=4096)
    assert main(["--memory-budget", "1G", "render", str(path), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory budget of 1.0 GiB" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_cli_turns_os_errors_into_one_line_and_shows_the_traceback_with_debug(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    path = write_trace(tmp_path / "t.tsim", [[Command("endFrame", {})]], width=8, height=8)
    argv = [sys.executable, "-m", "tilesim.cli", "compare", str(blocker / "x"), str(path)]
    for debug in (False, True):
        proc = subprocess.run(argv[:3] + (["--debug"] if debug else []) + argv[3:],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines()[-1].startswith("tilesim: error: ")
        assert ("Traceback" in proc.stderr) == debug


def test_format_bytes():
    assert [format_bytes(n) for n in (512, 3 << 20, 5 << 30)] == ["512 B", "3.0 MiB",
                                                                   "5.0 GiB"]


def _huge_page_advice(enabled=None) -> bool:
    """NumPy's huge-page advice now (set to ``enabled`` where given)."""
    module = getattr(np, "_core", None) or np.core
    switch = module.multiarray._set_madvise_hugepage
    previous = switch(True)
    switch(previous if enabled is None else enabled)
    return previous


def test_numpy_huge_page_advice_is_switched_off_unless_the_user_chose(monkeypatch):
    before = _huge_page_advice()
    try:
        _huge_page_advice(True)
        monkeypatch.delenv(memory_module.NUMPY_HUGE_PAGES_ENV, raising=False)
        memory_module._no_huge_page_advice()
        assert _huge_page_advice() is False
        _huge_page_advice(True)
        monkeypatch.setenv(memory_module.NUMPY_HUGE_PAGES_ENV, "1")
        memory_module._no_huge_page_advice()
        assert _huge_page_advice() is True
    finally:
        _huge_page_advice(before)
