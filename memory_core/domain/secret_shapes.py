"""The credential shapes the redaction gate knows, each written from its format's own definition.

Two families:

- **Issued tokens**, whose issuer documents a prefix and an alphabet: GitHub (`ghp_`, `gho_`,
  `ghu_`, `ghs_`, `ghr_` + 36 of [A-Za-z0-9], `github_pat_`; up to 255 characters, per GitHub's
  2021 token-format change), GitLab (the prefix table of its secret detection: `glpat-`,
  `gldt-`, `glrt-`, `glcbt-`, `glptt-`, `glft-`, `glimt-`, `gloas-`, `glagent-`, `glffct-`,
  `glsoat-`), Slack (bot/user/config/refresh tokens `xox?-`, `xoxe.xoxp-`, app-level tokens
  `xapp-<n>-`), Stripe (`sk_`/`rk_`/`pk_` + `live`/`test`, up to 128 characters; `whsec_`),
  OpenAI (`sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-`), Anthropic (`sk-ant-<kind><nn>-`), npm
  (`npm_` + 36), PyPI (a macaroon: `pypi-AgE...`), Hugging Face (`hf_`, `api_org_`), SendGrid
  (`SG.<22>.<43>`), AWS (the IAM unique-ID prefixes of access keys: AKIA, ASIA, ABIA, ACCA...),
  Google (`AIza` + 35, `ya29.`, `1//0` refresh tokens, `GOCSPX-` client secrets), Azure (Entra
  client secrets `<3><digit>Q~<31-34>`, DevOps PATs with the `AZDO` signature, storage and
  Service Bus `AccountKey=`/`SharedAccessKey=`, SAS `sig=`), Twilio (API key SIDs `SK` + 32
  hex), JWTs (`eyJ<header>.eyJ<payload>.<sig>`), PEM private keys (RFC 7468 labels), their
  base64 (Kubernetes `client-key-data`), PuTTY `Private-Lines`, age (`AGE-SECRET-KEY-1`), and
  the prefixed tokens of DigitalOcean, Shopify, Databricks, HashiCorp Vault and Terraform
  Cloud, Doppler, Pulumi, Grafana, New Relic, Sentry, Linear, Postman, Atlassian, Notion,
  Supabase, Groq, Replicate, Perplexity, xAI, OpenRouter, Mailgun, Mailchimp, Square, Telegram
  bots, Discord webhooks, Heroku, Fly.io, Netlify, Dropbox and Mapbox.
- **Secrets by position** in a grammar: a value assigned to a key that names a secret (`.env`,
  INI/TOML/YAML/properties, JSON and Python literals, XML elements, PHP `define`, URL query
  parameters, CLI `--password X`), the `.netrc` grammar (`machine h login u password p`, a
  `password p` line), `.pgpass` lines, Docker's `"auth": "<base64 user:password>"`, HTTP
  headers (`Authorization: <scheme> <token68>` per RFC 7235, `Cookie`/`Set-Cookie` values,
  `X-Api-Key` and the like), URLs with credentials (RFC 3986 userinfo), the MySQL clients'
  `-pSECRET`, `curl -u`, `sshpass -p`; and a conservative rule for prose: "the staging DB
  password is X", "secret: X", "token = X" where X looks like a token.

Each detector names the lower-case text its match must contain (`triggers`); when a match
*starts* at a trigger (`anchored`), the pattern is tried at those offsets only.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, get_args

from memory_core.domain import secret_values as values

__all__ = ["DETECTORS", "SECRET_KINDS", "Detector", "SecretKind", "SecretSpan"]

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
    "provider_token",
    "jwt",
    "bearer_token",
    "basic_auth",
    "cookie",
    "url_password",
    "password",
    "secret_value",
]
SECRET_KINDS: tuple[SecretKind, ...] = get_args(SecretKind)

# (kind, start, end) of one secret, in the scanned text.
SecretSpan = tuple[SecretKind, int, int]
Judge = Callable[[re.Match[str]], list[SecretSpan]]


@dataclass(frozen=True)
class Detector:
    """A credential shape.

    Without `judge`, the group "secret" (else the whole match) is the secret when `accept`
    (if any) says so. A `judge` decides from the whole match and returns the spans to
    replace, each with its kind (a `password=` rule reports `password` or `secret_value`).

    The pattern is compiled at its first use: most writes trigger a few detectors, and
    compiling all of them would cost every cold process that imports the gate (a hook).
    """

    kind: SecretKind
    source: str
    triggers: tuple[str, ...]
    anchored: bool = False
    accept: Callable[[str], bool] | None = None
    judge: Judge | None = None

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return re.compile(self.source)

    def spans(self, match: re.Match[str]) -> list[SecretSpan]:
        """The secrets in `match`."""
        if self.judge is not None:
            return self.judge(match)
        group = "secret" if "secret" in match.re.groupindex else 0
        secret = match.group(group)
        if secret is None or (self.accept is not None and not self.accept(secret)):
            return []
        return [(self.kind, match.start(group), match.end(group))]


def _token(
    kind: SecretKind,
    source: str,
    *triggers: str,
    accept: Callable[[str], bool] | None = None,
    anchored: bool = True,
) -> Detector:
    """An issued token: a documented prefix and alphabet.

    Anchored (the default) when every match starts at one of its triggers (the prefix).
    """
    return Detector(
        kind, source, tuple(t.lower() for t in triggers), anchored=anchored, accept=accept
    )


def _mixed_case(secret: str) -> bool:
    return any(c.isupper() for c in secret) and any(c.islower() for c in secret)


def _has_digit(secret: str) -> bool:
    return any(c.isdigit() for c in secret)


def _random_tail(secret: str) -> bool:
    # A prefixed token's random part: not a run of one word (`hf_your_token_here` has `_`).
    return _has_digit(secret) or _mixed_case(secret)


# Mixed case plus a digit: real provider keys are random, hyphenated English words are not.
# Bounded: unbounded lookaheads rescan a long run of candidates at every start (quadratic).
_RANDOM = (
    r"(?=[A-Za-z0-9_\-]{0,200}[0-9])(?=[A-Za-z0-9_\-]{0,200}[A-Z])(?=[A-Za-z0-9_\-]{0,200}[a-z])"
)
_END = r"(?![A-Za-z0-9_\-])"

_PROVIDER_TOKENS: tuple[Detector, ...] = (
    _token(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})\b",
        *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _token(
        "gitlab_token",
        # Optional instance prefix (`SIE-glpat-`); the newer PATs carry `.<2>.<n>` routing parts.
        (
            r"\bgl(?:pat|dt|rtr?|cbt|ptt|soat|ft|imt|oas|agent|ffct|wt)-"
            r"[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]{2,}){0,3}"
            r"|\bGR1348941[A-Za-z0-9_\-]{20,}"
        ),
        *("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glsoat-", "glft-", "glimt-"),
        *("gloas-", "glagent-", "glffct-", "glwt-", "gr1348941"),
    ),
    _token(
        "slack_token",
        (
            r"\b(?:xox[abposrec]-[A-Za-z0-9\-]{10,}|xoxe\.xox[bp]-\d-[A-Za-z0-9\-]{10,}"
            r"|xapp-\d-[A-Za-z0-9\-]{10,})"
        ),
        "xox",
        "xapp-",
    ),
    _token(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|triggers|workflows)/[A-Za-z0-9_/\-]{20,}",
        "hooks.slack.com",
        anchored=False,
    ),
    _token(
        "anthropic_key",
        r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_\-]{20,}",
        "sk-ant-",
    ),
    _token(
        "openai_key",
        rf"\bsk-(?:proj-|svcacct-|admin-|None-)?{_RANDOM}[A-Za-z0-9_\-]{{20,}}",
        "sk-",
    ),
    _token(
        "stripe_key",
        r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,247}|whsec_[A-Za-z0-9+/]{24,}=*)",
        *("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_", "whsec_"),
    ),
    _token("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}" + _END, "aiza"),
    _token(
        "google_oauth_token",
        r"\bya29\.[0-9A-Za-z_\-]{20,}|(?<![\w/])1//0[0-9A-Za-z_\-]{30,}",
        "ya29.",
        "1//0",
    ),
    _token("npm_token", r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    _token("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-age"),
    _token(
        "huggingface_token",
        # User access tokens (`hf_`) and the deprecated organization API tokens (`api_org_`).
        r"\b(?:hf|api_org)_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])",
        "hf_",
        "api_org_",
        accept=lambda s: _random_tail(s.split("_")[-1]),
    ),
    _token(
        "sendgrid_key",
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9])",
        "sg.",
    ),
    _token(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        "eyj",
    ),
    _token(
        "azure_storage_key",
        # Azure Storage / Service Bus / Event Hubs connection strings.
        (
            r"(?i:accountkey|sharedaccesskey)\s*=\s*"
            r"(?P<secret>[A-Za-z0-9+/]{40,120}={0,2})(?![A-Za-z0-9+/=])"
        ),
        "accountkey",
        "sharedaccesskey",
    ),
    _token(
        "azure_storage_key",
        # A shared access signature's `sig=` (URL-encoded base64 of an HMAC-SHA256).
        r"(?<=[?&;])sig=(?P<secret>[A-Za-z0-9%+/=]{30,})",
        "sig=",
    ),
    _token(
        "provider_token",
        # Microsoft Entra client secrets: 3 characters, a digit, `Q~`, then 31-34.
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        "q~",
        anchored=False,
    ),
    _token(
        "provider_token",
        # Azure DevOps PATs: 84 characters with the `AZDO` signature at 76-79.
        r"\b[A-Za-z0-9]{52}JQQJ99[A-Za-z0-9]{18}AZDO[A-Za-z0-9]{4}\b",
        "azdo",
        anchored=False,
    ),
    _token("provider_token", r"\bSK[0-9a-fA-F]{32}\b", "sk", accept=_has_digit),  # Twilio
    _token(
        "provider_token",
        (
            r"\b(?:do[opr]_v1_[a-f0-9]{64}"  # DigitalOcean
            r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"  # Shopify
            r"|dapi[a-f0-9]{32}(?:-\d)?"  # Databricks
            r"|hv[sbr]\.[A-Za-z0-9_\-]{24,}"  # HashiCorp Vault
            r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"  # Doppler
            r"|pul-[a-f0-9]{40}"  # Pulumi
            r"|glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"  # Grafana
            r"|NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9\-]{32}"  # New Relic
            r"|sntry[su]_[A-Za-z0-9+/=_]{40,}"  # Sentry
            r"|lin_(?:api|oauth)_[A-Za-z0-9]{40}"  # Linear
            r"|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"  # Postman
            r"|ATATT3[A-Za-z0-9_\-=]{150,}"  # Atlassian API tokens
            r"|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}"  # Notion
            r"|sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,}"  # Supabase
            r"|gsk_[A-Za-z0-9]{48,}"  # Groq
            r"|r8_[A-Za-z0-9]{37}"  # Replicate
            r"|pplx-[A-Za-z0-9]{40,}"  # Perplexity
            r"|xai-[A-Za-z0-9]{60,}"  # xAI
            r"|sk-or-v1-[a-f0-9]{64}"  # OpenRouter
            r"|sk-[a-f0-9]{32}"  # DeepSeek and other OpenAI-compatible APIs
            r"|key-[a-f0-9]{32}"  # Mailgun
            r"|EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43}"  # Square
            r"|HRKU-[A-Za-z0-9_\-]{30,}"  # Heroku
            r"|fo1_[A-Za-z0-9_\-]{40,}|fm[12][ar]?_[A-Za-z0-9+/=_\-]{60,}"  # Fly.io
            r"|nfp_[A-Za-z0-9]{36}"  # Netlify
            r"|sl\.[A-Za-z0-9_\-]{130,}"  # Dropbox
            r"|sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"  # Mapbox secret tokens
            r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"  # LangSmith
            r"|tvly-[A-Za-z0-9]{30,}"  # Tavily
            r")(?![A-Za-z0-9_\-])"
        ),
        *("do_v1_", "dop_v1_", "doo_v1_", "dor_v1_", "shpat_", "shpca_", "shppa_", "shpss_"),
        *("dapi", "hvs.", "hvb.", "hvr.", "dp.", "pul-", "glc_", "glsa_", "nrak-"),
        *("nrii-", "sntrys_", "sntryu_", "lin_", "pmak-", "atatt3", "ntn_", "secret_", "sbp_"),
        *("sb_secret_", "gsk_", "r8_", "pplx-", "xai-", "sk-", "key-", "eaaa", "sq0"),
        *("hrku-", "fo1_", "fm1", "fm2", "nfp_", "sl.", "sk.eyj", "lsv2_", "tvly-"),
        accept=lambda s: _has_digit(s) or _mixed_case(s),
    ),
    _token(
        "provider_token",
        r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}",  # Terraform Cloud / Enterprise
        ".atlasv1.",
        anchored=False,
    ),
    _token(
        "provider_token",
        r"\b[a-f0-9]{32}-us\d{1,2}\b",  # Mailchimp: 32 hex and the data centre
        "-us",
        anchored=False,
    ),
    _token(
        "provider_token",
        # Telegram bot tokens: the bot's numeric id, `:`, then 35 characters starting `AA`.
        r"\b\d{6,12}:AA[A-Za-z0-9_\-]{30,40}(?![A-Za-z0-9_\-])",
        ":aa",
        anchored=False,
    ),
    _token(
        "provider_token",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}",
        "/api/webhooks/",
        anchored=False,
    ),
)


def _pem_in_base64(secret: str) -> bool:
    head = secret[:80]
    try:
        decoded = base64.b64decode(head[: len(head) - len(head) % 4])  # whole 4-char groups
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in decoded


_PRIVATE_KEYS: tuple[Detector, ...] = (
    Detector(
        "private_key",
        (
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?!-----BEGIN )[\s\S]){0,20000}?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        ("private key",),
    ),
    # The same, base64-encoded whole (Kubernetes `client-key-data`, `tls.key` in a Secret).
    _token(
        "private_key",
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}",
        "ls0tls1crudjti",
        accept=_pem_in_base64,
    ),
    # PuTTY .ppk files: the private part follows `Private-Lines: <n>`.
    Detector(
        "private_key",
        (
            r"Private-Lines:[ \t]*\d+[ \t]*\r?\n"
            r"(?P<secret>(?:[A-Za-z0-9+/=]{1,128}(?:\r?\n|$)){1,200})"
        ),
        ("private-lines:",),
        anchored=True,
    ),
    _token("private_key", r"\bAGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}\b", "age-secret-key-1"),
)


def _aws_pair(match: re.Match[str]) -> list[SecretSpan]:
    """A 40-character secret access key near an access key id, whatever words separate them."""
    for candidate in re.finditer(
        r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", match.group("window")
    ):
        secret = candidate.group()
        if _has_digit(secret) and _mixed_case(secret):
            start = match.start("window") + candidate.start()
            return [("aws_secret_key", start, start + 40)]
    return []


_AWS: tuple[Detector, ...] = (
    Detector(
        "aws_secret_key",
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])(?P<window>[\s\S]{0,240})",
        ("akia", "asia", "abia", "acca"),
        anchored=True,
        judge=_aws_pair,
    ),
    _token(
        "aws_access_key",
        (
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA|APKA|ASCA)"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        *("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"),
        *("apka", "asca"),
    ),
    Detector(
        "aws_secret_key",
        # The shell/INI form and the JSON of `aws sts get-session-token` (SecretAccessKey,
        # SessionToken).
        (
            r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key|aws_?session_?token"
            r"|session_?token)"
            r"[\"']?\s*(?:=>|:=|[:=])\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40,1200})(?![A-Za-z0-9/+=])"
        ),
        ("aws", "secret", "session"),
        anchored=True,
    ),
)

# ---------------------------------------------------------------- HTTP headers and URLs

_TOKEN68 = r"[A-Za-z0-9\-._~+/]+=*"


def _authorization(match: re.Match[str]) -> list[SecretSpan]:
    """`Authorization: <scheme> <credentials>` (RFC 7235): Basic is checked by decoding."""
    scheme = match.group("scheme").lower()
    secret = match.group("secret")
    start, end = match.span("secret")
    if scheme == "basic":
        ok = values.basic_credentials(secret) or values.token_like(secret)
        return [("basic_auth", start, end)] if ok else []
    if scheme in {"digest", "negotiate", "ntlm", "hoba", "mutual", "vapid"}:
        return []
    if len(secret) >= 12 and (values.token_like(secret) or values.random_looking(secret)):
        return [("bearer_token", start, end)]
    return []


_ATTRIBUTES = frozenset(
    {"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority"}
    | {"partitioned", "version", "comment"}
)
_SESSION_NAMES = re.compile(r"(?i)sess|sid|auth|token|jwt|remember|login|csrf|xsrf|key|secret")


def _cookies(match: re.Match[str]) -> list[SecretSpan]:
    """Each cookie value of a `Cookie:`/`Set-Cookie:` line that is a session or a token."""
    spans: list[SecretSpan] = []
    base = match.start("secret")
    for pair in re.finditer(r"([^=;\s]{1,128})=([^;\s]{1,4096})", match.group("secret")):
        name, value = pair.group(1), pair.group(2).strip("\"'")
        if name.lower() in _ATTRIBUTES or not values.password_value(value):
            continue
        token = len(value) >= 16 and values.random_looking(value)
        session = _SESSION_NAMES.search(name) is not None and len(value) >= 8
        if (token or session) and not values.code_like(value):
            spans.append(("cookie", base + pair.start(2), base + pair.end(2)))
    return spans


def _url_password(secret: str) -> bool:
    # `http://host:8080/a@b` is a port and a path, not a password; `user:pass@host` in a
    # document is a placeholder.
    return (
        len(secret) > 1
        and re.match(r"^\d{1,5}(?:/|$)", secret) is None
        and values.password_value(secret)
    )


_HTTP: tuple[Detector, ...] = (
    Detector(
        "bearer_token",
        r"(?i:\bbearer)\s+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{20,}=*)",
        ("bearer",),
        anchored=True,
    ),
    Detector(
        "bearer_token",
        (
            r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?P<scheme>[A-Za-z][A-Za-z0-9_\-]{1,30})"
            rf"[ \t]+(?P<secret>{_TOKEN68})"
        ),
        ("authorization",),
        anchored=True,
        judge=_authorization,
    ),
    Detector(
        "basic_auth",
        # `Basic dXNlcjpwYXNz` anywhere: only when the value decodes to `user:password`.
        r"(?i:\bbasic)\s+(?P<secret>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
        ("basic",),
        anchored=True,
        accept=values.basic_credentials,
    ),
    Detector(
        "cookie",
        r"(?<![A-Za-z0-9_])(?i:cookie)[\"']?[ \t]*:[ \t]*(?P<secret>[^\n\"'\\]{3,8192})",
        ("cookie",),
        anchored=True,
        judge=_cookies,
    ),
    Detector(
        "url_password",
        # scheme://[user]:password@host (RFC 3986 userinfo): only the password goes. The
        # password may hold `/` or `@` (the greedy match runs to the last `@` before the host).
        (
            r"://[^\s:/@]{0,256}:(?P<secret>[^\s]{1,256})@"
            r"(?=[A-Za-z0-9\[][^\s@]*(?:[\s\"'<>]|$))"
        ),
        ("://",),
        anchored=True,
        accept=_url_password,
    ),
)

# ---------------------------------------------------------------- keys naming a secret

# Stems a secret-naming key holds; the key's whole name is read back from the text.
_STEM = r"(?i:pass|pwd|pw|secret|token|key|auth|credential|creds|sig|session)"
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-]")


def _key_name(text: str, start: int, end: int) -> tuple[str, int]:
    """The whole key around the stem at `start` (`DB_PASSWORD` for `PASSWORD`), and its start."""
    begin = start
    while begin > 0 and start - begin < 80 and _NAME_CHARS.match(text, begin - 1):
        begin -= 1
    # A trailing `.`/`-` belongs to the text, not the key (`-e API_KEY=...` keeps `API_KEY`).
    return text[begin:end].lstrip(".-"), begin


def _kind(strength: values.KeyStrength) -> SecretKind:
    return "password" if strength == "password" else "secret_value"


def _weak_kind(strength: values.KeyStrength, value: str) -> SecretKind:
    # Docker's `"auth": "<base64 of user:password>"` is HTTP Basic credentials.
    if strength == "weak" and values.basic_credentials(value):
        return "basic_auth"
    return _kind(strength)


def _bare_value(value: str, query: bool) -> str:
    """A bare value ends at `&`/`#` in a URL query; trailing closing brackets are syntax."""
    if query:
        value = re.split(r"[&#]", value, maxsplit=1)[0]
    value = value.rstrip(",;:")
    for opener, closer in ("()", "[]", "{}"):
        while value.endswith(closer) and value.count(closer) > value.count(opener):
            value = value[:-1]
    return value


def _assignment(match: re.Match[str]) -> list[SecretSpan]:
    """`<key naming a secret> <separator> <value>` in any config grammar or literal."""
    text = match.string
    name, begin = _key_name(text, match.start(), match.end("name"))
    strength = values.key_strength(name)
    if strength is None:
        return []
    sep = match.group("sep")
    before = text[begin - 1] if begin > 0 else ""
    if "," in sep and not re.search(r"define\(\s*[\"']$", text[max(0, begin - 12) : begin]):
        return []  # `'password', 'secret'` is a list; `define('DB_PASSWORD', '...')` is PHP
    for group in ("dq", "sq"):
        value = match.group(group)
        if value is not None:
            start = match.start(group)
            if strength == "password":
                ok = values.password_value(value)
            else:
                ok = values.token_like(value) or (
                    strength == "weak" and values.basic_credentials(value)
                )
            return [(_weak_kind(strength, value), start, start + len(value))] if ok else []
    raw = match.group("bare")
    if raw is None or "," in sep:
        return []
    value = _bare_value(raw, query=before in "?&")
    start = match.start("bare")
    tight = sep in {"=", ":="}  # `PASSWORD=x` (shell, .env, URL query), no spaces
    if strength == "password":
        word = name.lower().rsplit("_", 1)[-1]
        if tight and word not in {"pw", "pwd"}:
            # A keyword argument (`password=password,`) is code, not a credential.
            follows = text[start + len(value) : start + len(value) + 1]
            if re.fullmatch(r"[a-z_][a-z0-9_]*", value) and follows in {",", ")"}:
                return []
            ok = values.password_value(value) and not values.code_like(value)
        else:
            ok = values.unquoted_password(value)
    else:
        ok = values.token_like(value) or (strength == "weak" and values.basic_credentials(value))
    return [(_weak_kind(strength, value), start, start + len(value))] if ok and value else []


def _xml_element(match: re.Match[str]) -> list[SecretSpan]:
    """`<password>hunter2</password>`, `<apiKey>...</apiKey>` (Maven settings.xml, .NET)."""
    text = match.string
    name, begin = _key_name(text, match.start(), match.end("name"))
    if begin == 0 or text[begin - 1] != "<" or match.group("close") != name:
        return []
    strength = values.key_strength(name)
    value = match.group("secret")
    if strength is None:
        return []
    ok = values.password_value(value) if strength == "password" else values.token_like(value)
    return [(_kind(strength), match.start("secret"), match.end("secret"))] if ok else []


def _cli_flag(match: re.Match[str]) -> list[SecretSpan]:
    """`--password hunter2`, `--api-key sk...`, `--token=...` on a command line."""
    strength = values.key_strength(match.group("flag"))
    value = match.group("secret")
    if strength is None or value.startswith("-"):
        return []
    if strength == "password":
        ok = values.password_value(value) and not values.code_like(value)
    else:
        ok = values.token_like(value)
    return [(_kind(strength), match.start("secret"), match.end("secret"))] if ok else []


def _starts_line(text: str, at: int) -> bool:
    """Only blanks between the line's start and `at` (looked at within 200 characters)."""
    head = text[max(0, at - 200) : at]
    line = head.rsplit("\n", 1)[-1]
    return not line.strip() and ("\n" in head or at <= 200)


def _ends_line(text: str, at: int) -> bool:
    """Only blanks between `at` and the line's end (looked at within 200 characters)."""
    tail = text[at : at + 200]
    return not tail.split("\n", 1)[0].strip() and ("\n" in tail or at + 200 >= len(text))


def _netrc(match: re.Match[str]) -> list[SecretSpan]:
    """A .netrc entry starts its line (`Set default password for...` is prose)."""
    text = match.string
    secret = match.group("secret")
    if not _starts_line(text, match.start()) or not values.password_value(secret.strip('"')):
        return []
    return [("password", match.start("secret"), match.end("secret"))]


_KEYED: tuple[Detector, ...] = (
    Detector(
        "password",
        # `.env`/shell `KEY=value`, INI/TOML/properties `key = value`, YAML `key: value`, JSON and
        # Python `"key": "value"`, PHP `'key' => 'value'` and `define('KEY', 'value')`.
        (
            rf"(?P<name>{_STEM}[A-Za-z0-9_.\-]{{0,40}})"
            r"(?P<sep>[\"']?[ \t]*(?:=>|:=|=|:|,)[ \t]*)"
            r"(?:\"(?P<dq>[^\"\n]{1,1024})\"|'(?P<sq>[^'\n]{1,1024})'"
            r"|(?P<bare>[^\s\"'`<>|]{1,1024}))"
        ),
        (
            *("pass", "pwd", "pw", "secret", "token", "key", "auth", "credential", "creds"),
            *("sig", "session"),
        ),
        anchored=True,
        judge=_assignment,
    ),
    Detector(
        "password",
        rf"(?P<name>{_STEM}[A-Za-z0-9_.\-]{{0,40}})>(?P<secret>[^<\s]{{1,512}})</(?P<close>[A-Za-z0-9_.\-]{{1,80}})>",
        ("pass", "pwd", "secret", "token", "key", "auth", "credential"),
        anchored=True,
        judge=_xml_element,
    ),
    Detector(
        "password",
        (
            r"(?<![\w-])--(?P<flag>[A-Za-z][A-Za-z0-9\-]{1,40})(?:[ \t]+|=)"
            r"(?P<secret>[^\s\"'`]{1,512})"
        ),
        (
            *("--pass", "--pwd", "--pw", "--secret", "--token", "--api", "--auth", "--access"),
            *("--client-secret", "--key", "--private", "--cred"),
        ),
        anchored=True,
        judge=_cli_flag,
    ),
    Detector(
        "password",
        # `mysql -u root -pS3cret`: the MySQL clients take the password glued to `-p` (a bare
        # `-p` prompts for it, and `-P` is the port).
        (
            r"(?i:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)(?![\w-])"
            r"[^\n|;&]{0,200}?\s-p(?P<q>[\"']?)(?P<secret>[^\s\"']{1,256})(?P=q)(?=\s|$)"
        ),
        ("mysql", "mariadb"),
        anchored=True,
        accept=values.password_value,
    ),
    Detector(
        "password",
        r"\bsshpass[ \t]+-p[ \t]*(?P<q>[\"']?)(?P<secret>[^\s\"']{1,256})(?P=q)",
        ("sshpass",),
        anchored=True,
        accept=values.password_value,
    ),
    Detector(
        "basic_auth",
        # `curl -u user:password`
        r"(?:-u|--user)\s+[^\s:]{1,256}:(?P<secret>[^\s\"']{1,256})",
        ("-u", "--user"),
        anchored=True,
        accept=values.password_value,
    ),
    Detector(
        "password",
        # .netrc: `machine <host>` or `default`, then login/account/port tokens, then
        # `password <string>`; separated by spaces, tabs or newlines (netrc(5)).
        (
            r"(?i:machine[ \t\r\n]+\S+|default|login[ \t]+\S+)"
            r"(?:[ \t\r\n]+(?i:login|account|port|protocol)[ \t\r\n]+\S+){0,4}"
            r"[ \t\r\n]+(?i:password|passwd)[ \t\r\n]+(?P<secret>\"[^\"\n]+\"|\S+)"
        ),
        ("machine", "default", "login"),
        anchored=True,
        judge=_netrc,
    ),
    Detector(
        "password",
        # .pgpass: `hostname:port:database:username:password`, one entry per line.
        r"(?m)^[^\s:#]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(?P<secret>\S+)$",
        ("5432:", "*:", "5433:", "6432:"),
        accept=values.password_value,
    ),
)

# ---------------------------------------------------------------- prose

_CONNECTOR = (
    r"(?:(?:is|was|has been|have been)[ \t]+(?:now[ \t]+)?(?:set|changed|reset|updated)[ \t]+to"
    r"|(?:set|changed|reset|updated)[ \t]+to|is[ \t]+now|is|was|are|were|became|becomes|=|:)"
)
_KEY_WORDS = frozenset(
    {"api", "access", "secret", "private", "signing", "encryption", "master", "license", "auth"}
)


def _prose(match: re.Match[str]) -> list[SecretSpan]:
    """`The staging DB password is hunter2-Blue-42`, `the token: 9f8e...`, `secret wJalr...`."""
    text = match.string
    keyword = match.group("kw").lower()
    filler = match.group("fill") or ""
    if any(word[-1] in ".!?;" for word in filler.split()):
        return []  # the keyword's sentence ended before the value
    if keyword == "key":
        before = text[max(0, match.start() - 20) : match.start()].split()
        if not before or before[-1].lower().strip("-_") not in _KEY_WORDS:
            return []
    value = match.group("secret")
    trimmed = value.rstrip(".,;:)")
    start = match.start("secret")
    password = keyword in {"password", "passwd", "passphrase", "passcode", "pwd", "pw"}
    if match.group("verb") is None:
        if filler.strip():
            return []
        # No verb: `password X` alone on its line (.netrc), or a strong token after the word.
        if password and _starts_line(text, match.start()) and _ends_line(text, match.end()):
            ok = values.unquoted_password(trimmed)
        elif password:
            ok = (
                values.prose_password(trimmed)
                and sum(
                    (
                        any(c.isupper() for c in trimmed),
                        any(c.islower() for c in trimmed),
                        any(c.isdigit() for c in trimmed),
                        any(not c.isalnum() for c in trimmed),
                    )
                )
                >= 3
            )
        else:
            ok = values.prose_token(trimmed) and len(trimmed) >= 20
    elif password:
        ok = values.prose_password(trimmed)
    else:
        ok = values.prose_token(trimmed)
    kind: SecretKind = "password" if password else "secret_value"
    if not password and re.fullmatch(r"[A-Za-z0-9/+]{40}", trimmed):
        kind = "aws_secret_key"  # the shape of an AWS secret access key
    return [(kind, start, start + len(trimmed))] if ok else []


_PROSE = Detector(
    "password",
    (
        r"(?<![A-Za-z0-9_])(?P<kw>(?i:password|passwd|passphrase|passcode|pwd|pw|secret|token|key"
        r"|credentials?))(?![A-Za-z0-9_\-])"
        r"(?P<fill>(?:[ \t]+(?!(?i:is|was|are|were)\b)[^\s:=\"'`]{1,30}){0,6}?)"
        rf"(?:[ \t]*(?<![A-Za-z0-9])(?P<verb>(?i:{_CONNECTOR}))(?![A-Za-z]))?[ \t]+"
        r"(?P<q>[`\"']?)(?P<secret>[^\s`\"']{6,200})(?P=q)"
    ),
    ("pass", "pwd", "pw", "secret", "token", "key", "credential"),
    anchored=True,
    judge=_prose,
)

# Order matters where shapes overlap: AWS pairs before the access-key id is replaced,
# provider tokens before the generic `api_key=` rule (so a GitHub token assigned to
# `token=` is reported as a GitHub token), and prose last.
DETECTORS: tuple[Detector, ...] = (
    *_PRIVATE_KEYS,
    *_AWS,
    *_PROVIDER_TOKENS,
    *_HTTP,
    *_KEYED,
    _PROSE,
)
