"""cap_malloc_arenas: a glibc tuning that never fails the process that asks for it."""

import platform
import sys

import pytest

from memory_core.embeddings.malloc_arenas import cap_malloc_arenas


def test_caps_on_glibc_and_leaves_an_explicit_setting_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    # The default arena count of this process is unknown; a cap of 8 per core changes nothing.
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert cap_malloc_arenas(64) is glibc
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert cap_malloc_arenas(64) is False


def test_another_platform_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cap_malloc_arenas() is False
