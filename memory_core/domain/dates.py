"""When it happened: time expressions in a memory's text, resolved to absolute date ranges.

"I went to the support group yesterday", written on 8 May 2023, happened on 7 May 2023; "two
weekends ago" said on 9 June 2023 is 27-28 May 2023. `resolve_dates` finds such expressions in
free text and resolves each against a reference time (the memory's session date when the client
gave one, else its creation time) into an inclusive `Span` of days. `query_time` does the same
for a search query and also says whether the query asks for a time ("when did ...").

Pure: no I/O, no clock (the reference time is always passed in), stdlib only.

Why no library. The candidates on PyPI were weighed against what this needs: finding
expressions *inside* text (not parsing a whole string), relative expressions resolved to
*ranges* ("last week" is seven days, not one instant), no false dates in ordinary prose ("May I
ask", "a second opinion", "march on"), offline, cheap to import, and maintained.

- dateparser 1.5 (maintained): `search_dates` finds dates in text, but tried on this table
  (2026-11-23, `languages=["en"]`, `RELATIVE_BASE` 8 May 2023) it read "May I ask" as 8 May,
  "a second opinion" as one second ago, "march on" as 8 March and "We met on Friday" as two
  dates ("We" -> 3 May); it found nothing in "two weekends ago" or "last summer"; it resolves
  "last week" to one instant (1 May 13:56), not a week; and `from dateparser.search import
  search_dates` took 0.32-0.36 s cold (regex, pytz, tzlocal, language data) against about
  0.05 s for this module.
- python-dateutil (maintained): `parser.parse(fuzzy=True)` parses one date out of a whole
  string and knows no relative expressions; `relativedelta` is only month arithmetic, a few
  lines here.
- parsedatetime (last release 2020), ctparse (2022): unmaintained; datefinder: absolute dates
  only; timefhuman: young, single maintainer.

So the expressions are a small table of English patterns below, each with a test
(tests/unit/test_dates.py); what none of them matches stays unresolved, which is the safe
failure for ranking (a memory without dates is ranked as before).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = [
    "QueryTime",
    "Span",
    "dates_of",
    "format_spans",
    "normalise_dates",
    "parse_spans",
    "query_time",
    "resolve_dates",
    "spans_overlap",
]

# At most this many spans are kept per memory (the first ones in the text).
MAX_SPANS = 8


@dataclass(frozen=True, order=True)
class Span:
    """An inclusive range of days; a single day has `start == end`."""

    start: date
    end: date

    def __str__(self) -> str:
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


@dataclass(frozen=True)
class QueryTime:
    """What a query says about time: the spans it names, and whether it asks for a time."""

    spans: tuple[Span, ...] = ()
    asks_when: bool = False


# English names, not `calendar`'s (which follow the locale, and whose import costs ~10 ms).
_MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTHS = {name: n for n, name in enumerate(_MONTH_NAMES, start=1)}
_MONTHS.update({name[:3]: n for n, name in enumerate(_MONTH_NAMES, start=1)})
_MONTHS["sept"] = 9
_WEEKDAYS = {
    name: n
    for n, name in enumerate(
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    )
}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "a couple of": 2,
}
# Vague counts become a range of counts: "a few days ago" is 2-5 days ago.
_VAGUE = {"a few": (2, 5), "few": (2, 5), "several": (3, 7)}

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = (
    r"(?P<count>\d{1,3}|"
    + "|".join(sorted(list(_NUMBERS) + list(_VAGUE), key=len, reverse=True))
    + r")"
)
_UNIT = r"(?P<unit>day|week|weekend|month|year)s?"
_REL = r"(?P<rel>last|this past|past|this|next|coming)"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")s?"
_SEASON = r"(?P<season>" + "|".join(_SEASONS) + r")"
# Words after which a bare month or year names a time ("in May", "since 2019").
_PREP = r"(?P<prep>in|since|during|until|till|by|from|through|early|late|mid|of|before|after)"
# Future markers in the same sentence send "on Friday" / "in May" forward instead of back.
_FUTURE = (
    r"\b(?:will|won't|shall|going to|gonna|plan(?:ning|s)? to|'ll|hope to|want to|"
    r"looking forward|next|upcoming|tomorrow)\b"
)


def _day(ref: date, offset: int) -> Span:
    d = ref + timedelta(days=offset)
    return Span(d, d)


def _week(ref: date, weeks: int) -> Span:
    monday = ref - timedelta(days=ref.weekday()) + timedelta(weeks=weeks)
    return Span(monday, monday + timedelta(days=6))


def _weekend(ref: date, weekends: int) -> Span:
    """The Saturday-Sunday `weekends` weeks from the one of ref's (Monday-based) week.

    "last weekend" (-1) is always the previous week's: on a Sunday, the weekend under way is
    "this weekend".
    """
    saturday = ref - timedelta(days=ref.weekday()) + timedelta(days=5, weeks=weekends)
    return Span(saturday, saturday + timedelta(days=1))


def _days_in(year: int, month: int) -> int:
    following = date(year + month // 12, month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def _month(year: int, month: int, months: int = 0) -> Span:
    index = year * 12 + (month - 1) + months
    y, m = divmod(index, 12)
    m += 1
    return Span(date(y, m, 1), date(y, m, _days_in(y, m)))


def _year(year: int) -> Span:
    return Span(date(year, 1, 1), date(year, 12, 31))


def _season(year: int, start_month: int) -> Span:
    """A meteorological season (northern hemisphere); winter Y runs Dec Y to Feb Y+1."""
    first = _month(year, start_month)
    last = _month(year, start_month, 2)
    return Span(first.start, last.end)


def _count(word: str) -> tuple[int, int]:
    word = " ".join(word.lower().split())
    if word.isdigit():
        n = int(word)
        return n, n
    if word in _VAGUE:
        return _VAGUE[word]
    n = _NUMBERS[word]
    return n, n


def _ago(ref: date, low: int, high: int, unit: str) -> Span:
    if unit == "day":
        return Span(ref - timedelta(days=high), ref - timedelta(days=low))
    if unit == "week":
        return Span(_week(ref, -high).start, _week(ref, -low).end)
    if unit == "weekend":
        return Span(_weekend(ref, -high).start, _weekend(ref, -low).end)
    if unit == "month":
        return Span(_month(ref.year, ref.month, -high).start, _month(ref.year, ref.month, -low).end)
    return Span(_year(ref.year - high).start, _year(ref.year - low).end)


def _relative(ref: date, rel: str, unit: str) -> Span:
    step = {"last": -1, "past": -1, "this past": -1, "this": 0, "next": 1, "coming": 1}[rel]
    if unit == "week":
        return _week(ref, step)
    if unit == "weekend":
        return _weekend(ref, step)
    if unit == "month":
        return _month(ref.year, ref.month, step)
    if unit == "day":
        return _day(ref, step)
    return _year(ref.year + step)


def _weekday(ref: date, weekday: int, forward: bool, rel: str | None) -> Span:
    if rel in ("next", "coming") or (rel is None and forward):
        ahead = (weekday - ref.weekday()) % 7 or 7
        return _day(ref, ahead)
    if rel == "this":
        return _day(ref, weekday - ref.weekday())
    back = (ref.weekday() - weekday) % 7 or 7
    return _day(ref, -back)


def _month_in(ref: date, month: int, forward: bool) -> int:
    """The year of a month named without one: the latest begun by ref (or the next, ahead)."""
    if forward:
        return ref.year if month >= ref.month else ref.year + 1
    return ref.year if month <= ref.month else ref.year - 1


def _valid_day(year: int, month: int, day: int) -> bool:
    return 1 <= day <= _days_in(year, month)


# (pattern, resolver) pairs, tried in this order at each position: longer forms first, so
# "7 May 2023" is one expression, not "May 2023" and a stray 7.
_Resolver = Callable[["re.Match[str]", date, bool], "Span | None"]


def _r_day_month_year(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    year, month, day = int(m["year"]), _MONTHS[m["month"].lower()], int(m["day"])
    return _day(date(year, month, day), 0) if _valid_day(year, month, day) else None


def _r_day_month(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    """A day without a year: its latest date on or before ref (or the next one, looking ahead)."""
    month, day = _MONTHS[m["month"].lower()], int(m["day"])
    year = ref.year
    if fwd and (month, day) < (ref.month, ref.day):
        year += 1
    elif not fwd and (month, day) > (ref.month, ref.day):
        year -= 1
    return _day(date(year, month, day), 0) if _valid_day(year, month, day) else None


def _r_month_year(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    return _month(int(m["year"]), _MONTHS[m["month"].lower()])


def _r_prep_month(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    month = _MONTHS[m["month"].lower()]
    return _month(_month_in(ref, month, fwd), month)


def _r_rel_month(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    month, rel = _MONTHS[m["month"].lower()], " ".join(m["rel"].lower().split())
    if rel in ("next", "coming"):
        return _month(ref.year if month > ref.month else ref.year + 1, month)
    if rel == "this":
        return _month(ref.year, month)
    return _month(ref.year if month < ref.month else ref.year - 1, month)


def _r_prep_year(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    return _year(int(m["year"]))


def _r_season_year(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    return _season(int(m["year"]), _SEASONS[m["season"].lower()])


def _r_rel_season(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    start_month = _SEASONS[m["season"].lower()]
    # This year's occurrence; a winter runs Dec-Feb, so in January it is last year's.
    this = _season(ref.year - (start_month == 12 and ref.month < 3), start_month)
    before = _season(this.start.year - 1, start_month)
    after = _season(this.start.year + 1, start_month)
    rel = " ".join((m["rel"] or "").lower().split())
    if rel in ("next", "coming"):
        return this if this.start > ref else after
    if rel == "this":
        return this
    if rel == "" and fwd:  # "in the summer", looking ahead
        return this if this.end >= ref else after
    if rel == "":  # "in the summer": the latest one begun by ref
        return this if this.start <= ref else before
    # last / past / this past: the latest one that has ended before ref
    return this if this.end < ref else before


def _r_ago(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    low, high = _count(m["count"])
    if high > 500:
        return None
    return _ago(ref, low, high, m["unit"].lower())


def _r_rel_unit(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    return _relative(ref, " ".join(m["rel"].lower().split()), m["unit"].lower())


def _r_weekday(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    rel = m["rel"].lower() if m["rel"] else None
    return _weekday(ref, _WEEKDAYS[m["weekday"].lower()], fwd, rel)


def _fixed(offset: int) -> _Resolver:
    def resolve(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
        return _day(ref, offset)

    return resolve


def _r_other_day(m: re.Match[str], ref: date, fwd: bool) -> Span | None:
    return Span(ref - timedelta(days=7), ref - timedelta(days=1))


_PATTERN_TEXT: tuple[tuple[str, _Resolver], ...] = (
    # 7 May 2023, 7th of May, 2023, May 7, 2023, May 7th 2023
    (rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b", _r_day_month_year),
    (rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", _r_day_month_year),
    (rf"\b{_MONTH},?\s+{_YEAR}\b", _r_month_year),
    (rf"\b{_SEASON}(?:\s+of)?\s+{_YEAR}\b", _r_season_year),
    (rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?!\w)", _r_day_month),
    (rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:%|percent|people|of\b))", _r_day_month),
    (rf"\b{_REL}\s+{_MONTH}(?!\w)", _r_rel_month),
    (rf"\b{_PREP}\s+(?:the\s+)?(?:(?:early|late|mid)[\s-]+)?{_MONTH}(?!\w)", _r_prep_month),
    (rf"\b{_PREP}\s+(?:the\s+)?(?:(?:early|late|mid)[\s-]+)?{_YEAR}\b", _r_prep_year),
    (
        rf"\b(?:(?P<rel>last|this past|past|this|next|coming)|in\s+the)\s+{_SEASON}\b",
        _r_rel_season,
    ),
    (rf"\b{_COUNT}\s+{_UNIT}\s+(?:ago|back|earlier)\b", _r_ago),
    (
        r"\b(?P<rel>last|this past|past|this|next|coming)\s+"
        r"(?P<unit>week|weekend|month|year)\b",
        _r_rel_unit,
    ),
    (rf"\b(?:(?P<rel>last|this past|past|this|next|coming)\s+|on\s+){_WEEKDAY}\b", _r_weekday),
    (r"\bthe\s+day\s+before\s+yesterday\b", _fixed(-2)),
    (r"\bthe\s+day\s+after\s+tomorrow\b", _fixed(2)),
    (r"\b(?:yesterday|last\s+night)\b", _fixed(-1)),
    (r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _fixed(0)),
    (r"\btomorrow\b", _fixed(1)),
    (r"\bthe\s+other\s+day\b", _r_other_day),
)
_SENTENCE = r"[^.!?\n]+[.!?]?"
# Every pattern above holds one of these words (or a year); a sentence without any is skipped
# before the patterns run (most sentences; skipping them cut the cost per LoCoMo turn 4-fold).
_TRIGGER = (
    r"\b(?:(?:"
    + "|".join(sorted([*_MONTHS, *_WEEKDAYS, *_SEASONS], key=len, reverse=True))
    + r")s?|days?|weeks?|weekends?|months?|years?|yesterday|today|tonight|tomorrow|night"
    r"|morning|afternoon|evening|(?:19|20)\d\d)\b"
)


@functools.cache
def _compiled() -> tuple[
    re.Pattern[str],
    re.Pattern[str],
    re.Pattern[str],
    tuple[tuple[re.Pattern[str], _Resolver], ...],
    re.Pattern[str],
]:
    """The patterns, compiled on first use.

    Compiling them costs tens of milliseconds, which a process that imports this module but
    never resolves a date (a hook) should not pay.
    """
    patterns = tuple((re.compile(p, re.IGNORECASE), r) for p, r in _PATTERN_TEXT)
    return (
        re.compile(_SENTENCE),
        re.compile(_FUTURE, re.IGNORECASE),
        re.compile(_WHEN, re.IGNORECASE),
        patterns,
        re.compile(_TRIGGER, re.IGNORECASE),
    )


def _found(text: str, ref: date) -> Iterator[tuple[int, int, Span]]:
    """(start, end, span) of every expression, leftmost-longest, never overlapping."""
    sentences, future, _, patterns, trigger = _compiled()
    for sentence in sentences.finditer(text):
        part = sentence.group()
        if not trigger.search(part):
            continue
        forward = bool(future.search(part))
        taken: list[tuple[int, int, Span]] = []
        for pattern, resolve in patterns:
            for m in pattern.finditer(part):
                if any(m.start() < e and s < m.end() for s, e, _ in taken):
                    continue
                try:
                    span = resolve(m, ref, forward)
                except (ValueError, OverflowError, KeyError):
                    span = None
                if span is not None:
                    taken.append((m.start(), m.end(), span))
        base = sentence.start()
        for s, e, span in sorted(taken, key=lambda t: t[0]):
            yield base + s, base + e, span


def resolve_dates(text: str, reference: datetime | date) -> tuple[Span, ...]:
    """The distinct date spans `text` mentions, resolved against `reference`, in text order.

    Relative expressions ("yesterday", "two weekends ago", "last summer") count from
    `reference`'s calendar day; absolute ones ("7 May 2023", "in May 2023") stand alone.
    Bare month names resolve only with a day, a year or a leading word such as "in" (so "May I
    ask" and "march on" stay plain words); bare years only after such a word ("in 2019", not
    "2000 followers"). At most MAX_SPANS spans.
    """
    ref = reference.date() if isinstance(reference, datetime) else reference
    spans = dict.fromkeys(span for _, _, span in _found(text, ref))
    return tuple(spans)[:MAX_SPANS]


_WHEN = (
    r"\b(?:when|what\s+(?:date|day|year|month|time|week)|which\s+(?:date|day|year|month|week)|"
    r"how\s+long\s+ago|what\s+time\s+of\s+(?:the\s+)?year)\b"
)


def query_time(query: str, now: datetime | date) -> QueryTime:
    """The spans a query names (relative ones counted from `now`) and whether it asks when."""
    return QueryTime(spans=resolve_dates(query, now), asks_when=bool(_compiled()[2].search(query)))


def format_spans(spans: tuple[Span, ...] | list[Span]) -> str | None:
    """The stored and shown form: ISO days, ranges as `start..end`, space separated."""
    return " ".join(str(s) for s in spans) or None


def parse_spans(text: str | None) -> tuple[Span, ...]:
    """`format_spans`'s output back into spans (unknown parts are skipped)."""
    out: list[Span] = []
    for part in (text or "").split():
        first, _, last = part.partition("..")
        try:
            start = date.fromisoformat(first)
            end = date.fromisoformat(last) if last else start
        except ValueError:
            continue
        out.append(Span(start, end))
    return tuple(out)


def spans_overlap(a: tuple[Span, ...], b: tuple[Span, ...]) -> bool:
    """Whether any span of `a` shares a day with any span of `b`."""
    return any(x.start <= y.end and y.start <= x.end for x in a for y in b)


def dates_of(text: str, reference: datetime | date) -> str | None:
    """What a memory stores as its `dates`: the spans `text` mentions, earliest first.

    Earliest first so that the stored text's first day is the earliest date (the date index
    is on it).
    """
    return format_spans(sorted(resolve_dates(text, reference)))


def normalise_dates(text: str | None) -> str | None:
    """Stored `dates` from an untrusted source (an import): parts that are not dates dropped."""
    return format_spans(sorted(dict.fromkeys(parse_spans(text)))[:MAX_SPANS])
