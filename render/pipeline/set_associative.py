"""Exact LRU set-associative tables, vectorized over a batch of accesses.

``SetAssociativeLRU(groups, ways)`` models ``groups`` independent sets of ``ways`` entries each,
with least-recently-used replacement. :meth:`SetAssociativeLRU.access` takes a batch of accesses
in program order, ``key`` (M,) the set of each access and ``tag`` (M,) its tag, and returns
whether each one hit, exactly as a cache that processed them one at a time would; the contents
carry over to the next batch. Used by the texture caches (tilesim.render.pipeline.texture_sampler)
and the fragment-memoization LUT (tilesim.render.techniques.fragment_memoization).

How it avoids a per-access loop: the accesses are sorted stably by set, behind each set's
current contents (its ``ways`` tags, oldest first), so every set's history is one contiguous
run in program order. Repeats of the line just used (consecutive equal tags in a set) are hits
that leave the set unchanged, so they are merged first. Then

- 1-way: an access hits exactly when it repeats the previous tag of its set;
- 2-way: after merging repeats, an access hits exactly when it repeats the tag two distinct
  tags back;
- more ways (or with a payload): step r updates the r-th access of every set at once, so the
  loop runs (largest number of merged accesses to one set) times, each step vectorized over
  the sets; the inside of stretches where two tags alternate in one set is dropped first
  (all hits, see :meth:`SetAssociativeLRU._lru_alternations`), so such a stretch costs
  about 4 steps.

A table can keep its sets' first tags (``first_tags=True``, :attr:`SetAssociativeLRU.first`):
the tags that took each set's empty ways, in order, which is all a set's history needs from its
starting contents (see :attr:`SetAssociativeLRU.first`; the texture caches of a pass's tiles,
tilesim.render.pipeline.tile_caches, start each tile from the one before it with them).

A table can carry a payload per entry (``payload_dtype``; e.g. the color a memoization LUT
returns): :meth:`SetAssociativeLRU.access_with_payload` inserts the access's payload on a miss
and returns, per access, the payload stored in the entry it used (its own on a miss, the stored
one on a hit; the stored one is kept, not overwritten).

Tags must be non-negative (empty ways hold distinct negative sentinels). Arrays may be NumPy or
CuPy; the state lives on the backend of the last batch (a batch on another backend starts from
an empty table, as the texture sampler always did).
"""

from __future__ import annotations

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.jit import jit, usable

__all__ = ["SetAssociativeLRU"]


class SetAssociativeLRU:
    """``groups`` sets x ``ways`` entries, exact LRU; :attr:`state` rows hold tags, oldest first
    (negative: empty). ``payload_dtype``: also store one value of that dtype per entry.
    ``first_tags``: keep :attr:`first`.

    :attr:`first` (groups, ways) int64: the tags that took each set's empty ways since it was
    empty, in the order they did (-1: a way still empty). Those are the set's first ``ways``
    distinct tags, and the only accesses whose hit depended on the set's contents before it
    was emptied: a set that had started from contents C instead would have hit the same
    everywhere else, and ended, after ``ways`` distinct tags, in the same state.
    :attr:`first_owner`: the ``owner`` of each of those accesses (:meth:`access`)."""

    def __init__(self, groups: int, ways: int, payload_dtype=None, first_tags: bool = False):
        if groups < 1 or ways < 1:
            raise ValueError("SetAssociativeLRU: groups and ways must be positive")
        self.groups, self.ways = int(groups), int(ways)
        self.payload_dtype = None if payload_dtype is None else np.dtype(payload_dtype)
        self.first_tags = bool(first_tags)
        # (groups, ways) int64 tags, created on the first batch; with first_tags (groups,
        # 3 ways): each set's tags, its :attr:`first` and its :attr:`first_owner` side by side
        # (lru_access_first)
        self._rows = None
        self.payload = None     # (groups, ways) payload_dtype, with a payload
        self._xp = None

    @property
    def state(self):
        """(groups, ways) int64: each set's tags, oldest first (negative: empty)."""
        return None if self._rows is None else self._rows[:, :self.ways]

    @state.setter
    def state(self, value) -> None:
        if value is None or not self.first_tags:
            self._rows = value
        else:
            self._rows[:, :self.ways] = value

    @property
    def first(self):
        return None if self._rows is None or not self.first_tags else \
            self._rows[:, self.ways:2 * self.ways]

    @property
    def first_owner(self):
        return None if self._rows is None or not self.first_tags else \
            self._rows[:, 2 * self.ways:3 * self.ways]

    def reset(self) -> None:
        """Empty every set."""
        self._rows = None
        self.payload = None

    def empty_in_place(self) -> None:
        """:meth:`reset`, reusing the table's memory: a large table's fresh pages cost more
        than filling it (docs/notes/texture-cache-order.md)."""
        if self._rows is None:
            return
        xp = array_module(self._rows)
        self._rows[...] = -1
        ways = self.ways
        state = self._rows[:, :ways] if self.first_tags else self._rows
        state -= xp.arange(self.groups * ways, dtype=np.int64).reshape(self.groups, ways)
        if self.payload is not None:
            self.payload[...] = 0

    def kernel_rows(self):
        """(rows, first_ways) for a compiled kernel: the table on the host, (groups, ways) tags
        or, with first tags, (groups, 3 ways) tags, first tags and owners, and
        ``first_ways``: the ways where first tags are kept, else 0 (:func:`lru_access_first`).
        One array: each array a hot loop's inlined helper takes costs reference counting per
        call."""
        self.ensure_state(np)
        self._rows = np.ascontiguousarray(self._rows)
        return self._rows, (self.ways if self.first_tags else 0)

    def access(self, key, tag, owner=None):
        """Look up and update the sets for accesses (M,) in order; returns hit (M,) bool.

        key: set index of each access in [0, groups); tag: non-negative int64 tag; owner:
        (M,) int64 who made each access, kept in :attr:`first_owner` (None: -1).
        """
        if self.payload_dtype is not None:
            raise ValueError("SetAssociativeLRU with a payload: use access_with_payload")
        hit, _ = self._run(key, tag, None, owner)
        return hit

    def access_with_payload(self, key, tag, payload):
        """Like :meth:`access`, for a table with a payload; returns (hit (M,) bool,
        value (M,)): on a hit the payload stored in the matching entry, else ``payload``
        (which the miss inserts)."""
        if self.payload_dtype is None:
            raise ValueError("SetAssociativeLRU without a payload: use access")
        return self._run(key, tag, payload)

    # -- the model --------------------------------------------------------------------------

    def ensure_state(self, xp) -> None:
        """Make :attr:`state` (an empty table) if there is none on ``xp``."""
        if self._rows is None or self._xp is not xp:
            # Distinct negative sentinels: empty ways never match a tag, nor each other.
            state = -1 - xp.arange(self.groups * self.ways, dtype=np.int64).reshape(
                self.groups, self.ways)
            if self.first_tags:
                self._rows = xp.full((self.groups, 3 * self.ways), -1, dtype=np.int64)
                self._rows[:, :self.ways] = state
            else:
                self._rows = state
            if self.payload_dtype is not None:
                self.payload = xp.zeros((self.groups, self.ways), dtype=self.payload_dtype)
            self._xp = xp

    def _run(self, key, tag, payload, owner=None):
        xp = array_module(key, tag)
        self.ensure_state(xp)
        if owner is None:       # (read only where first tags are kept)
            owner = xp.full(xp.asarray(key).shape[0] if self.first_tags else 0, -1,
                            dtype=np.int64)
        if usable(key, tag, payload, self.state, owner):
            # One access after the other, in a compiled loop: the same hits and contents.
            if payload is None:
                rows, first_ways = self.kernel_rows()
                return lru_access_compiled(rows, first_ways, key, tag, owner), None
            self._rows = np.ascontiguousarray(self._rows)
            self.payload = np.ascontiguousarray(self.payload)
            return lru_access_with_payload_compiled(self.state, self.payload, key, tag,
                                                    np.asarray(payload))
        groups, ways = self.groups, self.ways
        if self.first is not None:
            empty_before = (self.state < 0).sum(axis=1)
        prefix = groups * ways
        # Small keys sort stably in linear time (NumPy radix-sorts 16-bit integers).
        key_dtype = np.int16 if groups < (1 << 15) else np.int64
        keys = xp.concatenate([xp.repeat(xp.arange(groups, dtype=key_dtype), ways),
                               xp.asarray(key).astype(key_dtype)])
        tags = xp.concatenate([self.state.reshape(-1), xp.asarray(tag).astype(np.int64)])
        order = xp.argsort(keys, kind="stable")
        k_sorted, t_sorted = xp.take(keys, order), xp.take(tags, order)
        same_prev = xp.zeros(k_sorted.shape, dtype=bool)
        same_prev[1:] = (k_sorted[1:] == k_sorted[:-1]) & (t_sorted[1:] == t_sorted[:-1])
        value_sorted = None
        if payload is None and ways <= 2:
            hit_sorted = self._lru_two_way(xp, k_sorted, t_sorted, same_prev)
        else:
            # Merge repeats: only the first access of every run changes its set.
            starts = xp.flatnonzero(~same_prev)
            v_starts = None
            if payload is not None:
                values = xp.concatenate([self.payload.reshape(-1),
                                         xp.asarray(payload).astype(self.payload_dtype)])
                v_starts = xp.take(xp.take(values, order), starts)
            hit_starts, v_starts = self._lru_alternations(
                xp, xp.take(k_sorted, starts), xp.take(t_sorted, starts), v_starts)
            hit_sorted = same_prev.copy()
            hit_sorted[starts] = hit_starts
            if payload is not None:
                run = xp.cumsum(~same_prev) - 1          # the run of every sorted access
                value_sorted = xp.take(v_starts, run)
        hit = xp.empty(hit_sorted.shape, dtype=bool)
        hit[order] = hit_sorted
        if self.first is not None:
            self._note_first(xp, key, tag, owner, hit[prefix:], empty_before)
        if value_sorted is None:
            return hit[prefix:], None
        value = xp.empty(value_sorted.shape, dtype=value_sorted.dtype)
        value[order] = value_sorted
        return hit[prefix:], value[prefix:]

    def _note_first(self, xp, key, tag, owner, hit, empty_before) -> None:
        """:attr:`first` after a batch: a set's misses take its empty ways (the oldest) while
        it has any, so its first ``empty_before`` misses of the batch are its new first
        tags."""
        miss = xp.flatnonzero(~hit)
        if miss.shape[0] == 0:
            return
        g = xp.asarray(key)[miss].astype(np.int64)
        empty = xp.take(empty_before, g)
        miss, g, empty = miss[empty > 0], g[empty > 0], empty[empty > 0]
        if miss.shape[0] == 0:
            return
        order = xp.argsort(g, kind="stable")
        g, empty, miss = g[order], empty[order], miss[order]
        rank = xp.arange(g.shape[0]) - xp.searchsorted(g, g)   # each miss's rank in its set
        new = rank < empty
        way = self.ways - empty[new] + rank[new]
        self.first[g[new], way] = xp.asarray(tag)[miss[new]].astype(np.int64)
        self.first_owner[g[new], way] = xp.asarray(owner)[miss[new]].astype(np.int64)

    def _lru_two_way(self, xp, k_sorted, t_sorted, same_prev):
        """1- and 2-way sets without a loop (module docstring); updates :attr:`state`."""
        ways, state = self.ways, self.state
        hit_sorted = same_prev.copy()
        starts = xp.flatnonzero(~same_prev)
        if ways == 2 and starts.size > 2:
            a, b = starts[2:], starts[:-2]
            hit_sorted[a] = (t_sorted[a] == t_sorted[b]) & (k_sorted[a] == k_sorted[b])
        # New state: the last ``ways`` run-start tags of every set, oldest first.
        ks = k_sorted[starts]
        last = xp.ones(starts.shape, dtype=bool)
        last[:-1] = ks[1:] != ks[:-1]
        idx = xp.flatnonzero(last)
        new_state = state.copy()
        for w in range(ways):
            pick = starts[idx - (ways - 1 - w)]
            new_state[k_sorted[pick], w] = t_sorted[pick]
        self.state = new_state
        return hit_sorted

    def _lru_alternations(self, xp, k_sorted, t_sorted, v_sorted):
        """:meth:`_lru_stepwise` on merged accesses, after dropping the inside of alternations.

        Two tags alternating in one set (x y x y ...: e.g. two colliding memoization keys
        interleaved fragment by fragment) would cost a step each. With 2 ways or more every
        access of such a stretch after its first two hits and only the order of the two tags
        changes, so an access whose 2 neighbours on each side read x y _ y x (same set, same
        tag as both at distance 2) can go: the stretch keeps its first and last two accesses,
        which leave the same state, and no other access's hit changes. A dropped access hits
        and uses the value of the kept access of its tag at the stretch's start.
        """
        m = k_sorted.shape[0]
        inner = xp.zeros(m, dtype=bool)
        if self.ways >= 2 and m >= 5:
            t, mid = t_sorted, t_sorted[2:-2]
            # Sorted by set: equal sets 2 before and 2 after means one set throughout.
            inner[2:-2] = ((k_sorted[:-4] == k_sorted[4:]) & (t[:-4] == mid) & (t[4:] == mid)
                           & (t[1:-3] == t[3:-1]))
        if not bool(inner.any()):
            return self._lru_stepwise(xp, k_sorted, t_sorted, v_sorted)
        kept = xp.flatnonzero(~inner)
        hit_kept, v_kept = self._lru_stepwise(
            xp, xp.take(k_sorted, kept), xp.take(t_sorted, kept),
            None if v_sorted is None else xp.take(v_sorted, kept))
        hit = xp.ones(m, dtype=bool)
        hit[kept] = hit_kept
        if v_sorted is None:
            return hit, None
        value = xp.empty_like(v_sorted)
        value[kept] = v_kept
        # Dropped runs are contiguous: jump back by 2 (same tag) until a kept access.
        position = xp.arange(m)
        source = xp.where(inner, position - 2, position)
        while bool(xp.take(inner, source).any()):
            source = xp.take(source, source)
        return hit, xp.take(value, source)

    def _lru_stepwise(self, xp, k_sorted, t_sorted, v_sorted):
        """General LRU: the r-th access of every set at step r (the first ``ways`` of each set
        are its state rows, oldest first). Returns hit and, with a payload, the value each
        access used; updates :attr:`state` (and :attr:`payload`)."""
        groups, ways = self.groups, self.ways
        k_sorted = k_sorted.astype(np.int64)
        counts = xp.bincount(k_sorted, minlength=groups)
        starts = xp.cumsum(counts) - counts
        rank = xp.arange(k_sorted.shape[0]) - starts[k_sorted]
        state = self.state.copy()
        stored = None if v_sorted is None else self.payload.copy()
        hit_sorted = xp.zeros(k_sorted.shape, dtype=bool)
        by_rank = xp.argsort(rank, kind="stable")
        steps = int(counts.max())
        bounds = np.searchsorted(to_host(rank[by_rank]), np.arange(steps + 2))
        columns = xp.arange(ways)[None, :]
        for r in range(ways, steps):   # the first ``ways`` entries are the state
            sel = by_rank[bounds[r]:bounds[r + 1]]
            g, t = k_sorted[sel], t_sorted[sel]
            rows = state[g]
            match = rows == t[:, None]
            hit = match.any(axis=1)
            hit_sorted[sel] = hit
            # Move the line to the MRU end: drop the matching way, or the oldest on a miss.
            drop = xp.where(hit, xp.argmax(match, axis=1), 0)
            keep = columns != drop[:, None]
            kept = rows[keep].reshape(g.shape[0], ways - 1)
            state[g] = xp.concatenate([kept, t[:, None]], axis=1)
            if stored is not None:
                # A hit returns (and keeps) the stored value; a miss stores its own.
                row_values = stored[g]
                value = xp.where(hit, xp.take_along_axis(row_values, drop[:, None], 1)[:, 0],
                                 v_sorted[sel])
                v_sorted[sel] = value
                kept_values = row_values[keep].reshape(g.shape[0], ways - 1)
                stored[g] = xp.concatenate([kept_values, value[:, None]], axis=1)
        self.state = state
        if stored is not None:
            self.payload = stored
        return hit_sorted, v_sorted


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit(inline=True)
def lru_access_one(state, g, t):  # pragma: no cover - compiled
    """One access of tag ``t`` to set ``g`` (ways oldest first); returns whether it hit."""
    return lru_access_ways(state, g, t, state.shape[1])


@jit(inline=True)
def lru_access_ways(state, g, t, ways):  # pragma: no cover - compiled
    """:func:`lru_access_one` on the first ``ways`` columns of ``state``."""
    if ways == 2:
        # The common two ways without branches: a hit on the most recent way leaves the set
        # as it is; any other access (a hit on the oldest or a miss) shifts it by one.
        s0, s1 = state[g, 0], state[g, 1]
        state[g, 0] = s0 if s1 == t else s1
        state[g, 1] = t
        return s0 == t or s1 == t
    if state[g, ways - 1] == t:
        return True             # a hit on the most recent way leaves the set as it is
    j = 0
    while j < ways and state[g, j] != t:
        j += 1
    found = j < ways
    if not found:
        j = 0           # a miss evicts the least recently used way
    for w in range(j, ways - 1):
        state[g, w] = state[g, w + 1]
    state[g, ways - 1] = t
    return found


@jit(inline=True)
def lru_access_first(rows, ways, g, t, owner):  # pragma: no cover - compiled
    """:func:`lru_access_one` on ``rows`` (:meth:`SetAssociativeLRU.kernel_rows` of a table
    with first tags, of ``ways`` ways), noting a tag that takes an empty way and its
    ``owner`` beside the set's tags (:attr:`SetAssociativeLRU.first`).

    The notes are written only then (at most ``ways`` times a set): a store on every access
    to an address that depends on the lookup makes back-to-back lookups wait on each other;
    tables without first tags use :func:`lru_access_one` (a branch here would inline a second
    copy of the lookup); one array, no call (each array is reference-counted per call).
    Measured in docs/notes/texture-cache-order.md."""
    oldest = rows[g, 0]
    hit = lru_access_ways(rows, g, t, ways)
    if oldest < 0 and not hit:
        # The miss took the oldest way, an empty one. Empty ways hold -1 - (g ways + w) from
        # the start and only ever shift towards the oldest, so the oldest empty one is
        # -1 - (g ways + k) when k tags took empty ways before: this is the (k+1)-th.
        k = -1 - oldest - g * ways
        rows[g, ways + k] = t
        rows[g, 2 * ways + k] = owner
    return hit


@jit
def _lru(key, tag, rows, first_ways, owner, hit):  # pragma: no cover - compiled
    if first_ways == 0:
        for i in range(key.shape[0]):
            hit[i] = lru_access_one(rows, key[i], tag[i])
        return
    for i in range(key.shape[0]):
        hit[i] = lru_access_first(rows, first_ways, key[i], tag[i], owner[i])


def lru_access_compiled(rows: np.ndarray, first_ways: int, key: np.ndarray, tag: np.ndarray,
                        owner: np.ndarray) -> np.ndarray:
    """Exact LRU over the accesses (M,) one at a time, updating the table in place (``rows``,
    ``first_ways``: :meth:`SetAssociativeLRU.kernel_rows`; ``owner`` (M,) each access's);
    returns hit (M,) bool, as ``SetAssociativeLRU.access``."""
    hit = np.empty(key.shape[0], dtype=bool)
    _lru(key.astype(np.int64), tag.astype(np.int64), rows, first_ways,
         np.asarray(owner, dtype=np.int64), hit)
    return hit


@jit
def _lru_payload(key, tag, value, state, stored, hit):  # pragma: no cover - compiled
    ways = state.shape[1]
    for i in range(key.shape[0]):
        g, t = key[i], tag[i]
        j = 0
        while j < ways and state[g, j] != t:
            j += 1
        hit[i] = j < ways
        if hit[i]:
            value[i] = stored[g, j]     # a hit returns (and keeps) the stored value
        else:
            j = 0                       # a miss evicts the least recently used way
        kept = value[i]
        for w in range(j, ways - 1):
            state[g, w] = state[g, w + 1]
            stored[g, w] = stored[g, w + 1]
        state[g, ways - 1] = t
        stored[g, ways - 1] = kept


def lru_access_with_payload_compiled(state: np.ndarray, stored: np.ndarray, key: np.ndarray,
                                     tag: np.ndarray, payload: np.ndarray):
    """:func:`lru_access_compiled` for a table with a payload ``stored`` (groups, ways), both
    updated in place; returns (hit (M,) bool, value (M,)) as
    ``SetAssociativeLRU.access_with_payload``: the stored value on a hit, the access's own
    payload (inserted) on a miss."""
    hit = np.empty(key.shape[0], dtype=bool)
    value = np.array(payload, dtype=stored.dtype, copy=True)
    _lru_payload(key.astype(np.int64), tag.astype(np.int64), value, state, stored, hit)
    return hit, value
