"""Held-out shapes: written apart from the rules, to check that they generalise.

None of these texts (nor their file formats' exact layout) was looked at while the rules in
memory_core/domain/secret_shapes.py were written; the development examples are in
test_redaction_shapes.py. A failure here is a shape the rules do not generalise to.
"""

from __future__ import annotations

import base64

import pytest
from pydantic import JsonValue

from memory_core.domain.redaction import redact_json, redact_text

B64_USERPASS = base64.b64encode(b"ci-bot:Wq7!xPz2").decode()

# (text, secret that must be gone)
HELD_OUT: list[tuple[str, str]] = [
    # Config files.
    (
        '[runners]\n  url = "https://gitlab.example.com"\n  token = "glrt-2CR8_eVxiioB1QmzPZwa"',
        "glrt-2CR8",
    ),
    ("//npm.pkg.github.com/:_authToken=ghp_" + "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0GfEdCbA9z", "ghp_Zx8"),
    ("[global]\nindex-url = https://deploy:Tok3nValue9@pypi.corp.example/simple", "Tok3nValue9"),
    (
        "[default]\naccess_key = AKIAJQ3EXAMPLE7ZPLMQ\nsecret_key = "
        + "u8Hd/2kLq+Zr9Xw1Vt5Ys3Np7Mb4Qc6Fg0Je8Ra2",
        "u8Hd/2kLq",
    ),
    ('client_secret = "' + "Xq3~" + "pLm9_RtY2.uVw8-ZaB4cDe6FgH1iJk0Lm" + '"', "pLm9_RtY"),
    ("HEROKU_API_KEY=5f1c0a7e-93b2-4d8e-a6f1-2c3b4d5e6f70", "5f1c0a7e-93b2"),
    ("spring.datasource.password=Pr0d!Pass#2024", "Pr0d!Pass#2024"),
    ("jdbc:mysql://db:3306/shop?user=shop&password=Zx9pQ77&useSSL=true", "Zx9pQ77"),
    ("DATABASE_URL=mysql://root:rootpw1@localhost:3306/app", "rootpw1"),
    ("smtp:\n  host: mail.example.com\n  pass: 'Gm41l-App-Pw'\n", "Gm41l-App-Pw"),
    ("apiVersion: v1\nkind: Secret\ndata:\n  password: cGFzc3dvcmQxMjM=\n", "cGFzc3dvcmQxMjM="),
    (
        "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n"
        "  <password>N3xus!Deploy</password>\n</server>",
        "N3xus!Deploy",
    ),
    ('{"identitytoken": "' + "eyJ0b2tlbiI6InF1YXkifQ" + 'Zm9vYmFy12345"}', "eyJ0b2tlbiI6"),
    ("default login anonymous password guest@example.com", "guest@example.com"),
    ('$env:OPENAI_API_KEY = "sk-' + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv" + '"', "sk-Ab1Cd2"),
    ("export STRIPE_SECRET=sk_test_" + "4eC39HqLyjWDarjtT1zdp7dcA", "sk_test_4eC"),
    (f"registry auth header: Basic {B64_USERPASS}", B64_USERPASS),
    # HTTP.
    ("X-Auth-Token: 3f9a7c2e1b8d4f6a0c5e9b7d2a4f6c8e", "3f9a7c2e"),
    (
        "Set-Cookie: __Host-session=Q2hhbmdlTWUxMjM0NTY3ODkw; Path=/; Secure; HttpOnly",
        "Q2hhbmdlTWUx",
    ),
    (
        "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-01&sp=r&sig="
        + "dG9rZW4xMjM0NTY3ODkwYWJjZGVmZ2hpams%3D",
        "dG9rZW4xMjM0",
    ),
    ("Authorization: token " + "ghs_" + "9aZ8bY7cX6dW5eV4fU3gT2hS1iR0jQpOnMlK", "ghs_9aZ8"),
    # Provider tokens in running text.
    ("deployed with gldt-" + "x9Kq2LmN8pR4sT6vW1yZ", "gldt-x9Kq"),
    ("npm publish used npm_" + "q1W2e3R4t5Y6u7I8o9P0a1S2d3F4g5H6j7K8", "npm_q1W2"),
    (
        "SENDGRID=SG."
        + "ngeVfQFYQlKU0ufo8x5d1A"
        + "."
        + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
        "SG.ngeV",
    ),
    (
        "pip upload token pypi-AgEIcHlwaS5vcmcCJDk3"
        + "N2ZkNmNlLTc1ZjItNGFiZS1hNjVmLWY5NDI3M2EzMTc0ZgACKlsz",
        "pypi-AgEI",
    ),
    (
        "anthropic: sk-ant-admin01-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7" + "-AbCdEfAA",
        "sk-ant-admin01",
    ),
    ("databricks host token dapi" + "0123456789abcdef0123456789abcdef", "dapi0123"),
    ("NEW_RELIC_API_KEY=NRAK-" + "A1B2C3D4E5F6G7H8I9J0K1L2M3N", "NRAK-A1B2"),
    ("gcloud refresh: ya29.a0Af" + "H6SMCx9zLq-2Pw_8dV7fK3nR5tY1uB4oE6gJ", "ya29.a0Af"),
    ("hf token for the gated model: hf_" + "pQrStUvWxYzAbCdEfGhIjKlMnOpQrStUvW", "hf_pQrS"),
    ("slack socket mode xapp-2-" + "B04ABCDEF12-5566778899001-" + "f" * 64, "xapp-2-B04"),
    # Prose.
    ("FYI the root pw for the jump box is Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("new wifi passphrase: CorrectHorse9Battery", "CorrectHorse9Battery"),
    ("Remember: the admin password was changed to Winter2025!x", "Winter2025!x"),
    ("our Cloudflare API token is " + "Yt7Hq2Lm9Zx4Pw8Kd3Nv6Bc1Rf5Gs0Jh2Aa", "Yt7Hq2Lm"),
    (
        "AWS creds: key AKIAZ7XQ2EXAMPLEKEY9 secret " + "p9Lr/4Tk2Mx7Nb1Qv8Zc5Wd3Fh6Jy0Gs+Ea2Ru",
        "p9Lr/4Tk",
    ),
]


@pytest.mark.parametrize(("text", "secret"), HELD_OUT)
def test_held_out_shapes_are_redacted(text: str, secret: str):
    redacted, report = redact_text(text)
    assert secret not in redacted, redacted
    assert report.total >= 1


def test_held_out_metadata_shapes():
    value: JsonValue = {
        "service": {"smtp": {"Pass": "Gm41l-App-Pw9"}},
        "env": [{"name": "DB_PASSWORD", "value_from": "vault"}, {"DB_PWD": "r00t!pw"}],
        "oauth": {"clientSecret": "Xq3~pLm9", "refresh-token": "1//04abc"},
        "registry": {"auths": {"ghcr.io": {"auth": B64_USERPASS}}},
        "signing": {"private-key": "MC4CAQAwBQYDK2VwBCIEIB"},
        "sessionCookie": "s%3AQ2hhbmdlTWUxMjM0NTY3ODkw.sig",
    }
    redacted, report = redact_json(value)
    text = str(redacted)
    for secret in (
        "Gm41l-App-Pw9",
        "r00t!pw",
        "pLm9",
        "1//04abc",
        B64_USERPASS,
        "MC4CAQ",
        "Q2hhbmdl",
    ):
        assert secret not in text, text
    assert "vault" in text and "DB_PASSWORD" in text
    assert report.total == 7
