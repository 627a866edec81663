"""Crontab expressions as APScheduler 3 triggers, with crontab's day numbering.

Its own module so settings can check an expression without importing the scheduler (which
imports the container, which imports the backends, which import the settings).
"""

from __future__ import annotations

from typing import Any

from apscheduler.triggers.cron import CronTrigger

__all__ = ["parse_cron"]

_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _standard_day_of_week(field: str) -> str:
    """Translate a crontab day-of-week field (0 or 7 = Sunday) into day names.

    APScheduler 3 numbers days from Monday = 0, so `CronTrigger.from_crontab("0 0 * * 0")` fires
    on Mondays. Spelling the days out keeps the crontab meaning every user expects. Parts that
    are already names (`sat`, `mon-fri`) pass through; numeric parts are converted.
    """
    if field == "*":
        return field
    names: list[str] = []
    for part in field.split(","):
        if part.isalpha() or (part.replace("-", "").isalpha() and part.count("-") == 1):
            names.append(part.lower())
            continue
        span, slash, step_text = part.partition("/")
        if slash and not step_text.isdigit():
            raise ValueError(f"invalid day-of-week field {field!r}: a step needs a number")
        step = int(step_text) if step_text else 1
        try:
            if span == "*":
                first, last = 0, 6
            elif "-" in span:
                first_text, last_text = span.split("-", 1)
                first, last = int(first_text), int(last_text)
            else:
                first = int(span)
                last = 6 if slash else first
        except ValueError:
            raise ValueError(
                f"invalid day-of-week field {field!r} (use 0-7, 0 and 7 = Sunday, or names)"
            ) from None
        if not (0 <= first <= 7 and 0 <= last <= 7 and first <= last and step >= 1):
            raise ValueError(f"invalid day-of-week field {field!r} (use 0-7, 0 and 7 = Sunday)")
        names.extend(_DAY_NAMES[d % 7] for d in range(first, last + 1, step))
    return ",".join(dict.fromkeys(names))


def parse_cron(expression: str) -> Any:
    """A UTC CronTrigger from a five-field crontab expression, with crontab's day numbering.

    Raises:
        ValueError: The expression is malformed.
    """
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"Wrong number of fields; got {len(fields)}, expected 5")
    minute, hour, day, month, day_of_week = fields
    return CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=_standard_day_of_week(day_of_week),
        timezone="UTC",
    )
