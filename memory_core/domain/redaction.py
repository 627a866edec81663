"""The redaction gate: credentials are replaced by `[REDACTED:<kind>]` before anything is stored.

Every service that stores text or JSON passes it through a `Redactor` (memories, learn keys,
scratchpad, preferences, playbooks, business documents, conversations, imports), so one table
decides what counts as a credential everywhere: `secret_shapes` (the shapes, each written from
its format's definition) and `secret_values` (what a secret value and a secret-naming key look
like). Ordinary prose, hashes, UUIDs, git SHAs, versions, colours and base64 images are left
alone (tests/unit/test_redaction*.py hold the positive, held-out and negative tables). gitleaks
and detect-secrets are not used as libraries: both scan files and report lines, not spans to
replace, and detect-secrets pulls in requests and PyYAML for plugins we would not use.

Keys (a `learn` key, a metadata key) get a short hash of the secret in their placeholder,
`[REDACTED:<kind>:1a2b3c]`, so two different secrets used as keys stay two keys. Text keeps the
plain marker: a hash of a weak password would let anyone holding the text confirm a guess.
The report says which kinds were found and how often, never what they were.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from memory_core.domain import secret_values as values
from memory_core.domain.secret_shapes import DETECTORS, SECRET_KINDS, Detector, SecretKind

__all__ = [
    "SECRET_KINDS",
    "Redaction",
    "RedactionPolicy",
    "Redactor",
    "SecretKind",
    "redact_json",
    "redact_key",
    "redact_text",
]

# Every trigger once, grouped under a "gate": the punctuation it ends with, if any. A gate
# absent from the text rules out its triggers with one scan (prose has no `_`).
_TRIGGERS: tuple[str, ...] = tuple(sorted({t for d in DETECTORS for t in d.triggers}))
_GATES: dict[str, tuple[str, ...]] = {}
for _trigger in _TRIGGERS:
    _gate = next((c for c in reversed(_trigger) if c in "_-.:~/="), "")
    _GATES[_gate] = (*_GATES.get(_gate, ()), _trigger)


_DETECTOR_TRIGGERS: tuple[tuple[Detector, frozenset[str]], ...] = tuple(
    (d, frozenset(d.triggers)) for d in DETECTORS
)


def _present(lowered: str) -> set[str]:
    """The triggers found in `lowered`."""
    found: set[str] = set()
    for gate, triggers in _GATES.items():
        if gate and gate not in lowered:
            continue
        found.update(t for t in triggers if t in lowered)
    return found


def _starts(lowered: str, triggers: tuple[str, ...], present: set[str]) -> list[int]:
    """Every offset where one of the present triggers starts, in order."""
    found: set[int] = set()
    for trigger in triggers:
        if trigger not in present:
            continue
        at = lowered.find(trigger)
        while at != -1:
            found.add(at)
            at = lowered.find(trigger, at + 1)
    return sorted(found)


def _matches(
    detector: Detector, text: str, lowered: str, present: set[str], aligned: bool
) -> list[re.Match[str]]:
    """Non-overlapping matches that hold a secret (tried at trigger offsets when anchored)."""
    if not (detector.anchored and aligned):
        return list(detector.pattern.finditer(text))
    found: list[re.Match[str]] = []
    last = 0
    for at in _starts(lowered, detector.triggers, present):
        if at < last:
            continue  # inside the previous match
        match = detector.pattern.match(text, at)
        if match is not None and detector.spans(match):
            found.append(match)
            last = match.end()
    return found


def _in_marker(text: str, start: int, secret: str) -> bool:
    """Whether the span is, holds or sits inside a marker (`[REDACTED:password:1a2b3c]`)."""
    if "[REDACTED:" in secret:
        return True
    opened = text.rfind("[REDACTED:", max(0, start - 40), start)
    return opened != -1 and text.find("]", opened) >= start


def _marker(kind: SecretKind, secret: str | None) -> str:
    if secret is None:
        return f"[REDACTED:{kind}]"
    digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"[REDACTED:{kind}:{digest}]"


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

    @property
    def total(self) -> int:
        """How many credentials were redacted in all."""
        return sum(self.counts.values())


def _redact(text: str, policy: RedactionPolicy, report: Redaction, *, keyed: bool) -> str:
    lowered = text.lower()
    # Lower-casing keeps offsets unless a character lower-cases to several (a rare "İ"):
    # then every pattern is tried everywhere, as without anchors.
    aligned = len(lowered) == len(text)
    present = _present(lowered)
    if not present:
        return text
    for detector, triggers in _DETECTOR_TRIGGERS:
        if triggers.isdisjoint(present):
            continue
        out: list[str] = []
        last = 0
        for match in _matches(detector, text, lowered, present, aligned):
            for kind, start, end in detector.spans(match):
                secret = text[start:end]
                if start < last or kind not in policy.kinds or _in_marker(text, start, secret):
                    continue  # overlapping, not asked for, or taken out already
                report.counts[kind] += 1
                out.append(text[last:start])
                out.append(_marker(kind, secret if keyed else None))
                last = end
        if out:
            out.append(text[last:])
            text = "".join(out)
            lowered = text.lower()
            aligned = len(lowered) == len(text)
    return text


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
    return _redact(text, policy, report, keyed=False), report


def redact_key(
    key: str, policy: RedactionPolicy | None = None, report: Redaction | None = None
) -> tuple[str, Redaction]:
    """Like `redact_text`, with a short hash of each secret in its marker (keys stay distinct)."""
    policy = policy or RedactionPolicy()
    report = report if report is not None else Redaction()
    if not policy.enabled:
        return key, report
    return _redact(key, policy, report, keyed=True), report


def redact_json(
    value: JsonValue, policy: RedactionPolicy | None = None, report: Redaction | None = None
) -> tuple[JsonValue, Redaction]:
    """Redact every string inside a JSON value: object keys, values and list items.

    A string value whose object key names a secret (`{"aws_secret_access_key": "..."}`,
    `{"password": "..."}`) is replaced whole as `secret_value` (or `password`), whatever it
    looks like, unless it is already a placeholder or template.
    """
    policy = policy or RedactionPolicy()
    report = report if report is not None else Redaction()
    if not policy.enabled:
        return value, report
    return _redact_json(value, policy, report), report


def _redact_json(
    value: JsonValue,
    policy: RedactionPolicy,
    report: Redaction,
    under: values.KeyStrength | None = None,
) -> JsonValue:
    """`value` redacted; `under` is the strength of the nearest secret-naming key above it."""
    if isinstance(value, str):
        redacted = _redact(value, policy, report, keyed=False)
        if under is not None and redacted == value and values.token_like(value.strip()):
            # `{"credentials": {"prod": "hunter2-Blue-42"}}`: a token under a secret's name.
            return _count(_kind_for(under), value, policy, report)
        return redacted
    if isinstance(value, list):
        return [_redact_json(v, policy, report, under) for v in value]
    if isinstance(value, dict):
        out: dict[str, JsonValue] = {}
        for k, v in value.items():
            key = _redact(k, policy, report, keyed=True)
            out[key] = _secret_field(k, v, policy, report, under)
        return out
    return value


def _kind_for(strength: values.KeyStrength) -> SecretKind:
    return "password" if strength == "password" else "secret_value"


def _count(
    kind: SecretKind, value: JsonValue, policy: RedactionPolicy, report: Redaction
) -> JsonValue:
    if kind not in policy.kinds:
        return value
    report.counts[kind] += 1
    return _marker(kind, None)


# `Bearer <token>`, `Basic <base64>`: the scheme stays, the credentials go.
_SCHEME_VALUE = re.compile(r"^([A-Za-z][A-Za-z0-9_\-]{1,30})\s+(\S+)$")


def _secret_field(
    key: str,
    value: JsonValue,
    policy: RedactionPolicy,
    report: Redaction,
    under: values.KeyStrength | None,
) -> JsonValue:
    """A value under `key`: whole when the key names a secret (`pw`, `apiKey`, `auth`...)."""
    strength = values.key_strength(key)
    if strength is None:
        return _redact_json(value, policy, report, under)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # `{"pin": 1234}` is a count elsewhere; `{"password": 123456}` is a password.
        if strength == "password":
            return _count("password", value, policy, report)
        return value
    if not isinstance(value, str):
        return _redact_json(value, policy, report, strength)
    stripped = value.strip()
    redacted = _redact(value, policy, report, keyed=False)
    if redacted != value or not values.password_value(stripped):
        return redacted  # a detector already took the secret out (or there is none)
    if strength == "weak":
        scheme = _SCHEME_VALUE.match(stripped)
        if scheme is not None and values.token_like(scheme.group(2)):
            marker = _count("bearer_token", scheme.group(2), policy, report)
            return value if marker == scheme.group(2) else f"{scheme.group(1)} {marker}"
        if values.basic_credentials(stripped):
            return _count("basic_auth", value, policy, report)  # Docker's `auth`
        if not values.token_like(stripped):
            return value
    return _count(_kind_for(strength), value, policy, report)


@dataclass(frozen=True)
class Redactor:
    """The gate every write passes through: one policy, one report per write.

    Services hold one and call `text`/`key`/`json` on every field they store; the report of
    a write is returned to the client as `redacted` (kind -> count).
    """

    policy: RedactionPolicy = field(default_factory=RedactionPolicy)
    report: Redaction = field(default_factory=Redaction)

    def fresh(self) -> Redactor:
        """The same policy with an empty report: one per write."""
        return Redactor(self.policy)

    def text(self, value: str) -> str:
        """`value` with each credential replaced by its marker."""
        return redact_text(value, self.policy, self.report)[0]

    def optional_text(self, value: str | None) -> str | None:
        """`text`, passing None through."""
        return None if value is None else self.text(value)

    def key(self, value: str) -> str:
        """A key: markers carry a short hash of the secret so distinct secrets stay distinct."""
        return redact_key(value, self.policy, self.report)[0]

    def json(self, value: JsonValue) -> JsonValue:
        """A JSON value: keys, values, and whole values under secret-named keys."""
        return redact_json(value, self.policy, self.report)[0]

    def mapping(self, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """A JSON object (metadata, slots, arguments)."""
        out = self.json(value)
        assert isinstance(out, dict)  # an object stays an object
        return out

    def counts(self) -> dict[str, int]:
        """Kind -> count of what this write redacted."""
        return self.report.as_dict()
