"""A throwaway PostgreSQL (pgserver: PostgreSQL 16 + pgvector) for the Postgres-backed tests.

MEMSTRATA_TEST_DATABASE_URL points the tests at an existing server instead (the role needs
CREATEDB). Each test gets a fresh database cloned from a migrated template, so tests never see
each other's rows and a clone costs a few tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from memory_core.storage.postgres import apply_migrations

__all__ = ["TEMPLATE", "PostgresServer", "start_postgres", "with_database"]

TEMPLATE = "memstrata_test_template"
ENV_URL = "MEMSTRATA_TEST_DATABASE_URL"


def with_database(url: str, name: str) -> str:
    """The same server URL, naming another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


class PostgresServer:
    """A server URL plus a migrated template; hands out fresh databases."""

    def __init__(self, url: str, keepalive: object | None = None) -> None:
        self.url = url
        self._keepalive = keepalive  # the pgserver handle: stops the server when collected

    def stop(self) -> None:
        """Stop a server this session started (before logging shuts down at exit)."""
        if self._keepalive is not None:
            self._keepalive.cleanup()  # type: ignore[attr-defined]
            self._keepalive = None

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.url)

    async def prepare_template(self) -> None:
        """Create the template database once, with every migration applied."""
        admin = await self._admin()
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')
            await admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
        finally:
            await admin.close()
        conn = await asyncpg.connect(with_database(self.url, TEMPLATE))
        try:
            await apply_migrations(conn)
        finally:
            await conn.close()

    async def create_database(self) -> str:
        """A new database cloned from the template; returns its URL."""
        name = f"memstrata_t_{uuid.uuid4().hex[:12]}"
        admin = await self._admin()
        try:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        finally:
            await admin.close()
        return with_database(self.url, name)

    async def drop_database(self, url: str) -> None:
        """Drop a database made by create_database."""
        name = urlsplit(url).path.lstrip("/")
        admin = await self._admin()
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def start_postgres() -> PostgresServer:
    """Start (or reach) the test server and build the template; fail the test with the reason.

    Never skips: a Postgres-backed test that cannot get a server fails, naming why. The data
    directory is not under pytest's basetemp: a concurrent pytest run prunes old basetemps
    (chmod + delete), which would pull the data directory from under a running server.
    """
    url = os.environ.get(ENV_URL)
    keepalive = None
    try:
        if not url:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset (containers); harmless.
                warnings.simplefilter("ignore")
                import pgserver

                folder = Path(tempfile.mkdtemp(prefix="memstrata-pg-"))
                srv = pgserver.get_server(folder, cleanup_mode="delete")  # type: ignore[attr-defined]
                url, keepalive = srv.get_uri(), srv
        server = PostgresServer(url, keepalive)
        asyncio.run(server.prepare_template())
    except Exception as exc:  # any failure at all is the reason the Postgres tests fail
        pytest.fail(
            f"PostgreSQL for the tests could not start ({type(exc).__name__}: {exc}); "
            f"install the dev extra (pgserver) or set {ENV_URL}",
            pytrace=False,
        )
    return server
