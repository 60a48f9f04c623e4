"""The functional tile-based pipeline (GL state replay, geometry, binning, raster, ...).

Built by the renderer issue; the stages will live here, a module per stage.
"""
