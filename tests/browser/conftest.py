"""Headless Chromium for the dashboard's browser tests: Debian's `chromium`, driven by Playwright.

No browser is ever downloaded (`playwright install` is never run): the tests launch the system
binary. Without it they skip with the reason, unless MEMSTRATA_REQUIRE_BROWSER=1 (CI sets it
in .ci/run), where a missing browser fails the run instead of silently skipping it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    """The system Chromium, if installed."""
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )


def _missing(reason: str) -> None:
    if os.environ.get("MEMSTRATA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MEMSTRATA_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(f"{reason}; install it with `apt-get install -y chromium` (make test does on CI)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module.

    Not per session: Playwright's sync API marks an event loop as running in the main thread
    while it is open, and later tests that call asyncio.run() (the PostgreSQL fixture) would
    fail if it stayed open past this folder.
    """
    executable = chromium_path()
    if executable is None:
        _missing("Debian's chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (make dev)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()
