"""Timing and energy models fed by the per-tile counters (built by the timing issue)."""
