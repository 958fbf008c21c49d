"""Error signatures: the key line(s) of an error text, normalised and hashed (docs/spec.md §4).

The same failure met in another project prints other paths, versions, line numbers and log noise;
its signature must not change. Two failures with different fixes must not share one, so what
decides a fix is never masked: exit codes, HTTP statuses, errno names, error codes (E0425,
TS2304), exception types, module and symbol names; identifiers keep their case.

Pipeline: bound the input, NFKC, strip ANSI codes; clean each line of CI decorations; pick at most
two key lines (wrappers such as ``make: ***`` never qualify); rewrite well-known failures to one
canonical wording (``signature_rules.TEMPLATES``); mask what varies; sha256 with the versioned
:data:`ALGORITHM` in front, so signatures of a later algorithm never collide with these. The
normalised lines are kept by the store so records can be re-signed after a change.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from . import signature_rules as R

try:  # the builtin module: hashlib's OpenSSL import costs a hook process ~5 ms
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # Python 3.12+ (_sha2), builds without it
    from hashlib import sha256 as _sha256
from .regex_cache import compile as compile_rx

ALGORITHM: str = "jiyi-sig-1"

# Work stays bounded whatever arrives: a log's head holds the first compiler error, its tail the
# final exception and the summary; the middle of a 10 MB log is build chatter.
MAX_CHARS = 200_000
HEAD_LINES, TAIL_LINES = 100, 300
MAX_LINE = 800
MAX_ESCAPED = 50_000  # a whole log pasted as one escaped string is split before lines are cut
MAX_KEY_LINES = 2
MAX_SYMBOLS = 32
TOOL_WINDOW = 8  # lines around a key line (and at the top and bottom) where the tool shows


class Analysis:
    """What :func:`analyze` found. A plain class, not a dataclass: ``dataclasses`` (with the
    ``inspect`` it imports) costs a hook process ~10 ms."""

    __slots__ = ("key_lines", "normalized", "signatures", "symbols", "tool")  # also the order of the fields

    def __init__(
        self,
        key_lines: tuple[str, ...],  # original wording, decorations stripped (≤ 2)
        normalized: tuple[str, ...],  # what is hashed
        signatures: tuple[str, ...],  # "sha256:" + hex, one per distinct normalised line
        symbols: tuple[str, ...],  # code symbols of the whole text, order of first appearance (≤ 32)
        tool: str | None,
    ) -> None:
        self.key_lines = key_lines
        self.normalized = normalized
        self.signatures = signatures
        self.symbols = symbols
        self.tool = tool

    def _fields(self) -> tuple[object, ...]:
        return (self.key_lines, self.normalized, self.signatures, self.symbols, self.tool)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Analysis) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        names = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._fields(), strict=True))
        return f"Analysis({names})"


_EMPTY = Analysis((), (), (), (), None)
_A = re.ASCII
_ANSI = compile_rx(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]", _A)
# A log pasted as an escaped string ("...\nfatal: x\n"): its "\n" are line breaks. Not in a line
# with a Windows path, where "\n" starts a folder name (C:\node-project).
_ESCAPED_NL = compile_rx(r"(?:\\r)?\\n")
_WINDOWS_PATH = compile_rx(r"(?:^|[^A-Za-z])[A-Za-z]:\\|\\[\w.-]{2,}\\[\w.-]{2,}\\", _A)


def _lines(text: str) -> list[str]:
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS // 4] + "\n" + text[-(MAX_CHARS * 3 // 4) :]
    if not text.isascii():  # a lone surrogate could not be hashed, stored or sent: make it "?"
        text = text.encode("utf-8", "replace").decode("utf-8")
    lines = _ANSI.sub("", unicodedata.normalize("NFKC", text)).splitlines()
    out: list[str] = []
    for line in _head_and_tail(lines):
        head = line[:MAX_ESCAPED]
        if ("\\n" in head or '\\"' in head) and not _WINDOWS_PATH.search(head):
            unescaped = head.replace('\\"', '"').replace("\\'", "'").replace("\\t", "\t")
            out.extend(piece[:MAX_LINE] for piece in _ESCAPED_NL.split(unescaped))
        else:
            out.append(line[:MAX_LINE])
    return _head_and_tail(out)  # again: an escaped log may have become many lines


def _head_and_tail(lines: list[str]) -> list[str]:
    return lines if len(lines) <= HEAD_LINES + TAIL_LINES else lines[:HEAD_LINES] + lines[-TAIL_LINES:]


def _content(line: str) -> tuple[str, bool]:
    """The line without decorations (timestamps, container names, quote marks); is it a prompt.

    Runs of white space become one space first: re-indented or re-wrapped output is the same error.
    """
    s = " ".join(line.split())
    if R.PROMPT.match(s):
        return s, True
    for _ in range(8):
        m = R.PREFIXES.match(s)
        if m is not None and m.end():
            s = s[m.end() :]
            continue
        if s[:1] == "`" or s[-1:] == "`":
            # Markdown's code marks around the whole line (`` `X` ``, ```` ```X``` ````), or one left
            # open where a code span runs on over lines: text pasted from an issue or a chat.
            inner = s.strip("`")
            if "`" not in inner:
                s = inner.strip()
                continue
        q = R.QUOTED_LINE.match(s)
        if q is None:
            break
        s = q.group(2)
    return s.strip(), bool(R.PROMPT.match(s))


class _Candidate:
    __slots__ = ("canonical", "content", "exception", "index", "tier")

    def __init__(self, tier: int, exception: bool, index: int, content: str, canonical: str | None) -> None:
        self.tier = tier  # 0 well-known failure, 1 explicit error, 2 error-ish words, 3 a consequence
        self.exception = exception
        self.index = index
        self.content = content
        self.canonical = canonical

    def order(self) -> tuple[int, int, int]:
        # Exceptions: the last one (the outermost of a chained traceback) speaks for the failure.
        # Anything else: the first error; later ones are often its consequences.
        if self.exception:
            return (self.tier, 0, -self.index)
        return (self.tier, 1, self.index)


def _classify(index: int, content: str) -> _Candidate | None:
    """A key-line candidate, or None for a line that cannot be one (wrappers, chatter, notes)."""
    lower = content.lower()
    canonical = R.canonical(content, lower)
    body = R.SEVERITY.sub("", content, count=1)
    exception = bool(R.EXCEPTION.match(content) or R.EXCEPTION.match(body))
    # Most lines of a log are chatter: one cheap keyword search settles them before the big tables.
    if canonical is None and not exception and not R.WEAK.search(lower) and not R.STRONG_START.match(content):
        return None
    if R.is_wrapper(content, lower) or (body != content and R.NESTED_LEVEL.match(body)):
        return None
    if R.is_consequence(body):
        return _Candidate(3, False, index, content, canonical)
    if exception:
        # A well-known exception is not promoted past a later one: of a chained traceback the
        # last exception stays the first key line, the earlier one the second.
        weak = canonical is None and bool(R.WEAK_EXCEPTIONS.match(body))
        return _Candidate(2 if weak else 1, not weak, index, content, canonical)
    if canonical is not None:
        return _Candidate(0, False, index, content, canonical)
    if R.CONTEXT.search(content):
        return None
    return _Candidate(1 if R.is_strong(content, lower) else 2, False, index, content, None)


def _candidates(lines: list[str]) -> list[_Candidate]:
    found: list[_Candidate] = []
    promote = fields = False
    for i, line in enumerate(lines):
        content, prompt = _content(line)
        if prompt or not content:
            continue
        if content[-1] == "{" and i + 1 < len(lines) and _JSON_FIELD.match(lines[i + 1]):
            # A pretty-printed object opens (Ansible's `fatal: [host]: FAILED! => {`, an API's error
            # body): the opener names no error, and of its fields only the messages are key-line
            # candidates, as a one-line JSON log's are (_JSON_MESSAGE).
            fields = True
            continue
        if fields and _JSON_FIELD.match(line):
            found.extend(_quoted(i, _messages(line)))
            continue
        fields = False
        if R.is_header(content):
            # "thread 'main' panicked at '", "CMake Error at x:1 (f):": the message follows.
            promote = True
            continue
        if promote and R.SAYS_NOTHING.match(content):
            continue  # `*****`, `Description:`: the message is further on
        c = _classify(i, content)
        if promote and not R.is_wrapper(content, content.lower()):
            c = c or _Candidate(1, False, i, content, None)
            c.tier = min(c.tier, 1)
        promote = False
        quoted = _quoted(i, _CODE_SPAN.findall(content)) if "`" in content else []
        if not quoted and '":' in content:
            quoted = _quoted(i, _messages(content))
        # A sentence quoting its error as inline code (``I get `X` when I start``): the error is
        # what it quotes; the sentence around it would give a key line no other text shares.
        found.extend(quoted or ([c] if c is not None else []))
    return sorted(found, key=_Candidate.order)


# Markdown's inline code, long enough to hold a message rather than a name.
_CODE_SPAN = compile_rx(r"`([^`\n]{12,500})`")


# A structured log line's message fields (`{"level":"error",…,"message":"…"}`: pino, zap, bunyan,
# Elastic's ECS; an API's `{"error_description":"…"}`), long enough to hold a message.
_MESSAGE_KEYS = r'"(?:message|msg|error|err|errorMessage|error_message|error_description|reason|detail)"\s*:\s*'
_JSON_MESSAGE = compile_rx(_MESSAGE_KEYS + r'"((?:[^"\\]|\\.){12,500})"')
# One field of a pretty-printed object (`    "changed": false,`), and a message field whose string runs
# on past its line (a pasted log cut or wrapped there).
_JSON_FIELD = compile_rx(r'\s*"[\w.-]+"\s*:')
_OPEN_MESSAGE = compile_rx(_MESSAGE_KEYS + r'"((?:[^"\\]|\\.){12,500})$')


def _messages(text: str) -> list[str]:
    """The JSON message fields of one line, unescaped: whole strings, else one running past the line."""
    values = _JSON_MESSAGE.findall(text) or _OPEN_MESSAGE.findall(text)
    return [v.replace('\\"', '"') for v in values]


def _quoted(index: int, quotes: list[str]) -> list[_Candidate]:
    """Key-line candidates among what a line quotes (its code spans, its JSON message fields), at
    the line's place."""
    out = []
    for quote in quotes:
        inner, prompt = _content(quote)
        if inner and not prompt and (c := _classify(index, inner)) is not None:
            out.append(c)
    return out


# -- Masking: what varies between two occurrences of one failure --------------------------------------

_TRAILERS = [
    compile_rx(r"\s*->\s*\[Help [0-9]+\]\s*$", _A),
    # suggestions vary by version and by what else is in scope (Python 3.10+, gcc, rustc)
    compile_rx(r"[.,;]?\s*\b[Dd]id you mean:? [^?\n]*\?", _A),
    compile_rx(r"[.,]?\s*Did you mean:? .*$", _A),
    compile_rx(r"\s*\(from versions:[^)]*\)?", _A),  # pip: what the index happened to hold that day
    # a trailing "(path)" of an ImportError, even cut short: where the module lives, not what failed
    compile_rx(r"\s*\((?:[A-Za-z]:[\\/]|[\\/]|~[\\/]|\.{1,2}[\\/])[^()]*\)?\s*\.?$", _A),
]
# Maven names the user's project in its goal lines.
_PROJECT = compile_rx(r"\b(on|for) project [\w.-]+(?::[\w.-]+)*", _A)
_URL = compile_rx(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"`<>)\]]+", _A)
_EMAIL = compile_rx(r"(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+\b", _A)
_UUID = compile_rx(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", _A)
_TIME = compile_rx(
    r"\b[0-9]{4}[-/][0-9]{2}[-/][0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?(?:[.,][0-9]+)?)?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"|\b[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:\s?[AP]M)?\b",
    _A,
)
# A Windows folder's name may hold spaces and brackets (`C:\Program Files (x86)\MSBuild\…`,
# `C:\Users\Jane Doe\…`): up to the separator after it, it is part of the path.
_PATH = compile_rx(
    r"""(?<![\w.@+$%-])(?:
        [A-Za-z]:[\\/](?:[^\\/\s'"`<>|:;,{}]+(?:\x20[^\\/\s'"`<>|:;,{}]+)*[\\/])*[^\s'"`<>|:;,(){}]*  # C:\…
      | (?:\\\\|~[\\/]|\.{1,2}[\\/]|[\\/](?=[\w.@%\[$-]))[^\s'"`<>|:;,(){}]*   # absolute, ./, ~/
      | [\w.@+-]+(?:[\\/][\w.@+\[\]-]+){2,}[\\/]?                                           # a/b/c
      | [\w.@+-]+[\\/][\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}                            # a/b.ext
    )(?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))?""",
    re.VERBOSE | _A,
)
_LINE_COL = compile_rx(r"(?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))$", _A)
_PACKAGE_DIR = compile_rx(r"(?:site-packages|dist-packages|node_modules)[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)", _A)
# Temporary files, by name rather than folder (a reproduction run in /tmp is still the same
# failure): gcc's /tmp/ccXXXXXX.o, LTO's name.XXXXXX.ltrans0.ltrans.o, Python's tmpXXXXXXXX.
_TEMP_NAME = (
    r"(?:cc(?=[a-z0-9]*[A-Z0-9])[A-Za-z0-9]{6}(?:\.ltrans[0-9]*\.ltrans)?(?P<e1>\.[a-z]{1,3})"
    r"|[\w-]+\.[A-Za-z0-9]{6}\.ltrans[0-9]*\.ltrans(?P<e2>\.o)|tmp(?=[a-z_]*[0-9])[a-z0-9_]{6,8}(?P<e3>\.[A-Za-z0-9]+)?)"
)
_TEMP = compile_rx(rf"^{_TEMP_NAME}$", _A)
_TEMP_WORD = compile_rx(rf"(?<![\w.<-]){_TEMP_NAME}(?![\w-])", _A)
# An extension-less basename of an absolute path is mostly a user's folder (a project root, a
# home); in these places it is a program or a device, which says what failed.
_KEEP_DIR = compile_rx(r"^(?:/usr(?:/local)?)?/s?bin/|^/(?:etc|dev|proc|sys)/|^/opt/[^/]+/bin/", _A)
_EXTENSION = compile_rx(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", _A)
_SECTION = compile_rx(r"\(\.[\w.$]+(?:\[[^\]]*\])?\+0x[0-9a-fA-F]+\)", _A)
# IPv4[:port], [v6]:port, :::port, localhost:port: whichever address a service tried.
_ADDR = compile_rx(
    r"\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]{1,5})?\b|\[[0-9a-fA-F]*:[0-9a-fA-F:]*\](?::[0-9]{1,5})?|:::[0-9]{1,5}\b"
    r"|\blocalhost:[0-9]{1,5}\b",
    _A,
)
_HEX = compile_rx(
    r"\b0x[0-9a-fA-F]+\b|(?<![A-Za-z0-9_])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,}(?![A-Za-z0-9_])"
    # upper-case ids; not OpenSSL's "error:0308010C:digital envelope routines", a code
    r"|(?<![A-Za-z0-9_])(?=[0-9A-F]*[0-9])(?=[0-9A-F]*[A-F])[0-9A-F]{8,}(?![A-Za-z0-9_]|:[A-Za-z])",
    _A,
)
_SIZE = compile_rx(r"(?<![A-Za-z0-9_.])[0-9]+(?:\.[0-9]+)?\s?(?:[KMGTP]i?B|kB|bytes?)(?![A-Za-z0-9_])", _A)
_DURATION = compile_rx(
    r"(?<![A-Za-z0-9_.])[0-9]+(?:\.[0-9]+)?\s?(?:ms|s|sec|secs|seconds?|mins?|minutes?|h|hours?)(?![A-Za-z0-9_])", _A
)
# Integers, decimals, versions (v1.2.3-rc1, 17.0.1+12-LTS): one placeholder, as one failure prints
# "major version 61" in one place and "class file version 55.0" in another.
_NUMBER = compile_rx(
    r"(?<![A-Za-z0-9_])(?:v(?=[0-9]+\.[0-9]))?[0-9]+(?:[.,][0-9]+)*(?:[-+~][0-9A-Za-z][0-9A-Za-z.+~-]*)?(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_.])(?:v(?=[0-9]+\.[0-9]))?[0-9]+(?:\.[0-9]+)+(?=[A-Za-z])",
    _A,
)
# Numbers that change the fix: exit codes, statuses, errno, signals, curl codes, a soname's
# version, and a version range something must meet (">=3.12").
_KEEP_BEFORE = compile_rx(
    r"(?:exit\s(?:code|status)|status(?:\scode)?|\bcode|errno|\berror|WinError|signal|HTTP(?:/[0-9.]+)?|returned|\[Errno"
    r"|\bcurl|\.so\.|>=|<=|~=|[<>^~])[\s:=(]*$",
    re.IGNORECASE | _A,
)
_HTTP_REASON = compile_rx(r"\s[A-Z][a-z]", _A)
_PLURAL = compile_rx(
    r"(<n> (?:error|warning|file|line|test|item|package|problem|module|target|crate|job|issue|dependenc))(?:s|ies)\b",
    _A,
)
_SPACE = compile_rx(r"\s+")
_WERROR = compile_rx(r"\[-Werror=", _A)
_ANSWERED_BY = compile_rx(r"^\s*<email>:\s+", _A)
_JAVA_INNER = compile_rx(r"(?<![\w$.])(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Error|Exception):\s", _A)


def _path(m: re.Match[str], *, folders: bool = False) -> str:
    """A path as its key line keeps it: a package, a file name, a program, else ``<dir>``; with
    ``folders``, ``<dir>`` is followed by the folders' names (``search_words``)."""
    raw = _LINE_COL.sub("", m.group(0))
    parts = [p for p in re.split(r"[\\/]+", raw) if p and p not in (".", "..", "~")]
    if not parts:
        return raw
    base = parts[-1]
    if _TEMP.match(base):
        return _TEMP.sub(_temp, base)
    pkg = None
    for pm in _PACKAGE_DIR.finditer(raw):
        pkg = pm.group(1).replace("\\", "/")
    if pkg:
        return pkg if pkg.split("/")[-1] == base else f"{pkg}/{base}"
    if _EXTENSION.search(base):
        return base
    if raw[:1] in "/\\~" or raw[1:2] == ":":
        if _KEEP_DIR.match(raw):
            return base
        return " ".join(["<dir>", *(p for p in parts if not p.isdigit())]) if folders else "<dir>"
    # a/b/c without an extension is rather a name than a place: a Go import path, a Node module
    # specifier, a Java class (github.com/mattn/go-sqlite3, webpack-cli/bin/config-yargs)
    return raw


def _temp(m: re.Match[str]) -> str:
    return "<tmp>" + (m.group("e1") or m.group("e2") or m.group("e3") or "")


def _number(m: re.Match[str]) -> str:
    if _KEEP_BEFORE.search(m.string, max(0, m.start() - 24), m.start()):
        return m.group(0)
    token = m.group(0)
    if len(token) == 3 and token.isdigit() and token[0] in "12345" and _HTTP_REASON.match(m.string, m.end()):
        return token  # "404 Not Found"
    return "<n>"


def _mask(s: str) -> str:
    for rx in _TRAILERS:
        s = rx.sub("", s)
    s = _PROJECT.sub(r"\1 project <project>", s)
    s = _URL.sub("<url>", s)
    s = _EMAIL.sub("<email>", s)
    s = _UUID.sub("<uuid>", s)
    s = _TIME.sub("<time>", s)
    s = _PATH.sub(_path, s)
    s = _TEMP_WORD.sub(_temp, s)
    s = _SECTION.sub("", s)
    s = _ADDR.sub("<addr>", s)
    s = _HEX.sub("<hex>", s)
    s = _SIZE.sub("<size>", s)
    s = _DURATION.sub("<duration>", s)
    s = _NUMBER.sub(_number, s)
    s = _PLURAL.sub(r"\1", s)
    s = _WERROR.sub("[-W", s)  # [-Werror=x] is [-Wx] under -Werror
    # Windows spells $PATH %PATH%; OpenSSL 3 writes "self-signed" where 1.1 wrote "self signed".
    s = s.replace("%PATH%", "$PATH").replace("self signed", "self-signed")
    # `git@github.com: Permission denied (publickey)`: who answered, not what failed.
    s = _ANSWERED_BY.sub("", s)
    return _SPACE.sub(" ", s).strip().rstrip(".:;, ")[:500]


def _normalize(c: _Candidate) -> str:
    if c.canonical is not None:
        return _mask(c.canonical)
    s = c.content
    for _ in range(4):  # "error: ld: x.o: error: msg", "E   FAILED ..."
        before = s
        s = R.LOCATION.sub("", R.SEVERITY.sub("", s, count=1), count=1)
        if s == before:
            break
    # "Failed to execute goal …: java.lang.RuntimeException: java.lang.X: msg" is about X.
    inner = list(_JAVA_INNER.finditer(s))
    if inner:
        s = s[inner[-1].start() :]
    return _mask(s)


def digest(normalized: str, algorithm: str = ALGORITHM) -> str:
    """The signature of one normalised line under ``algorithm`` (reindex recomputes old ones)."""
    hexdigest: str = _sha256(f"{algorithm}\n{normalized}".encode()).hexdigest()
    return "sha256:" + hexdigest


_digest = digest


def analyze(text: str) -> Analysis:
    """Key lines, their normalised forms and signatures, code symbols and tool of an error text."""
    try:
        return _analyze(text) if isinstance(text, str) else _EMPTY
    except Exception:  # a signature is a hint: no input may break a search or a note
        return _EMPTY


def _analyze(text: str) -> Analysis:
    if "_Z" in text:  # a mangled C++ name: spelled as GNU ld and lld print it (imported only then)
        from .demangle import in_text

        text = in_text(text)
    lines = _lines(text)
    keys: list[str] = []
    norms: list[str] = []
    near: list[int] = []
    limit = 3  # a consequence (tier 3) only when it is the first candidate
    for tried, c in enumerate(_candidates(lines)):
        # Beside an explicit error, a line that merely sounds like one ("pkg-config exited with
        # status code 1") is no second key: it would make look-alike failures share a signature.
        if c.tier > limit or tried == 20:  # 20: a log repeating one error a thousand times
            break
        n = _normalize(c)
        if n and n not in norms:
            keys.append(c.content[:500])
            norms.append(n)
            near.append(c.index)
            limit = max(c.tier, 1)
            if len(keys) == MAX_KEY_LINES:
                break
    if not keys and all(not line.strip() for line in lines):
        return _EMPTY
    # The tool shows in the key lines, else next to them or in the command at the top; a whole
    # 400-line log would cost more than everything else together.
    window = {i for k in near for i in range(k - TOOL_WINDOW, k + TOOL_WINDOW)}
    window.update(range(TOOL_WINDOW), range(len(lines) - TOOL_WINDOW, len(lines)))
    context = "\n".join(lines[i][:300] for i in sorted(window) if 0 <= i < len(lines))
    return Analysis(
        tuple(keys),
        tuple(norms),
        tuple(dict.fromkeys(_digest(n) for n in norms)),
        R.symbols("\n".join(lines), MAX_SYMBOLS),
        R.tool(keys, context),
    )


# Stack frames of Python, Java and JavaScript, and their headers: where the error passed, printed
# alike by every traceback; as search words they make any two tracebacks look related.
_FRAME = compile_rx(
    r"""^\s*(?:File\s"[^"]*",\sline\s[0-9]+(?:,\sin\s.*)?|Traceback\s\(most\srecent\scall\slast\):?
      | at\s(?:[\w$.<>\[\]]+\s)?\(?[^\s()]+(?::[0-9]+)+\)? | at\s[\w$.<>/]+\([^()]*\) | \.\.\.\s[0-9]+\smore)\s*$""",
    re.VERBOSE | _A,
)


def search_words(text: str, *, demangle: bool = True, folders: bool = False, stamps: bool = True) -> str:
    """The part of an error text worth searching by its words (the ``lexical`` signal).

    Stack frames go, paths keep only what names the failure (a package, a file name; the rest is
    one user's folders), and mangled C++ names read as people write them (``torch::jit::parseSchema``),
    so a record that names the symbol in its explanation is found. Text without any of these is
    returned as it came.

    ``folders`` (a query's text, query.Query): a folder path that names no file keeps its folders'
    names too. A failing path is often the object of the message (nginx's `open()
    "/var/lib/nginx/proxy/4/00/0000000004" failed`), and its folders name what failed as a record's
    title or explanation says it; a user's own folder names, which no record holds, count as any word
    the store has not seen (lexical.QueryWeights). Records keep ``<dir>`` alone: their own folders
    would be one user's, and the index needs no rebuilding. Below c4700 (sets dev to S; recurring /
    natural-language / zh/mixed top-1, look-alike confusions): 4 855 / 2 515 / 728 / 149 -> 4 863 /
    2 518 / 727 / 150; the folders of a file's path too: 4 859 / 2 519 / 727 / 149.

    ``stamps=False`` (a query's text): dates and clock times go. They are when one user's log was
    written, and a record from another log of the same day or hour held its `2022`, `04` and `15` as
    words of the query: the Zigbee2MQTT start failure for the wrong serial port error, an Elixir NIF's
    load error for OpenSSL's. Records keep theirs: the index needs no rebuilding, and a query without
    them cannot match them. Below c15500 (sets dev to AO; recurring top-1, confusions, natural-language,
    zh/mixed): 6 335 / 296 / 3 319 / 1 107 -> 6 342 / 294 / 3 319 / 1 107 of 6 869 / 4 170 / 1 434; hex
    addresses and UUIDs dropped too: 6 342 / 295 / 3 316 / 1 106; numbers of one or two digits too:
    6 330 / 301 / 3 280 / 1 100 (a version's `3`, a port's `80`, an exit code's `1` name the failure).
    """
    try:
        if not isinstance(text, str):
            return ""
        if demangle and "_Z" in text:
            from .demangle import in_text

            text = in_text(text)
        place = functools.partial(_path, folders=folders)
        kept = "\n".join(_PATH.sub(place, line) for line in _lines(text) if not _FRAME.match(line))
        return kept if stamps else _TIME.sub(" ", kept)
    except Exception:  # words are a hint like the signature: no input may break a search
        return text if isinstance(text, str) else ""


def title_symbols(title: str) -> tuple[str, ...]:
    """The code symbols a record's title names (``vLLM "ValueError: … `gpu_memory_utilization`"``).

    A title says what failed, as the key lines do (the lexical index joins them for that reason,
    indexing.lexical_index), and a note's ``what`` is often prose or a cut log that names the error
    only in its title: its symbols are the record's too (tune split: recurring top-1 2 619 -> 2 624 of
    2 734, look-alike confusions 61 -> 58, natural-language 1 305 -> 1 307, zh/mixed 227 -> 230)."""
    try:
        return R.symbols(title, MAX_SYMBOLS) if isinstance(title, str) else ()
    except Exception:  # a hint, as analyze: no title may break a note
        return ()


# What a title quotes, in straight or curly double quotes: at least a few words, not a name.
_TITLE_QUOTE = compile_rx(r'"([^"\n]{12,300})"|\u201c([^\u201d\n]{12,300})\u201d')


@functools.lru_cache(maxsize=4096)
def quoted_lines(title: str) -> tuple[str, ...]:
    """The normalised lines of the messages a record's title quotes (``Keycloak 18+ logout "Invalid
    parameter: redirect_uri"``): each quote's key lines, else the quote masked as a key line is.

    A title names the error its record is about, and its text's key line may be another (a log
    whose first error line is not the one that matters, a sentence around the message, a question
    in another language): ranking compares the query's key lines with these as with the record's
    own, for a near match only (ranking._near_lines). Kept per title: a long-lived server meets the same
    records' titles search after search."""
    out: list[str] = []
    try:
        for match in _TITLE_QUOTE.finditer(title):
            quote = match.group(1) or match.group(2)
            found = analyze(quote).normalized or ((_mask(quote),) if quote.strip() else ())
            out += [n for n in found if n and n not in out]
    except Exception:  # a hint, as analyze: no title may break a search
        return ()
    return tuple(out)


def record_symbols(title: str, analysis: Analysis, *more: str) -> tuple[str, ...]:
    """A record's code symbols as stored: its text's (``analysis``), its title's, then ``more``
    (the session's failure, symbols kept from before), each once, at most 64."""
    return tuple(dict.fromkeys((*analysis.symbols, *title_symbols(title), *more)))[:64]


def key_line(text: str) -> str:
    """The first key line of ``text``; else its first non-empty line (cleaned); else ""."""
    found = analyze(text).key_lines
    if found or not isinstance(text, str):
        return found[0] if found else ""
    try:
        return next((c for c in (_content(line)[0] for line in _lines(text)) if c), "")
    except Exception:
        return ""
