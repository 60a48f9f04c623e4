"""The reference's own caches: set-associative, least-recently-used, looked up line by line.

The analytic model turns first-level misses into L2 hits with a capacity rule
(``caches.model.miss_exponent``) and Parameter Buffer re-reads with an assumed reuse
(``caches.model.pb_record_reuse``). The reference instead looks every line up, in the order the
raster pipeline asks for it (``inputs``: tile after tile in traversal order, a tile's display-list
entries, then its quads' texture misses), in a tile cache and an L2 of the configured geometry
(Frame Coherence Table 3.1: tile cache 128 KB 8-way, L2 256 KB 8-way, 64-byte lines; ``caches.tile``
and ``caches.l2`` of ``baseline_gpu.toml``). Replacement is LRU within a set, the set being the
line address modulo the sets (sets = size / line / ways). Bank conflicts are not modelled.
"""

from __future__ import annotations

import numpy as np

from tilesim.jit import jit
from tilesim.timing.config import Config


class Cache:
    """One cache's state across lookups: ``lookup(lines)`` -> (n,) bool hits, in order."""

    def __init__(self, size: float, ways: float, line: float):
        self.ways = int(ways)
        self.sets = max(1, int(size // (line * ways)))
        self.tags = np.full((self.sets, self.ways), -1, dtype=np.int64)
        self.stamps = np.zeros((self.sets, self.ways), dtype=np.int64)
        self.clock = np.zeros(1, dtype=np.int64)

    @classmethod
    def from_config(cls, cfg: Config, name: str) -> Cache:
        """``name``: ``tile`` or ``l2`` (``caches.<name>`` of the GPU configuration)."""
        return cls(cfg[f"caches.{name}.size"], cfg[f"caches.{name}.ways"],
                   cfg[f"caches.{name}.line_size"])

    def lookup(self, lines: np.ndarray) -> np.ndarray:
        lines = np.ascontiguousarray(lines, dtype=np.int64)
        hits = np.zeros(lines.size, dtype=np.bool_)
        lru_lookup(lines, self.tags, self.stamps, self.clock, hits)
        return hits


@jit
def lru_lookup(lines, tags, stamps, clock, hits):
    """Look ``lines`` up one after another, filling ``hits`` and updating the state in place."""
    sets = tags.shape[0]
    ways = tags.shape[1]
    now = clock[0]
    for i in range(lines.size):
        line = lines[i]
        s = line % sets
        victim = 0
        oldest = stamps[s, 0]
        found = False
        now += 1
        for w in range(ways):
            if tags[s, w] == line:
                stamps[s, w] = now
                found = True
                break
            if tags[s, w] < 0:
                if oldest >= 0:
                    victim = w
                    oldest = -1
            elif oldest >= 0 and stamps[s, w] < oldest:
                victim = w
                oldest = stamps[s, w]
        hits[i] = found
        if not found:
            tags[s, victim] = line
            stamps[s, victim] = now
    clock[0] = now
