"""The interpreter's statistics: where every lane ran every step, the per-lane and per-warp
counts are read-only broadcast views of their constants (nothing made per lane; the per-tile
counters add them as constants), equal to what a divergent run counts lane by lane."""

from __future__ import annotations

import numpy as np
from tgsi_helpers import run

from tilesim.shaders.sampling import ProceduralSampler

BODY = ["MUL TEMP[0], IN[0], IN[1]", "TEX TEMP[1], TEMP[0], SAMP[0], 2D",
        "ADD OUT[0], TEMP[0], TEMP[1]"]


def test_uniform_counts_are_broadcast_views_of_the_right_values():
    lanes = 64
    values = np.linspace(0, 1, lanes, dtype=np.float32)
    _, execution = run(BODY, values, values, sampler=ProceduralSampler(),
                       extra=["DCL SAMP[0]"])
    stats = execution.stats
    assert stats.lane_instructions.strides[1] == 0
    assert stats.warp_instructions.strides[1] == 0
    assert stats.texture_samples.strides[0] == 0
    assert not stats.lane_instructions.flags.writeable
    # alu: MUL, ADD; tex: TEX; flow: END is not counted
    np.testing.assert_array_equal(stats.lane_instructions,
                                  np.repeat([[2], [1], [0]], lanes, axis=1))
    np.testing.assert_array_equal(stats.warp_instructions, np.repeat([[2], [1], [0]], 16, axis=1))
    np.testing.assert_array_equal(stats.texture_samples, np.ones(lanes))
    assert stats.totals()["lane_instructions"] == {"alu": 2 * lanes, "tex": lanes, "flow": 0}


def test_divergent_counts_are_arrays_per_lane():
    lanes = 64
    values = np.linspace(-1, 1, lanes, dtype=np.float32)
    body = ["FSLT TEMP[2].x, IMM[0].xxxx, IN[0].xxxx", "UIF TEMP[2].xxxx", *BODY, "ENDIF"]
    _, execution = run(body, values, values, sampler=ProceduralSampler(),
                       extra=["DCL SAMP[0]", "IMM[0] FLT32 {0.0, 0.0, 0.0, 0.0}"])
    stats = execution.stats
    assert stats.lane_instructions.strides[1] != 0
    taken = values > 0
    np.testing.assert_array_equal(stats.texture_samples, taken.astype(np.int32))
    np.testing.assert_array_equal(stats.lane_instructions[1], taken.astype(np.int32))
