"""The anonymisation rule of shared patterns (memory_core/domain/anonymise.py), rule by rule."""

from __future__ import annotations

import pytest

from memory_core.domain.anonymise import (
    anonymise,
    capitalised_inside,
    pattern_sentences,
    pattern_words,
    sentences,
)


def clean(sentence: str, tenant: str = "acme", proper: frozenset[str] = frozenset()) -> str | None:
    return anonymise(sentence, tenant=tenant, proper=proper, min_words=3)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # 2. addresses
        (
            "Clients send purchase orders to orders@northwind.example for approval.",
            "Clients send purchase orders to [email] for approval.",
        ),
        (
            "Clients read the pricing page at https://shop.example.com/p?id=7 before calling.",
            "Clients read the pricing page at [url] before calling.",
        ),
        (
            "Clients follow @northwind_ops for outage news every week.",
            "Clients follow [name] for outage news every week.",
        ),
        # 3. identifying numbers; small numbers stay
        (
            "Clients quote invoice INV-2023-0042 when they call support.",
            "Clients quote invoice [id] when they call support.",
        ),
        (
            "Clients call the hotline on +44 20 7946 0958 after hours.",
            "Clients call the hotline on [number] after hours.",
        ),
        (
            "Clients quote ticket #48213 in every follow-up email.",
            "Clients quote ticket [id] in every follow-up email.",
        ),
        (
            "Most retail clients expect delivery within 2 weeks and 30% off in 2024.",
            "Most retail clients expect delivery within 2 weeks and 30% off in 2024.",
        ),
        (
            "Typical deals are worth 12,500 dollars for new clients.",
            "Typical deals are worth [number] dollars for new clients.",
        ),
        # 4. the tenant's own name, any case, and its parts
        (
            "Clients of acme-corp usually renew before the summer.",
            "Clients of [name] usually renew before the summer.",
        ),
        # 5. proper names; trade acronyms, months and weekdays stay
        (
            "Enterprise clients like Northwind Traders ask for quarterly reviews.",
            "Enterprise clients like [name] ask for quarterly reviews.",
        ),
        (
            "Clients such as ACME and DataCorp ask for GDPR and SOC2 reports in March.",
            "Clients such as [name] and [name] ask for GDPR and SOC2 reports in March.",
        ),
        (
            "Banks expect an SLA review every Monday with their account manager.",
            "Banks expect an SLA review every Monday with their account manager.",
        ),
        (
            "Note: Retailers want weekly stock reports from suppliers.",
            "Note: Retailers want weekly stock reports from suppliers.",
        ),
    ],
)
def test_names_addresses_and_identifiers_are_replaced(sentence: str, expected: str) -> None:
    tenant = "acme-corp" if "acme-corp" in sentence else "acme"
    assert clean(sentence, tenant) == expected


def test_the_first_word_is_a_name_only_when_the_document_capitalises_it_elsewhere() -> None:
    doc = "We supply Northwind every week.\nNorthwind clients want invoices by email monthly."
    proper = capitalised_inside(doc)
    assert "northwind" in proper
    assert clean("Northwind clients want invoices by email monthly.", proper=proper) == (
        "[name] clients want invoices by email monthly."
    )
    # "Retail" starts a sentence and the document never capitalises it elsewhere: a word.
    assert clean("Retail clients want invoices by email monthly.", proper=proper) == (
        "Retail clients want invoices by email monthly."
    )


@pytest.mark.parametrize(
    "sentence",
    [
        # 1. secrets: the whole sentence goes
        "Clients use the token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + " for the API.",
        "The staging database password is Hunter2-Blue-42 for all clients.",
        # 6. too little left once names and identifiers are out
        "Call Sarah Connor on +44 20 7946 0958.",
        "Northwind Traders, Contoso Ltd and Fabrikam Inc.",
        "See you soon.",
    ],
)
def test_a_sentence_with_a_secret_or_too_little_left_is_dropped(sentence: str) -> None:
    assert clean(sentence) is None


def test_a_very_long_sentence_is_not_a_pattern() -> None:
    assert clean("Clients want " + "fast reliable support " * 40 + "always.") is None


def test_sentences_are_lines_cut_at_sentence_ends_without_code_tables_or_marks() -> None:
    doc = (
        "# Heading\n- Clients want speed. Buyers want price!\n"
        "```\nprint('code is not a pattern')\n```\n| a | table |\n1. Numbered item here"
    )
    assert list(sentences(doc)) == [
        "Heading",
        "Clients want speed.",
        "Buyers want price!",
        "Numbered item here",
    ]


def test_pattern_sentences_are_distinct_in_order_and_capped() -> None:
    doc = (
        "Clients in healthcare want on-premise deployment. "
        "clients in healthcare want on-premise deployment! "
        "Retail clients expect delivery within two weeks. "
        "Banks require data to stay in the country."
    )
    assert pattern_sentences(doc, tenant="acme") == [
        "Clients in healthcare want on-premise deployment.",
        "Retail clients expect delivery within two weeks.",
        "Banks require data to stay in the country.",
    ]
    assert len(pattern_sentences(doc, tenant="acme", limit=2)) == 2


def test_content_words_leave_out_function_words_and_placeholders() -> None:
    assert pattern_words("The [name] clients do not want [url] in the cloud") == [
        "clients",
        "not",
        "want",
        "cloud",
    ]
