"""Benchmarks: ``load`` (the platform under load, see docs/performance.md) and ``replay``."""
