"""The analytic timing and energy model, fed by the per-tile counters of a render.

    config          GPU parameters (Table 3.1) and per-event energies, from TOML files
    counter_batch   the saved counters of a render as arrays, one row per frame or tile
    model           cycles per frame: geometry and raster phases, stages as a bottleneck
    shader          shader-core cycles per vertex and fragment
    memory_traffic  memory traffic by source, LPDDR4 latency and energy
    screen          the OLED screen's energy from the frames' pixels
    techniques      the cost and savings of each frame-coherence technique
    report, plots   per-frame and total reports, and their plots
    benchmark       the model's own speed
    cycle_level     the cycle-level reference the model answers to: the raster pipeline of a
                    pass and the geometry pipeline of a frame, cycle by cycle, from records of
                    a render (``tilesim reference-timing``)

May import: ``tilesim.render.pipeline.counters`` (the counters' contract) and the ``tilesim``
base; never the pipeline itself.
"""
