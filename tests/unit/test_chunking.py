"""The pure chunker: sizes, paragraph boundaries, overlap and coverage."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.domain.chunking import chunk_text


def test_paragraphs_that_fit_stay_whole_and_chunks_end_at_paragraph_breaks() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 30 for i in range(6)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = chunk_text(text, size=400, overlap=0)
    for c in chunks:
        assert c.text == text[c.start : c.end]
        assert c.end == len(text) or text[c.end : c.end + 2] == "\n\n"
        assert c.text.startswith("Paragraph")
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_overlap_starts_the_next_chunk_inside_the_previous_one_at_a_word() -> None:
    text = " ".join(f"w{i}" for i in range(200))
    chunks = chunk_text(text, size=100, overlap=30)
    for a, b in itertools.pairwise(chunks):
        assert 0 < a.end - b.start <= 30
        assert b.start == 0 or text[b.start - 1] == " "
    assert all(len(c.text) <= 100 for c in chunks)


def test_a_long_paragraph_is_cut_at_sentence_ends() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_text(text, size=120, overlap=0)
    assert all(c.text.endswith(".") for c in chunks)


def test_a_word_longer_than_a_chunk_is_cut() -> None:
    chunks = chunk_text("x" * 250, size=100, overlap=10)
    assert [len(c.text) for c in chunks][:2] == [100, 100]
    assert chunks[-1].end == 250


def test_blank_text_has_no_chunks_and_bad_sizes_are_refused() -> None:
    assert chunk_text(" \n\n ", size=10, overlap=0) == []
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("x", size=10, overlap=10)


words = st.sampled_from(["alpha", "beta", "gamma.", "delta!", "e", "\n\n", "\n", "  ", "x" * 40])


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(words, max_size=200).map(" ".join) | st.text(max_size=500),
    size=st.integers(5, 200),
    data=st.data(),
)
def test_chunks_are_spans_within_size_that_cover_the_text_and_overlap_at_most(
    text: str, size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = chunk_text(text, size=size, overlap=overlap)
    covered = [False] * len(text)
    for c in chunks:
        assert c.text == text[c.start : c.end] and c.text == c.text.strip() and c.text
        assert len(c.text) <= size
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start  # progress
        assert a.end - b.start <= overlap
