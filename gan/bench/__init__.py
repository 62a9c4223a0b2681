"""Benchmark helpers outside the training product: code that only scripts/bench_*.py and their tests use."""
