"""The grid ``tilesim dsr-search`` searches DSR's parameters over (Frame Coherence §6.3): the
values tried for every state's <T, D> pair of each step and how the states combine, with the
defaults the command line shows: here, apart from the search and its renders, so that
``tilesim --help`` builds its parser without them (the rates come from the technique's module,
which loads NumPy). ``tilesim.studies.dsr_search`` searches the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilesim.errors import InputError
from tilesim.render.techniques.dynamic_sampling_rate import LOWEST
from tilesim.thresholds import DSR_MIN_MSSIM

MAX_PRODUCT = 100_000           # combinations one product step may hold


@dataclass(frozen=True)
class SearchGrid:
    """Values tried for every state's <T, D> pair of each step, and how states combine."""

    increase_thresholds: tuple[float, ...] = (4.0, 16.0, 64.0)
    increase_diagonals: tuple[int, ...] = (1, 4, 8)
    # Reductions only where the high frequencies left out are faint and the axis-aligned ones
    # are looked at: a cosine of amplitude A luma levels gives a coefficient of about 11.3 A in
    # the 16x16 orthonormal DCT, so T_R <= 8 is under 0.7 levels; with D_R <= 8 the pure
    # horizontal and vertical frequencies (0, k), (k, 0), k >= 8 (stripes, text, scanlines)
    # stay in the test (D_R = 16 leaves out every one). Leave-workloads-out validation failed
    # with either relaxed (D_R 16 -> 0.918 held out, T_R 32 -> 0.876).
    reduce_thresholds: tuple[float, ...] = (2.0, 8.0)
    reduce_diagonals: tuple[int, ...] = (2, 4, 8)
    strategy: str = "coordinate"
    sweeps: int = 3
    local_minimum_mssim: float = DSR_MIN_MSSIM
    local_minimum_tile: str = "context"
    # The content-change guard's <change_threshold, change_cap> pairs (dynamic_sampling_rate:
    # mean-luma change in levels, 255 = only the first frame; the rate index a changed tile
    # is capped at). No thresholds (--no-guard): the thesis's FSM, no guard.
    guard_thresholds: tuple[float, ...] = (4.0, 16.0, 64.0, 255.0)
    guard_caps: tuple[int, ...] = (0, LOWEST)
    # The frame MSSIM the training traces must keep (None: the evaluation limit, 0.95). A
    # higher value leaves a margin for traces the fit has not seen.
    train_min_mssim: float | None = None

    def guard_pairs(self) -> list[tuple[float, int]]:
        """The guard settings tried, strictest first (a threshold of 255 only marks the first
        frame, where every rate is 1x and the cap makes no difference: tried once)."""
        pairs = []
        for threshold in sorted(self.guard_thresholds):
            for cap in sorted(self.guard_caps):
                if threshold >= 255 and cap != max(self.guard_caps):
                    continue
                pairs.append((float(threshold), int(cap)))
        return pairs

    def check(self) -> None:
        """InputError on an unknown strategy or a product step over ``MAX_PRODUCT``."""
        if self.strategy not in ("product", "coordinate"):
            raise InputError(f"unknown search strategy {self.strategy!r} (product or "
                             "coordinate)", source="tilesim dsr-search")
        if self.strategy == "product":
            guards = max(1, len(self.guard_pairs()))
            for kind, pairs, states, extra in (
                    ("increase", len(self.increase_thresholds) * len(self.increase_diagonals),
                     3, 1),
                    ("reduce", len(self.reduce_thresholds) * len(self.reduce_diagonals), 4,
                     guards)):
                if pairs**states * extra > MAX_PRODUCT:
                    raise InputError(f"{kind}: {pairs} <T, D> pairs per state make "
                                     f"{pairs**states * extra} combinations (over "
                                     f"{MAX_PRODUCT}); use smaller grids or --strategy "
                                     "coordinate", source="tilesim dsr-search")
        for threshold in self.guard_thresholds:
            if not 0 <= threshold <= 255:
                raise InputError(f"guard threshold {threshold}: expected 0..255 luma levels",
                                 source="tilesim dsr-search")
        for cap in self.guard_caps:
            if not 0 <= cap <= LOWEST:
                raise InputError(f"guard cap {cap}: expected a rate index 0..{LOWEST}",
                                 source="tilesim dsr-search")
        if self.guard_thresholds and not self.guard_caps:
            raise InputError("a guard needs at least one cap", source="tilesim dsr-search")

    def as_dict(self) -> dict:
        return {"strategy": self.strategy, "sweeps": self.sweeps,
                "local_minimum_mssim": self.local_minimum_mssim,
                "local_minimum_tile": self.local_minimum_tile,
                "increase_thresholds": list(self.increase_thresholds),
                "increase_diagonals": list(self.increase_diagonals),
                "reduce_thresholds": list(self.reduce_thresholds),
                "reduce_diagonals": list(self.reduce_diagonals),
                "guard_thresholds": list(self.guard_thresholds),
                "guard_caps": list(self.guard_caps),
                **({} if self.train_min_mssim is None
                   else {"train_min_mssim": self.train_min_mssim})}
