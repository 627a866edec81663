"""`memstrata hook <event>`: the commands Claude Code runs as `type: "command"` hooks.

They open the store directly (the same file or PostgreSQL database the MCP server uses; no
second server, no port) and never break the person's session: whatever goes wrong, they exit 0,
print nothing on stdout and write one line on stderr. The path from the console script to here
imports neither the MCP SDK nor rich (see server.cli).
"""
