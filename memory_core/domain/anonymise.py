"""The anonymisation rule of shared patterns: sentences without names, identifiers or secrets.

A tenant that opts in to share patterns contributes sentences of its business context, and a
sentence becomes a candidate only after this rule (pure, tested in
tests/unit/test_anonymise.py):

1. **Secrets**: a sentence in which the redaction gate finds any credential is dropped whole
   (a sentence about a credential is never an industry pattern, and what is left of it could
   still point at the secret).
2. **Addresses**: URLs (`scheme://...`, `www....`) become `[url]`, e-mail addresses
   `[email]`, `@handles` `[name]`.
3. **Identifying numbers**: a token mixing letters and digits (`INV-2023-0042`, `AB12345`,
   `acme42`) becomes `[id]`; a number with 5 or more digits, separators allowed
   (`+44 20 7946 0958`, `12,500`, `4111-1111`), becomes `[number]`; so does a number written
   after `#` or `No.`. Numbers of up to 4 digits stay ("within 2 weeks", "30%", "in 2024"):
   they carry the pattern and name nobody. A short list of trade terms keeps its digits
   (`B2B`, `SOC2`, `24x7`, `2FA`...).
4. **The tenant's own name**, and each of its parts of 3+ letters, in any case: `[name]`.
5. **Proper names**: a capitalised word that does not start its sentence (or a clause after
   `:`, a quote or a bracket); a word with a capital inside it (`DataCorp`, `eBay`); an
   all-capitals word of 2+ letters (`ACME`); and the first word of a sentence when the same
   document writes that word capitalised where it does not start a sentence. Runs of names
   become one `[name]`. Kept: "I", months, weekdays, and common trade acronyms (`EU`,
   `GDPR`, `SLA`, `API`...).
6. **What is left** must hold at least `min_words` content words (function words and
   placeholders not counted), at most one placeholder per two content words, and at most
   `MAX_PATTERN_CHARS` characters; else the sentence is not a candidate.

Lower-case names ("ask john") pass this rule; the k-tenant rule behind it
(domain/pattern_pool.py) is the second line: every content word of a shared pattern must be
written by at least k opted-in tenants, and a lower-case name one tenant uses is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory_core.domain.fts_query import STOPWORDS
from memory_core.domain.redaction import RedactionPolicy, redact_text

__all__ = [
    "MAX_PATTERN_CHARS",
    "PLACEHOLDERS",
    "anonymise",
    "capitalised_inside",
    "pattern_sentences",
    "pattern_words",
    "sentences",
]

MAX_PATTERN_CHARS = 400


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


PLACEHOLDERS = ("[name]", "[email]", "[url]", "[id]", "[number]")

_KEEP_CAPITALISED = _word_set(
    """i january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday"""
)
# Trade vocabulary written in capitals or with digits: it names a practice, not a party.
_KEEP_ACRONYMS = _word_set(
    """eu us usa uk un gdpr hipaa ccpa pci dss sox soc soc2 iso sla slas api apis saas
    paas iaas crm erp b2b b2c kpi kpis roi faq faqs pdf csv it hr ceo cto cfo coo vp
    sme smes smb smbs rfp rfps rfq nda ndas ai ml llm qa ux ui seo sms mfa 2fa sso vat
    gaap ifrs kyc aml esg ipo m&a 24x7 24/7 b2g p2p"""
)

_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{2,}")
_MARKED_NUMBER = re.compile(r"(?:#|\bno\.\s?)\s*\d[\d\-/.]*", re.IGNORECASE)
# Digits with separators between them: "+44 20 7946 0958", "12,500.00", "4111-1111-1111".
_NUMBER = re.compile(r"\+?\d(?:[\d,.\-/]|\s(?=\d))*\d|\d")
_TOKEN = re.compile(r"[^\s]+")
_WORD = re.compile(r"[^\W_]+")
_LETTER_DIGIT = re.compile(r"(?=[\w\-/]*[^\W\d_])(?=[\w\-/]*\d)[\w]+(?:[\-/][\w]+)*")
_PLACEHOLDER = re.compile(r"\[(?:name|email|url|id|number)\]")
# A sentence ends at . ! ? (and closing quotes/brackets) before a space; a line is a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+|\d{1,3}[.)]\s+)+")
_CLAUSE_START = frozenset(":\"'([\u201c\u2018")
_NAME_RUN = re.compile(r"\[name\](?:\s+\[name\])+")


def sentences(text: str) -> Iterator[str]:
    """The sentences of a document: each line, cut at sentence ends, markdown marks removed.

    Fenced code blocks are skipped: code is not a business pattern.
    """
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|"):
            continue  # code, or a table row
        body = _LINE_MARK.sub("", line).strip()
        for part in _SENTENCE_END.split(body):
            part = part.strip()
            if part:
                yield part


def capitalised_inside(text: str) -> frozenset[str]:
    """Lower-cased words a text writes capitalised where they do not start a sentence.

    The first word of a sentence is capitalised by grammar; it is a name when the same
    document also capitalises it elsewhere ("Northwind" in "we supply Northwind").
    """
    found: set[str] = set()
    for sentence in sentences(text):
        for start, word in _words_with_starts(sentence):
            if not start and word[:1].isupper():
                found.add(word.casefold())
    return frozenset(found)


def _words_with_starts(sentence: str) -> Iterator[tuple[bool, str]]:
    """(starts a sentence or clause, word) for each word of a sentence."""
    starts = True
    for token in _TOKEN.finditer(sentence):
        raw = token.group(0)
        lead = raw[:1]
        word = raw.strip("\"'()[]{}\u201c\u201d\u2018\u2019.,;:!?")
        if word:
            yield starts or lead in _CLAUSE_START, word
        starts = raw.endswith(":")


def _tenant_parts(tenant: str) -> list[str]:
    parts = {p for p in re.split(r"[\W_]+", tenant.casefold()) if len(p) >= 3}
    return sorted(parts | {tenant.casefold()}, key=len, reverse=True)


def _is_name(word: str, starts: bool, proper: frozenset[str]) -> bool:
    """Whether a word (stripped of punctuation) is a proper name by rule 5."""
    folded = word.casefold()
    if folded in _KEEP_CAPITALISED or folded in _KEEP_ACRONYMS:
        return False
    letters = [c for c in word if c.isalpha()]
    if not letters or not any(c.isupper() for c in letters):
        return False
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True  # ACME, NWT
    if any(c.isupper() for c in letters[1:]):
        return True  # DataCorp, eBay
    if not word[0].isupper():
        return False
    return not starts or folded in proper


def _names(sentence: str, proper: frozenset[str]) -> str:
    out: list[str] = []
    starts = True
    for token in _TOKEN.finditer(sentence):
        raw = token.group(0)
        head = len(raw) - len(raw.lstrip("\"'()[]{}\u201c\u201d\u2018\u2019"))
        core = raw.strip("\"'()[]{}\u201c\u201d\u2018\u2019.,;:!?")
        possessive = core.endswith(("'s", "\u2019s"))
        word = core[:-2] if possessive else core
        clause = starts or raw[:1] in _CLAUSE_START
        if word and not _PLACEHOLDER.search(raw) and _is_name(word, clause, proper):
            tail = raw[head + len(core) :]
            raw = raw[:head] + "[name]" + ("'s" if possessive else "") + tail
        out.append(raw)
        starts = raw.endswith(":")
    # "Acme Corp Ltd" is one name: one placeholder.
    return _NAME_RUN.sub("[name]", " ".join(out))


def _identifiers(sentence: str) -> str:
    sentence = _MARKED_NUMBER.sub("[id]", sentence)

    def mixed(match: re.Match[str]) -> str:
        token = match.group(0)
        return token if token.casefold() in _KEEP_ACRONYMS else "[id]"

    sentence = _LETTER_DIGIT.sub(mixed, sentence)

    def number(match: re.Match[str]) -> str:
        token = match.group(0)
        return "[number]" if sum(c.isdigit() for c in token) >= 5 else token

    return _NUMBER.sub(number, sentence)


def pattern_words(text: str) -> list[str]:
    """The distinct lower-cased words a pattern is matched on: no function words, no marks."""
    words = _WORD.findall(_PLACEHOLDER.sub(" ", text).casefold())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


def anonymise(
    sentence: str,
    *,
    tenant: str,
    proper: frozenset[str] = frozenset(),
    min_words: int = 4,
    redaction: RedactionPolicy | None = None,
) -> str | None:
    """A sentence with names, identifiers and secrets taken out, or None to drop it.

    Args:
        sentence: One sentence of a tenant's business context.
        tenant: The tenant it belongs to (its name is taken out too).
        proper: Words the document capitalises mid-sentence (`capitalised_inside`).
        min_words: Content words that must be left for the sentence to be a pattern.
        redaction: Which credentials count as secrets (default: every kind).
    """
    redacted, report = redact_text(sentence, redaction or RedactionPolicy(enabled=True))
    if report.total or "[REDACTED:" in redacted:
        return None
    text = _URL.sub("[url]", sentence)
    text = _EMAIL.sub("[email]", text)
    text = _HANDLE.sub("[name]", text)
    text = _identifiers(text)
    for part in _tenant_parts(tenant):
        text = re.sub(rf"(?<![^\W_]){re.escape(part)}(?![^\W_])", "[name]", text, flags=re.I)
    text = _names(text, proper)
    text = re.sub(r"\s+", " ", text).strip()
    words = pattern_words(text)
    marks = len(_PLACEHOLDER.findall(text))
    if len(words) < min_words or marks * 2 > len(words) or len(text) > MAX_PATTERN_CHARS:
        return None
    return text


def pattern_sentences(
    text: str,
    *,
    tenant: str,
    min_words: int = 4,
    redaction: RedactionPolicy | None = None,
    limit: int | None = None,
) -> list[str]:
    """The anonymised candidate sentences of one document, distinct, in document order."""
    proper = capitalised_inside(text)
    seen: set[str] = set()
    out: list[str] = []
    for sentence in sentences(text):
        done = anonymise(
            sentence, tenant=tenant, proper=proper, min_words=min_words, redaction=redaction
        )
        if done is None:
            continue
        key = " ".join(_WORD.findall(done.casefold()))
        if key in seen:
            continue
        seen.add(key)
        out.append(done)
        if limit is not None and len(out) >= limit:
            break
    return out
