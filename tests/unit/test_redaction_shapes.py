"""The shapes issue 34 found in clear, and the examples the rules were written against.

tests/unit/test_redaction_heldout.py holds shapes written separately, that the rules were not
written from; this file is the development table.
"""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from memory_core.domain.redaction import SECRET_KINDS, redact_json, redact_text

HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"  # letters only, as real tokens are
XAPP = "xapp-1-A0123456789-1234567890123-" + "0a1b2c3d" * 8
DJANGO = "django-insecure-k3#x!9@z^q8w&e%r*t(y)u_i=o+p-a1s2d3f4g5h6j7k8l9z0x1c2v"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# (kind, text, secret that must be gone)
ISSUE_34: list[tuple[str, str, str]] = [
    ("huggingface_token", f"HF_TOKEN={HF}", HF),
    ("slack_token", f"SLACK_APP_TOKEN={XAPP}", XAPP),
    ("secret_value", f"SECRET_KEY = '{DJANGO}'", DJANGO),
    ("password", "machine api.example.com login bob password s3cr3tP4ss", "s3cr3tP4ss"),
    ("password", "machine example.com\n  login bob\n  password hunter2\n", "hunter2"),
    ("basic_auth", '{"auths": {"reg.example.com": {"auth": "dXNlcjpwYXNzd29yZA=="}}}', "dXNlc"),
    ("password", "The staging DB password is hunter2-Blue-42", "hunter2-Blue-42"),
    ("aws_secret_key", f"the AWS secret {AWS_SECRET} is rotated monthly", AWS_SECRET),
]


@pytest.mark.parametrize(("kind", "text", "secret"), ISSUE_34)
def test_the_shapes_issue_34_found_in_clear_are_redacted(kind: str, text: str, secret: str):
    redacted, report = redact_text(text)
    assert secret not in redacted
    assert report.as_dict() == {kind: 1}


# Examples per rule, written with the rules (kind, text, secret).
DEVELOPMENT: list[tuple[str, str, str]] = [
    ("huggingface_token", "api_org_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi", "api_org_Qw"),
    ("slack_token", "xoxe.xoxp-1-" + "Mi0yLTEyMzQ1Njc4OTAxMi1hYmNkZWZn" * 2, "xoxe.xoxp"),
    ("gitlab_token", "token = glrt-" + "t1_aBcDeFgHiJkLmNoPqRsTu", "glrt-t1_"),
    ("gitlab_token", "GITLAB_FEED=glft-" + "aB3dE6gH9jK2mN5pQ8sT", "glft-aB3"),
    ("stripe_key", "rk_live_" + "51Hx9" * 20, "rk_live_51"),
    ("provider_token", "DO_TOKEN=dop_v1_" + "a1b2c3d4" * 8, "dop_v1_a1"),
    ("provider_token", "SHOPIFY=shpat_" + "0123456789abcdef" * 2, "shpat_01"),
    ("provider_token", "VAULT_TOKEN=hvs." + "CAESIJ1k2L3m4N5o6P7q8R9s0T1u", "hvs.CAES"),
    ("provider_token", "bot 123456789:AA" + "Hk3L9mN2pQ4rS6tU8vW0xY1zA3bC5dE7fG", "123456789:AA"),
    ("provider_token", "client secret abc8Q~" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "abc8Q~"),
    ("provider_token", "Twilio key SK" + "0123456789abcdef0123456789abcdef", "SK0123"),
    ("google_oauth_token", "refresh 1//0" + "gAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "1//0gAb"),
    ("private_key", "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF", "LS0tLS1"),
    (
        "private_key",
        "AGE-SECRET-KEY-1" + "QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "Q" * 25,
        "AGE-SECRET",
    ),
    (
        "bearer_token",
        "Authorization: SSWS 00" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789AbCd",
        "00aBcD",
    ),
    ("basic_auth", "Proxy-Authorization: Basic YWRtaW46czNjcjN0", "YWRtaW46"),
    ("cookie", "Cookie: sessionid=8f14e45fceea167a5a36dedd4bea2543", "8f14e45f"),
    ("password", "<password>Hunter2!</password>", "Hunter2!"),
    ("password", "docker login --password Sup3rS3cret! registry.example.com", "Sup3rS3cret!"),
    ("password", "db.internal:5432:app:appuser:pgS3cret", "pgS3cret"),
    ("password", "define('DB_PASSWORD', 'wpS3cret!');", "wpS3cret!"),
    ("password", "[client]\ndb_password = hunter2\n", "hunter2"),
    ("password", "MYSQL_PWD=r00tPw sh", "r00tPw"),
    ("password", "sshpass -p 'Zx9!qR' ssh deploy@host", "Zx9!qR"),
    ("secret_value", "curl -H 'X-Api-Key: 9f8e7d6c5b4a3f2e1d0c9b8a' https://api", "9f8e7d"),
    ("secret_value", "GET /v1/items?api_key=Zk82jd7Hs6gd5Fq1&page=2", "Zk82jd7"),
    ("secret_value", "the token is 4b2c9f1e8d7a6b5c4d3e2f1a0b9c8d7e", "4b2c9f1e"),
    ("url_password", "git clone https://oauth2:Tk9x2mP7q@git.example.com/a.git", "Tk9x2mP7q"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), DEVELOPMENT)
def test_development_examples_are_redacted(kind: str, text: str, secret: str):
    redacted, report = redact_text(text)
    assert secret not in redacted, redacted
    assert kind in report.as_dict(), report.as_dict()


def test_every_kind_has_an_example_here_or_in_the_first_table():
    from tests.unit.test_redaction import POSITIVE

    kinds = {k for k, _, _ in POSITIVE} | {k for k, _, _ in ISSUE_34 + DEVELOPMENT}
    assert kinds == set(SECRET_KINDS)


def test_secret_named_keys_at_any_depth_of_metadata():
    value: JsonValue = {
        "pw": "hunter2",
        "deploy": {"targets": [{"Api-Key": "k1"}, {"db": {"PASSWD": "pa55"}}]},
        "auths": {"reg.example.com": {"auth": "dXNlcjpwYXNz"}},
        "cfg": {"credentials": {"prod": "hunter2-Blue-42", "user": "bob"}},
        "headers": {"Authorization": "Bearer abcdef1234567890XYZ"},
        "password": 123456,
        "client.secret": "s",
        "X-AUTH-TOKEN": "t",
        "private_key": "k",
        "token_type": "bearer",
        "max_tokens": 512,
        "tokenizer": "bert-base-uncased",
        "auth": "oauth",
        "pass_rate": "95%",
        "key": "user:42",
    }
    redacted, report = redact_json(value)
    assert redacted == {
        "pw": "[REDACTED:password]",
        "deploy": {
            "targets": [
                {"Api-Key": "[REDACTED:secret_value]"},
                {"db": {"PASSWD": "[REDACTED:password]"}},
            ]
        },
        "auths": {"reg.example.com": {"auth": "[REDACTED:basic_auth]"}},
        "cfg": {"credentials": {"prod": "[REDACTED:secret_value]", "user": "bob"}},
        "headers": {"Authorization": "Bearer [REDACTED:bearer_token]"},
        "password": "[REDACTED:password]",
        "client.secret": "[REDACTED:secret_value]",
        "X-AUTH-TOKEN": "[REDACTED:secret_value]",
        "private_key": "[REDACTED:secret_value]",
        "token_type": "bearer",
        "max_tokens": 512,
        "tokenizer": "bert-base-uncased",
        "auth": "oauth",
        "pass_rate": "95%",
        "key": "user:42",
    }
    assert report.as_dict() == {
        "basic_auth": 1,
        "bearer_token": 1,
        "password": 3,
        "secret_value": 5,
    }
