"""The redaction gate: credentials are replaced by `[REDACTED:<kind>]` before anything is stored.

Every service that stores text or JSON passes it through a `Redactor` (memories, learn keys,
scratchpad, preferences, playbooks, business documents, conversations, imports), so one table
below decides what counts as a credential everywhere.

Pure functions over strings. Each detector aims at a credential *shape*: a distinctive prefix
or structure (a PEM block, `AKIA...`, `ghp_...`, `scheme://user:pass@host`), or a value assigned
to a key that names a secret (`password=...`, `"SecretAccessKey": "..."`). Ordinary prose,
hashes, UUIDs and git SHAs are left alone (tests/unit/test_redaction.py holds the positive and
negative table). The rules follow the common ones of gitleaks and detect-secrets; neither is used
as a library: both scan files and report lines, not spans to replace, and detect-secrets pulls
in requests and PyYAML for plugins we would not use.

Keys (a `learn` key, a metadata key) get a short hash of the secret in their placeholder,
`[REDACTED:<kind>:1a2b3c]`, so two different secrets used as keys stay two keys. Text keeps the
plain marker: a hash of a weak password would let anyone holding the text confirm a guess.
The report says which kinds were found and how often, never what they were.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

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

SecretKind = Literal[
    "private_key",
    "aws_access_key",
    "aws_secret_key",
    "azure_storage_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "anthropic_key",
    "openai_key",
    "stripe_key",
    "google_api_key",
    "google_oauth_token",
    "npm_token",
    "pypi_token",
    "huggingface_token",
    "sendgrid_key",
    "jwt",
    "bearer_token",
    "basic_auth",
    "url_password",
    "password",
    "secret_value",
]
SECRET_KINDS: tuple[SecretKind, ...] = get_args(SecretKind)

# Mixed case plus a digit: real provider keys are random, hyphenated English words are not.
# Bounded: unbounded lookaheads rescan a long run of candidates at every start (quadratic:
# 100k characters of "sk-sk-..." took 35 s); a real key shows all three within 200 chars.
_RANDOM = (
    r"(?=[A-Za-z0-9_\-]{0,200}[0-9])(?=[A-Za-z0-9_\-]{0,200}[A-Z])(?=[A-Za-z0-9_\-]{0,200}[a-z])"
)
# What may follow a key name before its value: a closing quote, then `:`, `=` or `=>`, then an
# opening quote.
_ASSIGN = r"[\"']?\s*(?:=>|:=|[:=])\s*"
# A key naming a password, right before its value (`DB_PASSWORD=`, not `PASSWORD_FILE=`).
# The lookbehind keeps a keyed marker (`[REDACTED:password:1a2b3c]`) from matching again.
_PASSWORD_NAME = r"(?<!\[REDACTED:)(?i:password|passwd|passphrase|pwd)"
# A key naming some other secret: `api_key`, `client_secret`, `SessionToken`, `auth_token`...
# Bounded repeats: an unbounded one would make a long identifier run quadratic to scan.
_SECRET_NAME = (
    r"(?<!\[REDACTED:)(?i:secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
    r"|auth[_\-]?key|credentials?|signature)[A-Za-z0-9_\-]{0,40}"
)
# JSON keys are split into words (snake, kebab, dot and camel case); these words name a secret.
_SECRET_WORDS = frozenset(
    {"password", "passwd", "passphrase", "pwd", "secret", "token", "credential", "credentials"}
    | {"apikey", "signature"}
)
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("auth", "key")})
# A key that only *describes* a secret (`token_type`, `password_policy`) holds none.
_DESCRIPTIVE_WORDS = frozenset(
    {"type", "count", "limit", "len", "length", "budget", "id", "name", "file", "path", "url"}
    | {"uri", "expires", "expiry", "expiration", "ttl", "kind", "usage", "used", "policy"}
    | {"rotation", "endpoint", "format", "hint", "prompt", "label", "field", "header", "env"}
    | {"var", "ref", "arn", "hash", "min", "max", "rule", "rules", "required", "reset"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Values that are already placeholders, templates or masks: never redacted again.
_PLACEHOLDER = re.compile(
    r"^(?:\[REDACTED:[a-z_]+(?::[0-9a-f]{6})?\]|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|\*+|x+|X+|\.\.\.|"
    r"null|none|None|true|false|changeme|redacted|REDACTED|\$[A-Z_][A-Z0-9_]*|%\([a-z_]+\)s)$"
)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_looking(secret: str) -> bool:
    """A generic secret value: letters and digits mixed, and not a low-entropy word."""
    has_digit = any(c.isdigit() for c in secret)
    has_alpha = any(c.isalpha() for c in secret)
    return has_digit and has_alpha and _entropy(secret) >= 3.0 and not _PLACEHOLDER.match(secret)


# A value that refers to a secret held elsewhere: `<your password>`, `${DB_PASSWORD}`, `$PASS`.
_REFERENCE = re.compile(r"^(?:<|\$\{|\{\{|\$[A-Za-z_]|%\(|os\.environ|process\.env|env\()")


def _password_value(secret: str) -> bool:
    return not _PLACEHOLDER.match(secret) and not _REFERENCE.match(secret)


def _unquoted_password(secret: str) -> bool:
    # `password: required` is prose; `password: hunter2` is not. A bare value after a colon
    # must hold something besides letters.
    return _password_value(secret) and not secret.isalpha()


def _basic_credentials(secret: str) -> bool:
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("utf-8", errors="replace")
    return ":" in text and text.isprintable() and "\ufffd" not in text


def _not_a_port(secret: str) -> bool:
    # `http://host:8080/a@b` is a port and a path, not a password.
    return re.match(r"^\d{1,5}(?:/|$)", secret) is None


@dataclass(frozen=True)
class _Detector:
    """A credential shape: its group "secret" (else the whole match) is replaced.

    The pattern is compiled at its first use: most writes trigger a few detectors (see
    _TRIGGERS), and compiling all of them cost every cold process that imports the gate
    (a Claude Code hook, `memstrata stats`) ~10 ms.
    """

    kind: SecretKind
    source: str
    accept: Callable[[str], bool] | None = None

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return re.compile(self.source)


# Order matters where shapes overlap: Anthropic keys start with `sk-` too, a JWT after `Bearer`
# is reported as a JWT, and a provider token assigned to `api_key=` is reported by provider.
_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        (
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?!-----BEGIN )[\s\S]){0,20000}?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    _Detector(
        "aws_access_key",
        (
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}"
            r"(?![A-Za-z0-9])"
        ),
    ),
    _Detector(
        "aws_secret_key",
        # The shell/INI form and the JSON of `aws sts get-session-token` / `aws configure
        # export-credentials` (SecretAccessKey, SessionToken).
        (
            r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key|aws_?session_?token"
            r"|session_?token)"
            rf"{_ASSIGN}[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40,1200})(?![A-Za-z0-9/+=])"
        ),
    ),
    _Detector(
        "azure_storage_key",
        # Azure Storage connection strings: `AccountKey=` and 88 characters of base64.
        r"(?i:accountkey)\s*=\s*(?P<secret>[A-Za-z0-9+/]{40,120}={0,2})(?![A-Za-z0-9+/=])",
    ),
    _Detector(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})\b",
    ),
    _Detector("gitlab_token", r"\bgl(?:pat|dt|rt|cbt|ptt|soat)-[A-Za-z0-9_\-]{20,}"),
    _Detector("slack_token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
    _Detector(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}",
    ),
    _Detector("anthropic_key", r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_\-]{20,}"),
    _Detector("openai_key", rf"\bsk-(?:proj-|svcacct-|admin-)?{_RANDOM}[A-Za-z0-9_\-]{{20,}}"),
    _Detector(
        "stripe_key",
        # API keys, and webhook signing secrets (`whsec_`).
        r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/]{24,}=*)",
    ),
    _Detector("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _Detector("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    _Detector("npm_token", r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _Detector("pypi_token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    _Detector("huggingface_token", rf"\bhf_{_RANDOM}[A-Za-z0-9]{{30,}}(?![A-Za-z0-9])"),
    _Detector("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9])"),
    _Detector(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    _Detector(
        "bearer_token",
        r"(?i:\bbearer)\s+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{20,}=*)",
    ),
    _Detector(
        "bearer_token",
        # `Authorization: Token 9944b0...` (Django REST framework, GitHub's old form) and
        # `Authorization: ApiKey ...`: any scheme but Basic and Bearer, which have their own.
        (
            r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:token|api-?key|key|sso-key)\s+"
            r"(?P<secret>(?=[A-Za-z0-9\-._~+/:]*[0-9])[A-Za-z0-9\-._~+/:]{16,}=*)"
        ),
    ),
    _Detector(
        "basic_auth",
        # `Authorization: Basic dXNlcjpwYXNz`: only when the value decodes to `user:password`.
        r"(?i:\bbasic)\s+(?P<secret>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
        _basic_credentials,
    ),
    _Detector(
        "basic_auth",
        # `curl -u user:password`
        r"(?:^|\s)(?:-u|--user)\s+[^\s:]{1,256}:(?P<secret>[^\s\"']{1,256})",
        _password_value,
    ),
    _Detector(
        "url_password",
        # scheme://[user]:password@host: only the password goes, the rest stays readable. The
        # password may hold `/` or `@` (the greedy match runs to the last `@` before the host).
        (
            r"(?<=[A-Za-z0-9])://[^\s:/@]{0,256}:(?P<secret>[^\s]{1,256})@"
            r"(?=[A-Za-z0-9\[][^\s@]*(?:[\s\"'<>]|$))"
        ),
        _not_a_port,
    ),
    _Detector(
        "password",
        # password="...", 'password': '...', "password": "..." (quoted: anything up to the quote)
        rf"{_PASSWORD_NAME}[\"']?\s*(?:=>|:=|[:=])\s*\"(?P<secret>[^\"\n]{{1,512}})\"",
        _password_value,
    ),
    _Detector(
        "password",
        rf"{_PASSWORD_NAME}[\"']?\s*(?:=>|:=|[:=])\s*'(?P<secret>[^'\n]{{1,512}})'",
        _password_value,
    ),
    _Detector(
        "password",
        # PASSWORD=hunter2, --password=hunter2 (shell and .env form: no spaces around `=`).
        # Code is not a credential: `password = get_password()`, `self.password = password`
        # (spaces), `password=request.form["password"]` (a call or subscript), and `PWD=/home`
        # (the shell's working directory: bare `pwd` is left out of this form).
        (
            r"(?<!\[REDACTED:)(?i:password|passwd|passphrase)="
            r"(?![A-Za-z_][\w.]*[(\[])(?P<secret>[^\s\"',;&]{1,512})"
        ),
        _password_value,
    ),
    _Detector(
        "password",
        # `mysql -u root -pS3cret`: the MySQL clients take the password glued to `-p` (a bare
        # `-p` prompts for it, and `-P` is the port).
        (
            r"(?i:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)(?![\w-])"
            r"[^\n|;&]{0,200}?\s-p(?P<q>[\"']?)(?P<secret>[^\s\"']{1,256})(?P=q)(?=\s|$)"
        ),
        _password_value,
    ),
    _Detector(
        "password",
        # password: hunter2 (YAML or prose form: a value with something besides letters)
        rf"{_PASSWORD_NAME}[\"']?\s*:\s*(?P<secret>[^\s\"',;&]{{1,512}})",
        _unquoted_password,
    ),
    _Detector(
        "secret_value",
        # api_key = "...", client_secret: ..., "auth_token": "..." with a random-looking value.
        (
            rf"{_SECRET_NAME}{_ASSIGN}[\"']?"
            r"(?P<secret>[A-Za-z0-9/+_\-.~=]{16,1024})(?![A-Za-z0-9/+_\-.~=])"
        ),
        _random_looking,
    ),
)


# Lower-case text a detector's match must contain: a detector whose triggers are all absent
# is skipped (one C-speed `in` instead of a regex walk over every position). For the kinds in
# _ANCHORED every match *starts* at a trigger, so the pattern is tried at those offsets only:
# a 5 MB document is scanned at its few "password"/"token" words, not at 5 million places.
_TRIGGERS: dict[SecretKind, tuple[str, ...]] = {
    "private_key": ("private key",),
    "aws_access_key": (
        "akia",
        "asia",
        "agpa",
        "aida",
        "aroa",
        "aipa",
        "anpa",
        "anva",
        "abia",
        "acca",
    ),
    "aws_secret_key": ("aws", "secret", "session"),
    "azure_storage_key": ("accountkey",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glsoat-"),
    "slack_token": ("xox",),
    "slack_webhook": ("hooks.slack.com",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("_live_", "_test_", "whsec_"),
    "google_api_key": ("aiza",),
    "google_oauth_token": ("ya29.",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-",),
    "huggingface_token": ("hf_",),
    "sendgrid_key": ("sg.",),
    "jwt": ("eyj",),
    "bearer_token": ("bearer", "authorization"),
    "basic_auth": ("basic", "-u", "--user"),
    "url_password": ("://",),
    "password": ("pass", "pwd", "mysql", "mariadb"),
    "secret_value": (
        *("secret", "token", "api", "access", "private", "auth", "credential", "signature"),
    ),
}
_ANCHORED: frozenset[SecretKind] = frozenset(
    {
        "aws_secret_key",
        "azure_storage_key",
        "bearer_token",
        "password",
        "secret_value",
        "url_password",
    }
)


_TRIGGER_KINDS: tuple[tuple[str, SecretKind], ...] = tuple(
    (trigger, kind) for kind, triggers in _TRIGGERS.items() for trigger in triggers
)


def _starts(lowered: str, triggers: tuple[str, ...]) -> list[int]:
    """Every offset where a trigger starts, in order."""
    found: set[int] = set()
    for trigger in triggers:
        at = lowered.find(trigger)
        while at != -1:
            found.add(at)
            at = lowered.find(trigger, at + 1)
    return sorted(found)


def _anchored_sub(
    pattern: re.Pattern[str], text: str, starts: list[int], replace: Callable[[re.Match[str]], str]
) -> str:
    """`pattern.sub(replace, text)` for a pattern whose matches begin at one of `starts`."""
    out: list[str] = []
    last = 0
    for at in starts:
        if at < last:
            continue  # inside the previous match
        match = pattern.match(text, at)
        if match is None:
            continue
        out.append(text[last : match.start()])
        out.append(replace(match))
        last = match.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


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
    present = {kind for trigger, kind in _TRIGGER_KINDS if trigger in lowered}
    for detector in _DETECTORS:
        kind = detector.kind
        if kind not in present or kind not in policy.kinds:
            continue
        triggers = _TRIGGERS[kind]

        def replace(match: re.Match[str], detector: _Detector = detector) -> str:
            has_group = "secret" in match.re.groupindex
            secret = match.group("secret") if has_group else match.group(0)
            if "[REDACTED:" in secret:  # an earlier detector took it out already
                return match.group(0)
            if detector.accept is not None and not detector.accept(secret):
                return match.group(0)
            report.counts[detector.kind] += 1
            marker = _marker(detector.kind, secret if keyed else None)
            if not has_group:
                return marker
            whole, offset = match.group(0), match.start()
            start, end = match.span("secret")
            return whole[: start - offset] + marker + whole[end - offset :]

        if kind in _ANCHORED and aligned:
            changed = _anchored_sub(detector.pattern, text, _starts(lowered, triggers), replace)
        else:
            changed = detector.pattern.sub(replace, text)
        if changed != text:
            text = changed
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


def _names_a_secret(key: str) -> bool:
    """`aws_secret_access_key`, `SecretAccessKey`, `apiKey`, `password`: yes; `token_type`: no."""
    words = [w.lower() for w in _WORD.findall(key[:200])]
    if not words or words[-1] in _DESCRIPTIVE_WORDS:
        return False
    return any(w in _SECRET_WORDS for w in words) or any(
        pair in _SECRET_PAIRS for pair in itertools.pairwise(words)
    )


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


def _redact_json(value: JsonValue, policy: RedactionPolicy, report: Redaction) -> JsonValue:
    if isinstance(value, str):
        return _redact(value, policy, report, keyed=False)
    if isinstance(value, list):
        return [_redact_json(v, policy, report) for v in value]
    if isinstance(value, dict):
        out: dict[str, JsonValue] = {}
        for k, v in value.items():
            key = _redact(k, policy, report, keyed=True)
            out[key] = _secret_field(k, v, policy, report)
        return out
    return value


def _secret_field(
    key: str, value: JsonValue, policy: RedactionPolicy, report: Redaction
) -> JsonValue:
    if not (isinstance(value, str) and value.strip() and _names_a_secret(key)):
        return _redact_json(value, policy, report)
    redacted = _redact(value, policy, report, keyed=False)
    if redacted != value or _PLACEHOLDER.match(value.strip()):
        return redacted  # a detector already took the secret out (or there is none)
    password = re.search(_PASSWORD_NAME, key) is not None
    kind: SecretKind = "password" if password else "secret_value"
    if kind not in policy.kinds:
        return value
    report.counts[kind] += 1
    return _marker(kind, None)


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
