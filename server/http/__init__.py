"""Streamable HTTP: the ASGI app, bearer tokens and per-token project grants."""
