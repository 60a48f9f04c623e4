"""The cycle-level reference of the analytic timing model (issue 15 item 2).

    records   what it reads: a pass's quads tile by tile, a frame's draws (filled by
              ``tilesim.render.studies.quad_stream`` from a render; timing never imports the
              pipeline)
    raster    the raster pipeline of a pass, cycle by cycle (Numba, with its Python source)
    inputs    from a frame's counters and quad streams to the raster loop's input
    geometry  the geometry pipeline of a frame's draws, cycle by cycle
    compare   the analytic model against both: per tile, per frame, error distributions
"""
