"""Plain typed settings of the domain, one module each.

The policies (tiers, ranking, limits, conversations, the storage cap), the hooks' and the
knowledge stores' settings, and the tier windows. Nothing is imported here, so
`memory_core.config.tier_windows` loads without pydantic (the lean `memstrata stats` reads it).
"""
