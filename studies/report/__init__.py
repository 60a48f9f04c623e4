"""The study's report: ``index.html`` from results.json, readable offline (Jinja2 templates in
``templates/``, package data). Reads the study's results; the study engine never imports it
except to write the page at the end of ``tilesim run``."""
