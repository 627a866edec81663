"""The MCP tools' input and result models, one module per feature."""
