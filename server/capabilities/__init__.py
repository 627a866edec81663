"""MCP capabilities beside the tools: resources (memory:// URIs) and prompts."""
