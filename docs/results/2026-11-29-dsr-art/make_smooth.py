"""Clash Royale's row at 1920x1080 with lower-frequency art: the same program, draws and
motion; the textures' value noise with 4 cells and 1 octave instead of the generator's
(nearest 8 / bilinear 4 / trilinear 16 cells, 3 octaves). An experiment, not a workload."""
import sys

from tilesim.render.workloads import thesis_games, write_workload
from tilesim.render.workloads.common import value_noise as noise

cells = int(sys.argv[2]) if len(sys.argv) > 2 else 4
octaves = int(sys.argv[3]) if len(sys.argv) > 3 else 1


def smooth(rng, h, w, **kw):
    """The generator's value noise with this experiment's cells and octaves."""
    kw.pop("cells", None)
    kw.pop("octaves", None)
    return noise(rng, h, w, cells=cells, octaves=octaves, **kw)


thesis_games.value_noise = smooth
name = sys.argv[1]
write_workload(name, f"/tmp/exp/{name}-smooth-{cells}-{octaves}.tsim", 1920, 1080, frames=8)
print("written")
