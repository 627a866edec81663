"""Ingest text and markdown files (one file or a whole folder) into a tenant's context."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from memory_core.domain.knowledge_inputs import check_name
from memory_core.errors import InvalidInputError, MemoryCoreError
from memory_core.services.business import BusinessService

__all__ = ["TEXT_SUFFIXES", "FoundFiles", "IngestPathReport", "ingest_path", "text_files"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst")


@dataclass
class IngestPathReport:
    """Counts of what ingesting a path did, and the files skipped with why."""

    files: int = 0
    created: int = 0
    replaced: int = 0
    unchanged: int = 0
    chunks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class FoundFiles:
    """The text files under a root, and the symbolic links below it that were not followed."""

    files: list[Path]
    links: list[Path]


def text_files(root: Path, suffixes: Sequence[str] = TEXT_SUFFIXES) -> FoundFiles:
    """`root` itself if it is a file, else the text files below it (hidden ones left out).

    Links below `root` (to files or folders) are listed, never followed: a checkout holding
    `notes.md -> ~/.aws/credentials` must not turn a credentials file into served context.
    `root` itself is taken as named, link or not: the person chose it.
    """
    if root.is_file():
        return FoundFiles([root], [])
    files: list[Path] = []
    links: list[Path] = []
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        links += [here / d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        for name in filenames:
            path = here / name
            if name.startswith(".") or path.suffix.lower() not in suffixes:
                continue
            (links if path.is_symlink() else files).append(path)
    return FoundFiles(sorted(files), sorted(links))


async def ingest_path(
    service: BusinessService,
    tenant: str,
    path: Path | str,
    *,
    progress: Callable[[int, int], None] | None = None,
    suffixes: Sequence[str] = TEXT_SUFFIXES,
) -> IngestPathReport:
    """Ingest a file, or every text/markdown file under a folder, as documents of `tenant`.

    Each file's source is its path relative to `path` (a single file: its name), so the same
    folder ingested again updates only the files that changed. Files that are not UTF-8 text,
    are empty or too long are skipped and listed; they do not stop the others.

    Args:
        service: The business-context service.
        tenant: Whose context the files become.
        path: A file or a folder.
        progress: Called with (files done, files in total) after each file.
        suffixes: File name endings taken from a folder.

    Raises:
        InvalidInputError: `tenant` is badly formed or `path` does not exist.
    """
    check_name("tenant", tenant)  # once, not as a failure of every file
    root = Path(path)
    if not await anyio.Path(root).exists():
        raise InvalidInputError("path", "does not exist")
    found = await anyio.to_thread.run_sync(text_files, root, suffixes)
    files = found.files
    base = root.parent if await anyio.Path(root).is_file() else root
    report = IngestPathReport()
    report.skipped += [
        (link.relative_to(base).as_posix(), "symbolic link, not followed") for link in found.links
    ]
    for done, file in enumerate(files, start=1):
        source = file.relative_to(base).as_posix()
        try:
            text = await anyio.Path(file).read_text(encoding="utf-8")
            result = await service.ingest(tenant, source, text)
        except UnicodeDecodeError:
            report.skipped.append((source, "not UTF-8 text"))
        except InvalidInputError as exc:
            report.skipped.append((source, f"{exc.field} {exc.reason}"))
        except (OSError, MemoryCoreError) as exc:
            report.skipped.append((source, type(exc).__name__))
        else:
            report.files += 1
            report.chunks += result.document.chunk_count
            if result.status == "created":
                report.created += 1
            elif result.status == "replaced":
                report.replaced += 1
            else:
                report.unchanged += 1
        if progress is not None:
            progress(done, len(files))
    return report
