"""The tile-based pipeline (thesis "Tile-based rendering", ch. 2), a module per stage as Mesa's
softpipe has a file per stage; ``renderer.Renderer`` writes the chain down in one place:

    renderer            passes, draws and frames; the chain of stages
    vertex_fetch        index and attribute fetch
    vertex_shading      the vertex program (shaders.interpreter)
    primitive_assembly, point_line_setup
    clipping            near/far/w planes, guard band
    triangle_setup      viewport, depth range, facing, culling, snapping
    binning             per-tile display lists (Parameter Buffer model)
    rasterizer          exact edge functions, top-left rule, 2x2 quads
    fragment_shading    plane-equation interpolation, the fragment program
    texture_sampler     the sampler behind TEX, with its texture caches
    set_associative     the set-associative cache model the texture caches use
    output_merger       depth test, blending, color write (sequential semantics)
    framebuffer         render targets and their tile grid
    counters            the per-tile activity counters: the contract with ``tilesim.timing``

May import: ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base. Techniques plug in
through the hook interface the renderer defines; the pipeline imports none of them.
"""
