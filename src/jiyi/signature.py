"""Error signatures: the key line(s) of an error text, normalised and hashed (SPEC §4).

The same failure met in another project prints other paths, versions, line numbers and log noise;
its signature must not change. Two failures with different fixes must not share one, so what
decides a fix is never masked: exit codes, HTTP statuses, errno names, error codes (E0425,
TS2304), exception types, module and symbol names, and identifiers keep their case.

Pipeline: bound the input, NFKC, strip ANSI codes; clean each line of CI decorations; pick at most
two key lines (wrappers such as ``make: ***`` never qualify); rewrite well-known failures to one
canonical wording (:data:`signature_rules.TEMPLATES`); mask what varies; sha256 with the versioned
:data:`ALGORITHM` name in front, so a later algorithm never collides with this one.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from . import signature_rules as R

ALGORITHM: str = "jiyi-sig-1"

# Work stays bounded whatever arrives: a log's head holds the first compiler error, its tail the
# final exception and the summary; the middle of a 10 MB log is build chatter.
MAX_CHARS = 200_000
HEAD_LINES, TAIL_LINES = 100, 300
MAX_LINE = 1_000
MAX_KEY_LINES = 2
MAX_SYMBOLS = 32


@dataclass(frozen=True)
class Analysis:
    key_lines: tuple[str, ...]
    normalized: tuple[str, ...]
    signatures: tuple[str, ...]
    symbols: tuple[str, ...]
    tool: str | None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]", re.ASCII)
# A log pasted as an escaped string ("...\nfatal: x\n"): its "\n" are line breaks. Not when the
# line holds a Windows path, where "\n" is the start of a folder name (C:\node-project).
_ESCAPED_NL = re.compile(r"(?:\\r)?\\n")
_WINDOWS_PATH = re.compile(r"(?:^|[^A-Za-z])[A-Za-z]:\\|\\[\w.-]{2,}\\[\w.-]{2,}\\", re.ASCII)


def _lines(text: str) -> list[str]:
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS // 4] + "\n" + text[-(MAX_CHARS * 3 // 4) :]
    text = _ANSI.sub("", unicodedata.normalize("NFKC", text))
    lines = text.splitlines()
    if len(lines) > HEAD_LINES + TAIL_LINES:
        lines = lines[:HEAD_LINES] + lines[-TAIL_LINES:]
    out: list[str] = []
    for line in lines:
        line = line[:MAX_LINE]
        if "\\n" in line and not _WINDOWS_PATH.search(line):
            unescaped = line.replace('\\"', '"').replace("\\'", "'").replace("\\t", "\t")
            out.extend(_ESCAPED_NL.split(unescaped))
        else:
            out.append(line)
    return out


def _content(line: str) -> tuple[str, bool]:
    """The line without decorations (timestamps, container names, quote marks); and is it a prompt."""
    s = line.strip()
    if R.PROMPT.match(s):
        return s, True
    for _ in range(8):
        m = R.PREFIXES.match(s)
        if m is None or not m.end():
            q = R.QUOTED_LINE.match(s)
            if q is None:
                break
            s = q.group(2)
            continue
        s = s[m.end() :]
    return s.strip(), bool(R.PROMPT.match(s))


def _template(content: str) -> str | None:
    lower = content.lower()
    for needle, rx, build in R.TEMPLATES:
        if needle in lower:
            m = rx.search(content)
            if m:
                return build(m)
    return None


@dataclass
class _Candidate:
    tier: int  # 0 canonical template, 1 explicit error, 2 error-ish words, 3 anything else
    exception: bool
    index: int
    content: str
    canonical: str | None

    def order(self) -> tuple[int, int, int]:
        # Exceptions: the last one (the outermost of a chained traceback) speaks for the failure;
        # everything else: the first error, as later ones are often its consequences.
        if self.exception:
            return (self.tier, 0, -self.index)
        return (self.tier, 1, self.index)


def _classify(index: int, content: str) -> _Candidate | None:
    if not content or R.WRAPPERS.search(content):
        return None
    canonical = _template(content)
    body = R.SEVERITY.sub("", content, count=1)
    exception = bool(R.EXCEPTION.match(content) or R.EXCEPTION.match(body))
    if canonical is not None:
        return _Candidate(0, exception, index, content, canonical)
    if R.CONTEXT.search(content):
        return _Candidate(3, False, index, content, None)
    if exception:
        weak = bool(R.WEAK_EXCEPTIONS.match(body))
        return _Candidate(2 if weak else 1, not weak, index, content, None)
    if R.STRONG.search(content):
        return _Candidate(1, False, index, content, None)
    return _Candidate(2 if R.WEAK.search(content) else 3, False, index, content, None)


# -- masking: what varies between two occurrences of one failure --------------------------------------

_A = re.ASCII
_TRAILERS = [
    re.compile(r"\s*->\s*\[Help [0-9]+\]\s*$", _A),
    re.compile(r"[.,]?\s*Did you mean[:]? .*$", _A),
    # a trailing "(path)" of an ImportError, even cut short: where the module lives, not what failed
    re.compile(r"\s*\((?:[A-Za-z]:[\\/]|[\\/]|~[\\/]|\.{1,2}[\\/])[^()]*\)?\s*\.?$", _A),
]
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"`<>)\]]+", _A)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b", _A)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", _A)
_TIME = re.compile(
    r"\b[0-9]{4}[-/][0-9]{2}[-/][0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"|\b[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:\s?[AP]M)?\b",
    _A,
)
_PATH = re.compile(
    r"""(?<![\w.@+$%-])(?:
        (?:[A-Za-z]:[\\/]|\\\\|~[\\/]|\.{1,2}[\\/]|[\\/](?=[\w.@%\[$-]))[^\s'"`<>|:;,(){}]*
      | [\w.@+-]+(?:[\\/][\w.@+\[\]-]+){2,}[\\/]?
      | [\w.@+-]+[\\/][\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}
    )(?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))?""",
    re.VERBOSE | _A,
)
_PACKAGE_DIR = re.compile(r"(?:site-packages|dist-packages|node_modules)[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)", _A)
_TEMP = re.compile(r"^(?:cc[A-Za-z0-9]{6}|[\w-]+\.[A-Za-z0-9]{6}|tmp[\w]{6,10})(?=\.|$)", _A)
_SECTION = re.compile(r"\(\.[\w.$]+(?:\[[^\]]*\])?\+0x[0-9a-fA-F]+\)", _A)
_IP = re.compile(r"\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]{1,5})?\b|\[[0-9a-fA-F:]*:[0-9a-fA-F:]*\](?::[0-9]{1,5})?", _A)
_PORT = re.compile(r"(?:(?<=localhost:)|(?<=:::)|(?<=\]:))[0-9]{2,5}\b", _A)
_HEX = re.compile(
    r"\b0x[0-9a-fA-F]+\b|(?<![A-Za-z0-9_])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,}(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_])(?=[0-9A-F]*[0-9])(?=[0-9A-F]*[A-F])[0-9A-F]{8,}(?![A-Za-z0-9_])",
    _A,
)
_DURATION = re.compile(
    r"(?<![A-Za-z0-9_.])[0-9]+(?:\.[0-9]+)?\s?(?:ms|s|sec|secs|seconds?|mins?|minutes?|h|hours?)(?![A-Za-z0-9_])", _A
)
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_])v?[0-9]+(?:[.,][0-9]+)*(?:[-+~][0-9A-Za-z][0-9A-Za-z.+~-]*)?(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_.])v?[0-9]+(?:\.[0-9]+)+(?=[A-Za-z])",
    _A,
)
# Numbers that change the fix: exit codes, statuses, errno, signals; a range a version must meet.
_KEEP_BEFORE = re.compile(
    r"(?:exit\s(?:code|status)|status(?:\scode)?|\bcode|errno|os\serror|signal|HTTP(?:/[0-9.]+)?|returned|\[Errno"
    r"|>=|<=|~=|[<>^~])[\s:=(]*$",
    re.IGNORECASE | _A,
)
_HTTP_STATUS = re.compile(r"\s[A-Z][a-z]", _A)
_PLURAL = re.compile(r"(<n> (?:error|warning|file|line|test|item|package|problem|module|target|crate|job|issue))s\b", _A)
_SPACE = re.compile(r"\s+")


def _path(m: re.Match[str]) -> str:
    raw = re.sub(r"(?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))$", "", m.group(0), flags=_A)
    parts = [p for p in re.split(r"[\\/]+", raw) if p and p not in (".", "..", "~")]
    if not parts:
        return raw
    base = _TEMP.sub("<tmp>", parts[-1])
    pkg = None
    for pm in _PACKAGE_DIR.finditer(raw):
        pkg = pm.group(1).replace("\\", "/")
    if pkg and pkg.split("/")[-1] != parts[-1]:
        return f"{pkg}/{base}"
    return base


def _number(m: re.Match[str]) -> str:
    before = m.string[max(0, m.start() - 24) : m.start()]
    token = m.group(0)
    if _KEEP_BEFORE.search(before):
        return token
    if len(token) == 3 and token[0] in "12345" and _HTTP_STATUS.match(m.string, m.end()):
        return token
    return "<n>"


def _mask(s: str) -> str:
    for rx in _TRAILERS:
        s = rx.sub("", s)
    s = _URL.sub("<url>", s)
    s = _EMAIL.sub("<email>", s)
    s = _UUID.sub("<uuid>", s)
    s = _TIME.sub("<time>", s)
    s = _PATH.sub(_path, s)
    s = _SECTION.sub("", s)
    s = _IP.sub("<ip>", s)
    s = _PORT.sub("<port>", s)
    s = _HEX.sub("<hex>", s)
    s = _DURATION.sub("<duration>", s)
    s = _NUMBER.sub(_number, s)
    s = _PLURAL.sub(r"\1", s)
    s = s.replace("%PATH%", "$PATH")
    return _SPACE.sub(" ", s).strip().rstrip(".:;, ")[:500]


_JAVA_INNER = re.compile(r"(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Error|Exception):\s", _A)


def _normalize(c: _Candidate) -> str:
    if c.canonical is not None:
        return _mask(c.canonical)
    s = c.content
    for _ in range(3):
        before = s
        s = R.SEVERITY.sub("", s, count=1)
        s = R.OBJECT_PREFIX.sub("", s, count=1)
        s = R.LOCATION.sub("", s, count=1)
        if s == before:
            break
    # "Failed to execute goal …: java.lang.RuntimeException: java.lang.X: msg" is about X.
    inner = list(_JAVA_INNER.finditer(s))
    if inner:
        s = s[inner[-1].start() :]
    return _mask(s)


def _digest(normalized: str) -> str:
    return "sha256:" + hashlib.sha256(f"{ALGORITHM}\n{normalized}".encode()).hexdigest()


def _key_candidates(lines: list[str]) -> list[_Candidate]:
    found: list[_Candidate] = []
    promote = False
    for i, line in enumerate(lines):
        content, prompt = _content(line)
        if prompt or not content:
            continue
        if R.HEADERS.search(content):
            # "thread 'main' panicked at '" / "CMake Error at x:1 (f):": the message is what follows
            promote = True
            continue
        c = _classify(i, content)
        if c is not None and promote and c.tier > 1:
            c.tier = 1
        promote = promote and c is None
        if c is not None:
            found.append(c)
    return sorted(found, key=_Candidate.order)


def analyze(text: str) -> Analysis:
    """Key lines, their normalised forms and signatures, code symbols and tool of an error text."""
    try:
        return _analyze(text if isinstance(text, str) else str(text))
    except Exception:  # a signature is a hint: no input may break a search or a note
        return Analysis((), (), (), (), None)


def _analyze(text: str) -> Analysis:
    if not text.strip():
        return Analysis((), (), (), (), None)
    lines = _lines(text)
    keys: list[str] = []
    norms: list[str] = []
    for c in _key_candidates(lines):
        if c.tier > 2:
            break
        n = _normalize(c)
        if n and n not in norms:
            keys.append(c.content[:500])
            norms.append(n)
            if len(keys) == MAX_KEY_LINES:
                break
    joined = "\n".join(lines)
    return Analysis(
        tuple(keys),
        tuple(norms),
        tuple(dict.fromkeys(_digest(n) for n in norms)),
        R.symbols(joined, MAX_SYMBOLS),
        R.tool(keys, joined),
    )


def key_line(text: str) -> str:
    """The first key line of ``text``; else its first non-empty line; else ""."""
    found = analyze(text).key_lines
    if found:
        return found[0]
    return next((line.strip() for line in text.splitlines() if line.strip()), "") if isinstance(text, str) else ""
