"""Find credentials in text and replace them with `[REDACTED:<kind>]` before anything is stored.

Pure functions over strings. Each pattern aims at a credential *shape* with a distinctive prefix
or structure (a PEM block, `AKIA...`, `ghp_...`, `scheme://user:pass@host`), so ordinary prose,
hashes and UUIDs are left alone. The report says which kinds were found and how often, never
what they were.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "SECRET_KINDS",
    "Redaction",
    "RedactionPolicy",
    "SecretKind",
    "redact_json",
    "redact_text",
]

SecretKind = Literal[
    "private_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "anthropic_key",
    "openai_key",
    "stripe_key",
    "google_api_key",
    "jwt",
    "bearer_token",
    "url_password",
]
SECRET_KINDS: tuple[SecretKind, ...] = get_args(SecretKind)

# Mixed case plus a digit: real provider keys are random, hyphenated English words are not.
_RANDOM = r"(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[a-z])"

# Order matters where shapes overlap: Anthropic keys start with `sk-` too, and a JWT after
# `Bearer` is reported as a JWT. Each pattern's group "secret" (or the whole match) is replaced.
_PATTERNS: tuple[tuple[SecretKind, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?!-----BEGIN )[\s\S]){0,20000}?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    (
        "aws_access_key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
    ),
    (
        "aws_secret_key",
        re.compile(
            r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})\b"),
    ),
    ("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|cbt|ptt)-[A-Za-z0-9_\-]{20,}")),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}")),
    (
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_\-]{20,}")),
    ("openai_key", re.compile(rf"\bsk-(?:proj-|svcacct-|admin-)?{_RANDOM}[A-Za-z0-9_\-]{{20,}}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ),
    (
        "bearer_token",
        re.compile(
            r"(?i:\bbearer)\s+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{20,}=*)"
        ),
    ),
    (
        "url_password",
        # scheme://user:password@host; only the password goes, the rest stays readable.
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@]{1,256}:(?P<secret>[^\s/@]{1,256})@"
            r"(?=[A-Za-z0-9\[])"
        ),
    ),
)


def _marker(kind: SecretKind) -> str:
    return f"[REDACTED:{kind}]"


class RedactionPolicy(BaseModel):
    """Whether secrets are redacted before storage, and which kinds."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = Field(True, description="Redact credentials before storing anything.")
    kinds: tuple[SecretKind, ...] = Field(
        SECRET_KINDS, description="Kinds of credential to redact (default: all)."
    )


@dataclass
class Redaction:
    """Counts of what was redacted, by kind (the secrets themselves are never kept)."""

    counts: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, int]:
        """Kind -> count, sorted by kind, for a tool result."""
        return dict(sorted(self.counts.items()))


def redact_text(
    text: str, policy: RedactionPolicy | None = None, report: Redaction | None = None
) -> tuple[str, Redaction]:
    """Replace every credential in `text` with `[REDACTED:<kind>]`.

    Args:
        text: The text to scan.
        policy: Which kinds to redact; the default policy redacts every kind.
        report: A report to add counts to (to total several fields); a new one by default.

    Returns:
        The redacted text and the report.
    """
    policy = policy or RedactionPolicy()
    report = report if report is not None else Redaction()
    if not policy.enabled:
        return text, report
    for kind, pattern in _PATTERNS:
        if kind not in policy.kinds:
            continue

        def replace(match: re.Match[str], kind: SecretKind = kind) -> str:
            report.counts[kind] += 1
            if "secret" in match.re.groupindex:
                start, end = match.span("secret")
                whole = match.group(0)
                offset = match.start()
                return whole[: start - offset] + _marker(kind) + whole[end - offset :]
            return _marker(kind)

        text = pattern.sub(replace, text)
    return text, report


def redact_json(
    value: JsonValue, policy: RedactionPolicy | None = None, report: Redaction | None = None
) -> tuple[JsonValue, Redaction]:
    """Redact every string inside a JSON value (object values and list items, not keys)."""
    report = report if report is not None else Redaction()
    if isinstance(value, str):
        return redact_text(value, policy, report)[0], report
    if isinstance(value, list):
        return [redact_json(v, policy, report)[0] for v in value], report
    if isinstance(value, dict):
        return {k: redact_json(v, policy, report)[0] for k, v in value.items()}, report
    return value, report
