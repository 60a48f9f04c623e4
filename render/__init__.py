"""The functional tile-based pipeline: command streams in, frames and per-tile counters out.

A module per stage, as Mesa's softpipe has a file per stage; ``pipeline.Renderer._draw``
writes the chain down in one place:

    commands          the command schema and the WebGL-style recorder
    trace_file        the .tsim on-disk trace format (lazy, validated)
    gl_state          the GLES2 state machine (objects, bindings, fragment state)
    vertex_fetch      index and attribute fetch
    vertex_shading    the vertex program (shaders.interpreter)
    primitive_assembly, point_line_setup
    clipping          near/far/w planes, guard band
    triangle_setup    viewport, depth range, facing, culling, snapping
    binning           per-tile display lists (Parameter Buffer model)
    rasterizer        exact edge functions, top-left rule, 2x2 quads
    fragment_shading  plane-equation interpolation, the fragment program
    texture, texture_sampler   texture objects and the sampler behind TEX
    output_merger     depth test, blending, color write (sequential semantics)
    framebuffer       render targets and their tile grid
    counters          the per-tile activity counters (the contract with timing/)
    replay_gl         the same commands on a real GL driver (Mesa), for reference images

Where the data lives (one code path for NumPy and CuPy, ``tilesim.backend``): the GL state,
buffer objects and textures are host memory, as a driver keeps them; vertex fetch reads them
on the host and hands the draw's vertices to the device. From there on every per-vertex,
per-primitive, per-fragment and per-tile array, the render targets and the technique tables
(signatures, EVR layers, DSR and memoization state) stay on the active backend. They come
back to the host at a pass's end (tile counters), a frame's end (the image), and where a
texture is written from a render target. ``tests/cupy_emulation.py`` checks that rule
without a GPU.
"""
