"""Every pass/fail threshold of the studies, named once, each with where it comes from.

Image quality is the MSSIM of :mod:`tilesim.images` (RGB, Wang et al. 2004); tolerances on a
channel are in 1/255 units.

    DSR_MIN_MSSIM           0.95   a frame rendered with Dynamic Sampling Rate against the
                                   same frame at 1x: below it, defects can be discerned
                                   (Anglada, "Exploiting Frame Coherence in Real-Time
                                   Rendering for Energy-Efficient GPUs", 2020, §6.3); DSR's
                                   parameter search and the coherence study
    SUITE_MIN_MSSIM         0.99   every frame of the glmark2-es2 / es2gears suite against
                                   Mesa's reference (the project's bar for a real program)
    GOLDEN_ACCEPT_MSSIM     0.99   a golden frame is accepted against Mesa's (the suite's
                                   bar)
    CONFORMANCE_MIN_MSSIM   0.995  a conformance scene against Mesa llvmpipe (the project's bar
                                   for a feature)
    CONFORMANCE_MIN_WITHIN  0.999  share of a scene's pixels within CONFORMANCE_TOLERANCE on
                                   every channel (99.9 %)
    CONFORMANCE_TOLERANCE   2      in 1/255 (as PROBE_TOLERANCE)
    CONFORMANCE_COUNT_RTOL  0.001  fragment counts within 0.1 % of Mesa's
    PROBE_TOLERANCE         2      in 1/255: a frame too small for MSSIM (below the 11x11
                                   SSIM window) passes when every channel of every pixel is
                                   within it, as piglit's probes judge pixels: piglit's
                                   tolerance of an 8-bit channel is 3 / 2**8 = 2.99/255
                                   (piglit_set_tolerance_for_bits), so differences up to 2
                                   pass

May import nothing: every layer may read it.
"""

DSR_MIN_MSSIM = 0.95
SUITE_MIN_MSSIM = 0.99
GOLDEN_ACCEPT_MSSIM = 0.99
CONFORMANCE_MIN_MSSIM = 0.995
CONFORMANCE_MIN_WITHIN = 0.999
CONFORMANCE_TOLERANCE = 2
CONFORMANCE_COUNT_RTOL = 0.001
PROBE_TOLERANCE = 2
