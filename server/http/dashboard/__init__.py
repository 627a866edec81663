"""The memory dashboard: server-rendered pages beside /mcp (see server.http.dashboard.routes)."""
