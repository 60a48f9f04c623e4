"""Cache hierarchy below the counters' first-level caches, main-memory traffic and LPDDR4 energy.

The counters give first-level activity: vertex-cache misses (distinct 64-byte lines per draw),
texture-cache misses (per cache, from the renderer's set-associative model of Frame Coherence Table
3.1), and Parameter Buffer (PB) bytes written by the tiler and read by each tile. What happens below
them is modelled here (every cache: 64-byte lines; ``C_tc`` = tile cache, ``C_L2`` = L2 bytes):

* Vertices and indices: the vertex cache's misses are compulsory (distinct lines per draw) and
  a frame's vertex data does not come back before the L2 evicts it: all go to DRAM through L2.
* Textures: texture-cache misses go to the shared L2, which hits
  ``h_tex = 1 - (C_texture_cache / C_L2) ^ miss_exponent`` of them (the sqrt(2) rule of
  Hartstein et al. 2006: miss rate ~ capacity^-1/2; 1 - sqrt(8/256) = 82%). The rest is DRAM.
* PB writes (primitive records + display lists + EVR layer ids, ``W`` bytes per frame): the tile
  cache is write-back and the binner fills whole lines, so all ``W`` bytes reach DRAM.
* PB reads of tile ``t`` (``R_t`` bytes): its display list ``min(R_t, list bytes written for t)``
  and EVR layer ids are read once (first reads); of the rest, primitive records, a fraction
  ``s = pb_record_reuse`` are re-reads of records an earlier tile read, the others first reads.
  Re-reads hit the tile cache while the bytes read in between fit: the reuse distance is at most
  the traversal's distance ``D`` (in tiles) between vertically adjacent tiles, times the pass's
  mean bytes read per tile ``R = R_pass / tiles_pass``: ``F = min(D x R, W)``; the tile cache
  keeps ``c_tc = min(1, C_tc / F)`` of the re-reads (LRU on a uniform stream) and the L2
  ``c_l2 = min(1, C_L2 / F)`` of the rest. In scanline order ``D = tiles_x`` (one row of tiles)
  for every pair; in Z-order (``screen.zorder_traversal``, Frame Coherence §2.3) ``D`` varies
  (2 within a 2x2 block, 6 across 4x4 blocks, ...: ``tilesim.timing.traversal``) and
  ``c_tc``, ``c_l2`` are the means over the pass's vertically adjacent pairs. A pass of one
  tile row has no such pair: ``D = tiles_x`` in both orders (the same order there).
  First reads hit the L2 when it still holds them from the geometry phase:
  ``r_w = min(1, C_L2 / W)`` (the whole PB fits, or a uniform share of it).
* Color and depth flushes bypass the L2 (streaming writes, no reuse in a frame): all DRAM.

Every ratio is monotone: more bytes anywhere never lower the DRAM bytes of any tile
(``F <= W`` keeps ``c_l2 >= r_w``, so a first read never costs less than a re-read).

Main memory energy follows DRAMSim2's use of Micron's power model (TN-41-01): each row
activation costs an activate/precharge pair (``act_pre``), each byte read or written the burst
energy (``read_per_byte`` / ``write_per_byte``), and background + refresh power (per channel)
run for the frame's time. Activations are row misses (``memory.open_page``, DRAMSim2's open-page
policy, Frame Coherence §3.1), estimated per traffic source from its locality
(:func:`activations_per_byte`): every source but textures streams through consecutive
addresses (vertex and index buffers, Parameter Buffer writes and per-tile reads, EVR layer ids,
flushes of a render target stored tile by tile) and activates once per row it crosses,
``bytes / min(row_size, row_accesses_max x 64)``; a texture line finds its row open with
probability ``texture_row_hit``, so textures activate ``(1 - texture_row_hit)`` rows per
64-byte line. Each source is assumed to keep its row open in its own bank (2 channels x 8
banks, at most 4 streams at once). The background is active standby (IDD3N,
``background_open``) while rows stay open. With ``open_page = 0``: closed page, one
activation per 64-byte request of every source and precharge standby (IDD2N) background.
"""

from __future__ import annotations

import numpy as np

from tilesim.timing.config import Config
from tilesim.timing.traversal import Traversal, traversal

TRAFFIC_SOURCES = ("vertices", "indices", "pb_writes", "pb_reads", "textures", "color_flush",
                   "depth_flush", "technique_tables")
PJ = 1e-12
MW = 1e-3


def latency_avg(cfg: Config) -> float:
    return 0.5 * (cfg["memory.latency_min"] + cfg["memory.latency_max"])


def memory_cycles(nbytes, in_flight: float, cfg: Config, line: float = 64.0):
    """Cycles to move ``nbytes`` from DRAM with ``in_flight`` requests overlapping:
    ``max(bytes / bandwidth, requests x latency_avg / in_flight)`` (bandwidth or Little's law)."""
    nbytes = np.asarray(nbytes, dtype=np.float64)
    return np.maximum(nbytes / cfg["memory.bandwidth"],
                      nbytes / line * latency_avg(cfg) / in_flight)


def hierarchy_cycles(dram_bytes, l2_bytes, near_bytes, near_latency: float, in_flight: float,
                     cfg: Config, line: float = 64.0):
    """Cycles of a client whose requests are served by a near cache (``near_bytes``), the L2
    (``l2_bytes``) or DRAM: the DRAM bandwidth bound, or the summed request latencies over the
    requests in flight (Little's law), whichever is larger. Arrays broadcast."""
    dram_bytes = np.asarray(dram_bytes, dtype=np.float64)
    latency = (np.asarray(near_bytes) * near_latency + np.asarray(l2_bytes)
               * cfg["caches.l2.latency"] + dram_bytes * latency_avg(cfg)) / line
    return np.maximum(dram_bytes / cfg["memory.bandwidth"], latency / in_flight)


def texture_l2_hit_ratio(cfg: Config) -> float:
    ratio = cfg["caches.texture.size"] / cfg["caches.l2.size"]
    return float(np.clip(1.0 - ratio ** cfg["caches.model.miss_exponent"], 0.0, 1.0))


def _fit_ratio(capacity: float, footprint: np.ndarray) -> np.ndarray:
    """min(1, capacity / footprint), 1 where the footprint is 0."""
    with np.errstate(divide="ignore"):
        return np.where(footprint > capacity, capacity / np.maximum(footprint, 1e-300), 1.0)


def pb_written_bytes(batch, t: dict[str, np.ndarray]) -> np.ndarray:
    """Parameter Buffer bytes written per frame (records + lists + EVR layer ids): (F,)."""
    return (batch.scalars["pb_record_bytes_written"] + batch.per_frame(t["pb_list_bytes_written"])
            + batch.per_frame(t["evr_layer_bytes_written"]))


def vertical_reuse_distances(batch, order: Traversal) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of vertically adjacent tiles of a pass, as (index of the lower tile (M,),
    tiles the traversal ``order`` visits from one to the other (M,)) int64 arrays."""
    tiles_x = batch.pass_tiles_x.astype(np.int64)[batch.tile_pass]
    sizes = batch.pass_tiles.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    local = np.arange(batch.tile_pass.size, dtype=np.int64) - starts[batch.tile_pass]
    lower = np.flatnonzero(local + tiles_x < sizes[batch.tile_pass])
    rank = order.rank()
    return lower, np.abs(rank[lower + tiles_x[lower]] - rank[lower])


def _reuse_fits(batch, per_tile_read: np.ndarray, written: np.ndarray, order: Traversal | None,
                capacities: tuple[float, ...]) -> list[np.ndarray]:
    """For each capacity, the share of a pass's re-reads that fit it (module notes): (N,) per
    tile; ``per_tile_read`` (P,) mean bytes per tile, ``written`` (P,) PB bytes of the frame;
    ``order`` None: scanline (every vertical pair ``tiles_x`` apart)."""
    row = np.minimum(batch.pass_tiles_x * per_tile_read, written)        # (P,)
    if order is None:
        return [_fit_ratio(c, row)[batch.tile_pass] for c in capacities]
    lower, distance = vertical_reuse_distances(batch, order)
    pair_pass = batch.tile_pass[lower]
    passes = batch.pass_tiles.size
    pairs = np.bincount(pair_pass, minlength=passes)
    footprint = np.minimum(distance * per_tile_read[pair_pass], written[pair_pass])
    out = []
    for capacity in capacities:
        mean = np.bincount(pair_pass, weights=_fit_ratio(capacity, footprint),
                           minlength=passes) / np.maximum(pairs, 1)
        out.append(np.where(pairs > 0, mean, _fit_ratio(capacity, row))[batch.tile_pass])
    return out


def tile_memory(batch, t: dict[str, np.ndarray], cfg: Config,
                order: Traversal | None = None) -> dict[str, np.ndarray]:
    """Where each tile's memory requests are served (bytes, (N,) arrays): PB and EVR layer-id
    reads (tile cache, L2, DRAM), texture-cache misses (L2, DRAM) and flushes (DRAM).
    ``order``: the tiles' traversal (computed from ``screen.zorder_traversal`` when None)."""
    written = pb_written_bytes(batch, t)                         # (F,)
    rendered = t["re_tiles_skipped"] <= 0
    tech_read = t["evr_layer_bytes_written"] * rendered         # layer ids, read back once
    pb_read = t["pb_bytes_read"]
    lists = np.minimum(pb_read, t["pb_list_bytes_written"])
    records = pb_read - lists
    reuse = cfg["caches.model.pb_record_reuse"] * records
    first = pb_read - reuse                                      # lists + first record reads

    zorder = bool(cfg["screen.zorder_traversal"])
    if zorder and order is None:
        order = traversal(batch.tile_pass, batch.pass_tiles_x, batch.pass_tiles, zorder=True)
    fit_tc, fit_l2 = _reuse_fits(
        batch, batch.per_pass(pb_read + tech_read) / np.maximum(batch.pass_tiles, 1.0),
        written[batch.pass_frame], order if zorder else None,
        (cfg["caches.tile.size"], cfg["caches.l2.size"]))
    retained = _fit_ratio(cfg["caches.l2.size"], written)[batch.tile_frame]

    reuse_miss = reuse * (1.0 - fit_tc)
    h_tex = texture_l2_hit_ratio(cfg)
    tex_miss_bytes = t["tex_cache_misses"] * cfg["caches.texture.line_size"]
    return {
        "pb_tile_cache": reuse * fit_tc,
        "pb_l2": first * retained + reuse_miss * fit_l2,
        "pb_dram": first * (1.0 - retained) + reuse_miss * (1.0 - fit_l2),
        "tech_read_l2": tech_read * retained,
        "tech_read_dram": tech_read * (1.0 - retained),
        "tech_read": tech_read,
        "tex_l2": tex_miss_bytes * h_tex,
        "tex_dram": tex_miss_bytes * (1.0 - h_tex),
        "tex_miss_bytes": tex_miss_bytes,
    }


# Sources whose DRAM bytes are written (the others are read; technique_tables is both: the EVR
# layer ids are written with the Parameter Buffer and read back by the tiles).
WRITE_SOURCES = ("pb_writes", "color_flush", "depth_flush")


def activations_per_byte(ecfg: Config) -> dict[str, float]:
    """Row activations (activate/precharge pairs) per DRAM byte of each traffic source
    (module notes): 1 / 64 for every source with a closed page (``memory.open_page = 0``);
    open page: 1 / min(row_size, row_accesses_max x 64) for the sequential sources and
    (1 - texture_row_hit) / 64 for textures, never below the sequential figure."""
    request = ecfg["memory.access_size"]
    if not ecfg["memory.open_page"]:
        return dict.fromkeys(TRAFFIC_SOURCES, 1.0 / request)
    run = min(ecfg["memory.row_size"], ecfg["memory.row_accesses_max"] * request)
    per = dict.fromkeys(TRAFFIC_SOURCES, 1.0 / run)
    per["textures"] = max((1.0 - ecfg["memory.texture_row_hit"]) / request, 1.0 / run)
    return per


def dram_activations(traffic: dict[str, np.ndarray], ecfg: Config) -> np.ndarray:
    """Row activations of the DRAM bytes ``traffic`` (source -> array, any shape)."""
    per = activations_per_byte(ecfg)
    return sum(np.asarray(traffic[k], dtype=np.float64) * per[k] for k in TRAFFIC_SOURCES)


def dram_background_power(cfg: Config, ecfg: Config) -> float:
    """Background power (W) of every channel: active standby with an open page, precharge
    standby with a closed one."""
    key = "memory.background_open" if ecfg["memory.open_page"] else "memory.background"
    return cfg["memory.channels"] * ecfg[key] * MW


def dram_low_power_cycles(idle_cycles, gaps, cfg: Config,
                          ecfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """Cycles each channel spends in power-down and in self-refresh, as DRAMPower counts the
    states (Chandrasekar et al.; the controller decides when to enter them), of ``idle_cycles``
    of bus idle time spread evenly over ``gaps`` idle gaps (arrays of one shape, returned in
    it). A gap of ``g`` ns is spent in standby for ``memory.power_down_idle`` (the controller's
    wait before entry), then in power-down up to ``self_refresh_idle``, then in self-refresh;
    each exit (``power_down_exit`` = tXP, ``self_refresh_exit`` = tXSR) is spent at standby
    power before the next request: power-down ``max(0, min(g, T_sr) - T_pd - tXP)``,
    self-refresh ``max(0, g - T_sr - tXSR)`` per gap. Even gaps are the fewest cycles in the
    low-power states a given idle time and gap count allows (the per-gap figure is convex), so
    this errs towards standby. Zeros with ``memory.power_down = 0`` (standby all the time)."""
    idle = np.maximum(np.asarray(idle_cycles, dtype=np.float64), 0.0)
    if not ecfg["memory.power_down"]:
        return np.zeros_like(idle), np.zeros_like(idle)
    gaps = np.maximum(np.asarray(gaps, dtype=np.float64), 1.0)
    ns = 1e9 / cfg["tech.clock"]                                     # ns per GPU cycle
    gap = idle / gaps * ns
    t_sr = ecfg["memory.self_refresh_idle"]
    pd = np.maximum(np.minimum(gap, t_sr) - ecfg["memory.power_down_idle"]
                    - ecfg["memory.power_down_exit"], 0.0)
    sr = np.maximum(gap - t_sr - ecfg["memory.self_refresh_exit"], 0.0)
    return pd * gaps / ns, sr * gaps / ns


def dram_energy(traffic: dict[str, np.ndarray], read_bytes, write_bytes, seconds, cfg: Config,
                ecfg: Config, low_power: tuple[np.ndarray, np.ndarray] | None = None
                ) -> dict[str, np.ndarray]:
    """LPDDR4 energy (J) split as DRAMSim2/Micron: (F,) arrays per part; ``traffic`` the DRAM
    bytes by source (their row activations), ``read_bytes`` + ``write_bytes`` their sum.
    ``low_power``: seconds of each frame every channel spends in power-down and in
    self-refresh (:func:`dram_low_power_cycles`; None: none): the background is standby
    power over the rest of the frame plus power-down power (IDD3P with an open page, IDD2P
    with a closed one) and self-refresh power (IDD6) over those; refresh runs outside
    self-refresh."""
    seconds = np.asarray(seconds, dtype=np.float64)
    pd, sr = ((np.zeros_like(seconds), np.zeros_like(seconds)) if low_power is None
              else low_power)
    channels = cfg["memory.channels"]
    down = ("memory.power_down_active" if ecfg["memory.open_page"]
            else "memory.power_down_precharge")
    background = (dram_background_power(cfg, ecfg) * (seconds - pd - sr)
                  + channels * MW * (ecfg[down] * pd + ecfg["memory.self_refresh_power"] * sr))
    return {
        "act_pre": dram_activations(traffic, ecfg) * ecfg["memory.act_pre"] * PJ,
        "read": read_bytes * ecfg["memory.read_per_byte"] * PJ,
        "write": write_bytes * ecfg["memory.write_per_byte"] * PJ,
        "background": background,
        "refresh": channels * ecfg["memory.refresh"] * MW * (seconds - sr),
    }


def dram_dynamic_energy_per_byte(ecfg: Config, source: str) -> tuple[float, float]:
    """(J per byte read, J per byte written) of ``source``'s DRAM traffic, including its
    activations' share."""
    act = activations_per_byte(ecfg)[source] * ecfg["memory.act_pre"]
    return ((act + ecfg["memory.read_per_byte"]) * PJ, (act + ecfg["memory.write_per_byte"]) * PJ)
