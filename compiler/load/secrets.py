"""No credentials in policy files (LOAD010): every string, key or value, of every file is scanned.

Policy files are committed and rendered into ``out/`` (ConfigMaps, Helm values, Deployments), so
a token pasted into any field would be in git history and on every cluster. Known token formats,
private key blocks, passwords or tokens inside URLs, and long random-looking strings are refused
with a hint to reference a Kubernetes Secret. The message never repeats the value (CI logs are
public on a fork's pull request): only its kind and first characters.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, Callable

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define

LOAD_SECRET = define(
    "LOAD010",
    "Policy strings hold no credentials (GitHub, Hugging Face, AWS, Slack, GitLab tokens, private keys, "
    "passwords in URLs, long random strings); reference a Kubernetes Secret instead.",
    "secrets:\n  hubToken: {name: hf-token, key: token}",
    "env:\n  HF_TOKEN: hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx   # any token, here a placeholder",
    scope=Scope.FILE,
)

RULES: tuple[Rule, ...] = (LOAD_SECRET,)

# (what it is, pattern). Patterns are anchored on the token's own prefix and length.
KNOWN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("an AWS access key ID", re.compile(r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(proj-)?[A-Za-z0-9_-]{40,}")),
    ("a private key", re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")),
)
# userinfo in a URL: a password (user:pass@) under any scheme, any userinfo under http(s) (a token
# passed as the user name). ssh://git@host is an ordinary repository URL and passes.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]+@")
_URL_HTTP_USER = re.compile(r"\bhttps?://[^/\s@]+@", re.IGNORECASE)
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/=_]{32,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
ENTROPY_BITS = 4.2  # per character; English-like identifiers stay below ~4, base64 keys are above 5


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _random_looking(run: str) -> bool:
    """A long run of mixed-case letters and digits with the entropy of a key (hex digests, such as
    image digests, are allowed: they pin content and grant nothing)."""
    if _HEX.match(run):
        return False
    classes = sum(bool(re.search(p, run)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return classes == 3 and _entropy(run) >= ENTROPY_BITS


# One pass over each string first: almost every policy string matches none of the patterns.
_ANY = re.compile("|".join(f"(?:{p.pattern})" for p in (*(p for _, p in KNOWN), _URL_PASSWORD, _URL_HTTP_USER,
                                                         _RANDOM_RUN)), re.IGNORECASE)


def find_secret(s: str) -> tuple[str, str] | None:
    """(what it looks like, a redacted preview) of the first credential in ``s``, or None."""
    if len(s) < 8 or _ANY.search(s) is None:
        return None
    for what, pattern in KNOWN:
        m = pattern.search(s)
        if m:
            return what, _redact(m.group(0))
    for pattern in (_URL_PASSWORD, _URL_HTTP_USER):
        m = pattern.search(s)
        if m:
            scheme = m.group(0).split("://", 1)[0]
            return "credentials inside a URL", f"{scheme}://…@"
    for m in _RANDOM_RUN.finditer(s):
        if _random_looking(m.group(0)):
            return "a random-looking string (a key or token?)", _redact(m.group(0))
    return None


def redact(s: str) -> str:
    """``s`` with every credential ``find_secret`` would report cut to its preview (for code frames,
    which show the source line of a diagnostic)."""
    for _, pattern in KNOWN:
        s = pattern.sub(lambda m: _redact(m.group(0)), s)
    for pattern in (_URL_PASSWORD, _URL_HTTP_USER):
        s = pattern.sub(lambda m: m.group(0).split("://", 1)[0] + "://…@", s)
    return _RANDOM_RUN.sub(lambda m: _redact(m.group(0)) if _random_looking(m.group(0)) else m.group(0), s)


def _redact(token: str) -> str:
    keep = 4 if not token.startswith("-----") else len("-----BEGIN")
    return token[:keep] + "…"


YamlPath = tuple[str | int, ...]


def _strings(data: Any, path: YamlPath) -> Iterator[tuple[str, YamlPath, bool]]:
    """Every string in ``data`` with its path; True for a mapping key."""
    stack: list[tuple[Any, YamlPath]] = [(data, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            yield node, at, False
        elif isinstance(node, dict):
            for k, v in node.items():
                yield str(k), at + (k,), True
                stack.append((v, at + (k,)))
        elif isinstance(node, list):
            stack.extend((v, at + (i,)) for i, v in enumerate(node))


def check_secrets(data: Any, locate: Callable[..., Location]) -> list[Diagnostic]:
    """LOAD010 for each string of a file's data that holds a credential."""
    found = []
    for s, at, is_key in _strings(data, ()):
        hit = find_secret(s)
        if hit is None:
            continue
        what, preview = hit
        crumb = ".".join(str(p) for p in at)
        found.append(LOAD_SECRET.diag(
            f"{'key' if is_key else 'value'} at {crumb or 'the document'} looks like {what} ({preview}); "
            "credentials never belong in a policy file",
            locate(at, key=is_key),
            hint="remove it and revoke it (it is in git history once pushed); store it in a Kubernetes Secret "
                 "and reference that, e.g. secrets: {hubToken: {name: hf-token, key: token}}",
            path=crumb or None,
        ))
    return sorted(found, key=Diagnostic.sort_key)
