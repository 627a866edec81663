"""The memory dashboard: server-rendered pages beside /mcp (see server.dashboard.routes)."""
