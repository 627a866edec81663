"""Time expressions resolved against a reference time: a table of expressions and their dates."""

from datetime import date, datetime

import pytest

from memory_core.domain.dates import (
    MAX_SPANS,
    Span,
    format_spans,
    parse_spans,
    query_time,
    resolve_dates,
    spans_overlap,
)

# Monday 8 May 2023, 13:56 (LoCoMo conv-26 session 1).
MON = datetime(2023, 5, 8, 13, 56)
# Friday 9 June 2023.
FRI = datetime(2023, 6, 9, 10, 0)
# Sunday 14 January 2024.
SUN = datetime(2024, 1, 14, 18, 0)
# Wednesday 18 October 2023.
OCT = datetime(2023, 10, 18, 9, 0)

TABLE: list[tuple[str, datetime, str | None]] = [
    # (text, reference time, expected format_spans output; None: nothing resolves)
    ("I went to a LGBTQ support group yesterday.", MON, "2023-05-07"),
    ("What a day today!", MON, "2023-05-08"),
    ("We are going out tonight", MON, "2023-05-08"),
    ("I saw a great movie last night", MON, "2023-05-07"),
    ("This morning I ran 5k", MON, "2023-05-08"),
    ("the day before yesterday", MON, "2023-05-06"),
    ("See you tomorrow", MON, "2023-05-09"),
    ("last week was rough", MON, "2023-05-01..2023-05-07"),
    ("this week is busy", MON, "2023-05-08..2023-05-14"),
    ("next week we leave", MON, "2023-05-15..2023-05-21"),
    ("last weekend we hiked", MON, "2023-05-06..2023-05-07"),
    ("this weekend", FRI, "2023-06-10..2023-06-11"),
    ("next weekend", FRI, "2023-06-17..2023-06-18"),
    ("I painted it two weekends ago", FRI, "2023-05-27..2023-05-28"),
    ("last weekend", SUN, "2024-01-06..2024-01-07"),
    ("last month", MON, "2023-04-01..2023-04-30"),
    ("next month", OCT, "2023-11-01..2023-11-30"),
    ("last month", SUN, "2023-12-01..2023-12-31"),
    ("this year", MON, "2023-01-01..2023-12-31"),
    ("last year", SUN, "2023-01-01..2023-12-31"),
    ("next year", MON, "2024-01-01..2024-12-31"),
    ("3 days ago", MON, "2023-05-05"),
    ("two days ago", MON, "2023-05-06"),
    ("a few days ago", MON, "2023-05-03..2023-05-06"),
    ("a couple of days ago", MON, "2023-05-06"),
    ("a week ago", FRI, "2023-05-29..2023-06-04"),
    ("two weeks ago", MON, "2023-04-24..2023-04-30"),
    ("several weeks ago", MON, "2023-03-20..2023-04-23"),
    ("a month ago", MON, "2023-04-01..2023-04-30"),
    ("six months ago", OCT, "2023-04-01..2023-04-30"),
    ("three years ago", MON, "2020-01-01..2020-12-31"),
    ("last Friday", MON, "2023-05-05"),
    ("last Friday", FRI, "2023-06-02"),
    ("next Friday", MON, "2023-05-12"),
    ("We met on Friday", MON, "2023-05-05"),
    ("I will call her on Friday", MON, "2023-05-12"),
    ("in May 2023", OCT, "2023-05-01..2023-05-31"),
    ("back in March, 2022", OCT, "2022-03-01..2022-03-31"),
    ("We met on May 7", MON, "2023-05-07"),
    ("The gig was on May 20", MON, "2022-05-20"),
    ("The gig is on May 20", MON, "2023-05-20"),
    ("December 1,2023", MON, "2023-12-01"),
    ("7 May 2023", OCT, "2023-05-07"),
    ("the 7th of May, 2023", OCT, "2023-05-07"),
    ("July 4th, 2022", MON, "2022-07-04"),
    ("We moved here in 2019", MON, "2019-01-01..2019-12-31"),
    ("We got married in May", OCT, "2023-05-01..2023-05-31"),
    ("I was in Rome in August", MON, "2022-08-01..2022-08-31"),
    ("I'm going to Paris in August", MON, "2023-08-01..2023-08-31"),
    ("last summer", MON, "2022-06-01..2022-08-31"),
    ("last summer", OCT, "2023-06-01..2023-08-31"),
    ("next summer", OCT, "2024-06-01..2024-08-31"),
    ("this winter", SUN, "2023-12-01..2024-02-29"),
    ("summer 2022", MON, "2022-06-01..2022-08-31"),
    ("the other day", MON, "2023-05-01..2023-05-07"),
    ("yesterday and last week", MON, "2023-05-07 2023-05-01..2023-05-07"),
    ("Yesterday. Tomorrow we leave.", MON, "2023-05-07 2023-05-09"),
    # Words that are not dates here.
    ("May I ask you something?", MON, None),
    ("I got a second opinion", MON, None),
    ("They will march on", MON, None),
    ("She has 2000 followers", MON, None),
    ("Last time I checked", MON, None),
    ("We may go", MON, None),
    ("I read it in a day", MON, None),
    ("Page 31 of the book", MON, None),
    ("a sunday school teacher", MON, None),
    ("February 30, 2023", MON, None),
    # A day named without a year and without a tense: either side of the reference.
    ("May 7", MON, None),
    ("in August", MON, None),
]


@pytest.mark.parametrize(("text", "reference", "expected"), TABLE)
def test_resolve_table(text: str, reference: datetime, expected: str | None) -> None:
    assert format_spans(resolve_dates(text, reference)) == expected


def test_table_size() -> None:
    # The brief's floor: at least 40 expressions, including ones that must not resolve.
    assert len(TABLE) >= 40
    assert sum(expected is None for _, _, expected in TABLE) >= 5


def test_repeated_expression_is_one_span_and_spans_are_capped() -> None:
    assert resolve_dates("yesterday, yes, yesterday", MON) == (
        Span(date(2023, 5, 7), date(2023, 5, 7)),
    )
    text = " ".join(f"{d} May 2023." for d in range(1, 20))
    assert len(resolve_dates(text, MON)) == MAX_SPANS


def test_reference_may_be_a_date() -> None:
    assert resolve_dates("yesterday", date(2023, 1, 1)) == (
        Span(date(2022, 12, 31), date(2022, 12, 31)),
    )


def test_format_and_parse_round_trip() -> None:
    spans = resolve_dates("yesterday and last summer", MON)
    stored = format_spans(spans)
    assert stored == "2023-05-07 2022-06-01..2022-08-31"
    assert parse_spans(stored) == spans
    assert parse_spans(None) == ()
    assert parse_spans("junk 2023-05-07 2023-13-01") == (Span(date(2023, 5, 7), date(2023, 5, 7)),)
    assert format_spans(()) is None


def test_query_time() -> None:
    q = query_time("When did Caroline go to the LGBTQ support group?", MON)
    assert q.asks_when and q.spans == ()
    q = query_time("What did Melanie paint in May 2023?", MON)
    assert not q.asks_when
    assert q.spans == (Span(date(2023, 5, 1), date(2023, 5, 31)),)
    assert query_time("Which year did she move?", MON).asks_when
    assert query_time("How long ago was the trip?", MON).asks_when
    assert not query_time("What does Caroline like?", MON).asks_when


def test_overlap() -> None:
    may = parse_spans("2023-05-01..2023-05-31")
    assert spans_overlap(may, parse_spans("2023-05-31"))
    assert spans_overlap(parse_spans("2023-04-20..2023-05-01"), may)
    assert not spans_overlap(may, parse_spans("2023-06-01"))
    assert not spans_overlap(may, ())


# --- tense: a day named without its side of the reference (issue 35, N3) -----------------------

# Wednesday 25 November 2026, 15:00.
WED = datetime(2026, 11, 25, 15, 0)
FRI_AHEAD, FRI_BACK = "2026-11-27", "2026-11-20"
THU_AHEAD, THU_BACK = "2026-11-26", "2026-11-19"
MON_AHEAD, MON_BACK = "2026-11-30", "2026-11-23"
MAR_AHEAD, MAR_BACK = "2027-03-01..2027-03-31", "2026-03-01..2026-03-31"

TENSE_TABLE: list[tuple[str, str | None]] = [
    # (text written on WED, expected format_spans output; None: nothing resolves)
    # Present and future: the coming day.
    ("The team lunch is on Friday", FRI_AHEAD),
    ("Meeting with Priya on Thursday at 10", THU_AHEAD),  # a calendar entry: a clock time
    ("The v2 API launches in March", MAR_AHEAD),
    ("I will call her on Friday", FRI_AHEAD),
    ("We're going to demo it on Thursday", THU_AHEAD),
    ("I'm meeting Priya on Thursday", THU_AHEAD),
    ("The lunch's on Friday", FRI_AHEAD),
    ("It's on Friday", FRI_AHEAD),
    ("The release is scheduled for March", MAR_AHEAD),
    ("The report is due on Monday", MON_AHEAD),
    ("Our upcoming offsite in March", MAR_AHEAD),
    ("The next review is on Monday", MON_AHEAD),
    ("We have a planning session on Monday", MON_AHEAD),
    ("I've got a dentist appointment on Friday", FRI_AHEAD),
    ("Let's meet on Thursday", THU_AHEAD),
    ("The launch was delayed until March", MAR_AHEAD),  # a delay names the day it moved to
    ("We fly out in March", MAR_AHEAD),
    ("The contract expires in March", MAR_AHEAD),
    ("I'm so excited for the concert on Friday", FRI_AHEAD),  # "excited" is no past
    ("We need to finish the migration by March", MAR_AHEAD),
    ("Are you free on Thursday?", THU_AHEAD),
    ("The room is booked on Friday", FRI_AHEAD),
    ("The flight leaves on Monday at 7am", MON_AHEAD),
    ("He\u2019s presenting on Thursday", THU_AHEAD),  # a curly apostrophe
    ("The sprint review, which is on Monday, needs slides", MON_AHEAD),
    ("What's happening on Friday?", FRI_AHEAD),
    ("See you on Monday", MON_AHEAD),
    ("It would be great to see you on Friday", FRI_AHEAD),
    ("I hope you have fun on Saturday", "2026-11-28"),
    # Past: the last one.
    ("We shipped it on Friday", FRI_BACK),
    ("We shipped it last March", MAR_BACK),
    ("We did the rollout on Monday", MON_BACK),
    ("The outage was on Monday", MON_BACK),
    ("I went to the gym on Thursday", THU_BACK),
    ("The deploy was rolled back on Friday", FRI_BACK),
    ("Priya's wedding on Friday was lovely", FRI_BACK),  # a possessive is no "is"
    ("On Friday, we finally shipped the importer", FRI_BACK),
    ("I've been running every day since March", MAR_BACK),  # "since" always looks back
    ("We had lunch with the client on Thursday", THU_BACK),
    ("She started the job in March", MAR_BACK),
    ("I didn't sleep well on Monday", MON_BACK),
    ("I was booked on Friday", FRI_BACK),
    ("What happened on Friday?", FRI_BACK),
    ("I hope you had fun on Saturday", "2026-11-21"),
    ("Remember the meeting we had on Tuesday?", "2026-11-24"),
    # Each clause its own tense; the nearest verb governs.
    ("We shipped v1 on Friday and the retro is on Monday", f"{FRI_BACK} {MON_AHEAD}"),
    ("Priya said the party is on Friday", FRI_AHEAD),
    ("Can we move the sync to Friday? I'm out on Thursday", THU_AHEAD),
    # Unclear: no tense, a habit, or a plan that may have passed. Nothing rather than a guess.
    ("Lunch on Friday", None),
    ("Dentist on Friday", None),
    ("Paris trip in March", None),
    ("The deploy on Friday", None),
    ("We do yoga on Fridays", None),
    ("I go to the market on Saturdays", None),
    ("We were going to ship it on Friday", None),
    ("We would usually meet on Friday", None),
    ("Thanks for the notes from Monday", None),
    ("When is the team lunch?", None),
    # Where both readings agree, or the text says which, the tense does not matter.
    ("I'm in the office in November", "2026-11-01..2026-11-30"),
    ("We moved here in November", "2026-11-01..2026-11-30"),
    ("next Friday", FRI_AHEAD),
    ("last Friday", FRI_BACK),
    ("this Friday", FRI_AHEAD),
    ("The v2 API launches in March 2027", MAR_AHEAD),
    ("We met on 20 November", "2026-11-20"),
    ("The party is on 4 December", "2026-12-04"),
    ("We launched on December 4", "2025-12-04"),
    ("Her birthday is on May 3", "2027-05-03"),
    ("The offsite is in the spring", "2027-03-01..2027-05-31"),
    ("We hiked a lot in the summer", "2026-06-01..2026-08-31"),
]


@pytest.mark.parametrize(("text", "expected"), TENSE_TABLE)
def test_tense_table(text: str, expected: str | None) -> None:
    assert format_spans(resolve_dates(text, WED)) == expected


def test_tense_table_size() -> None:
    # The brief's floor: at least 40 sentences, with near misses on each side.
    assert len(TENSE_TABLE) >= 40
    assert sum(expected is None for _, expected in TENSE_TABLE) >= 8


def test_questions_resolve_like_the_memories_they_ask_about() -> None:
    # Asked on Thursday 26 November about the lunch written on Wednesday ("is on Friday").
    thursday = datetime(2026, 11, 26, 9, 0)
    lunch = resolve_dates("The team lunch is on Friday", WED)
    assert query_time("What's on Friday?", thursday).spans == lunch
    # Asked the next Monday: the lunch was on Friday.
    monday = datetime(2026, 11, 30, 9, 0)
    assert query_time("What was on Friday?", monday).spans == lunch
    # "last Friday" asked on Wednesday is the Friday "we shipped it on", not the lunch's.
    shipped = resolve_dates("We shipped it on Friday", WED)
    assert query_time("What happened last Friday?", WED).spans == shipped
    assert not spans_overlap(shipped, lunch)
    assert query_time("When is the team lunch?", WED) == query_time("When is it?", WED)
    assert query_time("When is the team lunch?", WED).asks_when
