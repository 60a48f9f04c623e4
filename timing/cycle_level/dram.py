"""The reference's own main memory: LPDDR4 channels, banks, rows, refresh and power-down.

The analytic model charges memory as bytes over a bandwidth plus a mean latency and splits DRAM
energy with assumed activations per byte (``tilesim.timing.memory_traffic``). The reference runs
every 64-byte request through a model of the DRAM instead, so the two can disagree:

* Address map: consecutive ``memory.dram.interleave`` blocks (256 bytes) alternate between the
  channels; within a channel, a ``row_size`` chunk (``memory.dram.row_size``, 2 KB) is a row of
  bank ``chunk mod banks``, the rest of the chunk number its row. A sequential stream (a tile's
  color flush, a display list) uses both channels and opens one row per channel per 4 KB.
* Requests are served in the order they arrive (first come, first served: the queue of a
  channel never reorders), each one after the controller's half round trip
  (``memory.dram.controller_latency / 2``; the other half on the way back): the bank is opened
  if closed (activate, ``trcd``), precharged first if another row is open (``trp``, not before
  ``tras`` after its activate) and left open afterwards (open-page policy, the one DRAMSim2's
  shipped ``system.ini.example`` sets, Frame Coherence §3.1's simulator); the column access takes
  ``tcl`` (reads) or ``twl`` (writes), then the line crosses the channel's data bus, one per
  channel at ``memory.bandwidth / memory.channels`` bytes per cycle (Table 3.1: 4 bytes per cycle
  over the two channels), in arrival order.
* Refresh (JEDEC JESD209-4 all-bank refresh): the last ``trfc`` cycles of every ``trefi`` a
  channel refreshes, blocked, and its rows are closed (a request arriving then waits); a run
  (a pass, a geometry phase) starts at the beginning of an interval.
* Power-down (JESD209-4 §4.28): a channel with no request for ``powerdown_idle`` cycles lowers CKE:
  active power-down if a row is open, precharge power-down if not; the next request pays ``txp``.

Energy is counted as DRAMPower counts it (Chandrasekar et al., "DRAMPower: open-source DRAM power
& energy estimation tool", and Micron TN-41-01): per command (activate/precharge pairs, read and
write bursts, refreshes) and per state over time (active standby: some row open; precharge
standby: all closed; active and precharge power-down). The per-command energies and the standby
powers are the energy configuration's (``memory.*`` of ``energy_32nm.toml``, the same LPDDR4-3200
currents); the power-down powers are ``memory.dram.powerdown_*`` of the GPU configuration.

Not modelled: tFAW / tRRD between activates, read-write turnaround, bank-group or per-bank
refresh, self-refresh, the write queue's draining policy (writes are served in arrival order too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.jit import jit
from tilesim.timing.config import Config

# the fields of the timing vector (DramTiming.vector) and of a channel's statistics row
TIMING = ("channels", "banks", "row_size", "line", "bus", "trcd", "trp", "tcl", "twl", "tras",
          "trefi", "trfc", "txp", "half_trip", "powerdown_idle", "interleave")
STATS = ("activates", "reads", "writes", "row_hits", "active_standby", "precharge_standby",
         "active_powerdown", "precharge_powerdown", "end")
PJ = 1e-12
MW = 1e-3


@dataclass
class DramTiming:
    """The numbers the request model uses, in GPU cycles and bytes (``TIMING`` order)."""

    values: dict[str, float]

    @classmethod
    def from_config(cls, cfg: Config) -> DramTiming:
        channels = cfg["memory.channels"]
        d = {"channels": channels, "banks": cfg["memory.dram.banks"],
             "row_size": cfg["memory.dram.row_size"], "line": cfg["caches.l2.line_size"],
             "bus": cfg["memory.bandwidth"] / channels,
             "half_trip": 0.5 * cfg["memory.dram.controller_latency"]}
        for k in ("trcd", "trp", "tcl", "twl", "tras", "trefi", "trfc", "txp", "powerdown_idle",
                  "interleave"):
            d[k] = cfg[f"memory.dram.{k}"]
        return cls({k: float(d[k]) for k in TIMING})

    def vector(self) -> np.ndarray:
        return np.array([self.values[k] for k in TIMING], dtype=np.float64)


class DramState:
    """The channels' and banks' state across the requests of one run (a pass or a frame's
    geometry phase), as the plain arrays the cycle loops take (``arrays()``)."""

    def __init__(self, timing: DramTiming):
        self.timing = timing
        ch, banks = int(timing.values["channels"]), int(timing.values["banks"])
        # per channel: bus free, last request's end, states integrated up to
        self.channel = np.zeros((ch, 3), dtype=np.float64)
        # per bank: open row (-1: closed), its refresh epoch
        self.bank_row = np.full((ch * banks, 2), -1, dtype=np.int64)
        # per bank: activate time, command free
        self.bank_time = np.zeros((ch * banks, 2), dtype=np.float64)
        self.stats = np.zeros((ch, len(STATS)), dtype=np.float64)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.channel, self.bank_row, self.bank_time, self.stats

    def close(self, end: float) -> None:
        """The run ends at cycle ``end``: standby and power-down up to it."""
        dram_close(end, self.channel, self.bank_row, self.bank_time, self.stats,
                   self.timing.vector())

    def counts(self) -> dict[str, float]:
        """The run's totals over the channels: ``STATS`` and ``refreshes``."""
        out = {k: float(self.stats[:, i].sum()) for i, k in enumerate(STATS) if k != "end"}
        trefi = self.timing.values["trefi"]
        out["refreshes"] = float(np.floor(self.stats[:, STATS.index("end")] / trefi).sum())
        out["cycles"] = float(self.stats[:, STATS.index("end")].max(initial=0.0))
        return out


def energy(counts: dict[str, float], cfg: Config, ecfg: Config) -> dict[str, float]:
    """DRAM energy (J) of a run's ``counts`` (``DramState.counts``, summed over runs as needed):
    per command and per state, DRAMPower's split."""
    line = cfg["caches.l2.line_size"]
    cycle = 1.0 / cfg["tech.clock"]
    trefi = cfg["memory.dram.trefi"] * cycle
    return {
        "act_pre": counts["activates"] * ecfg["memory.act_pre"] * PJ,
        "read": counts["reads"] * line * ecfg["memory.read_per_byte"] * PJ,
        "write": counts["writes"] * line * ecfg["memory.write_per_byte"] * PJ,
        # the configuration's refresh power is one refresh's energy per tREFI
        "refresh": counts["refreshes"] * ecfg["memory.refresh"] * MW * trefi,
        "active_standby": counts["active_standby"] * cycle * ecfg["memory.background_open"] * MW,
        "precharge_standby": counts["precharge_standby"] * cycle * ecfg["memory.background"] * MW,
        "active_powerdown": (counts["active_powerdown"] * cycle
                             * cfg["memory.dram.powerdown_active"] * MW),
        "precharge_powerdown": (counts["precharge_powerdown"] * cycle
                                * cfg["memory.dram.powerdown_precharge"] * MW),
    }


def add_counts(total: dict[str, float], part: dict[str, float]) -> dict[str, float]:
    """``total`` + ``part`` key by key (``cycles`` too: runs follow each other)."""
    return {k: total.get(k, 0.0) + v for k, v in part.items()}


@jit(inline=True)
def _integrate(c, until, channel, bank_row, stats, p):
    """Channel ``c``'s states from where they were integrated up to ``until``: standby (active
    if a bank holds a row of the current refresh epoch), then power-down after
    ``powerdown_idle`` cycles without a request."""
    banks = int(p[1])
    trefi = p[10]
    since = channel[c, 2]
    if until <= since:
        return
    idle_from = max(channel[c, 1], since) + p[14]
    epoch = int(since // trefi)
    open_rows = False
    for b in range(c * banks, (c + 1) * banks):
        if bank_row[b, 0] >= 0 and bank_row[b, 1] == epoch:
            open_rows = True
    awake = min(until, max(idle_from, since)) - since
    asleep = until - since - awake
    if open_rows:
        stats[c, 4] += awake
        stats[c, 6] += asleep
    else:
        stats[c, 5] += awake
        stats[c, 7] += asleep
    channel[c, 2] = until


@jit(inline=True)
def dram_access(now, address, write, channel, bank_row, bank_time, stats, p):
    """One 64-byte request for byte ``address`` asked at cycle ``now`` (``write``: a posted
    write): the cycle its data is back (reads) or written (writes). Updates the state."""
    channels = int(p[0])
    banks = int(p[1])
    interleave = p[15]
    block = int(address // interleave)
    c = block % channels
    local = (block // channels) * interleave + (address - block * interleave)
    chunk = int(local // p[2])
    b = c * banks + chunk % banks
    row = chunk // banks
    trcd = p[5]
    trp = p[6]
    tcl = p[7]
    twl = p[8]
    tras = p[9]
    trefi = p[10]
    trfc = p[11]
    txp = p[12]
    arrive = now + p[13]
    _integrate(c, arrive, channel, bank_row, stats, p)
    t = max(arrive, bank_time[b, 1])
    if arrive - max(channel[c, 1], 0.0) > p[14] and channel[c, 1] < arrive:
        t = max(t, arrive + txp)                   # leaving power-down
    epoch = int(t // trefi)
    if t - epoch * trefi >= trefi - trfc:         # the channel is refreshing
        epoch += 1
        t = epoch * trefi
    if bank_row[b, 0] == row and bank_row[b, 1] == epoch:
        ready = t
        stats[c, 3] += 1.0
    else:
        act = t
        if bank_row[b, 0] >= 0 and bank_row[b, 1] == epoch:
            act = max(t, bank_time[b, 0] + tras) + trp    # precharge the open row first
        ready = act + trcd
        bank_row[b, 0] = row
        bank_row[b, 1] = epoch
        bank_time[b, 0] = act
        stats[c, 0] += 1.0
    bank_time[b, 1] = ready
    if write:
        data = ready + twl
        stats[c, 2] += 1.0
    else:
        data = ready + tcl
        stats[c, 1] += 1.0
    start = max(data, channel[c, 0])
    end = start + p[3] / p[4]
    channel[c, 0] = end
    channel[c, 1] = max(channel[c, 1], end)
    stats[c, 8] = max(stats[c, 8], end)
    if write:
        return end
    return end + p[13]


@jit
def dram_close(end, channel, bank_row, bank_time, stats, p):
    for c in range(channel.shape[0]):
        _integrate(c, max(end, channel[c, 1]), channel, bank_row, stats, p)
        stats[c, 8] = max(stats[c, 8], end)


@jit
def dram_sequence(now, addresses, writes, channel, bank_row, bank_time, stats, p, done):
    """Requests ``addresses`` (n,) all asked at ``now`` (``writes`` (n,) 1: write), in order;
    their completion cycles into ``done`` (tests, and streams outside the cycle loops)."""
    for i in range(addresses.size):
        done[i] = dram_access(now, addresses[i], writes[i] == 1, channel, bank_row, bank_time,
                              stats, p)
