from __future__ import annotations

import hashlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from memory_core.domain.redaction import (
    RedactionPolicy,
    Redactor,
    redact_json,
    redact_key,
    redact_text,
)

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "-----END RSA PRIVATE KEY-----"
)
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
POSITIVE: list[tuple[str, str, str]] = [
    (
        "azure_storage_key",
        f"DefaultEndpointsProtocol=https;AccountName=shop;AccountKey={AZURE_KEY};"
        "EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=shop;AccountKey=[REDACTED:azure_storage_key];"
        "EndpointSuffix=core.windows.net",
    ),
    ("password", "mysql -u root -pS3cretPass99 shop", "mysql -u root -p[REDACTED:password] shop"),
    (
        "password",
        "mysqldump -h db -uadmin -p'hunter2!' shop > dump.sql",
        "mysqldump -h db -uadmin -p'[REDACTED:password]' shop > dump.sql",
    ),
    (
        "bearer_token",
        "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
        "Authorization: Token [REDACTED:bearer_token]",
    ),
    (
        "stripe_key",
        "STRIPE_WEBHOOK=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "STRIPE_WEBHOOK=[REDACTED:stripe_key]",
    ),
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
    # Shapes main missed (issue 19).
    (
        "url_password",
        "redis://:hunter22@cache.local:6379/0",
        "redis://:[REDACTED:url_password]@cache.local:6379/0",
    ),
    (
        "url_password",
        "postgres://app:p@ss/w0rd@db.internal/app",
        "postgres://app:[REDACTED:url_password]@db.internal/app",
    ),
    (
        "aws_secret_key",
        '"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",',
        '"SecretAccessKey": "[REDACTED:aws_secret_key]",',
    ),
    ("password", "PGPASSWORD=hunter2 psql", "PGPASSWORD=[REDACTED:password] psql"),
    ("password", '{"password": "letmein"}', '{"password": "[REDACTED:password]"}'),
    ("password", "password: 'correct horse'", "password: '[REDACTED:password]'"),
    ("password", "db:\n  password: s3cret!\n", "db:\n  password: [REDACTED:password]\n"),
    (
        "basic_auth",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Authorization: Basic [REDACTED:basic_auth]",
    ),
    (
        "basic_auth",
        "curl -u admin:s3cret https://x",
        "curl -u admin:[REDACTED:basic_auth] https://x",
    ),
    (
        "secret_value",
        'api_key = "a8f3k2j9d8s7f6g5h4j3"',
        'api_key = "[REDACTED:secret_value]"',
    ),
    (
        "secret_value",
        "client_secret: 9f8e7d6c5b4a3f2e1d0c",
        "client_secret: [REDACTED:secret_value]",
    ),
    ("google_oauth_token", "ya29.a0AfH6SMBx3k2j9d8s7f6g5h4j3", "[REDACTED:google_oauth_token]"),
    ("npm_token", "//registry.npmjs.org/:_authToken=npm_" + "a1B2c3" * 6, None),  # type: ignore[list-item]
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + "Ab1_" * 15, "[REDACTED:pypi_token]"),
    ("huggingface_token", "HF hf_" + "aB3d" * 9, "HF [REDACTED:huggingface_token]"),
    ("sendgrid_key", "SG." + "a" * 22 + "." + "b" * 43, "[REDACTED:sendgrid_key]"),
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
    # Near misses of the shapes added for issue 19.
    "The basic idea is simple; password: required; token: see the vault",
    "http://example.com:8080/path@v2 is the second version",
    "password_file=/run/secrets/db and PASSWORD_FILE=/run/secrets/db",
    "password: <your password> and password=${DB_PASSWORD} and password: '***'",
    "max_tokens = 4096, token_count: 12, the tokenizer: bert-base-uncased",
    "api_key = os.environ['API_KEY']",
    "session token expired at 2024-01-02T03:04:05Z",
    "Basic training starts Monday; basic auth is configured in nginx",
    "content hash " + hashlib.blake2b(b"y", digest_size=20).hexdigest(),
    "id 550e8400-e29b-41d4-a716-446655440000, secret: 550e8400",
    "Merged 77bf536 into main; see https://github.com/org/repo/commit/" + "a" * 40,
    # Near misses of the shapes added after issue 19's review.
    "Run mysql -p to be prompted for the password, or mysql -P 3306 -h db for the port",
    "mysql -u root -p$MYSQL_PWD shop; the mysql-proxy -p flag",
    "Authorization: Token <token>; Authorization: token required",
    "AccountKey=<your storage key> goes in the connection string",
    "the whsec_ prefix marks Stripe webhook secrets",
    # Ordinary developer text near the shapes added for issue 34.
    f"![pixel](data:image/png;base64,{PNG})",
    f'<img src="data:image/png;base64,{PNG}" alt="dot">',
    "Colours: #ff8800, #FFF, #1a2b3c4d; token colour is #0366d6",
    "Upgraded to v2.14.0-rc.1 (was 2.13.9+build.7); pip install requests==2.32.3",
    "request 550e8400-e29b-41d4-a716-446655440000 and trace 6f1c2a9e-0b7d-4e3f-8a2c-1d5e9f7b3c4a",
    "git log: 9fceb02d0ae598e95dc970b74767f19372d61af8 and a1b2c3d, tag v1.0",
    'integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"',
    "image: ghcr.io/acme/api@sha256:" + "ab12" * 16,
    "The password is required; the token is expired; the secret is out; pass rate: 95%",
    "max_tokens = 4096 and the next token is 42; token_count: 12; tokenizer: bert-base-uncased",
    "password = getpass.getpass()\ntoken = tokenizer.encode(text)\napi_key = os.environ['API_KEY']",
    "def login(user, password=None):\n    return connect(user=user, password=password)",
    "Use the key: user:42 to recall it; the API key is stored in 1Password",
    "model: gpt-4o-mini-2024-07-18; the token is gpt-4o-mini; credentials are in the vault",
    "Set-Cookie: theme=dark; Path=/; Max-Age=3600",
    'Authorization: Bearer <token>; Authorization: Digest username="Mufasa", realm="x"',
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


def test_aws_json_credential_output_is_redacted_whole():
    text = (
        '{"Credentials": {"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", '
        '"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", '
        '"SessionToken": "FwoGZXIvYXdzEBYaDHqa0AP1/Z5bJ2Yr0SLEAXfK1j7Jf4WmEtx3e6a6n1h"}}'
    )
    redacted, report = redact_text(text)
    assert report.as_dict() == {"aws_access_key": 1, "aws_secret_key": 2}
    assert "ASIA" not in redacted and "wJalr" not in redacted and "FwoG" not in redacted


def test_a_value_under_a_secret_named_key_is_redacted_whatever_it_looks_like():
    value: JsonValue = {
        "aws_secret_access_key": "abc",
        "SecretAccessKey": "plain words",
        "apiKey": "k",
        "db": {"password": "letmein"},
        "token_type": "bearer",
        "tokenizer": "bert",
        "password_policy": "12 chars",
        "note": "fine",
        "token": "${TOKEN}",
    }
    redacted, report = redact_json(value)
    assert redacted == {
        "aws_secret_access_key": "[REDACTED:secret_value]",
        "SecretAccessKey": "[REDACTED:secret_value]",
        "apiKey": "[REDACTED:secret_value]",
        "db": {"password": "[REDACTED:password]"},
        "token_type": "bearer",
        "tokenizer": "bert",
        "password_policy": "12 chars",
        "note": "fine",
        "token": "${TOKEN}",
    }
    assert report.as_dict() == {"password": 1, "secret_value": 3}


def test_json_keys_are_redacted_and_two_secrets_stay_two_keys():
    first, second = "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPL2"
    redacted, report = redact_json({f"key {first}": 1, f"key {second}": 2})
    assert isinstance(redacted, dict)
    assert len(redacted) == 2
    assert all(first not in k and second not in k for k in redacted)
    assert report.as_dict() == {"aws_access_key": 2}


def test_redacted_keys_carry_a_short_hash_of_the_secret():
    a, _ = redact_key("deploy AKIAIOSFODNN7EXAMPLE")
    b, _ = redact_key("deploy AKIAIOSFODNN7EXAMPL2")
    again, _ = redact_key("deploy AKIAIOSFODNN7EXAMPLE")
    assert a != b and a == again
    digest = hashlib.sha256(b"AKIAIOSFODNN7EXAMPLE").hexdigest()[:6]
    assert a == f"deploy [REDACTED:aws_access_key:{digest}]"
    # Text keeps the plain marker: a hash of a weak password would confirm a guess.
    assert redact_text("PASSWORD=hunter2")[0] == "PASSWORD=[REDACTED:password]"


def test_redaction_is_idempotent():
    text = (
        "PASSWORD=hunter2 https://u:p4ss@h.example AKIAIOSFODNN7EXAMPLE "
        "api_key=a8f3k2j9d8s7f6g5h4j3"
    )
    once, _ = redact_text(text)
    twice, report = redact_text(once)
    assert twice == once and report.as_dict() == {}
    key, _ = redact_key(text)
    again, report = redact_key(key)
    assert again == key and report.as_dict() == {}


def test_the_gate_totals_every_field_of_one_write():
    gate = Redactor(RedactionPolicy())
    gate.text("AKIAIOSFODNN7EXAMPLE")
    gate.key("PASSWORD=hunter2")
    gate.mapping({"password": "x1"})
    assert gate.counts() == {"aws_access_key": 1, "password": 2}
    assert gate.fresh().counts() == {}


@pytest.mark.parametrize("size", [200_000])
def test_long_identifier_runs_do_not_blow_up(size: int):
    # Bounded repeats keep a long run of key-like characters linear to scan.
    text = "secret_" * (size // 7) + "token" * (size // 5) + "a" * size
    assert redact_text(text)[0].startswith("secret_")
