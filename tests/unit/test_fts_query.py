import pytest
import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.domain.fts_query import MAX_TERMS, search_words, to_fts5_query
from memory_core.storage.sqlite.fts_match import any_word, every_word, two_words


def _fts_table() -> sqlean.Connection:
    conn = sqlean.connect(":memory:")
    conn.execute(
        "create virtual table t using fts5(content, key,"
        " tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "insert into t(content, key) values (?, ?)",
        [("Alice likes green tea", ""), ('a "quoted" NEAR(x y) -- drop table', "k*")],
    )
    return conn


CONN = _fts_table()


@settings(max_examples=500)
@given(st.text())
def test_any_text_is_a_valid_match_expression(text: str) -> None:
    query = to_fts5_query(text)
    if query is not None:
        CONN.execute("select rowid from t where t match ?", (query,)).fetchall()


@given(st.text(alphabet=st.sampled_from("\"*^():-+{}[]NEARORAND \\'\x00"), max_size=40))
def test_fts_operator_soup_never_raises(text: str) -> None:
    query = to_fts5_query(text)
    if query is not None:
        CONN.execute("select rowid from t where t match ?", (query,)).fetchall()


def test_words_are_quoted_and_ored() -> None:
    assert to_fts5_query('Alice AND "tea"') == '"alice" OR "and" OR "tea"'


def test_text_without_words_gives_none() -> None:
    assert to_fts5_query("  ?! 🎉 -- ") is None


def test_query_finds_rows_with_any_word() -> None:
    query = to_fts5_query("who likes coffee?")
    assert query is not None
    assert CONN.execute("select rowid from t where t match ?", (query,)).fetchall() == [(1,)]


def test_terms_are_capped_and_deduplicated() -> None:
    query = to_fts5_query(" ".join(f"w{i} w{i}" for i in range(100)))
    assert query is not None
    assert query.count(" OR ") == MAX_TERMS - 1


def test_stopwords_are_dropped_unless_nothing_else_is_left() -> None:
    assert to_fts5_query("When did Caroline go to the group?", drop_stopwords=True) == (
        '"caroline" OR "go" OR "group"'
    )
    assert to_fts5_query("who is it", drop_stopwords=True) == '"who" OR "is" OR "it"'
    assert to_fts5_query("who is it") == '"who" OR "is" OR "it"'


def _prefix_table() -> sqlean.Connection:
    conn = sqlean.connect(":memory:")
    conn.execute(
        "create virtual table t using fts5(content, key, metadata, content='',"
        " tokenize='porter unicode61 remove_diacritics 2', prefix='2 3 4')"
    )
    conn.execute(
        "insert into t(rowid, content, key, metadata) values (1, 'vulnerabilities', '', '')"
    )
    return conn


PREFIX_CONN = _prefix_table()


@settings(max_examples=300)
@given(st.text(), st.integers(min_value=0, max_value=4))
def test_search_words_make_valid_prefix_expressions(text: str, prefix_min_chars: int) -> None:
    words = search_words(text)
    if words:
        for fts in (
            any_word(words, prefix_min_chars),
            every_word(words, prefix_min_chars),
            two_words(words[:8], prefix_min_chars),
        ):
            if fts is not None:
                PREFIX_CONN.execute("select rowid from t where t match ?", (fts,)).fetchall()


def test_long_enough_words_also_match_as_prefixes() -> None:
    assert any_word(("vuln", "ab"), 3) == '"vuln" OR "vuln"* OR "ab"'
    assert every_word(("vuln", "ab"), 3) == '("vuln" OR "vuln"*) AND "ab"'
    assert every_word(("vuln",), 3) is None
    assert PREFIX_CONN.execute(
        "select rowid from t where t match ?", (any_word(("vuln",), 3),)
    ).fetchall() == [(1,)]


def test_two_words_pairs_every_word_with_every_other() -> None:
    assert two_words(("tea", "coffee"), 3) is None  # every_word already says it
    assert two_words(("vuln", "ab", "cd"), 3) == (
        '(("vuln" OR "vuln"*) AND "ab") OR (("vuln" OR "vuln"*) AND "cd") OR ("ab" AND "cd")'
    )
    assert two_words(("vuln", "ab", "cd"), 3, {"vuln"}) == (
        '("vuln" AND "ab") OR ("vuln" AND "cd") OR ("ab" AND "cd")'
    )


def test_two_words_scores_a_row_by_the_words_it_holds() -> None:
    """BM25 of the pairs: (words held - 1) x the OR query's BM25; one word: no match."""
    conn = sqlean.connect(":memory:")
    conn.execute("create virtual table t using fts5(c)")
    texts = ["tea coffee milk", "tea coffee", "tea", "coffee milk extra words", "milk"]
    conn.executemany("insert into t(c) values (?)", [(t,) for t in texts + ["filler"] * 20])
    words = ("tea", "coffee", "milk")

    def scores(fts: str | None) -> dict[int, float]:
        return dict(conn.execute("select rowid, bm25(t) from t where t match ?", (fts,)))

    every, pairs = scores(any_word(words)), scores(two_words(words))
    assert set(pairs) == {1, 2, 4}
    assert pairs[1] == pytest.approx(2 * every[1])
    assert pairs[2] == pytest.approx(every[2]) and pairs[4] == pytest.approx(every[4])
