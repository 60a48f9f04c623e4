"""The renderer's options as the command line offers them: here, where importing them loads
nothing (no NumPy, no stage), so that ``tilesim --help`` builds its parser without the
pipeline. The stages take them from here."""

# The rasterizer's tie-breaking rule for pixel centres on an edge (rasterizer.rasterize).
FILL_RULES = ("top_left", "bottom_left")

# The order tiles are visited in (framebuffer.RenderTarget.traversal).
TRAVERSALS = ("scanline", "zorder")

# --mediump of `tilesim render` and `tilesim conformance` (renderer.configured_mediump).
MEDIUMP_HELP = (
    "how shaders compute mediump and lowp arithmetic: fp32 (float32, as Mesa softpipe, whose "
    "TGSI tilesim runs) or fp16 (16-bit floats, as Mali-class mobile GPUs and Mesa llvmpipe "
    "do: pairs with `tilesim reference --driver llvmpipe`; programs compiled before tilesim "
    "recorded precision run in float32); default: processors.shader.mediump_fp16 of the GPU "
    "configuration (timing/baseline_gpu.toml: fp32)")
