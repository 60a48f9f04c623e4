"""The renderer end to end on recorded scenes: determinism, counter conservation, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from render.commands import Recorder
from render.pipeline import Renderer
from tilesim.errors import InputError

pytestmark = pytest.mark.mesa

VS = """attribute vec4 pos; attribute vec3 col; varying vec3 v_col;
void main() { v_col = col; gl_Position = pos; }"""
FS = """precision mediump float; varying vec3 v_col;
void main() { gl_FragColor = vec4(v_col, 1.0); }"""
FS_DISCARD = """precision mediump float; varying vec3 v_col;
void main() { if (v_col.r > 0.5) discard; gl_FragColor = vec4(v_col, 0.5); }"""


@pytest.fixture
def gl(mesa):
    return Recorder(64, 48, name="test")


def _mesh(gl, fs=FS, positions=None):
    program = gl.createProgram(VS, fs, attrib_locations={"pos": 0, "col": 1})
    gl.useProgram(program)
    rng = np.random.default_rng(5)
    if positions is None:
        positions = np.concatenate([rng.uniform(-1.2, 1.2, (30, 2)),
                                    rng.uniform(-0.9, 0.9, (30, 1)), np.ones((30, 1))], axis=1)
    data = np.concatenate([positions, rng.random((len(positions), 3))], axis=1)
    buf = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", buf)
    gl.bufferData("ARRAY_BUFFER", data.astype(np.float32))
    gl.vertexAttribPointer(0, 4, "FLOAT", False, 28, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, 28, 16)
    gl.enableVertexAttribArray(1)
    return len(positions)


def _frame(gl, fs=FS, depth=True, blend=False):
    count = _mesh(gl, fs)
    if depth:
        gl.enable("DEPTH_TEST")
        gl.depthFunc("LEQUAL")
    if blend:
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
    gl.clearColor(0.2, 0.2, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.drawArrays("TRIANGLES", 0, count)
    gl.endFrame()
    return gl.recorded_frames()


def _render(frames, **kw):
    return list(Renderer(64, 48, **kw).render(frames))


def test_rendering_is_deterministic(gl):
    frames = _frame(gl, blend=True)
    a, b = _render(frames), _render(frames)
    assert a[0].image.tobytes() == b[0].image.tobytes()
    assert a[0].counters.to_npz_bytes() == b[0].counters.to_npz_bytes()


def test_counters_obey_conservation_laws_with_early_z(gl):
    c = _render(_frame(gl))[0].counters
    t = c.total
    assert t("early_z_tested") == t("fragments_rasterized") > 0
    assert t("fragments_shaded") == t("early_z_tested") - t("early_z_killed")
    assert t("late_z_tested") == 0
    assert t("color_writes") == t("fragments_shaded")
    assert t("fs_quad_alu") <= t("fs_alu") <= 4 * t("fs_quad_alu")
    assert t("prims_rasterized") == (t("prims_assembled") - t("prims_culled")
                                     - t("prims_degenerate") - t("prims_clip_rejected")
                                     + _extra_from_clipping(c))
    pixels = 64 * 48
    assert t("pixels_cleared") == pixels and t("color_flush_bytes") == 4 * pixels
    assert c.overshading() >= 1.0


def _extra_from_clipping(c) -> int:
    # A split triangle may become several; the test mesh stays inside the near/far planes.
    assert c.total("prims_clip_split") == 0
    return 0


def test_counters_obey_conservation_laws_with_late_z_and_discard(gl):
    c = _render(_frame(gl, fs=FS_DISCARD))[0].counters
    t = c.total
    assert t("early_z_tested") == 0
    assert t("fragments_shaded") == t("fragments_rasterized")
    assert t("late_z_tested") == t("fragments_shaded") - t("fragments_discarded")
    assert t("color_writes") == t("late_z_tested") - t("late_z_killed")
    assert t("fragments_discarded") > 0


def test_tile_counters_sum_per_tile_and_tile_size_is_configurable(gl):
    frames = _frame(gl)
    c16 = _render(frames)[0].counters
    c8 = _render(frames, tile_size=8)[0].counters
    assert c16.passes[0].tiles["fragments_rasterized"].size == 4 * 3
    assert c8.passes[0].tiles["fragments_rasterized"].size == 8 * 6
    for name in ("fragments_rasterized", "fragments_shaded", "color_writes"):
        assert c16.total(name) == c8.total(name)
    assert c8.total("prims_binned") >= c16.total("prims_binned")


def test_out_of_range_indices_are_an_error_naming_the_command(gl):
    _mesh(gl)
    gl.drawElements("TRIANGLES", 3, "UNSIGNED_SHORT", np.array([0, 1, 500], np.uint16))
    gl.endFrame()
    with pytest.raises(InputError, match=r"frame 0, command \d+ \(drawElements\).*vertex 500"):
        _render(gl.recorded_frames())


def test_nan_positions_are_an_error(gl):
    positions = np.array([[0, 0, 0, 1], [np.nan, 0, 0, 1], [0, 1, 0, 1]], dtype=np.float64)
    _mesh(gl, positions=positions)
    gl.drawArrays("TRIANGLES", 0, 3)
    gl.endFrame()
    with pytest.raises(InputError, match="NaN or infinite clip-space position"):
        _render(gl.recorded_frames())


def test_draw_without_program_or_with_missing_texture_is_an_error(gl):
    gl.drawArrays("TRIANGLES", 0, 3)
    gl.endFrame()
    with pytest.raises(InputError, match="no program in use"):
        _render(gl.recorded_frames())


def test_enormous_and_degenerate_triangles_render_without_error(gl):
    positions = np.array([[-1e6, -1e6, 0, 1], [1e6, -1e6, 0, 1], [0, 1e6, 0, 1],
                          [0, 0, 0, 1], [0.5, 0.5, 0, 1], [1, 1, 0, 1],
                          [-1, -1, 0, 1e-9], [1, -1, 0, 1], [0, 1, 0, -1]])
    _mesh(gl, positions=positions)
    gl.drawArrays("TRIANGLES", 0, 9)
    gl.endFrame()
    c = _render(gl.recorded_frames())[0].counters
    assert c.total("fragments_rasterized") == 64 * 48   # the huge one covers the screen
    assert c.total("prims_degenerate") >= 1
