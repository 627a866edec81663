"""bench.hook_replay: transcripts in Claude Code's shape, roles, the id parser, the scoring.

The data is a tiny conversation written here (two people talking about a boat), not LoCoMo's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import hook_replay as hr
from memory_core.domain.tokens import count_tokens
from memory_core.domain.transcript import read_transcript
from tests.hook_transcript import first_part

CWD = Path("/home/dev/talk-1")
SID = "0b5c8f3e-4a2d-4f7e-9d61-2f1c7a9e5b10"
LONG = " ".join(f"word{i}" for i in range(48))


def turn(session: int, n: int, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"talk-1:D{session}:{n}",
        "conversation_id": "talk-1",
        "session": session,
        "dia_id": f"D{session}:{n}",
        "speaker": speaker,
        "text": text,
        "timestamp": f"2023-0{session}-08T13:56:00",
        **extra,
    }


TURNS = [
    turn(1, 1, "Ada", "Hi Bo! I bought a small sailing boat last week."),
    turn(1, 2, "Bo", "Wow Ada, what is the boat called?"),
    turn(1, 3, "Ada", "She is called Petrel, after the seabird.", image_caption="a white boat"),
    turn(1, 4, "Ada", "Thanks!"),
    turn(2, 1, "Bo", "Ada, did you take Petrel out on the lake yet?"),
    turn(2, 2, "Ada", "Yes, we sailed to the old lighthouse on Sunday."),
]
QUESTIONS = [
    {
        "qid": "talk-1:q0",
        "conversation_id": "talk-1",
        "question": "What is the name of Ada's sailing boat?",
        "answer": "Petrel",
        "category": 4,
        "category_name": "single-hop",
        "relevant_ids": ["talk-1:D1:3"],
    },
    {
        "qid": "talk-1:q1",
        "conversation_id": "talk-1",
        "question": "Where did Ada sail to on Sunday with Petrel?",
        "answer": "the old lighthouse",
        "category": 2,
        "category_name": "temporal",
        "relevant_ids": ["talk-1:D2:2"],
    },
]


def write_data(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in (("memories.jsonl", TURNS), ("queries.jsonl", QUESTIONS)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def test_turns_merge_per_speaker_and_keep_one_role_each() -> None:
    messages = hr.session_messages(TURNS[:4], "Ada")
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[2].turn_ids == ("talk-1:D1:3", "talk-1:D1:4")
    assert messages[2].text == (
        "Ada: She is called Petrel, after the seabird. [shares a white boat]\nAda: Thanks!"
    )
    # A session opened by the second speaker opens with an assistant line; roles never swap.
    assert [m.role for m in hr.session_messages(TURNS[4:], "Ada")] == ["assistant", "user"]
    swapped = hr.session_messages(TURNS[:2], "Bo", names=False, caption=False)
    assert [(m.role, m.text) for m in swapped] == [
        ("assistant", TURNS[0]["text"]),
        ("user", TURNS[1]["text"]),
    ]


def test_conversation_speakers_in_order_and_sessions_sorted(tmp_path: Path) -> None:
    (conv,) = hr.load(write_data(tmp_path), None, 1)
    assert conv.speakers() == ["Ada", "Bo"]
    assert [len(s) for s in conv.sessions()] == [4, 2]
    assert [q["qid"] for q in conv.questions] == ["talk-1:q0"]


def test_transcript_lines_have_claude_codes_shape() -> None:
    messages = hr.session_messages(TURNS[:4], "Ada")
    lines = hr.transcript_lines(messages, SID, CWD, "2023-01-08T13:56:00")
    records = [json.loads(line) for line in lines]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    reference = json.loads(first_part()[2])  # a user line as Claude Code writes it
    for record in records:
        assert set(reference) <= set(record)
        assert record["sessionId"] == SID and record["cwd"] == str(CWD)
        assert record["timestamp"] == "2023-01-08T13:56:00.000Z"
        assert record["message"]["role"] == record["type"]
    assert [r["type"] for r in records] == ["user", "assistant", "user"]
    assert records[0]["parentUuid"] is None
    assert [r["parentUuid"] for r in records[1:]] == [r["uuid"] for r in records[:-1]]
    assert isinstance(records[0]["message"]["content"], str)
    assert records[1]["message"]["content"] == [{"type": "text", "text": messages[1].text}]
    # The project's own reader takes them as the person's and the model's words.
    read = read_transcript(lines)
    assert [(e.kind, e.text) for e in read.entries] == [
        (m.role, m.text) for m in messages
    ] and read.malformed_lines == 0


def test_shown_ids_takes_any_hash_number_token_once() -> None:
    context = (
        "<memstrata-memory>\n- [episodic, #12] Ada: hi\n- #7 [semantic] boat #12\n"
        "```\n#3: fenced\n```\nissue#5 and #6a are not ids; (#41), too.\n</memstrata-memory>"
    )
    assert hr.shown_ids(context) == [12, 7, 3, 41]
    assert hr.shown_ids("") == []


def test_turn_finder_rules() -> None:
    thanks = hr.TurnFinder.of(TURNS[3])
    assert not thanks.in_text("Bo: Thanks!") and thanks.in_text("x Ada: Thanks! y")
    petrel = hr.TurnFinder.of(TURNS[2])
    assert petrel.in_text(hr.normalise("Ada: She is called   Petrel,\nafter the seabird. [shares"))
    assert not petrel.in_text("She is called Petrel")
    long = hr.TurnFinder.of(turn(3, 1, "Ada", LONG))
    words = LONG.split()
    assert long.in_text(" ".join(words[:24]) + " (part 1)")  # half the turn, whole runs
    assert not long.in_text(" ".join(words[:20]))
    assert not long.in_text(" ".join(words[4:28]))  # no whole 8-word run but two


def test_turn_map_and_scoring_of_a_known_context() -> None:
    memories = [
        (1, "Ada: Hi Bo! I bought a small sailing boat last week."),
        (2, "Ada: She is called Petrel, after the seabird. [shares a white boat]"),
        (3, "Session of 2023-01-08. Asked: Ada: Thanks! | Wow Ada, what is the boat called?"),
        (4, "an unrelated note"),
    ]
    held_by = hr.turn_map(memories, TURNS)
    assert held_by == {
        1: ["talk-1:D1:1"],
        2: ["talk-1:D1:3"],
        3: ["talk-1:D1:2", "talk-1:D1:4"],
    }
    finders = {t["id"]: hr.TurnFinder.of(t) for t in TURNS}
    by_id = "<memstrata-memory>\n- #2 [episodic, user, 2023-01-08] (text changed)\n</...>"
    assert hr.reached(by_id, ["talk-1:D1:3"], held_by, finders) == {"talk-1:D1:3"}
    assert hr.reached(by_id, ["talk-1:D2:2"], held_by, finders) == set()
    by_text = "recalled: Yes, we sailed to the old\nlighthouse on Sunday."
    assert hr.reached(by_text, ["talk-1:D2:2", "talk-1:D1:1"], held_by, finders) == {"talk-1:D2:2"}

    asked = [
        hr.Asked(QUESTIONS[0], context=by_id, hook_ms=100.0),
        hr.Asked(QUESTIONS[1], context="", hook_ms=300.0),
    ]
    asked[0].reached = {"talk-1:D1:3"}
    asked[0].search_r10, asked[1].search_r10 = 1.0, 0.0
    result = hr.report(asked, {"sessions": 2})
    overall = result["overall"]
    assert overall["injection_recall"] == 0.5 and overall["injected_share"] == 0.5
    assert overall["tokens_median"] == (count_tokens(by_id) + 0) / 2
    assert overall["hook_p50_ms"] == 200.0 and overall["hook_p95_ms"] == 100.0
    assert overall["search_r10"] == 0.5 and overall["search_r10_direct"] is None
    assert list(result["categories"]) == ["temporal", "single-hop"]  # LoCoMo's category order
    assert result["categories"]["temporal"]["injection_recall"] == 0.0
    assert result["sessions"] == 2
    assert "| overall | 2 | 0.500 |" in hr.table(result)


def test_recall_and_percentile_as_score_py_counts() -> None:
    assert hr.recall_at(["a", "b"], ["x", "a", "a"] + ["y"] * 20) == 0.5
    assert hr.recall_at(["a"], [f"x{i}" for i in range(10)] + ["a"]) == 0.0
    assert hr.percentile([5, 1, 3], 0.95) == 3 and hr.percentile([], 0.5) == 0


def test_baseline_table_reads_bench_locomos_json(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    table = {"overall": {"n": 2, "R@10": 0.8}, "2 temporal": {"n": 1, "R@10": 0.9}}
    path.write_text(json.dumps({"settings": {}, "metrics": {"metrics": table}}))
    r10 = hr.baseline_table(path)
    assert r10 == {"overall": 0.8, "temporal": 0.9}
    result: dict[str, Any] = {"overall": {}, "categories": {"temporal": {}, "single-hop": {}}}
    hr.apply_baseline(result, r10)
    assert result["overall"]["search_r10_direct"] == 0.8
    assert result["categories"]["single-hop"]["search_r10_direct"] is None


@pytest.mark.e2e
def test_replay_through_the_real_hooks(tmp_path: Path) -> None:
    """Two sessions and two questions through `memstrata hook` processes, no server."""
    out = tmp_path / "replay.json"
    hr.main(
        [
            "--data",
            str(write_data(tmp_path / "data")),
            "--no-server",
            "--baseline",
            "none",
            "--model",
            "none",
            "--keep",
            str(tmp_path / "run"),
            "--json",
            str(out),
        ]
    )
    result = json.loads(out.read_text())
    assert set(result["overall"]) >= {
        "injection_recall",
        "tokens_median",
        "tokens_p95",
        "hook_p50_ms",
        "search_r10",
    }
    assert set(result["categories"]) == {"temporal", "single-hop"}
    assert result["sessions"] == 2 and result["questions"] == 2
    assert result["hook_errors"] == 0
    assert result["captured_memories"] >= 4
    # What was said came back into the question's session (start or prompt context).
    assert result["overall"]["session_recall"] >= 0.5
    transcripts = list((tmp_path / "run" / "transcripts" / "talk-1").glob("*.jsonl"))
    assert len(transcripts) == 2
    details = [
        json.loads(line) for line in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()
    ]
    assert [d["qid"] for d in details] == ["talk-1:q0", "talk-1:q1"]
    assert all(d["hook_ms"] > 0 for d in details)
