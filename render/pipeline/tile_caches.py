"""The texture caches of a render pass, tile by tile, as a tile-based GPU meets them.

The Raster Stage "processes the screen one tile at a time" (Frame Coherence §2.3), each tile on
one fragment processor with its own texture cache (Table 3.1: 4 caches), the tiles going round
robin to the processors (tile ``t`` on processor ``t % caches``) in the pass's traversal order.
So a processor's cache sees tile after tile, each tile's draws in submission order. The
renderer shades draw by draw over the whole screen instead; it gets the same hits in two steps:

1. While the pass renders, :attr:`TileCaches.table` keeps one cache per tile, empty at the
   pass's start (``TextureSampler(tile_caches=...)``): every access meets the cache as its
   tile's earlier accesses, this draw's and the earlier draws', left it, whatever order the
   tiles are shaded in.
2. When the pass ends, :meth:`TileCaches.inherited_hits` starts each tile from what the tile
   before it on its processor left, not from empty. Only the first ``ways`` distinct lines a
   set took in a tile could hit in lines it inherited (``SetAssociativeLRU.first``); every
   other access hits or misses as in step 1. Those first accesses are replayed against the
   inherited contents, processor by processor in traversal order, and the misses that become
   hits are taken off the tile's ``tex_cache_misses`` (``PipelineHooks.finish_pass``, after
   the techniques' decisions) and, through ``PipelineHooks.texture_hits_inherited``, off the
   quads that made them (each access's owner: its draw batch's :meth:`TileCaches.batch`
   base plus its lane).

Tiles that were not rendered (Rendering Elimination's skipped tiles) pass the contents on
untouched. Each pass starts with empty caches (what the previous pass left is not modelled).
"""

from __future__ import annotations

import contextlib

import numpy as np

from tilesim.backend import to_host
from tilesim.jit import jit, usable
from tilesim.render.pipeline.set_associative import SetAssociativeLRU
from tilesim.render.pipeline.texture_sampler import TextureCacheConfig

# An access's owner: its draw batch (TileCaches.batch) above these bits, its lane below.
OWNER_BATCH_SHIFT = 36


def tile_caches_bytes(width: int, height: int, tile_size: int,
                      cache: TextureCacheConfig | None = None) -> int:
    """The memory :class:`TileCaches` takes for a ``width`` x ``height`` target in tiles of
    ``tile_size``: a row a set a tile of its tags, first tags and their owners, the texture
    caches' state of every tile (12 bytes a pixel at 16-pixel tiles, 768 at 2)."""
    cache = cache or TextureCacheConfig.from_gpu_config()
    tiles = -(-width // tile_size) * -(-height // tile_size)
    return tiles * cache.sets * 3 * cache.ways * 8


class TileCaches:
    """The texture caches of one pass of ``tiles`` tiles (module docstring)."""

    def __init__(self, tiles: int, cache: TextureCacheConfig | None = None):
        self.cache = cache or TextureCacheConfig.from_gpu_config()
        self.tiles = max(int(tiles), 1)
        # tile t's set s is group t * sets + s
        self.table = SetAssociativeLRU(self.tiles * self.cache.sets, self.cache.ways,
                                       first_tags=True)
        self.batches = 0
        # While the technique sets of one render finish a pass (:meth:`finishing`), the
        # results of :meth:`inherited_hits` by its arguments: sets that rendered the same
        # tiles find the same hits in the same caches.
        self._finished: dict | None = None

    @contextlib.contextmanager
    def finishing(self):
        """A block in which no access reaches the caches (the end of a pass, finished by
        several technique sets side by side): :meth:`inherited_hits` is computed once for
        each traversal and set of rendered tiles asked."""
        self._finished = {}
        try:
            yield self
        finally:
            self._finished = None

    def empty(self) -> None:
        """Empty every tile's cache for a new pass (keeping the memory)."""
        self.table.empty_in_place()
        self.batches = 0

    def batch(self) -> int:
        """The owner base of a new draw batch's accesses (``TextureSampler.owner_base``):
        its lane i is owner ``base + i``."""
        self.batches += 1
        return self.batches << OWNER_BATCH_SHIFT

    def inherited_hits(self, traversal, rendered=None) -> tuple[np.ndarray, np.ndarray]:
        """(per tile (tiles,) int64, owners (K,) int64, ascending): the misses of step 1 that
        hit in the lines the tile before it on its processor left (module docstring), counted
        per tile and listed by who made them. ``traversal``: the tiles in rendering order;
        ``rendered`` (tiles,) bool: the tiles the GPU rendered (None: all)."""
        if self._finished is None:
            return self._inherited_hits(traversal, rendered)
        rendered = None if rendered is None else to_host(rendered).astype(bool)
        key = (to_host(traversal).tobytes(),
               None if rendered is None or rendered.all() else rendered.tobytes())
        if key not in self._finished:
            self._finished[key] = self._inherited_hits(traversal, rendered)
        flips, owners = self._finished[key]
        return flips.copy(), owners.copy()

    def _inherited_hits(self, traversal, rendered) -> tuple[np.ndarray, np.ndarray]:
        table, cfg = self.table, self.cache
        tiles, sets, ways = self.tiles, cfg.sets, cfg.ways
        flips = np.zeros(tiles, dtype=np.int64)
        if table.state is None:
            return flips, np.zeros(0, dtype=np.int64)   # no texture was sampled in the pass
        ended = to_host(table.state).reshape(tiles, sets, ways)
        first = to_host(table.first).reshape(tiles, sets, ways)
        first_owner = to_host(table.first_owner).reshape(tiles, sets, ways)
        rendered = np.ones(tiles, dtype=bool) if rendered is None else to_host(rendered)
        processors = cfg.caches
        order = np.asarray(to_host(traversal), dtype=np.int64)
        # each processor's tiles in traversal order, one row per processor (-1: none)
        chains = [order[order % processors == p] for p in range(processors)]
        steps = max((len(c) for c in chains), default=0)
        chain = np.full((processors, steps), -1, dtype=np.int64)
        for p, c in enumerate(chains):
            chain[p, :len(c)] = c
        if usable(ended, first, first_owner):
            hit_owner = np.full(first.size, -1, dtype=np.int64)
            _inherit_kernel(chain, rendered, first, first_owner, ended, flips, hit_owner)
            return flips, np.sort(hit_owner[hit_owner >= 0])
        return self._inherit(chain, rendered, first, first_owner, ended, flips)

    @staticmethod
    def _inherit(chain, rendered, first, first_owner, ended, flips):
        """:meth:`inherited_hits` vectorized over the processors, a step of their chains at a
        time."""
        processors, steps = chain.shape
        _, sets, ways = ended.shape
        owners: list[np.ndarray] = []
        inherited = np.full((processors, sets, ways), -1, dtype=np.int64)   # empty at start
        way = np.arange(ways)
        for k in range(steps):
            tile = chain[:, k]
            live = (tile >= 0) & rendered[np.maximum(tile, 0)]
            if not live.any():
                continue
            p_live, t_live = np.flatnonzero(live), tile[live]
            contents = inherited[p_live]                            # (P', sets, ways)
            heads = first[t_live]
            hits = np.zeros(contents.shape[:2], dtype=np.int64)
            for j in range(ways):
                tag = heads[:, :, j]
                taken = tag >= 0
                match = contents == tag[..., None]
                hit = match.any(axis=-1) & taken
                hits += hit
                owners.append(first_owner[t_live, :, j][hit])
                # LRU: the tag moves to the most recent way, from its way or the oldest
                drop = np.where(hit, np.argmax(match, axis=-1), 0)
                kept = np.take_along_axis(
                    contents, np.argsort(way[None, None, :] == drop[..., None], axis=-1,
                                         kind="stable"), axis=-1)[..., :ways - 1]
                moved = np.concatenate([kept, tag[..., None]], axis=-1)
                contents = np.where(taken[..., None], moved, contents)
            flips[t_live] = hits.sum(axis=1)
            # What the tile leaves: its own d distinct lines (most recent, as step 1 ended)
            # after the oldest ways - d of what it inherited.
            distinct = (heads >= 0).sum(axis=-1)
            inherited[p_live] = np.where(way[None, None, :] < ways - distinct[..., None],
                                         contents, ended[t_live])
        owners = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
        return flips, np.sort(owners)


@jit
def _inherit_kernel(chain, rendered, first, first_owner, ended, flips,
                    hit_owner):  # pragma: no cover - compiled
    """``TileCaches._inherit`` processor by processor, set by set: ``hit_owner[h]`` the owner
    of the h-th first tag (tile, set, way order) that hits, else -1."""
    processors, steps = chain.shape
    _, sets, ways = ended.shape
    contents = np.empty(ways, dtype=np.int64)
    for p in range(processors):
        inherited = np.full((sets, ways), -1, dtype=np.int64)
        for k in range(steps):
            t = chain[p, k]
            if t < 0 or not rendered[t]:
                continue
            count = 0
            for s in range(sets):
                for w in range(ways):
                    contents[w] = inherited[s, w]
                distinct = 0
                for j in range(ways):
                    tag = first[t, s, j]
                    if tag < 0:
                        continue
                    distinct += 1
                    found = -1
                    for w in range(ways):
                        if contents[w] == tag:
                            found = w
                    if found >= 0:
                        count += 1
                        hit_owner[(t * sets + s) * ways + j] = first_owner[t, s, j]
                    drop = found if found >= 0 else 0
                    for w in range(drop, ways - 1):
                        contents[w] = contents[w + 1]
                    contents[ways - 1] = tag
                for w in range(ways):
                    inherited[s, w] = contents[w] if w < ways - distinct else ended[t, s, w]
            flips[t] = count
