"""`memstrata ui`: serve HTTP on loopback and open the dashboard in the browser."""

from __future__ import annotations

import argparse
import asyncio
import sys
import textwrap
import webbrowser

from server.settings import Settings

__all__ = ["add_parser", "run_ui"]

_EXAMPLES = """\
examples:
  memstrata ui                     # http://127.0.0.1:8765/ in the default browser
  memstrata ui --port 9000 --no-browser
  MEMSTRATA_AUTH_TOKENS=... memstrata ui   # the page asks for one of the tokens"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `ui`."""
    parser = sub.add_parser(
        "ui",
        help="open the memory dashboard in the browser (serves HTTP on loopback)",
        description=textwrap.fill(
            "Serve MCP over HTTP on 127.0.0.1 (as `serve --http` does, with the same tokens "
            "and grants) and open the dashboard at / in the default browser. Ctrl-C stops it.",
            88,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, help="HTTP port (default MEMSTRATA_HTTP_PORT, 8765)")
    parser.add_argument(
        "--no-browser", action="store_true", help="print the address without opening a browser"
    )


def run_ui(settings: Settings, args: argparse.Namespace) -> int:
    """Serve on loopback until interrupted; 6 when the port cannot be bound."""
    from server.container import open_container
    from server.http.app import HttpBindError, serve_http

    async def preflight() -> None:
        async with open_container(settings):
            pass

    host, port = "127.0.0.1", args.port or settings.http_port
    settings = settings.model_copy(update={"http_dashboard": True})
    # As `serve`: open, migrate and check the store first, so a problem is one clear line.
    asyncio.run(preflight())

    def announce(mcp_url: str) -> None:  # called once the port is bound
        url = f"http://{host}:{port}/"
        sys.stderr.write(
            f"memstrata: dashboard at {url} (MCP at {mcp_url}, database "
            f"{settings.store_location}); Ctrl-C stops it\n"
        )
        if not args.no_browser:
            webbrowser.open(url)

    try:
        asyncio.run(serve_http(settings, host, port, announce=announce))
    except HttpBindError as exc:
        sys.stderr.write(f"memstrata: {exc} (is a server already running? try --port)\n")
        return 6
    except KeyboardInterrupt:
        pass
    return 0
