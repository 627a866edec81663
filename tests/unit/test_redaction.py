from __future__ import annotations

import hashlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from memory_core.domain.redaction import SECRET_KINDS, RedactionPolicy, redact_json, redact_text

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "-----END RSA PRIVATE KEY-----"
)
POSITIVE: list[tuple[str, str, str]] = [
    ("private_key", f"key:\n{PEM}\nend", "key:\n[REDACTED:private_key]\nend"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", None),  # type: ignore[list-item]
    ("aws_access_key", "id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED:aws_access_key] here"),
    (
        "aws_secret_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [REDACTED:aws_secret_key]",
    ),
    ("github_token", "token ghp_" + "a1B2" * 9, "token [REDACTED:github_token]"),
    ("github_token", "github_pat_11ABCDEFG0" + "x" * 72, "[REDACTED:github_token]"),
    ("gitlab_token", "glpat-xxxxXXXX1234yyyyZZZZ", "[REDACTED:gitlab_token]"),
    ("slack_token", "xoxb-1234567890-abcdefghij", "[REDACTED:slack_token]"),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "[REDACTED:slack_webhook]",
    ),
    ("anthropic_key", "sk-ant-api03-" + "Ab3_" * 20, "[REDACTED:anthropic_key]"),
    ("openai_key", "OPENAI=sk-proj-" + "Ab3x" * 12, "OPENAI=[REDACTED:openai_key]"),
    ("openai_key", "sk-" + "T3BlbkFJ" * 6, "[REDACTED:openai_key]"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
    ("google_api_key", "AIzaSyA-1234567890abcdefghijklmnopqrstu", "[REDACTED:google_api_key]"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "[REDACTED:jwt]",
    ),
    (
        "bearer_token",
        "Authorization: Bearer 4f9a1c2e8b7d6a5f4e3d2c1b0a9f8e7d",
        "Authorization: Bearer [REDACTED:bearer_token]",
    ),
    (
        "url_password",
        "DATABASE_URL=postgres://app:s3cr3t!@db.internal:5432/app",
        "DATABASE_URL=postgres://app:[REDACTED:url_password]@db.internal:5432/app",
    ),
]


@pytest.mark.parametrize(("kind", "text", "expected"), POSITIVE)
def test_credentials_are_redacted_and_counted(kind: str, text: str, expected: str | None):
    redacted, report = redact_text(text)
    assert report.as_dict() == {kind: 1}
    if expected is not None:
        assert redacted == expected
    assert "[REDACTED:" in redacted


NEGATIVE = [
    "We deployed version 1.2.3 to staging on Friday; the bearer of bad news was Bob.",
    "Use scikit-learn (sk-learn) for the baseline model, then try sk-learn-contrib later.",
    "Visit https://example.com/path?query=1 and http://localhost:8080/mcp for docs.",
    "email me at someone@example.com or ssh git@github.com:org/repo.git",
    "The password policy says: at least 12 characters, rotate every 90 days.",
    "sha256 " + hashlib.sha256(b"x").hexdigest(),
    "sha1 " + hashlib.sha1(b"x").hexdigest(),
    "uuid " + str(uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF)),
    "commit 77bf536a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed it",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
    "-----END PUBLIC KEY-----",
    "Authorization: Bearer <token>",
    "AKIA is the prefix AWS uses for access keys",
    "redis://localhost:6379/0 and postgres://db.internal:5432/app",
    "a JSON web token looks like header.payload.signature",
    "ghp_short",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_hashes_and_uuids_are_left_alone(text: str):
    redacted, report = redact_text(text)
    assert report.as_dict() == {}
    assert redacted == text


@given(st.uuids())
def test_no_uuid_is_a_secret(value: uuid.UUID):
    assert redact_text(str(value))[1].as_dict() == {}


@given(st.binary(min_size=1, max_size=64))
def test_no_hex_digest_is_a_secret(data: bytes):
    assert redact_text(hashlib.sha256(data).hexdigest())[1].as_dict() == {}


def test_several_secrets_in_one_text_are_all_counted():
    text = "a AKIAIOSFODNN7EXAMPLE b AKIAIOSFODNN7EXAMPL2 c https://u:p4ss@h.example/x"
    redacted, report = redact_text(text)
    assert report.as_dict() == {"aws_access_key": 2, "url_password": 1}
    assert "AKIA" not in redacted and "p4ss" not in redacted


def test_policy_can_turn_redaction_off_or_choose_kinds():
    text = "AKIAIOSFODNN7EXAMPLE and https://u:hunter22@h.example"
    assert redact_text(text, RedactionPolicy(enabled=False))[0] == text
    only_urls, report = redact_text(text, RedactionPolicy(kinds=("url_password",)))
    assert report.as_dict() == {"url_password": 1}
    assert "AKIAIOSFODNN7EXAMPLE" in only_urls


def test_json_strings_are_redacted_at_any_depth():
    value: JsonValue = {"env": {"list": ["ok", "token ghp_" + "a1B2" * 9]}, "n": 3, "flag": True}
    redacted, report = redact_json(value)
    assert redacted == {
        "env": {"list": ["ok", "token [REDACTED:github_token]"]},
        "n": 3,
        "flag": True,
    }
    assert report.as_dict() == {"github_token": 1}


def test_every_kind_has_a_positive_case():
    assert {kind for kind, _, _ in POSITIVE} == set(SECRET_KINDS)
