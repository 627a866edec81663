"""What a secret *value* and a secret-naming *key* look like (the redaction gate's judgement).

The detectors in `secret_shapes` find a candidate (a value after `password=`, a word after
"token is", a cookie's value); these predicates decide whether it is a credential or ordinary
text: a placeholder (`<token>`, `${DB_PASSWORD}`, `***`), code (`get_password()`,
`self.password`), a path, a URL, a version string, a hex colour, a model name.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import math
import re
from collections import Counter
from typing import Literal

__all__ = [
    "KeyStrength",
    "basic_credentials",
    "code_like",
    "entropy",
    "key_strength",
    "password_value",
    "prose_password",
    "prose_token",
    "random_looking",
    "token_like",
    "unquoted_password",
]

KeyStrength = Literal["password", "secret", "weak"]

# Values that are already placeholders, templates or masks: never redacted again.
_PLACEHOLDER = re.compile(
    r"^(?:\[REDACTED:[a-z_]+(?::[0-9a-f]{6})?\]|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|\*+|•+|x+|X+"
    r"|\.\.\.|…|null|nil|none|None|NULL|true|false|True|False|changeme|change[-_]?me|redacted"
    r"|REDACTED|hidden|secret|password|passwd|pass|pwd|pw|token|example|placeholder|your[-_a-zA-Z]*|"
    r"\$[A-Z_][A-Z0-9_]*|%\([a-z_]+\)s|%s|\{[a-z_]*\}|x{3,}[-_a-zA-Z0-9]*)$"
)
# A value that refers to a secret held elsewhere: `<your password>`, `${DB_PASSWORD}`, `$PASS`.
_REFERENCE = re.compile(
    r"^(?:<|\$\{|\{\{|\$[A-Za-z_]|%\(|%[A-Z_]+%|os\.environ|os\.getenv|getenv|process\.env"
    r"|env\(|ENV\[|secrets\.|vault:|op://|arn:|projects/[^/]+/secrets/)"
)
# A call, a subscript or an attribute: code, not a credential (`get_password()`, `self.pw`).
_CODE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\s*[(\[]|(?:self|this|cls|os|sys|settings|config|conf|cfg|args|opts"
    r"|options|params|request|req|env|ctx|context|props|state|data|user)\.[A-Za-z_])"
)
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+(?:[-+.][0-9A-Za-z.\-]*)?$")
_HEX_COLOUR = re.compile(r"^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
_TOKEN_ALPHABET = re.compile(r"^[A-Za-z0-9+/=_\-.~]+$")
_PATH = re.compile(r"^(?:/|\./|\.\./|~/|[A-Za-z]:\\|\\\\)")
# Lower-case words and numbers joined by `-`, `_` or `.`: identifiers, model names, dates
# (`gpt-4o-mini`, `bert-base-uncased`, `2024-01-02`), not random tokens.
_WORDY = re.compile(r"^(?:[a-z]+\d*|\d+[a-z]{0,2})(?:[-_.:/](?:[a-z]+\d*|\d+[a-z]{0,2}))*$")


def entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _classes(value: str) -> int:
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return lower + upper + digit + symbol


def _letters_and_digits(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def code_like(value: str) -> bool:
    """A call, subscript, attribute or dotted name: code rather than a value."""
    return _CODE.match(value) is not None or _DOTTED.match(value) is not None


def _not_a_secret(value: str) -> bool:
    """Placeholders, references, code, URLs, paths, versions and colours."""
    return (
        _PLACEHOLDER.match(value) is not None
        or _REFERENCE.match(value) is not None
        or code_like(value)
        or "://" in value
        or _PATH.match(value) is not None
        or _VERSION.match(value) is not None
        or _HEX_COLOUR.match(value) is not None
    )


def password_value(secret: str) -> bool:
    """Anything given as a password, but a placeholder or a reference to one."""
    secret = secret.strip()
    return bool(secret) and not _PLACEHOLDER.match(secret) and not _REFERENCE.match(secret)


def unquoted_password(secret: str) -> bool:
    """`password: hunter2` is a password; `password: required` and `password: str` are not.

    A bare value after a colon or a spaced `=` must hold something besides letters, and must
    not be code (a call, a subscript, an attribute).
    """
    return password_value(secret) and not secret.isalpha() and not _not_a_secret(secret)


def random_looking(secret: str) -> bool:
    """A generic secret value: letters and digits mixed, and not a low-entropy word."""
    return _letters_and_digits(secret) and entropy(secret) >= 3.0 and not _PLACEHOLDER.match(secret)


def token_like(secret: str) -> bool:
    """A value under a key naming a secret (`api_key`, `SECRET_KEY`, `auth`): a token.

    At least 8 characters without spaces, not a placeholder, path, URL, version or code; and
    either letters and digits (12+ characters, or 3+ character classes: `django-insecure-`
    keys hold symbols), or 20+ characters of mixed-case base64 of high entropy.
    """
    if len(secret) < 8 or any(c.isspace() for c in secret) or _not_a_secret(secret):
        return False
    if _letters_and_digits(secret) and (len(secret) >= 12 or _classes(secret) >= 3):
        return True
    # Long base64 or base64url without a digit (rare, but a token all the same).
    return (
        len(secret) >= 20
        and _TOKEN_ALPHABET.match(secret) is not None
        and any(c.isupper() for c in secret)
        and any(c.islower() for c in secret)
        and entropy(secret) >= 3.5
    )


def prose_password(secret: str) -> bool:
    """A word after "the password is": a password only if it is not a word or a number."""
    if not 6 <= len(secret) <= 128 or _not_a_secret(secret):
        return False
    if secret.isdigit():
        return False
    return _letters_and_digits(secret) or _classes(secret) >= 3


def prose_token(secret: str) -> bool:
    """A word after "the token is" or "secret:": random-looking, not an identifier or a name."""
    return (
        len(secret) >= 16
        and _letters_and_digits(secret)
        and entropy(secret) >= 3.0
        and not _WORDY.match(secret)
        and not _not_a_secret(secret)
    )


def basic_credentials(secret: str) -> bool:
    """Base64 that decodes to printable `user:password` (HTTP Basic, Docker's `auth`)."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("utf-8", errors="replace")
    return ":" in text.strip(":") and text.isprintable() and "\ufffd" not in text


# Key names are split into words (snake, kebab, dot and camel case).
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "passcode", "pwd", "pw"})
_SECRET_WORDS = frozenset(
    {"secret", "secrets", "token", "credential", "credentials", "creds", "apikey", "privatekey"}
    | {"secretkey", "accesskey", "authtoken", "accesstoken", "refreshtoken", "idtoken"}
    | {"sessiontoken", "clientsecret", "passwords"}
)
# Words ending so name a secret too: `pgpassword`, `identitytoken`, `clientsecret`.
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey", "credentials")
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("auth", "key"), ("secret", "key")}
    | {("session", "key"), ("signing", "key"), ("encryption", "key"), ("master", "key")}
    | {("subscription", "key"), ("account", "key"), ("client", "key"), ("app", "key")}
    | {("x", "key"), ("license", "key"), ("consumer", "key"), ("webhook", "key")}
)
# Weak names hold a secret only when the value looks like one, and only as the last word.
_WEAK_WORDS = frozenset(
    {"auth", "pass", "sig", "signature", "cookie", "authorization", "bearer", "jwt", "session"}
    | {"sessionid", "sid"}
)
# A key that only *describes* a secret (`token_type`, `password_policy`) holds none.
_DESCRIPTIVE_WORDS = frozenset(
    {"type", "count", "limit", "len", "length", "budget", "id", "ids", "name", "file", "path"}
    | {"url", "uri", "expires", "expiry", "expiration", "ttl", "kind", "usage", "used", "policy"}
    | {"rotation", "endpoint", "format", "hint", "prompt", "label", "field", "header", "env"}
    | {"var", "ref", "arn", "hash", "min", "max", "rule", "rules", "required", "reset", "at"}
    | {"scope", "scopes", "prefix", "suffix", "version", "source", "store", "provider", "mode"}
    | {"method", "status", "enabled", "strength", "description", "placeholder", "location"}
    | {"created", "updated", "expired", "issued", "lifetime", "timeout", "size", "bits", "alg"}
    | {"algorithm", "manager", "storage", "dir", "folder", "command", "cmd", "helper", "help"}
    | {"mask", "masked", "regex", "pattern", "index", "position", "offset", "page", "cursor"}
    | {"chars", "characters", "words", "tokens", "estimate", "estimated", "ratio", "cost"}
    | {"input", "output", "total", "per", "rate", "num", "number", "digest", "fingerprint"}
    | {"changed", "valid", "invalid", "error", "errors", "missing", "set", "is", "has"}
)


def key_strength(key: str) -> KeyStrength | None:
    """Whether a key names a secret: `password`/`pw` (password), `api_key` (secret), `auth` (weak).

    `aws_secret_access_key`, `SecretAccessKey`, `apiKey`, `X-Api-Key`, `identitytoken`: secret;
    `token_type`, `password_policy`, `tokenizer`, `max_tokens`: None. Weak names (`auth`,
    `pass`, `cookie`, `sig`) count only as the key's last word, and their value must look like
    a token.
    """
    words = [w.lower() for w in _WORD.findall(key[:200])]
    if not words:
        return None
    last = words[-1]
    if last in _DESCRIPTIVE_WORDS:
        return None
    if any(w in _PASSWORD_WORDS or w.endswith(("password", "passwd")) for w in words):
        return "password"
    if any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words):
        return "secret"
    if any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words)):
        return "secret"
    return "weak" if last in _WEAK_WORDS else None
