"""How the MCP surface speaks: the server class and its toolsets' listing, argument and domain errors as MCP errors, malformed stdio lines, the instructions."""
