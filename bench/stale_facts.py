"""A benchmark of truth: do corrections win, do repeats add rows, do lookalikes merge?

    python -m bench.stale_facts [--seed 7] [--facts 24] [--json FILE]

From its own seeded generator (developer facts, written for this; no data set), on a fresh
SQLite store with the default embedding model:

- every fact is stated, then corrected a few days later (half with `supersedes`, half without;
  half of the corrections paraphrased), among distractors (other facts) and near-lookalikes
  (the same sentence about another component). A question about each fact is then searched
  (limit 5). The fact is *stale* when the outdated version ranks above its correction, or is
  returned while the correction is not.
- the prompt hook: the same question is then the prompt of a UserPromptSubmit
  (server.hooks.events.user_prompt_submit, called in-process, a fresh session per question,
  the project resolved from its working directory as Claude Code's hooks do). The fact is
  stale *by the hook* when the outdated version is among the memories it injects. Measured
  with the hook's defaults (keyword search: a cold hook process does not wait for the model)
  and with the model ready (`hybrid`: the prompt hook of a warm server, or one allowed to wait).
- duplicate rows: one "session" of notes captured twice (append_many, as the hooks capture),
  then every note appended again as a retry would send it (other case, spacing, end mark):
  rows added by the second capture and by the retries.
- false merges: each fact's lookalike (another value in the same sentence, in a project of
  its own) written after the original: counted when the write is taken for a duplicate.

`--json FILE` writes {"overall": {"stale_rate_with_supersedes", "stale_rate_without",
"duplicate_rows", "false_merges", "hook_stale_rate_with_supersedes", "hook_stale_rate_without",
"hook_hybrid_stale_rate_with_supersedes", "hook_hybrid_stale_rate_without",
"either_stale_rate_with_supersedes", "either_stale_rate_without"}, "facts": [...]}; the
`stale_rate_*` keys are search's ranking alone (as before), `either_*` is the issue's
definition: ranked above its correction, or injected by the prompt hook (either mode).
Targets (issue 32): stale rate <= 5% with supersedes, <= 25% without; 0 false merges; 0
duplicate rows.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_core.domain.models import Layer
from memory_core.services.memories import AppendItem, MemoryService, SearchRequest
from server.container import open_container
from server.hooks.events import user_prompt_submit
from server.hooks.payload import HookPayload
from server.hooks.services import open_hook_services
from server.logging import configure_logging
from server.settings import ScheduleSettings, Settings

START = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)

# (statement with {v}, paraphrased correction with {v}, question, values, lookalike with {v}).
FACTS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "The public API listens on port {v}.",
        "We moved the public API to port {v}.",
        "Which port does the public API listen on?",
        ("8080", "9090", "8443"),
        "The metrics endpoint listens on port {v}.",
    ),
    (
        "We deploy the backend to {v}.",
        "Backend deploys now go to {v}.",
        "Where do we deploy the backend?",
        ("Fly.io", "AWS", "Render"),
        "We deploy the marketing site to {v}.",
    ),
    (
        "The staging database runs PostgreSQL {v}.",
        "Staging was upgraded to PostgreSQL {v}.",
        "Which PostgreSQL version does staging run?",
        ("14", "15", "16"),
        "The analytics warehouse runs PostgreSQL {v}.",
    ),
    (
        "Code review needs {v} approvals before a merge.",
        "From now on a merge needs {v} review approvals.",
        "How many approvals does a merge need?",
        ("one", "two", "three"),
        "A release tag needs {v} approvals from the leads.",
    ),
    (
        "Access tokens expire after {v} minutes.",
        "Access tokens now live for {v} minutes.",
        "When do access tokens expire?",
        ("15", "30", "60"),
        "Password reset links expire after {v} minutes.",
    ),
    (
        "The frontend is built with {v}.",
        "We switched the frontend build to {v}.",
        "What builds the frontend?",
        ("webpack", "Vite", "esbuild"),
        "The docs site is built with {v}.",
    ),
    (
        "Errors are reported to {v}.",
        "Error reporting moved to {v}.",
        "Where are errors reported?",
        ("Sentry", "Rollbar", "Honeybadger"),
        "Uptime alerts are reported to {v}.",
    ),
    (
        "The default branch is {v}.",
        "We renamed the default branch to {v}.",
        "What is the default branch called?",
        ("master", "main", "trunk"),
        "The release branch is {v}.",
    ),
    (
        "Python services use Python {v}.",
        "Python services were moved to Python {v}.",
        "Which Python version do the services use?",
        ("3.10", "3.11", "3.12"),
        "The data notebooks use Python {v}.",
    ),
    (
        "The maximum upload size is {v} MB.",
        "Uploads are now capped at {v} MB.",
        "What is the maximum upload size?",
        ("10", "25", "50"),
        "The maximum avatar size is {v} MB.",
    ),
    (
        "Nightly backups run at {v} UTC.",
        "Nightly backups were moved to {v} UTC.",
        "When do nightly backups run?",
        ("01:00", "02:30", "04:00"),
        "The weekly report is sent at {v} UTC.",
    ),
    (
        "The billing service is owned by {v}.",
        "{v} took over the billing service.",
        "Who owns the billing service?",
        ("Alice", "Bob", "Chen"),
        "The search service is owned by {v}.",
    ),
)
# For each fact, a later fact about the same subject that corrects nothing (often in the words
# of a change): the prompt hook must still show the first. Counted as `false_folds` when search
# names the first as an older version of it (what the hook leaves out).
ADDITIONS = (
    "The public API now sits behind the Cloudflare proxy.",
    "Backend deploys now need approval from Dana.",
    "Staging now takes a PostgreSQL snapshot every night.",
    "From now on the merge queue runs the full test suite.",
    "Access tokens are now signed with RS256.",
    "We switched the frontend to TypeScript.",
    "Errors are now grouped by release.",
    "The default branch is now protected.",
    "Python services moved to uv for dependency management.",
    "Uploads are now scanned for viruses.",
    "Nightly backups now also copy the uploads bucket.",
    "The billing service now runs on Kubernetes.",
)
DISTRACTORS = (
    "Integration tests need Docker running locally.",
    "Feature flags are read from LaunchDarkly at startup.",
    "Logs are shipped to Datadog by the sidecar.",
    "Never commit the .env file.",
    "Use ruff for linting and formatting Python code.",
    "The CI pipeline runs on GitHub Actions.",
    "Prefer small pull requests with one change each.",
    "The mobile app is written in Kotlin and Swift.",
)


class _Clock:
    def __init__(self) -> None:
        self.at = START

    def now(self) -> datetime:
        return self.at


@dataclass
class FactResult:
    """One fact's outcome (hook_*: what the prompt hook injected, by mode)."""

    question: str
    supersedes: bool
    paraphrased: bool
    old_rank: int | None
    new_rank: int | None
    stale: bool
    old_id: int = 0
    new_id: int = 0
    project: str = ""
    hook_old: dict[str, bool] = field(default_factory=dict)
    hook_new: dict[str, bool] = field(default_factory=dict)


def _rank(hits: list[int], memory_id: int) -> int | None:
    return hits.index(memory_id) + 1 if memory_id in hits else None


async def _facts(
    service: MemoryService, clock: _Clock, rng: random.Random, n: int, projects_of: list[str]
) -> list[FactResult]:
    plan = []
    for i in range(n):
        statement, paraphrase, question, values, _ = FACTS[i % len(FACTS)]
        old_value, new_value = rng.sample(values, 2)
        project = projects_of[i // len(FACTS)]
        plan.append((project, statement, paraphrase, question, old_value, new_value, i % 2 == 0))
    projects = sorted({p[0] for p in plan})
    for project in projects:
        for text in DISTRACTORS:
            await service.append(project, Layer.EPISODIC, text)
    olds = []
    for project, statement, _, _, old_value, _, _ in plan:
        olds.append(await service.append(project, Layer.EPISODIC, statement.format(v=old_value)))
        clock.at += timedelta(hours=1)
    clock.at += timedelta(days=3)
    news = []
    for n_, (project, statement, paraphrase, _, _, new_value, with_supersedes) in enumerate(plan):
        text = (paraphrase if n_ % 4 < 2 else statement).format(v=new_value)
        supersedes = [olds[n_].memory.id] if with_supersedes else None
        news.append(await service.append(project, Layer.EPISODIC, text, supersedes=supersedes))
        clock.at += timedelta(hours=1)
    clock.at += timedelta(days=1)
    results = []
    for n_, (project, _, _, question, _, _, with_supersedes) in enumerate(plan):
        found = await service.search(
            SearchRequest(project=project, query=question, limit=5, mark_used=False)
        )
        hits = [h.memory.id for h in found.hits]
        old_rank, new_rank = _rank(hits, olds[n_].memory.id), _rank(hits, news[n_].memory.id)
        stale = old_rank is not None and (new_rank is None or old_rank < new_rank)
        results.append(
            FactResult(
                question,
                with_supersedes,
                n_ % 4 < 2,
                old_rank,
                new_rank,
                stale,
                old_id=olds[n_].memory.id,
                new_id=news[n_].memory.id,
                project=project,
            )
        )
    return results


_INJECTED = re.compile(r"^- #(\d+) ", re.MULTILINE)  # server.hooks.events._hit_line


async def _hook(
    settings: Settings, clock: _Clock, results: list[FactResult], folders: dict[str, Path]
) -> None:
    """Each question as a prompt to the UserPromptSubmit hook, in its two modes."""
    for mode in ("keyword", "hybrid"):
        hybrid = mode == "hybrid"
        hooks = settings.hooks.model_copy(update={"prompt_semantic_wait": 5.0 if hybrid else 0.0})
        chosen = settings.model_copy(update={"hooks": hooks})
        async with open_hook_services(chosen, semantic=hybrid) as svc:
            svc.clock = clock  # the bench's time, as the memories were written in it
            if svc.embedder is not None:
                await svc.embedder.wait(120)
            for n, r in enumerate(results):
                payload = HookPayload(
                    event="UserPromptSubmit",
                    session_id=f"stale-{mode}-{n}",
                    cwd=folders[r.project],
                    transcript_path=None,
                    prompt=r.question,
                )
                text = await user_prompt_submit(svc, payload) or ""
                shown = {int(i) for i in _INJECTED.findall(text)}
                r.hook_old[mode] = r.old_id in shown
                r.hook_new[mode] = r.new_id in shown


def _retried(text: str, rng: random.Random) -> str:
    """The text as a retry or a re-capture may send it again."""
    variant = rng.choice(("upper", "spaces", "mark", "lower"))
    if variant == "upper":
        return text.upper()
    if variant == "spaces":
        return "  " + text.replace(" ", "  ") + " "
    if variant == "mark":
        return text.rstrip(".") + "!"
    return text.lower()


async def _duplicates(service: MemoryService, rng: random.Random) -> int:
    notes = [AppendItem(layer=Layer.EPISODIC, content=t) for t in DISTRACTORS]
    notes += [
        AppendItem(layer=Layer.EPISODIC, content=f.format(v=values[0]))
        for f, _, _, values, _ in FACTS
    ]
    await service.append_many("capture", notes)
    before = len(await service.repo.list_layer("capture", Layer.EPISODIC, None, newest_first=False))
    await service.append_many("capture", notes)  # the same session captured again
    for note in notes:  # each retried with another spelling
        await service.append("capture", Layer.EPISODIC, _retried(note.content, rng))
    after = len(await service.repo.list_layer("capture", Layer.EPISODIC, None, newest_first=False))
    return after - before


async def _false_merges(service: MemoryService) -> int:
    merged = 0
    for n, (statement, _, _, values, lookalike) in enumerate(FACTS):
        for m, (a, b) in enumerate(itertools.pairwise(values)):
            project = f"lookalike{n}-{m}"
            await service.append(project, Layer.EPISODIC, statement.format(v=a))
            second = await service.append(project, Layer.EPISODIC, statement.format(v=b))
            merged += second.status == "duplicate"
            other = await service.append(project, Layer.EPISODIC, lookalike.format(v=a))
            merged += other.status == "duplicate"
    return merged


async def _false_folds(service: MemoryService, clock: _Clock) -> list[str]:
    """Additions (ADDITIONS) that search takes for a newer version of the fact they follow."""
    folded = []
    for n, ((statement, _, question, values, _), addition) in enumerate(
        zip(FACTS, ADDITIONS, strict=True)
    ):
        project = f"addition{n}"
        first = await service.append(project, Layer.EPISODIC, statement.format(v=values[0]))
        clock.at += timedelta(days=3)
        await service.append(project, Layer.EPISODIC, addition)
        found = await service.search(
            SearchRequest(project=project, query=question, limit=5, mark_used=False, versions=True)
        )
        if first.memory.id in found.older or first.memory.id not in {
            h.memory.id for h in found.hits
        }:
            folded.append(f"{question} -> {addition}")
    return folded


async def run(seed: int, facts: int) -> dict[str, Any]:
    """Run the benchmark on a fresh store; the report as a JSON-ready dict."""
    rng = random.Random(seed)
    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db=Path(tmp) / "truth.db",
            schedule=ScheduleSettings(enabled=False),
            embedding_wait=60,  # every write waits for the model: the bench is about vectors
            # The prompt hook names the project after its working directory, as it does for
            # Claude Code (the plugin's `git` scope; `path` needs no repository).
            project_scope="path",
        )
        folders: dict[str, Path] = {}
        for k in range((facts + len(FACTS) - 1) // len(FACTS)):
            folder = Path(tmp) / f"stale{k}"
            folder.mkdir()
            folders[settings.default_project(folder)] = folder
        async with open_container(settings, clock) as c:
            results = await _facts(c.memories, clock, rng, facts, list(folders))
            duplicate_rows = await _duplicates(c.memories, rng)
            false_merges = await _false_merges(c.memories)
            false_folds = await _false_folds(c.memories, clock)
        await _hook(settings, clock, results, folders)
    with_s = [r for r in results if r.supersedes]
    without = [r for r in results if not r.supersedes]

    def rate(group: list[FactResult], stale: Callable[[FactResult], bool]) -> float:
        return round(sum(stale(r) for r in group) / len(group), 3)

    def hook(mode: str) -> Callable[[FactResult], bool]:
        return lambda r: r.hook_old[mode]

    def either(r: FactResult) -> bool:
        return r.stale or any(r.hook_old.values())

    return {
        "overall": {
            "stale_rate_with_supersedes": rate(with_s, lambda r: r.stale),
            "stale_rate_without": rate(without, lambda r: r.stale),
            "duplicate_rows": duplicate_rows,
            "false_merges": false_merges,
            "false_folds": len(false_folds),
            "hook_stale_rate_with_supersedes": rate(with_s, hook("keyword")),
            "hook_stale_rate_without": rate(without, hook("keyword")),
            "hook_hybrid_stale_rate_with_supersedes": rate(with_s, hook("hybrid")),
            "hook_hybrid_stale_rate_without": rate(without, hook("hybrid")),
            "either_stale_rate_with_supersedes": rate(with_s, either),
            "either_stale_rate_without": rate(without, either),
        },
        "facts": [asdict(r) for r in results],
        "false_folds": false_folds,
        "seed": seed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--facts", type=int, default=24, help="facts stated and corrected")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args()
    configure_logging("WARNING", "console")  # stdout is the report's
    report = asyncio.run(run(args.seed, max(2, args.facts)))
    overall = report["overall"]
    print(json.dumps(overall, indent=2))
    stale = [f for f in report["facts"] if f["stale"]]
    for f in stale:
        ranks = f"old {f['old_rank']} new {f['new_rank']}"
        print(f"stale: {f['question']} (supersedes={f['supersedes']}, ranks {ranks})")
    for f in report["facts"]:
        for mode, injected in f["hook_old"].items():
            if injected:
                also = "with" if f["hook_new"][mode] else "without"
                print(f"injected stale ({mode} hook): {f['question']} ({also} the correction)")
    for fold in report["false_folds"]:
        print(f"false fold: {fold}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
