"""Issue 31 item 1, the GLES2 extensions Mesa's GLES2 context offers that change images and
that earlier work left out: EXT_blend_func_extended (dual-source blending), OES_texture_3D,
EXT_shader_texture_lod and EXT_texture_filter_anisotropic's footprint. Each against its
extension spec in unit tests and against Mesa (llvmpipe) through a conformance scene,
recorded, rendered by tilesim and replayed on Mesa here through the lower layers
(:mod:`tilesim.render.replay`, :mod:`tilesim.render.reference.replay_gl`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tilesim.errors import InputError
from tilesim.images import image_metrics, within_tolerance
from tilesim.jit import disabled
from tilesim.render.gl.commands import DUAL_SOURCE_FACTORS, enum_name, make_command
from tilesim.render.pipeline import output_merger
from tilesim.render.workloads.conformance_scenes import record_scene
from tilesim.thresholds import CONFORMANCE_MIN_MSSIM


def _scene_against_mesa(name: str) -> list[tuple[float, float, int]]:
    """(MSSIM, share of pixels within 2/255, largest difference) of each frame of scene
    ``name``: tilesim's image against llvmpipe's."""
    from conftest import require_mesa

    from tilesim.render.reference import replay_gl
    from tilesim.render.replay import render_frames
    require_mesa()
    frames, width, height = record_scene(name)
    ours = [r.image for r in render_frames(frames, width, height, source=f"scene {name}")]
    theirs = replay_gl.reference_frames(frames, width=width, height=height)
    assert len(ours) == len(theirs)
    out = []
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        mssim = image_metrics(a, b, index, where=name).mssim
        within, largest = within_tolerance(a, b, 2)
        out.append((float(mssim), within, largest))
    return out


# -- EXT_blend_func_extended ------------------------------------------------------------------

def _blend_state(src_rgb, dst_rgb, src_a, dst_a, *, blend=True):
    return SimpleNamespace(blend=blend, blend_src_rgb=src_rgb, blend_dst_rgb=dst_rgb,
                           blend_src_alpha=src_a, blend_dst_alpha=dst_a,
                           blend_eq_rgb="FUNC_ADD", blend_eq_alpha="FUNC_ADD",
                           blend_color=(0.0, 0.0, 0.0, 0.0), color_mask=(True,) * 4)


def test_src1_factors_read_the_second_source_color():
    """EXT_blend_func_extended, Table 4.2's new rows: SRC1_COLOR_EXT is (Rs1, Gs1, Bs1) for
    RGB and As1 for alpha, SRC1_ALPHA_EXT As1, the ONE_MINUS_ ones 1 minus those."""
    src = np.array([[0.2, 0.4, 0.6, 0.5]])
    src1 = np.array([[0.9, 0.1, 0.3, 0.25]])
    dst = np.array([[0.5, 0.5, 0.5, 1.0]])
    cases = {
        ("SRC1_COLOR_EXT", "ZERO"): np.r_[src[0, :3] * src1[0, :3], src[0, 3] * 0.25],
        ("ZERO", "ONE_MINUS_SRC1_COLOR_EXT"): np.r_[dst[0, :3] * (1 - src1[0, :3]), 0.75],
        ("SRC1_ALPHA_EXT", "ONE_MINUS_SRC1_ALPHA_EXT"):
            src[0] * 0.25 + dst[0] * 0.75,
    }
    for (s, d), expected in cases.items():
        out = output_merger.blend(src, dst, _blend_state(s, d, s, d), src1)
        np.testing.assert_allclose(out[0], expected)


@pytest.mark.parametrize("factor", DUAL_SOURCE_FACTORS)
def test_dual_source_writes_agree_with_and_without_the_kernels(factor):
    """The compiled output merger has no second color: a SRC1 factor takes the NumPy path,
    so the two paths write the same bytes (here both through it), and a draw without SRC1
    factors still takes the kernels."""
    rng = np.random.default_rng(31)
    pixel = rng.integers(0, 16, 64)
    color, color1 = rng.random((64, 4), np.float32), rng.random((64, 4), np.float32)
    state = _blend_state(factor, "ONE_MINUS_SRC_ALPHA", "ONE", factor)
    buffers = []
    for use_kernels in (True, False):
        buffer = np.full((16, 4), 100, np.uint8)
        if use_kernels:
            output_merger.write_colors(pixel, color, buffer, state, color1=color1)
        else:
            with disabled():
                output_merger.write_colors(pixel, color, buffer, state, color1=color1)
        buffers.append(buffer)
    np.testing.assert_array_equal(buffers[0], buffers[1])
    # The second color changes the result (the factor is not read as SRC or zero).
    other = np.full((16, 4), 100, np.uint8)
    output_merger.write_colors(pixel, color, other, state, color1=1 - color1)
    assert not np.array_equal(other, buffers[0])


def test_src1_factors_are_blend_factors_of_the_command_stream():
    """The enumerants of the extension (0x88F9, 0x88FA, 0x8589, 0x88FB) name the factors
    that blendFuncSeparate commands take."""
    names = [enum_name(v) for v in (0x88F9, 0x88FA, 0x8589, 0x88FB)]
    command = make_command("blendFuncSeparate", dict(zip(
        ("src_rgb", "dst_rgb", "src_alpha", "dst_alpha"), names, strict=True)), "<test>")
    assert sorted(command.args.values()) == sorted(DUAL_SOURCE_FACTORS)


@pytest.mark.mesa
@pytest.mark.slow
def test_blend_func_extended_scene_matches_llvmpipe():
    """Scene ``blend_func_extended``: the four SRC1 factors as source and destination factors
    of color and alpha, under three equations (MSSIM 0.99948, every pixel within 2/255 when
    written)."""
    [(mssim, within, _)] = _scene_against_mesa("blend_func_extended")
    assert mssim >= CONFORMANCE_MIN_MSSIM and within == 1.0


# -- OES_texture_3D ---------------------------------------------------------------------------

def _texture_3d(texels: np.ndarray, *, filters=("NEAREST", "NEAREST"), wrap="REPEAT"):
    """A TEXTURE_3D_OES texture of ``texels`` (D, H, W, 4) uint8."""
    from tilesim.render.gl.textures import Texture
    depth, height, width = texels.shape[:3]
    texture = Texture("TEXTURE_3D_OES")
    texture.tex_image_3d("TEXTURE_3D_OES", 0, "RGBA", width, height, depth, "RGBA",
                         "UNSIGNED_BYTE", texels.reshape(-1), 1)
    texture.parameter("TEXTURE_MIN_FILTER", filters[0])
    texture.parameter("TEXTURE_MAG_FILTER", filters[1])
    for pname in ("TEXTURE_WRAP_S", "TEXTURE_WRAP_T", "TEXTURE_WRAP_R_OES"):
        texture.parameter(pname, wrap)
    return texture


def _sample_3d(texture, coords, **options):
    from tilesim.render.pipeline.texture_sampler import SamplerOptions, TextureSampler
    from tilesim.shaders.sampling import TextureRequest
    sampler = TextureSampler({0: texture}, options=SamplerOptions.llvmpipe(), **options)
    coords = np.asarray(coords, np.float32)
    request = TextureRequest(unit=0, target="3D", coords=np.vstack(
        [coords, np.zeros((1, coords.shape[1]), np.float32)]))
    return sampler.sample(request), sampler


def test_3d_nearest_picks_the_texel_of_all_three_coordinates():
    """OES_texture_3D (ES 3.0 §3.8.10's i, j, k): NEAREST reads texel (floor(u W),
    floor(v H), floor(r D)) with each wrap mode applied to its own coordinate."""
    texels = np.random.default_rng(5).integers(0, 256, (4, 2, 8, 4), dtype=np.uint8)
    texture = _texture_3d(texels)
    s = np.array([0.1, 0.6, 0.95, 0.3, 0.3, 0.3, 0.3, 0.3])
    t = np.array([0.2, 0.7, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4])
    r = np.array([0.1, 0.3, 0.6, 0.9, 1.1, -0.2, 2.6, 0.5])   # REPEAT beyond [0, 1]
    color, sampler = _sample_3d(texture, [s, t, r])
    i, j = (s * 8).astype(int), (t * 2).astype(int)
    k = np.floor(r * 4).astype(int) % 4
    np.testing.assert_array_equal(np.rint(color.T * 255), texels[k, j, i])
    assert sampler.stats.totals()["texels"] == 8


def test_3d_linear_blends_the_eight_texels_around_the_point():
    """LINEAR (ES 3.0 §3.8.10, equation 3.22's 3D form): the 2x2x2 texels around
    (u - 1/2, v - 1/2, r D - 1/2) weighted by their fractions; here in float (MIRRORED_REPEAT
    keeps llvmpipe off its 8-bit path) against the formula, and counted as 8 texels."""
    texels = np.random.default_rng(6).integers(0, 256, (4, 4, 4, 4), dtype=np.uint8)
    texture = _texture_3d(texels, filters=("LINEAR", "LINEAR"), wrap="MIRRORED_REPEAT")
    point = np.array([[0.4], [0.55], [0.3]], np.float32)
    color, sampler = _sample_3d(texture, point)
    u, v, w = (point[:, 0] * 4 - 0.5)
    i, j, k = int(np.floor(u)), int(np.floor(v)), int(np.floor(w))
    a, b, c = u - i, v - j, w - k
    expected = sum(texels[k + dk, j + dj, i + di].astype(float) / 255
                   * (a if di else 1 - a) * (b if dj else 1 - b) * (c if dk else 1 - c)
                   for di in (0, 1) for dj in (0, 1) for dk in (0, 1))
    np.testing.assert_allclose(color[:, 0], expected, atol=1e-5)
    stats = sampler.stats.totals()
    assert stats["texels"] == 8 and stats["trilinear"] == 1


def test_3d_sampling_agrees_with_and_without_the_kernels():
    """3D sampling is NumPy code; its cache counting goes through the compiled kernels
    where they run: both ways give the same colors and counters (LINEAR and mipmapped)."""
    texels = np.random.default_rng(7).integers(0, 256, (8, 8, 8, 4), dtype=np.uint8)
    rng = np.random.default_rng(3)
    coords = rng.random((3, 64)).astype(np.float32) * 2 - 0.5
    results = []
    for use_kernels in (True, False):
        texture = _texture_3d(texels, filters=("LINEAR", "LINEAR"))
        if use_kernels:
            out, sampler = _sample_3d(texture, coords)
        else:
            with disabled():
                out, sampler = _sample_3d(texture, coords)
        results.append((out, sampler.stats.totals()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] and results[0][1]["texels"] == 8 * 64


def test_3d_images_upload_slice_after_slice_and_sub_boxes_replace():
    from tilesim.render.gl.textures import Texture
    texels = np.arange(3 * 2 * 2 * 4, dtype=np.uint8).reshape(3, 2, 2, 4)
    texture = _texture_3d(texels)
    image = texture.image(0, 0)
    assert (image.width, image.height, image.depth) == (2, 2, 3)
    assert image.nbytes == 2 * 2 * 3 * 4
    np.testing.assert_array_equal(image.rgba8().reshape(3, 2, 2, 4), texels)
    texture.tex_sub_image_3d("TEXTURE_3D_OES", 0, 1, 0, 1, 1, 2, 2, "RGBA", "UNSIGNED_BYTE",
                             np.full(16, 255, np.uint8), 1)
    after = image.rgba8().reshape(3, 2, 2, 4)
    assert (after[1:, :, 1] == 255).all() and (after[0] == texels[0]).all()
    assert (after[1:, :, 0] == texels[1:, :, 0]).all()
    with pytest.raises(InputError, match="texSubImage3D: box 1x1x2 at \\(0, 0, 2\\) is outside"):
        texture.tex_sub_image_3d("TEXTURE_3D_OES", 0, 0, 0, 2, 1, 1, 2, "RGBA",
                                 "UNSIGNED_BYTE", np.zeros(8, np.uint8), 1)
    with pytest.raises(InputError, match="compressedTexImage3D: ETC1_RGB8_OES has no 3D"):
        texture.compressed_tex_image_3d("TEXTURE_3D_OES", 0, "ETC1_RGB8_OES", 4, 4, 1,
                                        np.zeros(8, np.uint8))
    other = Texture("TEXTURE_2D")
    with pytest.raises(InputError, match="texImage3D: target TEXTURE_3D_OES does not fit"):
        other.tex_image_3d("TEXTURE_3D_OES", 0, "RGBA", 1, 1, 1, "RGBA", "UNSIGNED_BYTE")


def test_3d_mipmaps_need_every_level_of_three_dimensions():
    texels = np.zeros((4, 4, 4, 4), np.uint8)
    texture = _texture_3d(texels, filters=("LINEAR_MIPMAP_LINEAR", "LINEAR"))
    assert "level 1" in texture.incomplete_reason()
    for level, size in ((1, 2), (2, 1)):
        texture.tex_image_3d("TEXTURE_3D_OES", level, "RGBA", size, size, size, "RGBA",
                             "UNSIGNED_BYTE")
    assert texture.is_complete()
    texture.tex_image_3d("TEXTURE_3D_OES", 2, "RGBA", 1, 1, 2, "RGBA", "UNSIGNED_BYTE")
    assert texture.incomplete_reason() == "level 2 is 1x1x2, expected 1x1x1"


@pytest.mark.mesa
@pytest.mark.slow
def test_texture_3d_scene_matches_llvmpipe():
    """Scene ``texture_3d``: NEAREST with the three wrap modes on r, a glTexSubImage3DOES box,
    LINEAR in 8.8 fixed point and in float, texture3DProj, complete mip chains minified
    with both mip filters and a bias, a non-power-of-two RGB texture and a slice filled by
    glCopyTexSubImage3DOES (MSSIM 0.999994, largest difference 1/255 when written)."""
    [(mssim, within, largest)] = _scene_against_mesa("texture_3d")
    assert mssim >= CONFORMANCE_MIN_MSSIM and within == 1.0 and largest <= 1


def test_3d_mipmaps_are_generated_in_three_dimensions():
    """glGenerateMipmap of a 3D texture: every level to 1x1x1, each halving width, height
    and depth (the blend of two slices as llvmpipe's blit makes it: 8-bit lerps, weight
    128 between slices 2z and 2z + 1)."""
    texels = np.zeros((4, 2, 2, 4), np.uint8)
    texels[1::2] = 200                       # odd slices bright, even ones black
    texture = _texture_3d(texels)
    texture.generate_mipmap()
    sizes = [(im.width, im.height, im.depth) for im in
             (texture.image(0, level) for level in range(3))]
    assert sizes == [(2, 2, 4), (1, 1, 2), (1, 1, 1)]
    assert (texture.image(0, 1).rgba8() == 100).all()


@pytest.mark.mesa
@pytest.mark.slow
def test_generated_3d_mipmaps_are_llvmpipes():
    """The levels glGenerateMipmap makes of a 16x8x32 texture, each shown NEAREST with a
    bias from 0 to 5, are the bytes llvmpipe's levels hold (largest difference 0)."""
    from conftest import require_mesa

    from tilesim.render.gl.commands import Recorder
    from tilesim.render.reference import replay_gl
    from tilesim.render.replay import render_frames
    from tilesim.render.workloads.conformance_scenes.helpers import (
        VS_TEX,
        _draw,
        _program,
        _quad,
        _quad_uv,
    )
    from tilesim.render.workloads.conformance_scenes.textures import FS_TEX3D, _texels_3d
    require_mesa()
    gl = Recorder(160, 96)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    program = _program(gl, VS_TEX, FS_TEX3D)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex3d"), 0)
    gl.uniform3f(gl.getUniformLocation(program, "u_scale"), 1.0, 1.0, 1.0)
    gl.uniform1f(gl.getUniformLocation(program, "u_q"), 1.0)
    gl.uniform1f(gl.getUniformLocation(program, "u_r"), 0.2)
    gl.bindTexture("TEXTURE_3D_OES", gl.createTexture())
    gl.pixelStorei("UNPACK_ALIGNMENT", 1)
    gl.texImage3D("TEXTURE_3D_OES", 0, "RGBA", 16, 8, 32, 0, "RGBA", "UNSIGNED_BYTE",
                  _texels_3d(16, 8, 32, 900))
    gl.generateMipmap("TEXTURE_3D_OES")
    gl.texParameteri("TEXTURE_3D_OES", "TEXTURE_MIN_FILTER", "NEAREST_MIPMAP_NEAREST")
    gl.texParameteri("TEXTURE_3D_OES", "TEXTURE_MAG_FILTER", "NEAREST")
    for k in range(6):
        gl.uniform1f(gl.getUniformLocation(program, "u_bias"), float(k))
        x0 = -1.0 + k / 3 + 0.01
        _draw(gl, "TRIANGLES", _quad(x0, -0.95, x0 + 1 / 3 - 0.03, 0.95),
              texcoords=_quad_uv())
    gl.endFrame()
    frames = gl.recorded_frames()
    [ours] = [r.image for r in render_frames(frames, 160, 96, source="3d mipmaps")]
    [theirs] = replay_gl.reference_frames(frames, width=160, height=96)
    assert np.array_equal(ours, theirs)


def test_texture_3d_calls_import(tmp_path):
    """glTexImage3DOES, glTexSubImage3DOES, glCopyTexSubImage3DOES, glFramebufferTexture3DOES
    and TEXTURE_WRAP_R_OES as apitrace records them become the commands of the same name;
    the import lists OES_texture_3D among the extensions the capture used."""
    from apitrace_helpers import Calls, do_import, start, swap

    from tilesim.render.gl.extensions import extensions_used
    calls = Calls()
    start(calls)
    calls.add("glBindTexture", target=0x806F, texture=5)
    calls.add("glTexImage3DOES", target=0x806F, level=0, internalformat=0x1908, width=2,
              height=2, depth=2, border=0, format=0x1908, type=0x1401, pixels=bytes(32))
    calls.add("glTexSubImage3DOES", target=0x806F, level=0, xoffset=1, yoffset=0, zoffset=1,
              width=1, height=1, depth=1, format=0x1908, type=0x1401, pixels=bytes(4))
    calls.add("glTexParameteri", target=0x806F, pname=0x8072, param=0x812F)
    calls.add("glCopyTexSubImage3DOES", target=0x806F, level=0, xoffset=0, yoffset=0,
              zoffset=1, x=0, y=0, width=2, height=2)
    calls.add("glGenFramebuffers", n=1, framebuffers=[7])
    calls.add("glBindFramebuffer", target=0x8D40, framebuffer=7)
    calls.add("glFramebufferTexture3DOES", target=0x8D40, attachment=0x8CE0,
              textarget=0x806F, texture=5, level=0, zoffset=1)
    calls.add("glClear", mask=0x4000)
    swap(calls)
    _, frames, _ = do_import(tmp_path, calls)
    commands = [c for c in frames[0] if "3D" in c.op or c.args.get("target") == "TEXTURE_3D_OES"
                or c.args.get("textarget") == "TEXTURE_3D_OES"]
    assert [c.op for c in commands] == ["bindTexture", "texImage3D", "texSubImage3D",
                                        "texParameter", "copyTexSubImage3D",
                                        "framebufferTexture3D"]
    assert commands[3].args["pname"] == "TEXTURE_WRAP_R_OES"
    assert commands[-1].args["zoffset"] == 1
    assert "GL_OES_texture_3D" in extensions_used(frames[0])


def test_rendering_into_a_3d_slice_stores_that_slice():
    """glFramebufferTexture3DOES: a clear of the framebuffer lands in slice zoffset only."""
    from tilesim.render.gl.commands import Recorder
    from tilesim.render.replay import renderer_for
    gl = Recorder(4, 4)
    texture = gl.createTexture()
    gl.bindTexture("TEXTURE_3D_OES", texture)
    gl.texImage3D("TEXTURE_3D_OES", 0, "RGBA", 4, 4, 3, 0, "RGBA", "UNSIGNED_BYTE",
                  np.zeros(4 * 4 * 3 * 4, np.uint8))
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer(fbo)
    gl.framebufferTexture3D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_3D_OES", texture, 0, 1)
    gl.clearColor(1.0, 0.5, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.bindFramebuffer(0)
    gl.endFrame()
    renderer = renderer_for(4, 4)
    for command in gl.recorded_frames()[0]:
        renderer.execute(command)
    image = renderer.state.textures[texture].image(0, 0).rgba8().reshape(3, 4, 4, 4)
    assert (image[1] == (255, 128, 0, 255)).all()
    assert (image[0] == 0).all() and (image[2] == 0).all()


# -- EXT_shader_texture_lod ---------------------------------------------------------------------

FS_LOD = """#extension GL_EXT_shader_texture_lod : require
precision highp float;
uniform sampler2D t;
uniform samplerCube c;
varying vec2 v_uv;
void main() {
    gl_FragColor = texture2DLodEXT(t, v_uv, 1.5) + texture2DProjLodEXT(t, vec3(v_uv, 2.0), 0.5)
        + texture2DGradEXT(t, v_uv, vec2(0.2), vec2(0.1))
        + textureCubeGradEXT(c, vec3(v_uv, 1.0), vec3(0.1), vec3(0.2))
        + texture2D(t, v_uv);
}
"""
VS_UV = """attribute vec4 a_pos;
varying vec2 v_uv;
void main() { v_uv = a_pos.xy; gl_Position = a_pos; }
"""


def test_the_glsl_es3_form_renames_lookups_inputs_and_the_color_output():
    """texture_lod.rewrite_program: #version 300 es, the extension's lookups as GLSL ES 3.00's
    (§8.8), varying / attribute as in / out, gl_FragColor as one mediump output declared
    after the directives; programs without the extension are not touched."""
    from tilesim.shaders.texture_lod import FRAG_COLOR, rewrite_program, uses_texture_lod
    assert uses_texture_lod(VS_UV, FS_LOD)
    assert not uses_texture_lod(VS_UV, FS_LOD.replace(": require", ": disable"))
    vertex, fragment = rewrite_program(VS_UV, FS_LOD)
    assert vertex.startswith("#version 300 es\n") and "#define attribute in" in vertex
    assert "#define varying out" in vertex
    assert "#define texture2DGradEXT textureGrad" in fragment
    assert "#define texture2DProjLodEXT textureProjLod" in fragment
    assert "GL_EXT_shader_texture_lod" not in fragment
    assert f"out mediump vec4 {FRAG_COLOR};" in fragment
    assert f"{FRAG_COLOR} = " in fragment and "gl_FragColor" not in fragment


@pytest.mark.parametrize("fragment, reason", [
    ("uniform sampler2D texture;", "names something 'texture'"),
    ("void f() { gl_FragData[1] = vec4(1.0); }", "gl_FragData beyond element 0"),
    ("void f() { gl_SecondaryFragColorEXT = vec4(1.0); }", "second color")])
def test_what_the_glsl_es3_form_cannot_express_is_refused(fragment, reason):
    from tilesim.shaders.texture_lod import RewriteError, rewrite_program
    with pytest.raises(RewriteError, match=reason):
        rewrite_program(VS_UV, "#extension GL_EXT_shader_texture_lod : enable\n" + fragment)


@pytest.mark.mesa
def test_lod_and_gradient_lookups_compile_to_txl_and_txd(mesa):
    """The program Mesa compiles is the GLSL ES 3.00 form; the trace keeps the source as
    written, and the TGSI has TXL (explicit LOD, projective forms divided first) and TXD
    (gradients), gl_FragColor as the COLOR output."""
    from tilesim.shaders.glsl_compile import compile_program
    program = compile_program(VS_UV, FS_LOD)
    assert program.fragment_glsl == FS_LOD
    opcodes = [line.split()[1] for line in program.fragment_tgsi.splitlines()
               if line[:4].strip().rstrip(":").isdigit()]
    assert opcodes.count("TXL") == 2 and opcodes.count("TXD") == 2 and "TEX" in opcodes
    assert program.interface["builtins"]["fragment"] == [
        {"name": "gl_FragColor", "register": "OUT[0]", "semantic": "COLOR",
         "components": "xyzw"}]


@pytest.mark.mesa
def test_a_program_the_glsl_es3_form_cannot_express_is_one_line(mesa):
    from tilesim.shaders.glsl_compile import compile_program
    with pytest.raises(InputError, match="names something 'texture'") as info:
        compile_program(VS_UV, FS_LOD.replace("uniform sampler2D t;",
                                              "uniform sampler2D texture;"))
    assert "\n" not in str(info.value)


@pytest.mark.mesa
@pytest.mark.slow
def test_shader_texture_lod_scene_matches_llvmpipe():
    """Scene ``shader_texture_lod``: the six lookups with LOD and gradients varying across
    each quad, trilinear and NEAREST_MIPMAP_NEAREST (MSSIM 0.999993, largest difference
    1/255 when written); Mesa runs the program's GLSL ES 3.00 form too."""
    [(mssim, within, largest)] = _scene_against_mesa("shader_texture_lod")
    assert mssim >= CONFORMANCE_MIN_MSSIM and within == 1.0 and largest <= 1


# -- EXT_texture_filter_anisotropic ---------------------------------------------------------------

def _receding_quads(n_quads: int = 64):
    """Coordinates of quads whose footprint is long in t and short in s (a receding floor):
    (3, 4 * n_quads) float32."""
    rng = np.random.default_rng(8)
    s0, t0 = rng.random(n_quads), rng.random(n_quads)
    ds, dt = 0.002 + 0.004 * rng.random(n_quads), 0.02 + 0.06 * rng.random(n_quads)
    s = np.stack([s0, s0 + ds, s0, s0 + ds], axis=1).reshape(-1)
    t = np.stack([t0, t0, t0 + dt, t0 + dt], axis=1).reshape(-1)
    return np.stack([s, t, np.zeros_like(s)]).astype(np.float32)


def _texture_2d(anisotropy: float, min_filter="LINEAR_MIPMAP_LINEAR"):
    from tilesim.render.gl.textures import Texture
    texture = Texture("TEXTURE_2D")
    texels = np.random.default_rng(9).integers(0, 256, (64, 64, 4), dtype=np.uint8)
    texture.tex_image_2d("TEXTURE_2D", 0, "RGBA", 64, 64, "RGBA", "UNSIGNED_BYTE",
                         texels.reshape(-1), 1)
    texture.parameter("TEXTURE_MIN_FILTER", min_filter)
    if min_filter != "LINEAR":
        texture.generate_mipmap()
    texture.parameter_float("TEXTURE_MAX_ANISOTROPY_EXT", anisotropy)
    return texture


def _sample_2d(texture, coords):
    from tilesim.render.pipeline.texture_sampler import SamplerOptions, TextureSampler
    from tilesim.shaders.sampling import TextureRequest
    sampler = TextureSampler({0: texture}, options=SamplerOptions.llvmpipe())
    request = TextureRequest(unit=0, target="2D", coords=np.vstack(
        [coords, np.zeros((1, coords.shape[1]), np.float32)]))
    return sampler.sample(request), sampler.stats


def test_anisotropic_footprints_fetch_many_texels_and_count_them():
    """EXT_texture_filter_anisotropic: with TEXTURE_MAX_ANISOTROPY_EXT above 1 a long thin
    footprint takes many taps along its major axis (each a nearest fetch, counted as a
    texel and a cache access), at the level of its minor axis, where the isotropic filter
    takes 8 texels (trilinear) at the level of its major axis and blurs (here 11.2 texels a
    sample against 8)."""
    coords = _receding_quads()
    iso, iso_stats = _sample_2d(_texture_2d(1.0), coords)
    aniso, stats = _sample_2d(_texture_2d(16.0), coords)
    from tilesim.render.pipeline.texture_sampler import stats_texels_consistent
    assert stats_texels_consistent(stats) and stats_texels_consistent(iso_stats)
    per_sample = stats.texels.sum() / stats.samples.sum()
    assert per_sample > iso_stats.texels.sum() / iso_stats.samples.sum() == 8
    assert stats.nearest.sum() == stats.texels.sum() - 4 * stats.bilinear.sum()
    # one access per distinct line among a lane's taps (one level, where trilinear reads two)
    assert 0 < stats.cache_accesses.sum() <= stats.texels.sum()
    # sharper: the anisotropic colors vary more between neighbouring quads
    assert np.std(aniso[:3, ::4]) > np.std(iso[:3, ::4])


def test_anisotropic_sampling_agrees_with_and_without_the_kernels():
    """The anisotropic filter is NumPy code; its cache counting goes through the compiled
    kernels where they run: both ways give the same colors and counters."""
    coords = _receding_quads(16)
    results = []
    for use_kernels in (True, False):
        if use_kernels:
            results.append(_sample_2d(_texture_2d(4.0), coords))
        else:
            with disabled():
                results.append(_sample_2d(_texture_2d(4.0), coords))
    (a, sa), (b, sb) = results
    np.testing.assert_array_equal(a, b)
    assert sa.totals() == sb.totals()


@pytest.mark.mesa
@pytest.mark.slow
def test_anisotropic_filtering_scene_matches_llvmpipe():
    """Scene ``anisotropic_filtering``: a receding plane with maximum anisotropy 16, 4, 16
    and 2 over four filters (MSSIM 0.99990, every pixel within 1/255 when written; sampled
    isotropically, tilesim's image had MSSIM 0.870 and differences up to 94/255)."""
    [(mssim, within, largest)] = _scene_against_mesa("anisotropic_filtering")
    assert mssim >= CONFORMANCE_MIN_MSSIM and within == 1.0 and largest <= 2


# -- captures -----------------------------------------------------------------------------------

@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("scene", ["texture_3d", "blend_func_extended", "anisotropic_filtering"])
def test_captured_programs_using_the_extensions_import_render_and_match_mesa(tmp_path, scene):
    """A real GLES2 program using OES_texture_3D (glTexImage3DOES ... through
    eglGetProcAddress), EXT_blend_func_extended or EXT_texture_filter_anisotropic: Mesa's
    replay of the scene on llvmpipe, captured with apitrace, imports, renders and matches
    Mesa's reference of the capture (MSSIM >= 0.995). (EXT_shader_texture_lod has no such
    capture: Mesa 22.3 refuses the program, so what runs there is its GLSL ES 3.00 form,
    which a GLES2 import refuses.)"""
    from apitrace_helpers import capture_scene
    from conftest import require_mesa, require_tools

    from tilesim.images import read_png
    from tilesim.render.replay import render_trace
    from tilesim.render.traces.apitrace_import import import_apitrace
    from tilesim.render.traces.capture import reference_frames
    require_tools("apitrace")
    require_mesa()
    trace, frames = capture_scene(tmp_path, scene)
    summary = import_apitrace(trace, tmp_path / "x.tsim")
    assert summary is not None
    ours = [result.image for result in render_trace(tmp_path / "x.tsim")]
    pngs = reference_frames(trace, tmp_path / "ref", driver="llvmpipe")
    assert len(ours) == len(pngs) == frames
    for index, (image, png) in enumerate(zip(ours, pngs, strict=True)):
        theirs = read_png(png, "RGBA")
        mssim = image_metrics(image, theirs, index, where=scene).mssim
        assert mssim >= CONFORMANCE_MIN_MSSIM, (scene, index, mssim)


@pytest.mark.mesa
@pytest.mark.slow
def test_anisotropic_3d_texture_matches_llvmpipe():
    """A 3D texture with TEXTURE_MAX_ANISOTROPY_EXT 16, stretched 8:1 along s: llvmpipe's
    ellipse in (s, t) with r NEAREST (wrap R) in each tap (MSSIM 0.99998 when written;
    sampled isotropically, 0.837)."""
    from conftest import require_mesa

    from tilesim.render.gl.commands import Recorder
    from tilesim.render.reference import replay_gl
    from tilesim.render.replay import render_frames
    from tilesim.render.workloads.conformance_scenes.helpers import (
        VS_TEX,
        _draw,
        _program,
        _quad,
        _quad_uv,
    )
    from tilesim.render.workloads.conformance_scenes.textures import FS_TEX3D, _texels_3d
    require_mesa()
    gl = Recorder(160, 96)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    program = _program(gl, VS_TEX, FS_TEX3D)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex3d"), 0)
    gl.uniform3f(gl.getUniformLocation(program, "u_scale"), 8.0, 1.0, 1.0)
    for name, value in (("u_r", 0.3), ("u_q", 1.0), ("u_bias", 0.0)):
        gl.uniform1f(gl.getUniformLocation(program, name), value)
    gl.bindTexture("TEXTURE_3D_OES", gl.createTexture())
    gl.pixelStorei("UNPACK_ALIGNMENT", 1)
    for level in range(5):
        size = 16 >> level
        gl.texImage3D("TEXTURE_3D_OES", level, "RGBA", size, size, size, 0, "RGBA",
                      "UNSIGNED_BYTE", _texels_3d(size, size, size, 700 + level))
    gl.texParameteri("TEXTURE_3D_OES", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
    gl.texParameterf("TEXTURE_3D_OES", "TEXTURE_MAX_ANISOTROPY_EXT", 16.0)
    _draw(gl, "TRIANGLES", _quad(-0.95, -0.95, 0.95, 0.95), texcoords=_quad_uv())
    gl.endFrame()
    frames = gl.recorded_frames()
    [ours] = [r.image for r in render_frames(frames, 160, 96, source="3d aniso")]
    [theirs] = replay_gl.reference_frames(frames, width=160, height=96)
    assert image_metrics(ours, theirs, 0, where="3d aniso").mssim >= CONFORMANCE_MIN_MSSIM
