import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED
from structlog.testing import capture_logs

from memory_core.domain.models import Layer
from server import app
from server.app_context import LiveContext
from server.container import Container, open_container
from server.cron import parse_cron
from server.scheduler import (
    PATTERNS_JOB,
    PRUNE_JOB,
    RECALCULATE_JOB,
    JobRuns,
    build_scheduler,
    once_per_schedule,
    patterns_job,
    prune_job,
    recalculate_job,
)
from server.settings import ScheduleSettings, Settings
from tests.fakes import FrozenClock
from tests.mcp_client import hosted


@pytest.fixture
async def container(settings: Settings, clock: FrozenClock) -> AsyncIterator[Container]:
    enabled = settings.model_copy(update={"schedule": ScheduleSettings()})
    async with open_container(enabled, clock) as c:
        yield c


async def test_jobs_run_directly(container: Container, clock: FrozenClock) -> None:
    await container.memories.append("p", Layer.EPISODIC, "old")
    clock.advance(days=31)
    with capture_logs() as logs:
        assert await recalculate_job(container) == 1
        assert await prune_job(container) == 1
    ran = [e for e in logs if e["event"] == "job.ran"]
    assert [(e["job"], e.get("changed", e.get("deleted"))) for e in ran] == [
        (RECALCULATE_JOB, 1),
        (PRUNE_JOB, 1),
    ]


async def test_live_scheduler_runs_a_job_on_demand(container: Container) -> None:
    scheduler = build_scheduler(container)
    assert scheduler is not None
    assert {j.id for j in scheduler.get_jobs()} == {RECALCULATE_JOB, PRUNE_JOB, PATTERNS_JOB}
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    scheduler.add_listener(
        lambda ev: done.set_result(ev.code), EVENT_JOB_EXECUTED | EVENT_JOB_ERROR
    )
    scheduler.start()
    try:
        scheduler.get_job(RECALCULATE_JOB).modify(next_run_time=datetime.now(UTC))
        scheduler.wakeup()
        assert await asyncio.wait_for(done, 5) == EVENT_JOB_EXECUTED
    finally:
        scheduler.shutdown(wait=False)


async def test_daily_recalculation_fires_at_midnight_utc(container: Container) -> None:
    fired = asyncio.Event()
    with time_machine.travel(datetime(2026, 1, 2, 23, 59, 59, 700_000, tzinfo=UTC), tick=True):
        scheduler = build_scheduler(container)
        assert scheduler is not None
        scheduler.add_listener(
            lambda ev: fired.set() if ev.job_id == RECALCULATE_JOB else None, EVENT_JOB_EXECUTED
        )
        scheduler.start()
        try:
            await asyncio.wait_for(fired.wait(), 5)
        finally:
            scheduler.shutdown(wait=False)


def test_default_schedules_are_daily_and_weekly() -> None:
    s = ScheduleSettings()
    after = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # a Thursday
    daily = parse_cron(s.recalculate_cron or "").get_next_fire_time(None, after)
    weekly = parse_cron(s.prune_cron or "").get_next_fire_time(None, after)
    assert daily == datetime(2026, 1, 2, 0, 0, tzinfo=UTC)
    assert weekly == datetime(2026, 1, 4, 0, 0, tzinfo=UTC)  # Sunday
    assert s.prune_limit == 1000


async def test_schedules_can_be_disabled(settings: Settings, clock: FrozenClock) -> None:
    async with open_container(settings, clock) as c:  # the fixture disables the schedule
        assert build_scheduler(c) is None
    only_prune = settings.model_copy(
        update={"schedule": ScheduleSettings(recalculate_cron="", prune_cron="0 3 * * *")}
    )
    async with open_container(only_prune, clock) as c:
        scheduler = build_scheduler(c)
        assert scheduler is not None
        assert [j.id for j in scheduler.get_jobs()] == [PRUNE_JOB]
    none = settings.model_copy(
        update={"schedule": ScheduleSettings(recalculate_cron=None, prune_cron="")}
    )
    async with open_container(none, clock) as c:
        assert build_scheduler(c) is None


def test_a_malformed_cron_is_refused() -> None:
    with pytest.raises(ValueError, match="Wrong number of fields"):
        parse_cron("every day")


@pytest.mark.parametrize(
    ("field", "first_fire"),
    [
        ("0", datetime(2026, 1, 4, tzinfo=UTC)),  # Sunday
        ("7", datetime(2026, 1, 4, tzinfo=UTC)),  # Sunday too
        ("1-5", datetime(2026, 1, 2, tzinfo=UTC)),  # Friday is next
        ("6", datetime(2026, 1, 3, tzinfo=UTC)),  # Saturday
        ("*/3", datetime(2026, 1, 3, tzinfo=UTC)),  # sun, wed, sat
        ("0,3", datetime(2026, 1, 4, tzinfo=UTC)),
        ("mon", datetime(2026, 1, 5, tzinfo=UTC)),
        ("0,sat", datetime(2026, 1, 3, tzinfo=UTC)),  # Sunday (as 0) and Saturday
        ("1,sat", datetime(2026, 1, 3, tzinfo=UTC)),  # Monday and Saturday: not Tuesday
        ("mon-fri", datetime(2026, 1, 2, tzinfo=UTC)),
    ],
)
def test_day_of_week_follows_crontab_numbering(field: str, first_fire: datetime) -> None:
    after = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # a Thursday
    assert parse_cron(f"0 0 * * {field}").get_next_fire_time(None, after) == first_fire


@pytest.mark.parametrize("field", ["8", "5-2", "1/0", "1/", "*/", "x1"])
def test_bad_day_of_week_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match="day-of-week"):
        parse_cron(f"0 0 * * {field}")


def fired_weekdays(expression: str) -> set[str]:
    trigger = parse_cron(expression)
    start = datetime(2026, 1, 3, 23, 0, tzinfo=UTC)  # an hour before Sunday
    days: set[str] = set()
    moment = start
    while True:
        moment = trigger.get_next_fire_time(None, moment + timedelta(seconds=1))
        if moment is None or moment >= start + timedelta(days=7):
            return days
        days.add(moment.strftime("%a"))


@pytest.mark.parametrize(
    ("field", "days"),
    [
        ("0", {"Sun"}),
        ("7", {"Sun"}),
        ("0,sat", {"Sun", "Sat"}),
        ("1,sat", {"Mon", "Sat"}),
        ("1-5", {"Mon", "Tue", "Wed", "Thu", "Fri"}),
        ("mon-fri,0", {"Mon", "Tue", "Wed", "Thu", "Fri", "Sun"}),
        ("*/2", {"Sun", "Tue", "Thu", "Sat"}),
    ],
)
def test_weekdays_fired_follow_crontab(field: str, days: set[str]) -> None:
    assert fired_weekdays(f"0 0 * * {field}") == days


async def test_each_runs_outcome_is_kept_for_the_dashboard(settings: Settings) -> None:
    runs = JobRuns()
    wrapped = once_per_schedule("prune_expired", parse_cron("* * * * *"), prune_job, runs)

    async def broken(container: Container) -> int:
        raise RuntimeError("disk on fire")

    failing = once_per_schedule("recalculate_tiers", parse_cron("* * * * *"), broken, runs)
    async with open_container(settings) as container:
        assert await wrapped(container) == 0
        with pytest.raises(RuntimeError):
            await failing(container)
    done, failed = runs.last["prune_expired"], runs.last["recalculate_tiers"]
    assert done.result == 0 and not done.failed and done.skipped is None
    assert failed.failed and failed.result is None
    assert done.finished <= failed.finished <= datetime.now(UTC)


async def _scheduler_of(live: LiveContext) -> Any:
    for _ in range(300):
        if live.current is not None and live.current.scheduler is not None:
            return live.current.scheduler
        await asyncio.sleep(0.01)
    return None


async def test_over_stdio_the_scheduler_starts_after_the_first_tools_list(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "WARM_UP_FALLBACK_S", 60.0)  # only the listing can start it
    enabled = settings.model_copy(update={"schedule": ScheduleSettings()})
    live = LiveContext()
    async with hosted(enabled, live=live, warm_up_after_listing=True) as client:
        await client.call_tool("recall", {"key": "nothing.here"})
        assert live.current is not None and live.current.scheduler is None
        await client.list_tools()
        scheduler = await _scheduler_of(live)
        assert scheduler is not None
        assert {j.id for j in scheduler.get_jobs()} == {RECALCULATE_JOB, PRUNE_JOB, PATTERNS_JOB}


async def test_a_client_that_never_lists_tools_gets_the_scheduler_anyway(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "WARM_UP_FALLBACK_S", 0.1)
    enabled = settings.model_copy(update={"schedule": ScheduleSettings()})
    live = LiveContext()
    async with hosted(enabled, live=live, warm_up_after_listing=True) as client:
        await client.call_tool("recall", {"key": "nothing.here"})
        assert await _scheduler_of(live) is not None


async def test_a_server_stopped_before_warming_up_stops_cleanly(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "WARM_UP_FALLBACK_S", 60.0)
    enabled = settings.model_copy(update={"schedule": ScheduleSettings()})
    live = LiveContext()
    async with asyncio.timeout(10), hosted(enabled, live=live, warm_up_after_listing=True):
        pass
    assert live.current is None


async def test_the_shared_pattern_job_publishes_and_is_left_out_when_sharing_is_off(
    settings: Settings, clock: FrozenClock
) -> None:
    """Issue 33.6: the pool is refreshed daily beside the recalculation, unless turned off."""
    enabled = settings.model_copy(update={"schedule": ScheduleSettings()})
    async with open_container(enabled, clock) as c:
        with capture_logs() as logs:
            assert await patterns_job(c) == 0  # nobody opted in: nothing to publish
        assert [e["job"] for e in logs if e["event"] == "job.ran"] == [PATTERNS_JOB]
    off = enabled.model_copy(
        update={"knowledge": enabled.knowledge.model_copy(update={"shared_patterns": False})}
    )
    async with open_container(off, clock) as c:
        scheduler = build_scheduler(c)
        assert scheduler is not None
        assert PATTERNS_JOB not in {j.id for j in scheduler.get_jobs()}
