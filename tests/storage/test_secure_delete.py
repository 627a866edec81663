"""Forgotten text leaves the SQLite file: deleted content is zeroed, not left in free pages."""

from __future__ import annotations

from pathlib import Path

from memory_core.domain.models import Layer
from server.container import open_container
from server.settings import Settings

SECRET = "zq-forgotten-phrase-7781"


def file_bytes(db: Path) -> bytes:
    return b"".join(
        Path(f"{db}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if Path(f"{db}{suffix}").exists()
    )


async def test_forgotten_and_pruned_text_is_not_left_in_the_file(settings: Settings) -> None:
    async with open_container(settings) as app:
        kept = await app.memories.append("p", Layer.EPISODIC, "an ordinary note that stays")
        gone = await app.memories.append("p", Layer.EPISODIC, f"the vault code is {SECRET}")
        assert SECRET.encode() in file_bytes(settings.db)
        await app.memories.forget("p", gone.outcome.memory.id)
    assert SECRET.encode() not in file_bytes(settings.db)
    async with open_container(settings) as app:
        found = await app.memories.recall("p", "nothing")
        assert found.value is None
        assert (await app.memories.forget("p", kept.outcome.memory.id)).content
