"""The functional tile-based GPU: GLES2 command streams in, frames and per-tile counters out.

Sub-packages by role, each importing only the layers below it (checked by ``lint-imports``,
contracts in ``pyproject.toml``), top to bottom:

    studies     the commands people run: batch rendering, compare, conformance, goldens,
                suite, coherence, characterize, dsr-search, estimate
    replay      the one way to render a trace (or recorded frames) through the pipeline,
                watched through a RenderObserver: what the studies and the API call
    traces      the .tsim trace format, apitrace capture and import
    reference   the same commands replayed on Mesa, for reference images
    workloads   recorded programs (the bundled games, the bunny, the sprites)
    techniques  the frame-coherence techniques (TE, RE, EVR, DSR, memoization) on a hook bus
    pipeline    the tile-based renderer, a module per stage, and the per-tile counters
    gl          the GLES2 API: the command schema and recorder, GL state, textures, uniforms

Below them: ``tilesim.shaders`` (the TGSI language) and the shared ``tilesim`` base
(backend, errors, atomic output, memory budget). ``tilesim.timing`` reads the counters of
``pipeline.counters`` and nothing else of this package.

Where the data lives (one code path for NumPy and CuPy, ``tilesim.backend``): the GL state,
buffer objects and textures are host memory, as a driver keeps them; vertex fetch reads them
on the host and hands the draw's vertices to the device. From there on every per-vertex,
per-primitive, per-fragment and per-tile array, the render targets and the technique tables
(signatures, EVR layers, DSR and memoization state) stay on the active backend. They come
back to the host at a pass's end (tile counters), a frame's end (the image), and where a
texture is written from a render target. ``tests/cupy_emulation.py`` checks that rule
without a GPU.
"""
