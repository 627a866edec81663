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

Tense (issue 35, N3). "On Friday", "in March" and "on 20 May" lie on either side of the
reference: written on Wednesday 25 Nov 2026, "The team lunch is on Friday" is 27 Nov and "We
shipped it on Friday" 20 Nov. Each such expression takes the tense of its clause, read from
cues (`_CUES`: will, going to, is/are, -ing after a be-verb, 's on, launches, due, next ...
against was, did, -ed, irregular pasts, ago, last); present counts as ahead. When no cue says
which and the two readings differ ("Lunch on Friday", "We do yoga on Fridays", "We were going
to ship it on Friday") nothing resolves: the dates are shown to the model as `when=` and lift
the ranking, so a wrong date is worse than none. Before this, every such day without a future
word was put in the past ("is on Friday" -> the Friday before).
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
_WEEKDAY = r"(?P<weekday>(?:" + "|".join(_WEEKDAYS) + r")s?)"
_SEASON = r"(?P<season>" + "|".join(_SEASONS) + r")"
# Words after which a bare month or year names a time ("in May", "since 2019").
_PREP = r"(?P<prep>in|since|during|until|till|by|from|through|early|late|mid|of|before|after|for)"
# Tense. A weekday, a month or a day named without a year ("on Friday", "in March", "on May
# 20") is the next one in a sentence about what is coming and the last one in a sentence about
# what happened; the two readings differ, and a wrong date shown as `when=` is worse than none,
# so such an expression resolves only when its clause says which (see `_tense`). The cues, in
# order: an earlier cue holds its words, so "is scheduled" is one present cue, not "is" and a
# past "-ed". AHEAD covers the future and the present ("The lunch is on Friday", "The API
# launches in March": a present-tense sentence about a named day is about a coming one).
AHEAD, PAST, UNCLEAR = True, False, None
_ADVERBS = (
    r"(?:\s+(?:\w+ly|so|very|super|all|not|never|just|already|still|also|now|pretty|quite|"
    r"being|even|too|finally))*"
)
_PARTICIPLE = r"(?:\s+[a-z]{2,}(?<!e)ed\b)?"
_CUES: tuple[tuple[str, bool | None], ...] = (
    # Plans made in the past, and "would": the day may be on either side.
    (
        r"\b(?:was|were)(?:n't)?" + _ADVERBS + r"\s+(?:going\s+to|gonna|supposed\s+to|about\s+to|"
        r"planning\s+(?:to|on)|hoping\s+to|meant\s+to|meaning\s+to|due|scheduled|set\s+to)\b",
        UNCLEAR,
    ),
    (r"\b(?:would|could|should|might|must|'d)(?:n't)?\s+(?:have|'ve)\b", PAST),
    (r"\b(?:would|'d)\s+(?:love|like|prefer|rather|be\s+happy)\b", AHEAD),
    (r"\b(?:would|could)(?:n't)?\b|'d\b(?!\s+(?:been|had|[a-z]+ed)\b)", UNCLEAR),
    # A delay names the day it moved to.
    (
        r"\b(?:postponed|delayed|pushed|moved|rescheduled|bumped)"
        r"(?=(?:\s+(?:back|out))?\s+(?:to|until|till)\b)",
        AHEAD,
    ),
    (
        r"\b(?:the|a|an|our|my|their|his|her|its|your)\s+"
        r"(?:planned|scheduled|expected|proposed)\b",
        AHEAD,
    ),
    (r"\b(?:have|has|'ve|'s)\s+got\b", AHEAD),
    (
        r"\b(?:have|has|'ve)(?:n't)?" + _ADVERBS + r"\s+(?:been|gone|done|seen|made|met|taken|"
        r"given|had|got|gotten|heard|found|left|bought|won|lost|spent|written|come|become|"
        r"begun|run|known|told|said|sent|brought|kept|held|[a-z]+ed)\b",
        PAST,
    ),
    (r"'s\s+(?:just\s+|already\s+|finally\s+|never\s+)?(?:been|gone|had|done)\b", PAST),
    (r"\b(?:have|has)\b", AHEAD),  # "We have a review on Monday"
    # A be-verb holds the participle after it: "was shipped" is past, "is booked" present.
    (r"\b(?:was|were)(?:n't)?\b" + _ADVERBS + _PARTICIPLE, PAST),
    (r"(?:\b(?:am|is|are|isn't|aren't)\b|'m\b|'re\b)" + _ADVERBS + _PARTICIPLE, AHEAD),
    (
        r"\b(?:it|that|he|she|there|here|what|who|where|when|everything|everyone|everybody|"
        r"someone|somebody|nothing|this|one|lunch|dinner|party|meeting)'s\b"
        + _ADVERBS
        + _PARTICIPLE,
        AHEAD,
    ),
    (
        r"\b\w+'s(?=\s+(?:on|in|at|due|set|booked|scheduled|planned|going|coming|happening|"
        r"still|now)\b)",
        AHEAD,
    ),
    (
        r"\b(?:will|won't|shall|'ll|gonna|wanna|gotta|going\s+to|about\s+to|tomorrow|next|"
        r"upcoming|coming\s+up|soon|due|scheduled|deadline|let's|let\s+us|can't\s+wait|"
        r"cannot\s+wait|looking\s+forward|look\s+forward|see\s+you|can|should|might|must|"
        r"(?:plan|plans|planning)\s+(?:to|on)|(?:hope|hopes|hoping)\s+to|"
        r"(?:want|wants|wanting)\s+to|(?:need|needs)\s+to|(?:have|has|got)\s+to|"
        r"(?:expect|expects|expecting|intend|intends|intending)\s+to)\b",
        AHEAD,
    ),
    # The present tense of a timetable: "The v2 API launches in March", "we leave on Friday".
    (
        r"\b(?:launches|starts|begins|opens|closes|ends|finishes|arrives|leaves|departs|lands|"
        r"returns|resumes|ships|expires|happens|kicks\s+off|runs|goes\s+live|comes\s+out|"
        r"takes\s+place|falls)\b",
        AHEAD,
    ),
    (
        r"\b(?:we|they|i|you)\s+(?:launch|start|begin|open|close|leave|fly|head|meet|go|move|"
        r"ship|return|arrive|depart|land|kick\s+off)\b",
        AHEAD,
    ),
    (
        r"\b(?:did|didn't|had|hadn't|ago|yesterday|last|used\s+to|earlier|recently|previously|"
        r"went|came|saw|got|made|took|gave|told|said|found|felt|thought|left|began|brought|"
        r"wrote|spent|won|lost|heard|sent|kept|held|sat|stood|ate|drank|drove|flew|grew|knew|"
        r"threw|wore|swam|sang|rode|fell|caught|taught|built|paid|sold|bought|met|ran|became|"
        r"broke|chose|forgot|hid|led|meant|rang|rose|shook|shot|slept|spoke|stole|struck|tore|"
        r"understood|woke|fought|fed|fled|dug|drew|learnt|burnt|lent|stuck|swung|wept|overcame)\b",
        PAST,
    ),
    # A regular past ("shipped"); -eed words (need, speed) and a few adjectives are not.
    (
        r"\b(?!(?:hundred|sacred|naked|wicked|kindred|shred|sled|shed|fred|rugged|ragged|"
        r"crooked|beloved|infrared)\b)[a-z]{2,}(?<!e)ed\b",
        PAST,
    ),
)
# Clause boundaries: the tense of one clause says nothing of the next ("We shipped it on Friday
# and the retro is on Monday").
_CLAUSE = (
    r"[,;:()]|\s[-\u2013\u2014]\s|\b(?:and|but|because|while|whereas|although|though|then|"
    r"or|until|till|before|after)\b(?!\s+(?:the\s+)?(?:"
    + "|".join([*_MONTH_NAMES, *_WEEKDAYS, *_SEASONS])
    + r")\b)"
)
# A fragment with a clock time and no verb ("Meeting with Priya on Thursday at 10") is a
# calendar entry: it names a coming day.
_CLOCK = (
    r"\b(?:at\s+\d{1,2}(?:[:.]\d\d)?(?:\s*[ap]\.?m\.?)?|\d{1,2}(?:[:.]\d\d)?\s*[ap]\.?m\.?"
    r"|noon)\b"
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


def _by_tense(tense: bool | None, back: Span, ahead: Span) -> Span | None:
    """The reading the tense picks; None when it is unclear and the two readings differ."""
    if back == ahead:
        return back
    if tense is UNCLEAR:
        return None
    return ahead if tense else back


def _weekday(ref: date, weekday: int, tense: bool | None, rel: str | None) -> Span | None:
    ahead = _day(ref, (weekday - ref.weekday()) % 7 or 7)
    if rel in ("next", "coming"):
        return ahead
    if rel == "this":
        return _day(ref, weekday - ref.weekday())
    back = _day(ref, -((ref.weekday() - weekday) % 7 or 7))
    if rel is None:
        return _by_tense(tense, back, ahead)
    return back


def _month_in(ref: date, month: int, tense: bool | None) -> Span | None:
    """A month named without a year: the latest begun by ref, or the next one not yet over."""
    back = _month(ref.year if month <= ref.month else ref.year - 1, month)
    ahead = _month(ref.year if month >= ref.month else ref.year + 1, month)
    return _by_tense(tense, back, ahead)


def _valid_day(year: int, month: int, day: int) -> bool:
    return 1 <= day <= _days_in(year, month)


# (pattern, resolver) pairs, tried in this order at each position: longer forms first, so
# "7 May 2023" is one expression, not "May 2023" and a stray 7.
# The third argument is the clause's tense (AHEAD, PAST or UNCLEAR); only the expressions that
# can fall on either side of ref read it.
_Resolver = Callable[["re.Match[str]", date, "bool | None"], "Span | None"]


def _r_day_month_year(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    year, month, day = int(m["year"]), _MONTHS[m["month"].lower()], int(m["day"])
    return _day(date(year, month, day), 0) if _valid_day(year, month, day) else None


def _r_day_month(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    """A day without a year: its latest date on or before ref, or the next one on or after."""
    month, day = _MONTHS[m["month"].lower()], int(m["day"])
    back_year = ref.year - ((month, day) > (ref.month, ref.day))
    ahead_year = ref.year + ((month, day) < (ref.month, ref.day))
    if not (_valid_day(back_year, month, day) and _valid_day(ahead_year, month, day)):
        return None  # 29 February in a year without one
    return _by_tense(
        fwd, _day(date(back_year, month, day), 0), _day(date(ahead_year, month, day), 0)
    )


def _r_month_year(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    return _month(int(m["year"]), _MONTHS[m["month"].lower()])


def _r_prep_month(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    # "since March" looks back whatever the tense.
    return _month_in(
        ref, _MONTHS[m["month"].lower()], PAST if m["prep"].lower() == "since" else fwd
    )


def _r_rel_month(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    month, rel = _MONTHS[m["month"].lower()], " ".join(m["rel"].lower().split())
    if rel in ("next", "coming"):
        return _month(ref.year if month > ref.month else ref.year + 1, month)
    if rel == "this":
        return _month(ref.year, month)
    return _month(ref.year if month < ref.month else ref.year - 1, month)


def _r_prep_year(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    return _year(int(m["year"]))


def _r_season_year(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    return _season(int(m["year"]), _SEASONS[m["season"].lower()])


def _r_rel_season(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
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
    if rel == "":  # "in the summer": the latest one begun by ref, or the next not yet over
        return _by_tense(
            fwd, this if this.start <= ref else before, this if this.end >= ref else after
        )
    # last / past / this past: the latest one that has ended before ref
    return this if this.end < ref else before


def _r_ago(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    low, high = _count(m["count"])
    if high > 500:
        return None
    return _ago(ref, low, high, m["unit"].lower())


def _r_rel_unit(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    return _relative(ref, " ".join(m["rel"].lower().split()), m["unit"].lower())


def _r_weekday(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    rel = " ".join(m["rel"].lower().split()) if m["rel"] else None
    if rel is None and m["weekday"].lower().endswith("s"):
        return None  # "on Fridays": a habit, not a day
    return _weekday(ref, _WEEKDAYS[m["weekday"].lower().removesuffix("s")], fwd, rel)


def _fixed(offset: int) -> _Resolver:
    def resolve(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
        return _day(ref, offset)

    return resolve


def _r_other_day(m: re.Match[str], ref: date, fwd: bool | None) -> Span | None:
    return Span(ref - timedelta(days=7), ref - timedelta(days=1))


_PATTERN_TEXT: tuple[tuple[str, _Resolver], ...] = (
    # 7 May 2023, 7th of May, 2023, May 7, 2023, May 7th 2023
    # "December 1,2023": a comma may stand for the space.
    (rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?:,\s*|\s+){_YEAR}\b", _r_day_month_year),
    (rf"\b{_MONTH}\s+{_DAY}(?:,\s*|\s+){_YEAR}\b", _r_day_month_year),
    (rf"\b{_MONTH}(?:,\s*|\s+){_YEAR}\b", _r_month_year),
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


@dataclass(frozen=True)
class _Compiled:
    sentence: re.Pattern[str]
    when: re.Pattern[str]
    patterns: tuple[tuple[re.Pattern[str], _Resolver], ...]
    trigger: re.Pattern[str]
    cues: tuple[tuple[re.Pattern[str], bool | None], ...]
    clause: re.Pattern[str]
    clock: re.Pattern[str]


@functools.cache
def _compiled() -> _Compiled:
    """The patterns, compiled on first use.

    Compiling them costs tens of milliseconds, which a process that imports this module but
    never resolves a date (a hook) should not pay.
    """
    return _Compiled(
        sentence=re.compile(_SENTENCE),
        when=re.compile(_WHEN, re.IGNORECASE),
        patterns=tuple((re.compile(p, re.IGNORECASE), r) for p, r in _PATTERN_TEXT),
        trigger=re.compile(_TRIGGER, re.IGNORECASE),
        cues=tuple((re.compile(p, re.IGNORECASE), t) for p, t in _CUES),
        clause=re.compile(_CLAUSE, re.IGNORECASE),
        clock=re.compile(_CLOCK, re.IGNORECASE),
    )


@dataclass(frozen=True)
class _Cue:
    start: int
    end: int
    tense: bool | None


def _cues(sentence: str) -> list[_Cue]:
    """The tense cues of a sentence, in text order; an earlier rule holds its words."""
    found: list[_Cue] = []
    for pattern, tense in _compiled().cues:
        for m in pattern.finditer(sentence):
            if m.end() > m.start() and not any(
                m.start() < c.end and c.start < m.end() for c in found
            ):
                found.append(_Cue(m.start(), m.end(), tense))
    return sorted(found, key=lambda c: c.start)


def _tense(sentence: str, cues: list[_Cue], start: int, end: int) -> bool | None:
    """AHEAD, PAST or UNCLEAR for the expression at sentence[start:end].

    The clause's cue nearest before the expression (its verb usually comes first: "we shipped
    it on Friday", "the lunch is on Friday"), else the nearest after ("On Friday we shipped
    it"). A clause without a cue takes the nearest cue of the sentence ("On Friday, I got great
    news"); a sentence without any is a calendar entry if it names a clock time ("Meeting with
    Priya on Thursday at 10"), else unclear.
    """
    c = _compiled()
    bounds = [(b.start(), b.end()) for b in c.clause.finditer(sentence)]
    low = max((e for s, e in bounds if e <= start), default=0)
    high = min((s for s, e in bounds if s >= end), default=len(sentence))
    outside = [cue for cue in cues if cue.end <= start or cue.start >= end]
    before = [cue for cue in outside if low <= cue.start and cue.end <= start]
    if before:
        return before[-1].tense
    after = [cue for cue in outside if end <= cue.start and cue.end <= high]
    if after:
        return after[0].tense
    if outside:  # the nearest clause's: "On Friday, I got great news"
        return min(outside, key=lambda cue: min(abs(cue.start - end), abs(start - cue.end))).tense
    return AHEAD if c.clock.search(sentence) else UNCLEAR


def _found(text: str, ref: date) -> Iterator[tuple[int, int, Span]]:
    """(start, end, span) of every expression, leftmost-longest, never overlapping."""
    c = _compiled()
    for sentence in c.sentence.finditer(text):
        # The curly apostrophe of phones and word processors reads as the straight one.
        part = sentence.group().replace("\u2019", "'")
        if not c.trigger.search(part):
            continue
        cues: list[_Cue] | None = None
        taken: list[tuple[int, int, Span]] = []
        for pattern, resolve in c.patterns:
            for m in pattern.finditer(part):
                if any(m.start() < e and s < m.end() for s, e, _ in taken):
                    continue
                if cues is None:
                    cues = _cues(part)
                try:
                    span = resolve(m, ref, _tense(part, cues, m.start(), m.end()))
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
    return QueryTime(
        spans=resolve_dates(query, now), asks_when=bool(_compiled().when.search(query))
    )


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
