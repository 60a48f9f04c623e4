"""The renderer end to end on recorded scenes: determinism, counter conservation, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.errors import InputError
from tilesim.render.gl.commands import Recorder
from tilesim.render.pipeline.renderer import Renderer

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


TEX_VS = """attribute vec4 pos; attribute vec2 uv; varying vec2 v_uv;
void main() { v_uv = uv; gl_Position = pos; }"""
TEX_FS = """precision mediump float; varying vec2 v_uv; uniform sampler2D tex;
void main() { gl_FragColor = texture2D(tex, v_uv); }"""


@pytest.mark.slow
@pytest.mark.parametrize("min_filter, per_sample", [("NEAREST", 1), ("LINEAR", 4),
                                                     ("LINEAR_MIPMAP_LINEAR", 8)])
def test_texels_fetched_are_samples_times_texels_per_filter(gl, min_filter, per_sample):
    program = gl.createProgram(TEX_VS, TEX_FS, attrib_locations={"pos": 0, "uv": 1})
    gl.useProgram(program)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    texels = np.random.default_rng(1).integers(0, 256, (32, 32, 4), dtype=np.uint8)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", 32, 32, 0, "RGBA", "UNSIGNED_BYTE", texels)
    gl.generateMipmap("TEXTURE_2D")
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", min_filter)
    gl.texParameteri("TEXTURE_2D", "TEXTURE_MAG_FILTER", "NEAREST")
    gl.uniform1i(gl.getUniformLocation(program, "tex"), 0)
    # A quad of 32x24 pixels showing the texture 4 times across: every sample minifies.
    quad = np.array([[-0.5, -0.5, 0, 1, 0, 0], [0.5, -0.5, 0, 1, 4, 0],
                     [0.5, 0.5, 0, 1, 4, 4], [-0.5, 0.5, 0, 1, 0, 4]], dtype=np.float32)
    gl.vertexAttribPointer(0, 4, "FLOAT", False, 24, quad)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 2, "FLOAT", False, 0, quad[:, 4:].copy())
    gl.enableVertexAttribArray(1)
    gl.drawArrays("TRIANGLE_FAN", 0, 4)
    gl.endFrame()
    c = _render(gl.recorded_frames())[0].counters
    samples, texels = c.total("tex_samples"), c.total("texels_fetched")
    assert samples == 4 * c.total("quads_shaded") > 0      # every lane of every quad samples
    assert texels == samples * per_sample
    assert texels == (c.total("texels_nearest") + c.total("texels_bilinear")
                      + c.total("texels_trilinear"))
    assert 0 < c.total("tex_cache_misses") <= c.total("tex_cache_accesses")


def test_sampling_with_no_texture_bound_gives_black_as_gl_does(gl):
    program = gl.createProgram(TEX_VS, TEX_FS, attrib_locations={"pos": 0, "uv": 1})
    gl.useProgram(program)
    quad = np.array([[-1, -1, 0, 1], [1, -1, 0, 1], [1, 1, 0, 1], [-1, 1, 0, 1]], np.float32)
    gl.vertexAttribPointer(0, 4, "FLOAT", False, 0, quad)
    gl.enableVertexAttribArray(0)
    gl.vertexAttrib4f(1, 0.5, 0.5)
    gl.clearColor(1, 1, 1, 1)
    gl.clear("COLOR_BUFFER_BIT")
    gl.drawArrays("TRIANGLE_FAN", 0, 4)
    gl.endFrame()
    image = _render(gl.recorded_frames())[0].image
    assert (image == [0, 0, 0, 255]).all()


def test_cli_reports_bad_traces_without_a_traceback(tmp_path, capsys):
    from tilesim.cli import main

    bad = tmp_path / "bad.tsim"
    bad.write_bytes(b"PK\x03\x04 certainly not a trace")
    assert main(["render", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "bad.tsim" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["generateMipmap", "texSubImage2D", "deleteTexture",
                                     "framebufferTexture2D"])
def test_commands_on_the_texture_a_pass_renders_into_see_the_pass(command):
    """A tile-based renderer keeps a pass's colors on chip: a command that reads, replaces or
    detaches the texture the open pass renders into must see what the pass drew (glmark2's
    terrain mipmapped its FBO texture with the FBO still bound and got the old contents)."""
    gl = Recorder(8, 8)
    texture, other = gl.createTexture(), gl.createTexture()
    for ident in (other, texture):
        gl.bindTexture("TEXTURE_2D", ident)
        gl.texImage2D("TEXTURE_2D", 0, "RGBA", 16, 16, 0, "RGBA", "UNSIGNED_BYTE", None)
    gl.bindFramebuffer("FRAMEBUFFER", gl.createFramebuffer())
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
    gl.clearColor(1.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")                       # the pass is open, the clear on chip
    if command == "generateMipmap":
        gl.generateMipmap("TEXTURE_2D")
    elif command == "texSubImage2D":
        gl.texSubImage2D("TEXTURE_2D", 0, 0, 0, 4, 4, "RGBA", "UNSIGNED_BYTE",
                         np.full((4, 4, 4), 255, np.uint8))
    elif command == "deleteTexture":
        gl.bindTexture("TEXTURE_2D", other)
        gl.deleteTexture(texture)
    else:   # switch the attachment, then clear it blue
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
        gl.clearColor(0.0, 0.0, 1.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
    gl.endFrame()
    renderer = Renderer(8, 8)
    list(renderer.render(gl.recorded_frames()))
    textures = renderer.state.textures

    def level(ident: int, number: int = 0) -> np.ndarray:
        return textures[ident].level_rgba("TEXTURE_2D", number)

    red, white, blue = (1.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 1.0), (0.0, 0.0, 1.0, 1.0)
    if command == "generateMipmap":
        assert (level(texture, 1) == red).all()        # mipmaps of the red clear
    elif command == "texSubImage2D":
        image = level(texture)
        assert (image[:4, :4] == white).all()          # the upload is not overwritten
        assert (image[4:] == red).all() and (image[:, 4:] == red).all()
    elif command == "deleteTexture":
        assert texture not in textures and (level(other) == 0).all()
    else:
        assert (level(texture) == red).all() and (level(other) == blue).all()


FS_DEPTH_ONLY_DISCARD = """precision mediump float; varying vec3 v_col;
void main() { if (v_col.r > 2.0) discard; }"""


def test_a_program_without_color_output_still_writes_depth_when_it_can_discard(gl):
    """A fragment program that can discard is depth-tested after shading; one that writes no
    gl_FragColor (a depth-only pass) must still be tested and write depth there, so a quad
    drawn behind it afterwards is hidden, as on Mesa."""
    from tilesim.render.reference.replay_gl import reference_frames

    quad = np.array([[-1, -1], [1, -1], [-1, 1], [-1, 1], [1, -1], [1, 1]], dtype=float)

    def draw(fs, z):
        positions = np.concatenate([quad, np.full((6, 1), z), np.ones((6, 1))], axis=1)
        gl.drawArrays("TRIANGLES", 0, _mesh(gl, fs, positions))

    gl.enable("DEPTH_TEST")
    gl.depthFunc("LESS")
    gl.clearColor(0.2, 0.2, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.colorMask(False, False, False, False)
    draw(FS_DEPTH_ONLY_DISCARD, -0.5)
    gl.colorMask(True, True, True, True)
    draw(FS, 0.5)
    gl.endFrame()
    frames = gl.recorded_frames()
    (ours,) = [r.image for r in _render(frames)]
    (mesa,) = reference_frames(frames, width=64, height=48)
    assert np.array_equal(ours[..., :3], np.asarray(mesa)[..., :3])
    assert (ours[..., :3] == 51).all()          # the clear color: the second quad is hidden


def test_counters_name_the_programs_each_tile_ran(tmp_path):
    """Per-program work (for the shader core's throughput): every program's TGSI text, the
    fragment quad instructions of each program per tile summing to the tile's fs_quad_*
    counters, and the vertex instructions of each vertex program summing to vs_*; all of it
    survives the .npz and the timing model's batch reader."""

    from tilesim.render.pipeline.counters import load_counters
    from tilesim.render.replay import render_trace
    from tilesim.shaders.ir import program_digest
    from tilesim.timing.counter_batch import batch_from_frames, load_batch

    trace = TRACES / "runner-1196x768.tsim"
    result = list(render_trace(trace, frames=[1], size=(160, 96)))[-1]
    frame = result.counters
    assert frame.programs and all(program_digest(t) == d for d, t in frame.programs.items())
    for p in frame.passes:
        total = sum(p.fs_programs.values())
        quad = p.tiles["fs_quad_alu"] + p.tiles["fs_quad_tex"] + p.tiles["fs_quad_flow"]
        assert np.array_equal(total, quad) and quad.sum() > 0
        assert set(p.fs_programs) <= set(frame.programs)
    vertex = frame.scalars["vs_alu"] + frame.scalars["vs_tex"] + frame.scalars["vs_flow"]
    assert sum(frame.vs_programs.values()) == vertex > 0
    path = frame.save(tmp_path / "000001.npz")
    again = load_counters(path)
    assert again.programs == frame.programs and again.vs_programs == frame.vs_programs
    for a, b in zip(again.passes, frame.passes, strict=True):
        assert a.fs_programs.keys() == b.fs_programs.keys()
        assert all(np.array_equal(a.fs_programs[d], b.fs_programs[d]) for d in a.fs_programs)
    loaded, built = load_batch([path]), batch_from_frames([frame])
    assert loaded.programs == built.programs == frame.programs
    for d, values in built.fs_programs.items():
        assert np.array_equal(loaded.fs_programs[d], values)
    assert {d: v.tolist() for d, v in loaded.vs_programs.items()} == \
        {d: [float(c)] for d, c in frame.vs_programs.items()}


def test_the_vertex_cache_line_is_the_configurations(tmp_path):
    """``[caches.vertex] line_size`` (which the timing model prices a miss by) is the line the
    renderer counts misses in: halving it cannot lower the misses, and a sphere's vertex
    array crosses more 32-byte lines than 64-byte ones."""
    from trace_helpers import sphere_trace

    from tilesim.render.pipeline.gpu_config import renderer_config
    from tilesim.render.replay import render_trace

    trace = sphere_trace(tmp_path / "s.tsim", 1, size=(32, 24), segments=(16, 8))

    def misses():
        (frame,) = render_trace(trace)
        return frame.counters.scalars["vertex_cache_misses"]

    shipped = misses()
    with renderer_config({"caches.vertex.line_size": 32}):
        narrow = misses()
    assert 0 < shipped < narrow
