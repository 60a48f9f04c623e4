"""The PNG writer: Pillow (an independent decoder) reads back every pixel of grey, RGB and
RGBA images of any size, at the frames' settings and the default ones."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tilesim.images import frame_png_bytes, png_bytes

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
