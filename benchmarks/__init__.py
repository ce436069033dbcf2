"""Benchmarks: `python -m benchmarks [name ...]` (or `make bench`) prints one table each."""
