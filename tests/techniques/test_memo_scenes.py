"""Fragment memoization on small programs like the three of issue 11 (textured sprites rotated
and flipped every frame, colored and textured triangles, a small lit 3D object): with 64-bit
keys no hit returns a wrong color, and the frames shown are the baseline's; where a hit does
return another fragment's color, the frame shows it (and coherence counts it)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require_mesa

from tilesim.render.gl.commands import Recorder
from tilesim.render.pipeline.renderer import Renderer
from tilesim.render.techniques.bus import Techniques

pytestmark = pytest.mark.mesa

W, H = 96, 64


# -- the scenes -----------------------------------------------------------------------------

SPRITE_VS = """attribute vec2 pos; attribute vec2 uv; varying vec2 v_uv;
void main() { v_uv = uv; gl_Position = vec4(pos, 0.0, 1.0); }"""
SPRITE_FS = """precision mediump float; uniform sampler2D tex; uniform vec4 tint;
varying vec2 v_uv;
void main() { gl_FragColor = texture2D(tex, v_uv) * tint; }"""


def _texture(gl, size: int = 32, seed: int = 0) -> int:
    """A checker with a gradient and a soft alpha disc, LINEAR filtered."""
    y, x = np.mgrid[0:size, 0:size] / (size - 1)
    rng = np.random.default_rng(seed)
    checker = ((np.floor(x * 4) + np.floor(y * 4)) % 2)[..., None]
    base = rng.random(3)
    rgb = checker * base + (1 - checker) * np.stack([x, y, 1 - x], -1)
    alpha = np.clip(1.5 - 2.2 * np.hypot(x - 0.5, y - 0.5), 0, 1)[..., None]
    image = (np.concatenate([rgb, alpha], -1) * 255 + 0.5).astype(np.uint8)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", texture)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", size, size, 0, "RGBA", "UNSIGNED_BYTE", image)
    for name, value in (("TEXTURE_MIN_FILTER", "LINEAR"), ("TEXTURE_MAG_FILTER", "LINEAR"),
                        ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"), ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
        gl.texParameteri("TEXTURE_2D", name, value)
    return texture


def _sprite_quads(centers, half, angles, flips) -> np.ndarray:
    """Two triangles per sprite, (6 * n, 4) float32 [x y u v]; u mirrored where flipped."""
    corners = np.array([(-1, -1), (1, -1), (1, 1), (-1, -1), (1, 1), (-1, 1)], np.float64)
    out = []
    for (cx, cy), a, flip in zip(centers, angles, flips, strict=True):
        c, s = np.cos(a), np.sin(a)
        xy = corners * half @ np.array([[c, s], [-s, c]]) + (cx, cy)
        uv = (corners + 1) / 2
        if flip:
            uv[:, 0] = 1 - uv[:, 0]
        out.append(np.column_stack([xy * (1, W / H), uv]))
    return np.concatenate(out).astype(np.float32)


def _attribs(gl, data: np.ndarray, sizes: tuple[int, ...]) -> None:
    buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", buffer)
    gl.bufferData("ARRAY_BUFFER", np.ascontiguousarray(data, dtype=np.float32))
    stride, offset = 4 * sum(sizes), 0
    for location, size in enumerate(sizes):
        gl.vertexAttribPointer(location, size, "FLOAT", False, stride, offset)
        gl.enableVertexAttribArray(location)
        offset += 4 * size


def sprites_scene(frames: int = 6):
    """Textured sprites, alpha-blended over a textured background, each turned by a large
    angle and mirrored every frame. Frame 0 only clears: the frame beside it in its pair
    shaded nothing on screen (the path on which keys reached the LUT as floats)."""
    gl = Recorder(W, H, name="memo-sprites")
    program = gl.createProgram(SPRITE_VS, SPRITE_FS, attrib_locations={"pos": 0, "uv": 1})
    atlas, background = _texture(gl, seed=1), _texture(gl, size=16, seed=2)
    rng = np.random.default_rng(5)
    centers = rng.uniform(-0.6, 0.6, (5, 2))
    spin = np.radians(rng.uniform(30, 75, 5)) * rng.choice([-1, 1], 5)
    gl.clearColor(0.1, 0.12, 0.2, 1.0)
    for f in range(frames):
        gl.clear("COLOR_BUFFER_BIT")
        if f == 0:
            gl.endFrame()
            continue
        gl.useProgram(program)
        gl.uniform1i(gl.getUniformLocation(program, "tex"), 0)
        gl.uniform4f(gl.getUniformLocation(program, "tint"), 1, 1, 1, 1)
        gl.disable("BLEND")
        gl.bindTexture("TEXTURE_2D", background)
        _attribs(gl, _sprite_quads([(0, 0)], 0.7, [0.0], [False]), (2, 2))
        gl.drawArrays("TRIANGLES", 0, 6)
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.bindTexture("TEXTURE_2D", atlas)
        gl.uniform4f(gl.getUniformLocation(program, "tint"), 1, 0.9, 0.8, 1)
        quads = _sprite_quads(centers + 0.01 * f, 0.25, spin * f, (np.arange(5) + f) % 2 == 1)
        _attribs(gl, quads, (2, 2))
        gl.drawArrays("TRIANGLES", 0, len(quads))
        gl.endFrame()
    return gl.recorded_frames()


COLOR_VS = """attribute vec2 pos; attribute vec4 col; varying vec4 v_col;
void main() { v_col = col; gl_Position = vec4(pos, 0.0, 1.0); }"""
COLOR_FS = """precision mediump float; varying vec4 v_col;
void main() { gl_FragColor = v_col; }"""
TEXCOL_VS = """attribute vec2 pos; attribute vec2 uv; attribute vec4 col;
varying vec2 v_uv; varying vec4 v_col;
void main() { v_uv = uv; v_col = col; gl_Position = vec4(pos, 0.0, 1.0); }"""
TEXCOL_FS = """precision mediump float; uniform sampler2D tex; varying vec2 v_uv;
varying vec4 v_col;
void main() { gl_FragColor = mix(texture2D(tex, v_uv), v_col, 0.35); }"""


def triangles_scene(frames: int = 6):
    """Colored triangles (per-vertex colors) and textured ones tinted by their vertex colors,
    some still, some moving, one blended over the others."""
    gl = Recorder(W, H, name="memo-triangles")
    colored = gl.createProgram(COLOR_VS, COLOR_FS, attrib_locations={"pos": 0, "col": 1})
    textured = gl.createProgram(TEXCOL_VS, TEXCOL_FS,
                                attrib_locations={"pos": 0, "uv": 1, "col": 2})
    texture = _texture(gl, seed=3)
    rng = np.random.default_rng(7)
    still = rng.uniform(-1, 1, (4, 3, 2))
    colors = rng.uniform(0, 1, (4, 3, 4))
    colors[..., 3] = 1
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    for f in range(frames):
        gl.clear("COLOR_BUFFER_BIT")
        gl.disable("BLEND")
        gl.useProgram(colored)
        moving = still + np.array([0.05 * f, 0.0]) * (np.arange(4) % 2)[:, None, None]
        _attribs(gl, np.concatenate([moving, colors], -1).reshape(-1, 6), (2, 4))
        gl.drawArrays("TRIANGLES", 0, 12)
        gl.useProgram(textured)
        gl.uniform1i(gl.getUniformLocation(textured, "tex"), 0)
        gl.bindTexture("TEXTURE_2D", texture)
        tri = np.array([[-0.9, -0.9], [0.2, -0.8], [-0.4, 0.7]]) + (0.03 * f, 0.02 * f)
        uv = np.array([[0, 0], [1, 0], [0.5, 1]])
        vertex_colors = np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 0.5]])
        data = [np.column_stack([tri, uv, vertex_colors])]
        data.append(np.column_stack([tri[:, ::-1] * 0.8, uv[::-1], vertex_colors[::-1]]))
        _attribs(gl, np.concatenate(data), (2, 2, 4))
        gl.drawArrays("TRIANGLES", 0, 6)
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.drawArrays("TRIANGLES", 3, 3)
        gl.endFrame()
    return gl.recorded_frames()


LIT_VS = """attribute vec3 pos; attribute vec3 normal; uniform mat4 mvp; uniform mat4 model;
varying vec3 v_normal; varying vec3 v_pos;
void main() {
  v_normal = (model * vec4(normal, 0.0)).xyz;
  v_pos = (model * vec4(pos, 1.0)).xyz;
  gl_Position = mvp * vec4(pos, 1.0);
}"""
LIT_FS = """precision mediump float; uniform vec3 light; uniform vec3 albedo;
varying vec3 v_normal; varying vec3 v_pos;
void main() {
  vec3 n = normalize(v_normal);
  vec3 l = normalize(light - v_pos);
  float diffuse = max(dot(n, l), 0.0);
  vec3 h = normalize(l + vec3(0.0, 0.0, 1.0));
  float specular = pow(max(dot(n, h), 0.0), 16.0);
  gl_FragColor = vec4(albedo * (0.15 + 0.85 * diffuse) + vec3(0.4) * specular, 1.0);
}"""


def _cube() -> np.ndarray:
    """36 vertices [x y z nx ny nz] of a unit cube with flat normals."""
    out = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = np.eye(3)[(axis + 1) % 3], np.eye(3)[(axis + 2) % 3]
            quad = [n * 0.5 + (a * u + b * v) * 0.5
                    for a, b in ((-1, -1), (1, -1), (1, 1), (-1, -1), (1, 1), (-1, 1))]
            out += [np.concatenate([p, n]) for p in quad]
    return np.array(out, dtype=np.float32)


def _rotation(angle: float, tilt: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    ct, st = np.cos(tilt), np.sin(tilt)
    ry = np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]])
    rx = np.array([[1, 0, 0, 0], [0, ct, -st, 0], [0, st, ct, 0], [0, 0, 0, 1]])
    return rx @ ry


def _perspective(fovy: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1 / np.tan(fovy / 2)
    return np.array([[f / aspect, 0, 0, 0], [0, f, 0, 0],
                     [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
                     [0, 0, -1, 0]])


def lit_object_scene(frames: int = 6):
    """A small cube, diffuse and specular lighting from a point light, turning slowly over a
    still lit floor quad; depth test on."""
    gl = Recorder(W, H, name="memo-lit")
    program = gl.createProgram(LIT_VS, LIT_FS, attrib_locations={"pos": 0, "normal": 1})
    cube = _cube()
    floor = np.array([[x, -0.6, z, 0, 1, 0] for x, z in
                      ((-2, -2), (2, -2), (2, 2), (-2, -2), (2, 2), (-2, 2))], np.float32)
    projection = _perspective(np.radians(50), W / H, 0.5, 10.0)
    view = np.eye(4)
    view[2, 3] = -3.0
    gl.clearColor(0.05, 0.05, 0.08, 1.0)
    gl.enable("DEPTH_TEST")
    gl.depthFunc("LESS")
    for f in range(frames):
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.useProgram(program)
        gl.uniform3f(gl.getUniformLocation(program, "light"), 1.5, 2.0, 1.0)
        for mesh, model, albedo in ((floor, np.eye(4), (0.5, 0.5, 0.45)),
                                    (cube, _rotation(0.15 * f, 0.5), (0.8, 0.3, 0.2))):
            mvp = projection @ view @ model
            gl.uniformMatrix4fv(gl.getUniformLocation(program, "mvp"), False,
                                mvp.T.astype(np.float32).ravel())
            gl.uniformMatrix4fv(gl.getUniformLocation(program, "model"), False,
                                model.T.astype(np.float32).ravel())
            gl.uniform3f(gl.getUniformLocation(program, "albedo"), *albedo)
            _attribs(gl, mesh, (3, 3))
            gl.drawArrays("TRIANGLES", 0, len(mesh))
        gl.endFrame()
    return gl.recorded_frames()


SCENES = {"sprites": sprites_scene, "triangles": triangles_scene, "lit_object": lit_object_scene}


# -- the tests -------------------------------------------------------------------------------


def _render(frames, technique="baseline"):
    return list(Renderer(W, H, techniques=Techniques.from_name(technique)).render(frames))


@pytest.fixture(scope="module", params=list(SCENES))
def scene(request):
    require_mesa()
    frames = SCENES[request.param]()
    return request.param, frames, _render(frames)


def test_64_bit_keys_make_no_collision_and_show_the_baseline_frames(scene):
    name, frames, baseline = scene
    results = _render(frames, "memo")
    assert [r.index for r in results] == [r.index for r in baseline]
    hits = lookups = 0
    for memo, base in zip(results, baseline, strict=True):
        assert memo.counters.scalars["memo_collisions"] == 0, (name, memo.index)
        np.testing.assert_array_equal(memo.image, base.image, err_msg=f"{name} {memo.index}")
        for p in memo.counters.passes:
            if "memo_hits" in p.tiles:
                hits += int(p.tiles["memo_hits"].sum())
                lookups += int(p.tiles["memo_lookups"].sum())
    assert 0 < hits < lookups, name     # the scenes reuse colors, and not all of them


def test_the_lut_the_configuration_sizes_is_the_one_rendered(scene):
    """``[techniques.memo] lut_sets`` / ``lut_ways`` (which also size the LUT's energy) set the
    renderer's LUT: a two-entry LUT hits less than Table 4.1's 2048 x 4, and still never
    shows a wrong color with 64-bit keys."""
    from tilesim.render.pipeline.gpu_config import renderer_config
    from tilesim.render.techniques.fragment_memoization import lut_geometry

    name, frames, baseline = scene

    def hits(results):
        return sum(int(p.tiles["memo_hits"].sum()) for r in results
                   for p in r.counters.passes if "memo_hits" in p.tiles)

    assert lut_geometry() == (2048, 4)
    tiny = {"techniques.memo.lut_sets": 2, "techniques.memo.lut_ways": 1}
    with renderer_config(tiny):
        assert lut_geometry() == (2, 1)
        small = _render(frames, "memo")
    assert hits(small) < hits(_render(frames, "memo")), name
    for memo, base in zip(small, baseline, strict=True):
        np.testing.assert_array_equal(memo.image, base.image, err_msg=f"{name} {memo.index}")


def test_sprite_frames_paired_with_an_empty_frame_keep_64_bit_keys(monkeypatch):
    """Frame 0 shades nothing on screen; frame 1, its pair, does. The keys the LUT sees are
    uint64 (no NumPy promotion), so no hit of frame 1 returns a wrong color."""
    require_mesa()
    from tilesim.render.techniques import fragment_memoization

    seen = []
    lookup = fragment_memoization.MemoLUT.lookup_insert

    def spy(self, keys, colors, **options):
        seen.append(keys.dtype)
        return lookup(self, keys, colors, **options)

    monkeypatch.setattr(fragment_memoization.MemoLUT, "lookup_insert", spy)
    results = _render(sprites_scene(frames=2), "memo")
    assert seen and all(dtype == np.uint64 for dtype in seen)
    assert [r.counters.scalars["memo_collisions"] for r in results] == [0, 0]


def test_a_wrong_color_hit_shows_in_the_frame(monkeypatch):
    """Keys forced to collide (one key per draw): every fragment of a draw after its first
    hits and takes the first one's stored color. The frame shown is drawn with those colors
    (flat quads where the baseline has gradients), and coherence does not count it
    identical."""
    require_mesa()
    from tilesim.render.techniques import fragment_memoization
    from tilesim.studies.coherence import Tally

    def one_key_per_draw(inputs, context_crc=0, quad_inputs=False, bits=32):
        n = np.asarray(inputs).shape[2]
        return np.full(n, context_crc, dtype=np.uint64)

    frames = triangles_scene(frames=2)
    baseline = _render(frames)
    monkeypatch.setattr(fragment_memoization, "fragment_keys", one_key_per_draw)
    results = _render(frames, "memo")
    for memo, base in zip(results, baseline, strict=True):
        assert memo.counters.scalars["memo_collisions"] > 0
        assert not np.array_equal(memo.image, base.image)
        # The colored triangles' draw: one stored color for all of its fragments, so the
        # frame holds far fewer distinct colors than the baseline's gradients.
        assert len(np.unique(memo.image.reshape(-1, 4), axis=0)) < \
            len(np.unique(base.image.reshape(-1, 4), axis=0)) / 4
        tally = Tally("memo")
        tally.add(memo.image, memo.counters, base.image)
        assert tally.identical == 0 and tally.mssim[0] < 1.0


def test_the_frame_shown_holds_the_stored_color_on_every_hit(monkeypatch):
    """One opaque gradient quad per frame, every fragment on one key: the first fragment
    looked up stores its color and every other hits it, so the quad shows that single color
    (one of its true ones) in both frames of the pair, and the clear color around it."""
    require_mesa()
    from tilesim.render.techniques import fragment_memoization

    gl = Recorder(W, H, name="memo-one-key")
    program = gl.createProgram(COLOR_VS, COLOR_FS, attrib_locations={"pos": 0, "col": 1})
    quad = np.array([[-0.5, -0.5, 1, 0, 0, 1], [0.5, -0.5, 0, 1, 0, 1], [0.5, 0.5, 0, 0, 1, 1],
                     [-0.5, -0.5, 1, 0, 0, 1], [0.5, 0.5, 0, 0, 1, 1], [-0.5, 0.5, 1, 1, 0, 1]])
    gl.clearColor(0, 0, 0, 1)
    for _ in range(2):
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(program)
        _attribs(gl, quad, (2, 4))
        gl.drawArrays("TRIANGLES", 0, 6)
        gl.endFrame()
    frames = gl.recorded_frames()
    baseline = _render(frames)
    monkeypatch.setattr(fragment_memoization, "fragment_keys",
                        lambda inputs, *a, **k: np.zeros(np.asarray(inputs).shape[2], np.uint64))
    results = _render(frames, "memo")
    covered = (baseline[0].image[..., :3] != 0).any(axis=2)
    shown = {tuple(c) for memo in results for c in memo.image[covered].tolist()}
    assert len(shown) == 1                      # one stored color, in both frames
    assert next(iter(shown)) in {tuple(c) for c in baseline[0].image[covered].tolist()}
    assert len({tuple(c) for c in baseline[0].image[covered].tolist()}) > 100   # a gradient
    for memo in results:
        np.testing.assert_array_equal(memo.image[~covered], baseline[0].image[~covered])


def test_wrong_color_frames_are_drawn_alike_on_the_cupy_path(monkeypatch):
    """The redraw with memoized colors runs on the array backend: under the emulated CuPy it
    gives the NumPy run's frames."""
    require_mesa()
    from cupy_emulation import use_emulated_cupy

    from tilesim.render.techniques import fragment_memoization

    def one_key_per_draw(inputs, context_crc=0, quad_inputs=False, bits=32):
        xp = fragment_memoization.array_module(inputs)
        return xp.full(inputs.shape[2], context_crc, dtype=np.uint64)

    frames = sprites_scene(frames=3)
    monkeypatch.setattr(fragment_memoization, "fragment_keys", one_key_per_draw)
    host = _render(frames, "memo")
    with use_emulated_cupy():
        device = _render(frames, "memo")
    assert sum(r.counters.scalars["memo_collisions"] for r in host) > 0
    for a, b in zip(host, device, strict=True):
        assert type(b.image) is np.ndarray
        np.testing.assert_array_equal(b.image, a.image)
        assert b.counters.scalars["memo_collisions"] == a.counters.scalars["memo_collisions"]


def test_frames_that_only_clear():
    """glmark2's clear scene: no frame shades a fragment, so every pair is empty."""
    gl = Recorder(W, H, name="memo-clears")
    for k in range(3):
        gl.clearColor(0.1 * k, 0.2, 0.3, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.endFrame()
    frames = gl.recorded_frames()
    results, baseline = _render(frames, "memo"), _render(frames)
    assert [r.counters.scalars["memo_collisions"] for r in results] == [0, 0, 0]
    for memo, base in zip(results, baseline, strict=True):
        np.testing.assert_array_equal(memo.image, base.image)


@pytest.mark.parametrize("make_scene", [sprites_scene, triangles_scene])
def test_a_few_wrong_colors_redraw_only_their_pixels_as_a_full_redraw_would(monkeypatch,
                                                                         make_scene):
    """Some lanes forced onto one key (a few collisions, blended sprites among them): the
    frames shown, which draw again only the pixels a wrong color was written to, are those
    of drawing every pixel again (the wrong hits not known)."""
    require_mesa()
    import dataclasses

    from tilesim.render.techniques import fragment_memoization

    keys = fragment_memoization.fragment_keys

    def some_collide(inputs, context_crc=0, quad_inputs=False, bits=32):
        out = keys(inputs, context_crc, quad_inputs, bits).copy()
        out[::61] = 7
        return out

    monkeypatch.setattr(fragment_memoization, "fragment_keys", some_collide)
    frames = make_scene(frames=4)
    partial = _render(frames, "memo")
    show = fragment_memoization.ScreenMemo.show
    monkeypatch.setattr(fragment_memoization.ScreenMemo, "show",
                        lambda self, outcome: show(self, dataclasses.replace(outcome, wrong=None)))
    full = _render(frames, "memo")
    assert sum(r.counters.scalars["memo_collisions"] for r in partial) > 0
    baseline = _render(frames)
    assert any(not np.array_equal(r.image, b.image) for r, b in zip(partial, baseline,
                                                                     strict=True))
    for a, b in zip(full, partial, strict=True):
        np.testing.assert_array_equal(b.image, a.image)
