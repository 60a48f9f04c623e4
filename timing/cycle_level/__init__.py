"""The cycle-level reference of the analytic timing model.

    records   what it reads: a pass's quads tile by tile, a frame's draws (filled by
              ``tilesim.studies.quad_stream`` from a render; timing never imports the
              pipeline)
    raster    the raster pipeline of a pass, cycle by cycle (Numba, with its Python source)
    inputs    from a frame's counter records and quad streams to the raster loop's input: its
              own tile decisions, address map and cache lookups
    caches    the tile cache and L2, LRU, looked up line by line
    dram      LPDDR4 channels, banks, rows, refresh and power-down, requests in arrival order;
              commands and states counted for the energy (DRAMPower's split)
    geometry  the geometry pipeline of a frame's draws, cycle by cycle
    agreement the analytic model against both: per tile, per frame, error distributions, DRAM
              energy (the only module here that imports the analytic model; pyproject.toml's
              import-linter contract keeps the others off it)
"""
