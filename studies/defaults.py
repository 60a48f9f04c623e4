"""The studies' defaults and file names that the command line shows in its options: here,
where importing them loads nothing, so that ``tilesim --help`` builds its parser without the
engines. The study modules take them from here (and still offer them under their names).
"""

# `tilesim coherence` (studies.coherence): the techniques compared with the baseline by
# default, and the report --out DIR holds.
DEFAULT_TECHNIQUES = ("te", "re", "re/xor", "evr", "re+evr", "dsr", "memo", "memo/32")
REPORT_FILE = "coherence.json"   # what --out DIR holds

# `tilesim run` (studies.study)
FRAMES = 8            # frames per workload of the default study
QUICK_FRAMES = 2      # of --quick
QUICK_WORKLOADS = ("bunny", "match3-1196x768", "runner-1196x768", "like_candy_crush-1196x768")

# `tilesim goldens` (studies.goldens)
MANIFEST_HELP = ("the golden manifest (PNGs beside it; relative trace paths start at its "
                 "\"root\", default its folder); default goldens/manifest.json here, else "
                 "tilesim's own in a source checkout")

# `tilesim dsr-search` (studies.dsr_search; its grid's defaults: studies.dsr_grid)
PARAMETERS_FILE = "dsr_parameters.toml"   # what --out DIR holds
LOCAL_MINIMUM_TILES = ("context", "alone")
