"""Issue 35, bounds on everything read: a fifo or a device given as an input file is refused
at once with one line naming it (never waited on or read forever), and a file read whole is
checked against the memory budget before it is read."""

from __future__ import annotations

import os

import pytest

from tilesim.errors import InputError
from tilesim.inputs import open_input, read_input_text, read_toml
from tilesim.memory_budget import BUDGET_ENV


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _readers():
    from tilesim.render.pipeline.gpu_config import _file_values
    from tilesim.render.techniques.dynamic_sampling_rate import DSRParameters
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.scheduling.scenarios import load_scenarios
    from tilesim.timing.config import load_energy_config, load_gpu_config
    from tilesim.timing.shader_core.config import load_core_config

    return {
        "trace": lambda p: open_trace(p),
        "--config": lambda p: load_gpu_config(p),
        "--energy-config": lambda p: load_energy_config(p),
        "--dsr-parameters": lambda p: DSRParameters.load(p),
        "core config": lambda p: load_core_config(p),
        "renderer config": lambda p: _file_values.__wrapped__(str(p), "screen", ("x",)),
        "scenarios": lambda p: load_scenarios(p),
    }


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_device_input_refused(reader):
    with pytest.raises(InputError, match="not a regular file") as info:
        _readers()[reader]("/dev/zero")
    assert info.value.source == "/dev/zero"


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_fifo_input_refused_without_waiting(reader, fifo):
    # Before the fix, opening a fifo with no writer blocked forever.
    with pytest.raises(InputError, match="not a regular file") as info:
        _readers()[reader](fifo)
    assert info.value.source == str(fifo)


def test_input_larger_than_budget_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * 4096)
    monkeypatch.setenv(BUDGET_ENV, "1K")
    with pytest.raises(InputError, match="memory budget") as info:
        read_input_text(path, "config file")
    assert info.value.source == str(path)


def test_open_input_names_missing_and_folder(tmp_path):
    with pytest.raises(InputError, match="no such trace file"):
        open_input(tmp_path / "nothing.tsim", "trace file")
    with pytest.raises(InputError, match="is a folder"):
        open_input(tmp_path, "trace file")


# --- TOML files: one reader (tilesim.inputs.read_toml), one kind of error ------------------

def test_read_toml_reads_a_fine_file(tmp_path):
    path = tmp_path / "fine.toml"
    path.write_text('# café\n[memory]\nbandwidth = { value = 4, unit = "bytes/cycle" }\n',
                    encoding="utf-8")
    assert read_toml(path, "config file") == {
        "memory": {"bandwidth": {"value": 4, "unit": "bytes/cycle"}}}
    assert read_toml(str(path)) == read_toml(path)


def test_read_toml_names_a_missing_file_and_a_folder(tmp_path):
    with pytest.raises(InputError) as info:
        read_toml(tmp_path / "none.toml", "config file")
    assert str(info.value) == f"{tmp_path / 'none.toml'}: no such config file"
    with pytest.raises(InputError, match="is a folder, not a config file"):
        read_toml(tmp_path, "config file")


def test_read_toml_refuses_a_file_not_utf8(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"# caf\xe9\n[screen]\n")
    with pytest.raises(InputError) as info:
        read_toml(path, "config file")
    assert str(info.value) == (f"{path}: not UTF-8 text (invalid continuation byte at byte "
                               "5), not a config file")


@pytest.mark.parametrize("text, line, column, message", [
    ("[memory]\nbandwidth = \n", 2, 13, "Invalid value"),
    ("[reduce\nthreshold = 1\n", 1, 8, "Expected ']' at the end of a table declaration"),
    ("a = 1\na = 2\n", 2, 6, "Cannot overwrite a value"),
    ("a = [1,\n", 2, 1, "Invalid value at the end of the file"),      # "at end of document"
    ("a = [1,", 1, 8, "Invalid value at the end of the file"),
])
def test_read_toml_names_the_line_and_column_of_a_syntax_error(tmp_path, text, line, column,
                                                                message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_toml(path, "config file")
    error = info.value
    assert (error.source, error.line, error.column) == (str(path), line, column)
    assert str(error) == f"{path}:{line}:{column}: not valid TOML: {message}"


def test_read_toml_refuses_deep_nesting_without_a_traceback(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 100_000)            # tomllib: a RecursionError
    with pytest.raises(InputError, match="not valid TOML: arrays or tables nested too "
                                         "deeply$") as info:
        read_toml(path)
    assert info.value.source == str(path)


@pytest.mark.parametrize("reader", sorted(set(_readers()) - {"trace"}))
def test_every_toml_reader_names_the_line_of_a_syntax_error(reader, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[screen]\nwidth = \n")
    with pytest.raises(InputError, match="not valid TOML: Invalid value") as info:
        _readers()[reader](path)
    assert (info.value.source, info.value.line, info.value.column) == (str(path), 2, 9)


def test_the_shipped_toml_tables_read_through_read_toml(tmp_path):
    """The packaged data files (GL extensions, the thesis games' table) go through the same
    reader: a broken copy is an InputError naming it, not a TOMLDecodeError."""
    from tilesim.render.gl.extensions import DATA
    from tilesim.render.workloads.thesis_games import load_table

    assert "gpu" in read_toml(DATA)
    path = tmp_path / "table.toml"
    path.write_text("[rows\n")
    with pytest.raises(InputError, match="not valid TOML") as info:
        load_table.__wrapped__(str(path))
    assert info.value.line == 1


# --- GL sizes and counts from a trace, checked against the budget before allocation ---------

def _state():
    from tilesim.render.gl.state import GLState

    return GLState(16, 16, "big.tsim")


def test_buffer_data_of_2_40_bytes_is_a_budget_error(monkeypatch):
    from tilesim.render.gl.commands import Command

    monkeypatch.setenv(BUDGET_ENV, "1G")
    state = _state()
    state.apply(Command("bindBuffer", {"target": "ARRAY_BUFFER", "id": 1}))
    with pytest.raises(InputError, match=r"big\.tsim.*bufferData: 1099511627776 bytes.*memory "
                                         r"budget"):
        state.apply(Command("bufferData", {"target": "ARRAY_BUFFER", "data": None,
                                           "size": 1 << 40, "usage": "STATIC_DRAW"}))


@pytest.mark.parametrize("op", ["drawArrays", "drawElements"])
def test_draw_count_of_2_40_is_a_budget_error(op, monkeypatch):
    from tilesim.render.gl.commands import Command
    from tilesim.render.pipeline.vertex_fetch import draw_elements

    monkeypatch.setenv(BUDGET_ENV, "1G")
    args = ({"mode": "TRIANGLES", "first": 0, "count": 1 << 40} if op == "drawArrays" else
            {"mode": "TRIANGLES", "count": 1 << 40, "type": "UNSIGNED_SHORT",
             "indices": None, "offset": 0})
    with pytest.raises(InputError, match=rf"big\.tsim.*{op}: 1099511627776 vertices.*budget"):
        draw_elements(_state(), Command(op, args))


def test_draw_elements_at_a_negative_offset_says_so():
    """It read '... at offset -8 need bytes up to 21592, the index data has 21600'."""
    import numpy as np

    from tilesim.render.gl.commands import Command
    from tilesim.render.pipeline.vertex_fetch import draw_elements

    state = _state()
    state.apply(Command("bindBuffer", {"target": "ELEMENT_ARRAY_BUFFER", "id": 1}))
    state.apply(Command("bufferData", {"target": "ELEMENT_ARRAY_BUFFER",
                                       "data": np.zeros(12, np.uint16), "size": None,
                                       "usage": "STATIC_DRAW"}))
    args = {"mode": "TRIANGLES", "count": 6, "type": "UNSIGNED_SHORT", "indices": None,
            "offset": -8}
    with pytest.raises(InputError, match=r"drawElements: negative offset \(-8\)$"):
        draw_elements(state, Command("drawElements", args))


@pytest.mark.parametrize("reader", sorted(set(_readers()) - {"trace"}))
def test_a_text_input_not_utf8_is_an_input_error(reader, tmp_path):
    """tomllib.load decodes by itself: a Latin-1 --config was a UnicodeDecodeError
    traceback."""
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"# caf\xe9\n[screen]\n")
    with pytest.raises(InputError, match="not UTF-8 text") as info:
        _readers()[reader](path)
    assert info.value.source == str(path)


@pytest.mark.parametrize("op", ["viewport", "scissor"])
def test_viewport_x_of_2_62_is_an_input_error(op):
    import warnings

    from tilesim.render.gl.commands import Command

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=rf"{op}: x 4611686018427387904 is outside GLint"):
            _state().apply(Command(op, {"x": 1 << 62, "y": 0, "width": 4, "height": 4}))


def test_import_and_workload_inputs_refuse_devices():
    from tilesim.render.traces.apitrace_import import scan_apitrace
    from tilesim.render.workloads.obj_model import load_obj
    from tilesim.scheduling.scenarios import load_scenarios

    for read in (scan_apitrace, load_obj, load_scenarios):
        with pytest.raises(InputError, match="not a regular file"):
            read("/dev/zero")


def test_file_digests_refuse_a_fifo(fifo):
    # render --dsr-parameters FIFO once waited forever hashing the parameters file
    from tilesim.render_folder import file_sha256

    with pytest.raises(InputError, match="not a regular file"):
        file_sha256(fifo)


def test_framebuffers_held_count_against_the_budget(monkeypatch):
    # Each 1024x1024 framebuffer fits alone (400 MiB to render into), but the ones already
    # rendered into keep their buffers: a trace of many of them is refused, not run to GBs.
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.pipeline.renderer import Renderer

    gl = Recorder(16, 16)
    for _ in range(12):
        texture = gl.createTexture()
        gl.bindTexture("TEXTURE_2D", texture)
        gl.texImage2D("TEXTURE_2D", 0, "RGBA", 1024, 1024, 0, "RGBA", "UNSIGNED_BYTE", None)
        gl.bindFramebuffer("FRAMEBUFFER", gl.createFramebuffer())
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
        gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()
    monkeypatch.setenv(BUDGET_ENV, "500M")
    renderer = Renderer(16, 16, source="many.tsim")
    with pytest.raises(InputError, match=r"many\.tsim: .*beside the \d+ pixels of other "
                                         r"framebuffers needs about .*memory budget"):
        list(renderer.render(gl.recorded_frames()))


def test_tiny_tiles_at_4k_count_their_texture_caches_against_the_budget(monkeypatch):
    # One texture-cache state a tile (tile_caches.py): 2-pixel tiles at 4K need 6 GiB of it
    # on top of the framebuffer's 3.3 GB, refused before anything is allocated; 16-pixel
    # tiles fit the same budget.
    from tilesim.render.pipeline.renderer import Renderer

    monkeypatch.setenv(BUDGET_ENV, "6G")
    with pytest.raises(InputError, match=r"4k\.tsim.*3840x2160 framebuffer in 2-pixel tiles.*"
                                         r"memory budget"):
        Renderer(3840, 2160, tile_size=2, source="4k.tsim")
    Renderer(3840, 2160, tile_size=16, source="4k.tsim")
