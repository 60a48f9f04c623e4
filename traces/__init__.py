"""The bundled workloads' traces (``*.tsim``), installed as package data as
``tilesim.bundled_traces``: what ``tilesim run`` studies when no trace is given. Made by
scripts/make_bunny_trace.py and scripts/make_workloads.py; no code lives here."""
