"""How the MCP server speaks.

The server class and its toolsets' listing (surface), argument and domain errors as MCP
errors (argument_errors, errors), answers to malformed stdio lines (stdio_errors), and the
instructions sent to the model (instructions).
"""
