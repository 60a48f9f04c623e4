"""Workloads written with the recording API (traces made by programs, not captures)."""
