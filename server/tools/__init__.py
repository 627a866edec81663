"""MCP tools: each module exposes register(mcp), and each tool only translates."""
