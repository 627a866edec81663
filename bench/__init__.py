"""Benchmarks (not tests): retrieval quality and speed, recorded in docs/benchmarks.md."""
