"""The PNG writer: Pillow (an independent decoder) reads back every pixel of grey, RGB and
RGBA images of any size, at the frames' settings and the default ones."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tilesim.images import (
    SSIM_OPTIONS,
    SSIM_WINDOW,
    compare_images,
    frame_png_bytes,
    image_metrics,
    png_bytes,
)
from tilesim.thresholds import PROBE_TOLERANCE

MODES = {1: "L", 3: "RGB", 4: "RGBA"}


@settings(max_examples=60, deadline=None)
@given(height=st.integers(1, 40), width=st.integers(1, 40), channels=st.sampled_from([1, 3, 4]),
       seed=st.integers(0, 2**32 - 1), fast=st.booleans())
def test_pillow_reads_back_every_pixel(height, width, channels, seed, fast):
    shape = (height, width) if channels == 1 else (height, width, channels)
    image = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    data = frame_png_bytes(image) if fast else png_bytes(image)
    with Image.open(io.BytesIO(data)) as decoded:
        decoded.load()           # checks every chunk's CRC and the zlib stream
        assert decoded.mode == MODES[channels]
        assert np.array_equal(np.asarray(decoded), image)


def test_a_non_contiguous_view_is_written_as_its_pixels():
    image = np.arange(6 * 8 * 4, dtype=np.uint8).reshape(6, 8, 4)[:, ::2, :3]
    with Image.open(io.BytesIO(png_bytes(image))) as decoded:
        assert np.array_equal(np.asarray(decoded), image)


@pytest.mark.parametrize("image", [np.zeros((4, 4), np.float32), np.zeros((4, 4, 2), np.uint8),
                                   np.zeros(4, np.uint8)])
def test_other_images_are_refused(image):
    with pytest.raises(ValueError, match="not an 8-bit"):
        png_bytes(image)


# -- small observations (issue 31, item 3) ------------------------------------------------------


def test_ssim_window_is_the_gaussian_window_scikit_image_uses():
    from skimage.metrics import structural_similarity

    a = np.random.default_rng(0).integers(0, 256, (SSIM_WINDOW, SSIM_WINDOW, 3), np.uint8)
    structural_similarity(a, a ^ 1, channel_axis=-1, **SSIM_OPTIONS)
    with pytest.raises(ValueError, match="win_size exceeds image extent"):
        structural_similarity(a[1:], a[1:] ^ 1, channel_axis=-1, **SSIM_OPTIONS)


@pytest.mark.parametrize("shape", [(1, 1), (2, 5), (7, 7), (10, 40)])
def test_a_frame_below_the_ssim_window_compares_as_a_probe(shape):
    """No MSSIM, and no error (7..10-pixel frames included, below scikit-image's 11-pixel
    window): the largest difference and the share of pixels over the tolerance, as piglit's
    probes judge pixels."""
    reference = np.random.default_rng(1).integers(3, 253, (*shape, 4), np.uint8)
    same = image_metrics(reference.copy(), reference)
    assert (same.mssim, same.method, same.max_diff, same.over_tolerance) == (None, "probe", 0, 0)
    assert same.passes(0.99) and same.as_json()["method"] == "probe"
    image = reference.copy()
    image[0, 0, 1] += PROBE_TOLERANCE            # within piglit's 3/256 of a channel
    image[-1, -1, 3] = 0                        # alpha is not compared
    near = image_metrics(image, reference)
    assert (near.max_diff, near.over_tolerance, near.passes(0.99)) == (PROBE_TOLERANCE, 0, True)
    image[-1, -1, 2] -= PROBE_TOLERANCE + 1      # one pixel over it
    off = image_metrics(image, reference)
    assert off.max_diff == PROBE_TOLERANCE + 1 and not off.passes(None)
    assert off.over_tolerance == pytest.approx(1 / (shape[0] * shape[1]))
    one_off = reference.copy()
    one_off[0, 0, 0] += 1
    assert image_metrics(reference.copy(), reference, tolerance=0).passes(None)
    assert not image_metrics(one_off, reference, tolerance=0).passes(None)   # exact


def test_a_1x1_frame_compares_exactly_and_summaries_keep_mssim_to_frames_that_have_it():
    rng = np.random.default_rng(2)
    big = rng.integers(0, 256, (16, 16, 3), np.uint8)
    pixel = np.array([[[10, 200, 30]]], np.uint8)
    off = pixel.copy()
    off[0, 0, 2] += 3
    comparison = compare_images({0: big, 1: pixel, 2: off}, {0: big, 1: pixel, 2: pixel})
    assert [f.method for f in comparison.frames] == ["mssim", "probe", "probe"]
    assert comparison.frames[1].max_diff == 0 and comparison.frames[2].max_diff == 3
    summary = comparison.summary()
    assert (summary["min_mssim"], summary["worst_frame"]) == (1.0, 0)
    assert (summary["probe_frames"], summary["probes_over_tolerance"]) == ([1, 2], [2])
    assert not comparison.passed(0.99)  # frame 2 is off by 3, over the tolerance 2
    probes_only = compare_images([pixel, off], [pixel, pixel]).summary()
    assert probes_only["min_mssim"] is None and probes_only["worst_frame"] == 1
    assert compare_images([pixel], [pixel]).passed(0.99)


def _declared_png(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` RGBA with no pixel data: a few
    dozen bytes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


def test_a_png_declaring_a_huge_size_is_refused_before_decoding(tmp_path, monkeypatch,
                                                                 capsys):
    from tilesim.cli import main
    from tilesim.errors import InputError
    from tilesim.images import read_png
    from tilesim.memory_budget import BUDGET_ENV

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    Image.new("RGBA", (4, 4)).save(a / "000000.png")
    # past Pillow's decompression-bomb limit: its DecompressionBombError was a traceback
    (b / "000000.png").write_bytes(_declared_png(60000, 60000))
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"tilesim: error: {b / '000000.png'}: not a readable image: Image size"), err
    # under that limit, over the memory budget: refused from the header
    (b / "000000.png").write_bytes(_declared_png(4000, 4000))
    monkeypatch.setenv(BUDGET_ENV, "1M")
    with pytest.raises(InputError, match="decoding the image needs about 61.0 MiB") as info:
        read_png(b / "000000.png", "RGBA")
    assert info.value.source == str(b / "000000.png")


def test_the_screen_model_names_a_png_bomb_frame(tmp_path):
    from tilesim.errors import InputError
    from tilesim.timing.screen import _png_histogram

    png = tmp_path / "000000.png"
    png.write_bytes(_declared_png(60000, 60000))
    with pytest.raises(InputError) as info:
        _png_histogram(png)
    assert info.value.source == str(png)
