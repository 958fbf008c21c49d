"""Secret redaction (docs/spec.md §6): nothing jiyi stores or sends may carry a credential.

Our own stdlib regexes, not the `detect-secrets` package (re-measured with 1.5.0 on this project's
machine: importing it costs ~190-225 ms, entering its default settings ~30 ms and scanning a 20 KB
log ~330-410 ms, against 50 ms for a whole hook event and ~8 ms for this module on the same log),
and it reports secret values per line rather than spans. Its plugin list was the reference for
coverage, plus formats it lacks (github_pat_, sk-ant-, sk-proj-, AIza). The patterns are compiled
through ``regex_cache``, so a hook process that has met them before does not compile them again.

Issue 15 re-measured both sides: 30 of the 106 kinds of tests/data/secrets.txt left some part behind
(shapes the rules did not know, `password=Abc.Def.Ghi` taken for code, JSON-escaped key bodies),
now none (107 kinds since: an AWS secret key that starts with `/` was taken for a path); of the
1067 error texts in bench/data, 1 changed before (`/bin/pwd: exec`), now none.

False positives are costly too: error text is what recall keys on. So the rules that do not rely
on a distinctive token format need a secret-looking key *and* a value that is not a placeholder,
and the generic rule also wants a random-looking (high Shannon entropy) value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache

from .regex_cache import compile as compile_rx
from .secret_formats import FORMATS

__all__ = ["find_secrets", "redact"]

_MARK = "[REDACTED:"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_Judge = Callable[[re.Match[str], str], str | None]
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

# A value (quoted or bare) after a key; a lookahead so that finditer goes on scanning inside the
# value (`url=https://x/?token=…` must still see `token=`). ``s0``: a value single-quoted inside a
# single-quoted shell word, as ``shlex.join`` writes it (`'"'"'value'"'"'`: ``jiyi run``'s command line).
_VALUE = (
    r"""(?=(?:'"'"'(?P<s0>[^'\n]{1,500})'"'"'|"(?P<s1>[^"\n]{1,500})"|'(?P<s2>[^'\n]{1,500})'"""
    r"""|(?P<s3>[^\s"'`,;&]{1,500})))"""
)


# Values that stand for a secret without being one: keeping them keeps the error text intact.
_STOP = frozenset(
    "none null nil true false yes no on off not set unset empty missing required optional invalid "
    "incorrect wrong expired denied failed ok redacted hidden masked omitted filtered sensitive str "
    "string bytes int bool any undefined secret password token value".split()
)
_KEYWORDS = "key secret token pass pwd auth cred salt sig private".split()
# Where code keeps a secret: `self.token`, `settings.SECRET_KEY`, `process.env.TOKEN`.
_CODE_ROOTS = frozenset(
    "self this cls os env environ process config conf cfg settings options opts args kwargs params request "
    "req ctx context secrets vars inputs values props state app client session credentials creds".split()
)
# Between the words of a .netrc entry: blanks, or a line break and a diff's `+` / `-` (`++` in a patch
# of a patch; never a blank there: `[ \t]` takes it, so no run of blanks can be read two ways).
_NETRC_GAP = r"(?:[ \t]|\r?\n[+-]*)+"
_PASSWORD_KEYS = ("password", "passwd", "passphrase", "pwd")
_SECRET_KEYS = ("secret", "secretkey", "privatekey", "accesskey", "accountkey", "credential", "credentials")
_TOKEN_KEYS = ("token", "apikey", "authkey", "auth")


@cache
def _re(pattern: str) -> re.Pattern[str]:
    """Helpers compile on first use too: importing this module compiles nothing."""
    return compile_rx(pattern, re.ASCII)


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in (value.count(ch) for ch in set(value)))


def _placeholder(value: str, spaced: bool = False) -> bool:
    """`<redacted>`, `${VAR}`, `****`, `os.environ["X"]`, a path, `str`: not a secret itself.
    ``spaced``: the value follows `key = ` as code writes it, where `a.b` names a value."""
    bare = value.strip("()[]{}<>.,;:!?'\"` ").lower()
    return (
        not any(c.isascii() and c.isalnum() for c in bare)  # also `password: 必填` (required)
        or value[0] in "$%<{*[(#"
        or bare in _STOP
        or len(set(bare)) == 1
        or (value.startswith(("/", "./", "../", "~/")) and not _base64_key(value))
        or _code(value, spaced)
    )


def _base64_key(value: str) -> bool:
    """An AWS secret access key's shape (40 base64 characters, random): one in 64 starts with `/`,
    which is no path (issue 15)."""
    return _re(r"[A-Za-z0-9/+]{40}").fullmatch(value) is not None and _high_entropy(value)


def _code(value: str, spaced: bool) -> bool:
    """`self.token`, `os.environ["X"]`, `getenv("X")`: code that names a secret. A dotted word is
    code when it starts at a name code uses for it, or follows `key = ` and has no random part:
    `password=Abc.Def.Ghi` and `Bearer ya29.a0Af…` are secrets of that shape (issue 15)."""
    m = _re(r"([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)([(\[].*)?").fullmatch(value)
    if m is None or not (m[2] or m[3]):
        return False
    if m[3] or m[1].lower() in _CODE_ROOTS:
        return True
    return spaced and not any(_random(part) for part in value.split("."))


def _random(value: str) -> bool:
    """Token-like: long enough and not a plain word (`Unexpected token: punctuation`)."""
    has_mix = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return len(value) >= 8 and (has_mix or _entropy(value) > 3.5)


def _high_entropy(value: str) -> bool:
    """Random-looking enough to be a key; tuned on words, paths, versions, hex SHAs and UUIDs."""
    if len(value) < 16 or value.isalpha() or value.isdigit():
        return False
    if _re(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}").fullmatch(value):
        return False
    # Readable names (`node-modules-linux-x64-v18.19.0`: 4.1 bits) score as high as random base64
    # of that length (median 4.0), so a value made only of words, numbers and short bits never is.
    word = _re(r"(?:[A-Z]?[a-z]*|[A-Z]*)[0-9]*|[0-9]*(?:[A-Z]?[a-z]*|[A-Z]*)|.{0,5}")
    if all(word.fullmatch(part) for part in _re(r"[-._/+:@ ]").split(value)):
        return False
    return _entropy(value) >= 3.0  # random base64 of 16 chars: min 3.2; hex of 40: min 3.1


def _assignment(strict: bool) -> _Judge:
    """Classify `KEY=value` / `"key": "value"` / `--key value` by the key's name, then the value."""

    def judge(m: re.Match[str], value: str) -> str | None:
        start = m.start("k")  # the pattern anchors on a keyword: walk back to the key's start
        while start > 0 and m.start("k") - start < 60 and m.string[start - 1] in _KEY_CHARS:
            start -= 1
        key = m.string[start : m.end("k")].lower()
        norm = _re(r"[\W_]+").sub("", key)
        if m.string[max(start - len(_MARK), 0) : start] == _MARK:
            return None  # `[REDACTED:api-key]: …` is our own mark, not a key
        if norm.endswith("authorization") or m.string[max(start - 3, 0) : start] == "://":
            return None  # the header and URL userinfo have their own rules, which keep more text
        if start > 0 and m.string[start - 1] in "/\\":
            return None  # a path's last part (`exec /bin/pwd: exec format error`), not a key
        if norm.endswith(("error", "exception", "warning")):
            return None  # `ClientAuthenticationError: <message>` names an exception, not a key
        spaced = (
            m.string[m.start("op") - 1 : m.start("op")].isspace() and m.string[m.end("op") : m.end("op") + 1] == " "
        )
        if _placeholder(value, spaced) or (m["op"] in ("==", "!=", "===", "!==") and m["s3"]):
            return None  # `assert password == expected`: an unquoted operand is code, not a literal
        if _prose(m, value):
            return None  # `type "passphrase": unable to find …` (Pulumi): a sentence, not a value
        if "aws" in norm and "secret" in norm:
            return "aws-secret-key"
        if norm.endswith(_PASSWORD_KEYS) or key.endswith(("_pass", "-pass", ".pass")):
            return "password" if not strict or _random(value) else None
        if norm.endswith(_SECRET_KEYS):
            return "secret" if not strict or _random(value) else None
        if norm.endswith(_TOKEN_KEYS) and _random(value):
            return "api-key" if "key" in norm else "token"
        if any(word in norm for word in _KEYWORDS) and _high_entropy(value):
            return "high-entropy"
        return None

    return judge


def _prose(m: re.Match[str], value: str) -> bool:
    """An unquoted lower-case word that a sentence goes on after: `"passphrase": unable to find`. A
    value of one plain word followed by more words is what messages say, not what configs hold."""
    if not m["s3"] or not (value.isascii() and value.isalpha() and value.islower()):
        return False
    after = m.string[m.end("s3") : m.end("s3") + 2]
    return len(after) == 2 and after[0] == " " and after[1].islower()


def _not_placeholder(kind: str) -> _Judge:
    return lambda _m, value: None if _placeholder(value) else kind


def _cookie(m: re.Match[str], value: str) -> str | None:
    # After `Cookie:` any random-looking value; after a bare `;` only a session-like name's.
    header = not m.group(0).startswith(";")
    named = _re(r"(?i)sess|sid|token|auth|csrf|xsrf|remember|login|jwt|secret").search(m["k"]) is not None
    return "cookie" if (header or named) and not _placeholder(value) and _random(value) else None


def _authorization(m: re.Match[str], value: str) -> str | None:
    # With a scheme word (`Bearer`, `Basic`) anything after it is a credential; without one, only
    # token-like values, so that `authorization: failed` stays readable.
    if _placeholder(value) or not (m["scheme"] or _random(value)):
        return None
    return "authorization"


@cache
def _rules() -> tuple[tuple[re.Pattern[str], str, _Judge | None, bool], ...]:
    """Compiled once, on first use (~2 ms): a hook that stores nothing pays nothing.

    Each rule: pattern, kind, judge (None: always a secret), and whether the character before the
    match must not be part of a word (what \\b would say, checked outside the regex for speed).
    """
    # Key names as people write them (key, KEY, Key): case-folding (?i) would cost 2x the scan.
    keyword = "|".join(f"{w}|{w.upper()}|{w.capitalize()}" for w in _KEYWORDS)
    rules: list[tuple[str, str, _Judge | None, bool]] = [(kind, rx, None, True) for kind, rx in FORMATS]
    rules += [
        (
            # The whole block; a truncated one (no END line) up to where its base64 stops, also
            # JSON-escaped (`\n` between lines, `\/` for `/`: once read as two backslashes). The
            # body cannot cross `----`, which keeps the scan linear when BEGIN lines have no END.
            "private-key",
            r"-{4,5} ?BEGIN(?: [A-Z0-9]+)* PRIVATE KEY(?: BLOCK)? ?-{4,5}"
            r"(?:[^-]*(?:-(?!---)[^-]*)*-{4,5} ?END(?: [A-Z0-9]+)* PRIVATE KEY(?: BLOCK)? ?-{4,5}"
            r"|(?:(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z0-9+/=]|\\/)+(?=\r?\n|\\[rn]|[\"']|$))*)",
            None,
            False,
        ),
        ("slack-webhook", r"hooks\.slack\.com/services/(?P<s>T\w+/B\w+/\w+)", None, False),
        ("discord-webhook", r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<s>[\w-]{60,100})", None, False),
        (  # `aws configure set [profile.dev.]aws_secret_access_key VALUE`: no `=` or `:` to key on
            "aws-secret-key",
            r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY)[\"']?[ \t]+[\"']?(?P<s>[A-Za-z0-9/+]{40})(?![\w/+=])",
            None,
            False,
        ),
        (  # ~/.netrc, on one line or several, also as the lines a diff adds (`+  password …`)
            "netrc-password",
            rf"machine{_NETRC_GAP}\S+(?:{_NETRC_GAP}(?:login|account){_NETRC_GAP}\S+)*"
            rf"{_NETRC_GAP}password[ \t]+(?P<s>\S+)",
            _not_placeholder("netrc-password"),
            True,
        ),
        (  # mysql -u root -pPASSWORD (the password joined to -p; `-p` alone prompts)
            "password",
            r"(?:mysql|mysqldump|mysqladmin|mariadb|mysqlimport|mysqlcheck)(?![\w-])"
            r"[^\n|;&]{0,200}?[ \t]-p(?P<s>[^\s'\"]+)",
            _not_placeholder("password"),
            True,
        ),
        (  # Cookie / Set-Cookie headers: a session's value is a credential, `theme=dark` is not
            "cookie",
            r"(?:(?i:cookie)[ \t]*:[ \t]*|;[ \t]*)(?P<k>[\w.-]{1,60})=(?P<s>[^;\s'\"]{1,4000})",
            _cookie,
            False,
        ),
        ("url-password", r"://[^\s:/?#@'\"]*:(?P<s>[^\s/?#'\"]+)@", _not_placeholder("url-password"), False),
        (
            "authorization",
            r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?P<scheme>(?i:bearer|basic|token|digest|negotiate|ntlm|apikey|key))[ \t]+)?"
            r"(?P<s>[^\s'\",]+)",
            _authorization,
            False,
        ),
        (  # curl -u user:password
            "password",
            r"-(?:u|-user)[ \t]+[\"']?[^\s:'\"]+:(?P<s>[^\s'\"]+)",
            _not_placeholder("password"),
            True,
        ),
        (
            "",
            rf"(?P<k>(?:{keyword})[\w.-]{{0,40}})[\"']?\]?[ \t]*(?P<op>={{1,3}}>?|!==?|:=|:)[ \t]*" + _VALUE,
            _assignment(strict=False),
            False,
        ),
        (  # `--token VALUE`: prose says "pass --password to …", so only token-like values count
            "",
            r"-(?P<k>-?[A-Za-z][\w-]{0,40})(?P<op>[ \t]+)(?![-\s])" + _VALUE,
            _assignment(strict=True),
            True,
        ),
    ]
    return tuple((compile_rx(rx, re.ASCII), kind, judge, edge) for kind, rx, judge, edge in rules)


def _span(m: re.Match[str]) -> tuple[int, int]:
    for name in ("s", "s0", "s1", "s2", "s3"):
        if name in m.re.groupindex and m.start(name) >= 0:
            start, end = m.span(name)
            if name == "s3":  # a bare value ends before a bracket it did not open: `(token abc1)`
                value = m.string[start:end]
                while (
                    end > start and value[-1] in _CLOSERS and value.count(value[-1]) > value.count(_CLOSERS[value[-1]])
                ):
                    end -= 1
                    value = value[:-1]
            return start, end
    return m.span()


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in `text`, sorted; overlapping finds are merged."""
    found: list[tuple[int, int, int, str]] = []
    for rank, (pattern, kind, judge, edge) in enumerate(_rules()):
        for m in pattern.finditer(text):
            if edge and m.start() > 0 and text[m.start() - 1] in _KEY_CHARS:
                continue  # inside a longer word: `xghp_…`, `disk-…`
            start, end = _span(m)
            value = text[start:end]
            if end <= start or _MARK in value:
                continue  # already redacted: what keeps redact() idempotent
            got = judge(m, value) if judge else kind
            if got:
                found.append((start, end, rank, got))
    found.sort()
    merged: list[tuple[int, int, int, str]] = []
    for start, end, rank, kind in found:
        if merged and start < merged[-1][1]:
            # Overlaps are unioned so no part of either leaks; the more specific rule names it.
            s0, e0, r0, k0 = merged[-1]
            merged[-1] = (s0, max(e0, end), min(r0, rank), k0 if r0 <= rank else kind)
        else:
            merged.append((start, end, rank, kind))
    return [(start, end, kind) for start, end, _, kind in merged]


def redact(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]`; the same string when it has none."""
    try:
        spans = find_secrets(text)
    except Exception:  # fail closed: losing one text beats storing a credential
        return "[REDACTED:unscannable]"
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        parts += (text[pos:start], f"{_MARK}{kind}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
