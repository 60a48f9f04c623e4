"""Experiment: render with a LUT of SETS sets (the renderer fixes 2048) by patching the class
the memoizer is built from, in this process only. Usage: small_lut.py SETS render-args..."""
import dataclasses
import sys

import tilesim.render.techniques.fragment_memoization as fm

SETS = int(sys.argv[1])


@dataclasses.dataclass
class Small(fm.FragmentMemoizer):
    sets: int = SETS


fm.FragmentMemoizer = Small
from tilesim.cli import main  # noqa: E402

sys.exit(main(sys.argv[2:]))
