"""Set-associative LRU caches of the core (instruction cache, texture cache), as arrays.

``access`` looks a line up at cycle ``now`` and returns the cycle its data is there: a hit
after ``latency``; a line still being filled (a miss in flight, merged like an MSHR) when
the fill ends; a miss after ``latency + miss_latency``, the least recently used way taking
the line.
"""

from __future__ import annotations

from tilesim.jit import jit


@jit(inline=True)
def access(tag, lru, ready, line, now, latency, miss_latency):
    """(cycle the data is ready, 1 if it missed else 0)."""
    sets = tag.shape[0]
    ways = tag.shape[1]
    s = line % sets
    t = line // sets
    victim = 0
    for w in range(ways):
        if tag[s, w] == t:
            lru[s, w] = now + 1
            done = now + latency
            if ready[s, w] > done:
                done = ready[s, w]
            return done, 0
        if lru[s, w] < lru[s, victim]:
            victim = w
    tag[s, victim] = t
    lru[s, victim] = now + 1
    done = now + latency + miss_latency
    ready[s, victim] = done
    return done, 1
