"""Pure domain code: value objects and the maths of tiers, ranking and queries (no I/O)."""
