"""memstrata's MCP server: translates MCP to memory_core and back, and runs the process."""
