"""The rule tables behind :mod:`jiyi.signature`: what a key line is, what varies, what to keep.

Kept apart from the pipeline so the tables can grow without burying the logic. Every pattern is
ASCII-only on purpose (``re.ASCII`` or explicit ``[0-9]`` classes): Python's ``\\d`` and ``\\w``
match non-ASCII digits and letters, and ``\\b`` finds no boundary between a CJK character and a
digit (``第42行``), which would split one error into several signatures.
"""

from __future__ import annotations

import re
from collections.abc import Callable

A = re.ASCII
I = re.ASCII | re.IGNORECASE  # noqa: E741 - the usual flag shorthand

# -- Line prefixes that say when/where a line was printed, never what went wrong -------------------

# Stripped repeatedly from the start of a line (CI and container log decorations).
PREFIXES = re.compile(
    r"""^(?:
        \s+
      | [0-9]{4}-[0-9]{2}-[0-9]{2}[T\x20][0-9:.,]+(?:Z|[+-][0-9]{2}:?[0-9]{2})?\s*  # ISO stamp (Actions)
      | \[?[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?\]?\s+                   # [12:00:01]
      | [A-Z][a-z]{2}\x20[0-9]{1,2}\x20[0-9:]{8}(?:\x20[AP]M)?\s+              # May 19 11:35:19 AM
      | \#[0-9]+\x20[0-9]+\.[0-9]+\s+                                         # buildkit "#0 9.445"
      | [0-9]+\.[0-9]{3}(?:\s+|$)                                             # buildx "3.026"
      | \#\#\[(?:error|warning|group|endgroup|debug)\]                        # GitHub Actions
      | ::(?:error|warning)[^:]*::
      | [\w.-]+\s+\|\s?                                                       # compose "name  | "
      | [|>\u2502\u2551\u00d7]\s?                                             # quotes, rich/pip boxes
      | \u2570\u2500>\s*                                                      # pip's ╰─>
    )""",
    re.VERBOSE | A,
)
# A line wholly inside quotes, as pasted from a script's output.
QUOTED_LINE = re.compile(r"""^(['"])(.+)\1$""")
# Shell prompts: the line is a command someone typed, not an error.
PROMPT = re.compile(
    r"""^(?:\$\s|\u276f\s|\u279c\s|%\s|>>>\s|PS\s\S.*?>\s|[A-Za-z]:\\[^>]*>|\S+@\S+[:\s].*?[$#%]\s|\([\w.-]+\)\s\S+[$#]\s)""",
    A,
)
# Severity words that add nothing once a line is known to be the error.
SEVERITY = re.compile(
    r"^(?:\[(?:ERROR|FATAL|error)\]\s*|(?:npm\s+)?ERR!\s*|npm\s+error\s+|E\s{2,}|(?:fatal\s+)?error:\s*|"
    r"ERROR:\s*|Error:\s+|fatal:\s*|FATAL:\s*|FAILED:?\s+)",
    A,
)
# A leading source location: "src/a.c:12:5:", "a.ts(9,24):", "a.ts:1:24 -", "x.o:(.text+0x1f):".
LOCATION = re.compile(
    r"^(?:[A-Za-z]:)?[^\s:()]*[^\s:()/\\](?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))"
    r"(?::\(\.[^)]*\))?(?::\s*|\s+-\s+)",
    A,
)
OBJECT_PREFIX = re.compile(r"^(?:[^\s:]*/)?(?:[\w.+-]*ld(?:\.[a-z]+)?|collect2|lld):\s+", A)

# -- Lines that frame an error without being it ----------------------------------------------------

WRAPPERS = re.compile(
    r"""(?:
        ^g?make(?:\[[0-9]+\])?:\s\*\*\*\s(?:\[.*\]\sError\s[0-9]+|Waiting\sfor)
      | ^\S*Makefile\S*:\s?recipe\sfor\starget
      | collect2:\s(?:fatal\s)?error:\sld\sreturned | linker\scommand\sfailed\swith\sexit\scode
      | ^(?:error:\s)?(?:could\snot\scompile|aborting\sdue\sto|build\sfailed)
      | ^warning:\sbuild\sfailed | For\smore\sinformation\sabout\sth(?:is|ese)\serrors?,\stry
      | ^To\slearn\smore,\srun\sthe\scommand | process\sdidn't\sexit\ssuccessfully
      | ^Caused\sby:\s*$
      | Traceback\s\(most\srecent\scall\slast\) | During\shandling\sof\sthe\sabove\sexception
      | The\sabove\sexception\swas\sthe\sdirect\scause
      | ^(?:npm\s(?:ERR!|error)|ERR!)\s*(?:$|A\scomplete\slog|code\sELIFECYCLE|errno|Exit\sstatus|Failed\sat\sthe
            |This\sis\sprobably|Tell\sthe\sauthor|You\scan\sget|Make\ssure|Please\sinclude|If\syou\sneed|Test\sfailed
            |\S*\.log\s*$|\s*\S*_logs)
      | Process\s(?:completed|finished)\swith\sexit\scode | ^Process\sfailed | ^Command\sfailed\swith\sexit\scode
      | ^error\sCommand\sfailed | exited\swith\s(?:exit\s)?code\s[0-9]+\.?$
      | subprocess-exited-with-error | metadata-generation-failed | legacy-install-failure
      | This\serror\soriginates\sfrom\sa\ssubprocess | Failed\sbuilding\swheel\sfor | Could\snot\sbuild\swheels\sfor
      | Command\serrored\sout\swith\sexit\sstatus | ^\[?end\sof\soutput\]? | lines\sof\soutput\]
      | did\snot\srun\ssuccessfully | ^(?:ERROR:\s)?failed\sto\ssolve: | did\snot\scomplete\ssuccessfully
      | returned\sa\snon-zero\scode | executor\sfailed\srunning | failed\sto\sbuild:\s*$
      | FAILURE:\sBuild\sfailed | ^BUILD\sFAIL | ^\*\s(?:What\swent\swrong|Try|Where|Exception\sis|Get\smore\shelp):
      | ^Run\swith\s--(?:stacktrace|info|debug|scan) | ^Get\smore\shelp\sat | ^startup\sfailed:\s*$
      | ^Execution\sfailed\sfor\stask | ^\[(?:ERROR|INFO)\]\s*(?:$|->\s\[Help|Re-run\sMaven|For\smore\sinformation
            |To\ssee\sthe\sfull|COMPILATION\sERROR|After\scorrecting|Failure\sexecuting\sjavac|BUILD\sFAILURE|Help\s[0-9]
            |[0-9]+\serrors?\s*$|-{5,})
      | Failed\sto\sexecute\sgoal\s.*?:\s(?:Compilation\sfailure:?\s*)+$
      | ^-+\sConfiguring\sincomplete | CMakeError\.log | CMakeOutput\.log
      | ^=+\s.*\b(?:failed|passed|errors?)\b.*\sin\s[0-9.]+s | short\stest\ssummary\sinfo | ^!+\sInterrupted
      | ^(?:FAILED|ERROR)\s+\S+\s*$ | ^_{3,}\s | ^FAIL\s+\S+\s+[0-9.]+s\s*$ | ^FAIL\s*$ | ^exit\sstatus\s[0-9]+\s*$
      | ^error:\sfailed\sto\spush\ssome\srefs\s*$ | ^Undefined\ssymbols\sfor\sarchitecture
      | ^ld:\ssymbol\(s\)\snot\sfound | ^error:\scommand\s'.*'\sfailed\swith\sexit | ^Error:\sexit\sstatus
      | ^\s*exit\scode:?\s[0-9]+\s*$ | non-zero\sexit\sstatus | ^in\sfunction\s
    )""",
    re.VERBOSE | A,
)
# Headers: the error's own message is on the next line that says anything.
HEADERS = re.compile(
    r"""(?:^thread\s'[^']*'(?:\s\([0-9]+\))?\spanicked\sat\s(?:'|\S+:[0-9]+:[0-9]+:)$ | ^CMake\sError\sat\s.*:$
      | ^\*\sWhat\swent\swrong:$)""",
    re.VERBOSE | A,
)
# Context lines: looked at only when a text has nothing better (hints, notes, warnings, frames).
CONTEXT = re.compile(
    r"""(?:^(?:hint|note|help|info|warning|warn|Warning|WARNING|WARN)(?:\[[^\]]*\])?[:\s] | ^=\s(?:note|help):
      | ^\S+:\s(?:warning|note):\s | ^\(node:[0-9]+\)\s | ^at\s\S | ^File\s" | ^\S+Warning:\s | ^[\s^~|]*$
      | ^-{3}\s(?:stdout|stderr) | ^cargo:)""",
    re.VERBOSE | A,
)

# -- What makes a line the error ---------------------------------------------------------------------

# An exception line: Python / Java / JavaScript "Type: message" (and its Java prefixes).
EXCEPTION = re.compile(
    r"^(?:Exception\sin\sthread\s\"[^\"]*\"\s|Caused\sby:\s|Uncaught\s)?"
    r"(?:[A-Za-z_][\w$]*\.)*(?:[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Fault|Iteration)|Error)"
    r"(?:\s\[[A-Z0-9_]+\])?:(?:\s|$)",
    A,
)
STRONG = re.compile(
    r"""(?:^error(?:\[[A-Z]*[0-9]+\])?:\s | ^(?:fatal\s)?error:\s | ^fatal:\s | ^FATAL:?\s | ^ERROR:?\s | ^\[ERROR\]\s+\S
      | ^(?:npm\s(?:ERR!|error)|ERR!)\s+\S | ^E\s{2,}\S | ^(?:FAILED|ERROR)\s+\S+::\S*.*\s-\s\S | ^panic:\s
      | ^thread\s'[^']*'.*\spanicked\sat\s | (?:^|\s|:)(?:fatal\s)?error(?:\[[A-Z]*[0-9]+\])?:\s | \berror\sTS[0-9]+
      | ^TS[0-9]+:\s | command\snot\sfound | ^CMake\sError | ^E:\s | ^\S+:\s(?:fatal\s)?error:\s | Segmentation\sfault
      | core\sdumped | ^Killed\s*$ | is\snot\srecognized\sas\san\sinternal\sor\sexternal\scommand
      | ^(?:[^\s:]+:[0-9]+(?::[0-9]+)?:\s)?undefined:\s | undefined\sreference\sto | undefined\ssymbol
    )""",
    re.VERBOSE | A,
)
WEAK = re.compile(
    r"(?:\b(?:errors?|fail(?:s|ed|ure)?|cannot|can't|could\snot|couldn't|unable|not\sfound|no\ssuch|undefined|"
    r"unresolved|denied|refus(?:ed|ing)|missing|invalid|unsupported|not\ssupported|incompatible|exception|"
    r"panicked|abort(?:ed)?|fatal|timed\sout|timeout|not\sallowed|forbidden|unauthori[sz]ed|rejected|conflict(?:s|ing)?|"
    r"mismatch|unrecognized|illegal|not\spermitted|unexpected|overflow|violation|externally-managed)\b"
    r"|错误|失败|找不到|无法|未找到|未定义|エラー|失敗)",
    I,
)
# Exception types that only say "a subprocess failed": the real error is elsewhere in the log.
WEAK_EXCEPTIONS = re.compile(r"^(?:subprocess\.)?CalledProcessError:|^SystemExit:|^(?:Error:\s)?Command failed", A)

# -- Canonical lines: one wording for one failure, whoever printed it ---------------------------------

# System-library families: which library a missing symbol lives in decides the fix (-lm, -lpthread,
# -ldl, -lrt), not which of its functions the program happened to call first.
_LIBM = (
    "sqrt cbrt pow exp exp2 expm1 log log10 log2 log1p sin cos tan asin acos atan atan2 sinh cosh tanh asinh "
    "acosh atanh floor ceil round lround llround trunc fmod remainder hypot fmin fmax fma ldexp frexp modf erf "
    "erfc tgamma lgamma nearbyint rint lrint llrint copysign nextafter sincos fdim scalbn ilogb logb"
)
LIB_FAMILY: dict[str, str] = {}
for _name in _LIBM.split():
    for _suffix in ("", "f", "l"):
        LIB_FAMILY[_name + _suffix] = "libm"
for _name in "dlopen dlsym dlclose dlerror dladdr dlinfo dlvsym dlmopen".split():
    LIB_FAMILY[_name] = "libdl"
for _name in "clock_gettime clock_settime clock_getres shm_open shm_unlink timer_create timer_settime mq_open".split():
    LIB_FAMILY[_name] = "librt"
PTHREAD = re.compile(r"^(?:pthread_\w+|sem_(?:open|close|unlink|wait|post|init|destroy|timedwait|trywait))$", A)

# Rust legacy mangling hash, GNU symbol versions, Mach-O / MSVC decorations.
RUST_HASH = re.compile(r"::h[0-9a-f]{16}\b", A)
SYMBOL_VERSION = re.compile(r"@@?[A-Za-z_]+[0-9.]*$", A)


def clean_symbol(raw: str, *, macho: bool = False) -> str:
    """A linker symbol as the source spells it: no hash, no symbol version, no Mach-O underscore."""
    sym = RUST_HASH.sub("", raw.strip().strip("`'\"\u2018\u2019"))
    sym = SYMBOL_VERSION.sub("", sym)
    if sym.startswith("__imp_"):
        sym = sym[6:]
    if macho and sym.startswith("_"):
        sym = sym[1:]
    return sym


def _library(sym: str) -> str:
    if sym in LIB_FAMILY:
        return f"<{LIB_FAMILY[sym]}>"
    if PTHREAD.match(sym):
        return "<libpthread>"
    return sym


def _undefined(m: re.Match[str]) -> str:
    raw = m.group("sym")
    return "undefined symbol: " + _library(clean_symbol(raw, macho=m.group("macho") is not None))


def _node_code(m: re.Match[str]) -> str:
    # Node changed the wording of its coded errors between releases; the code and the package stay.
    rest = m.group("rest")
    pkg = re.search(r"node_modules[\\/]((?:@[\w.-]+[\\/])?[\w.-]+)", rest, A)
    name = re.search(r"""['"]([^'"\s]+)['"]""", rest, A)
    subject = pkg.group(1).replace("\\", "/") if pkg else (name.group(1) if name else "")
    return f"{m.group('type')} [{m.group('code')}]" + (f": {subject}" if subject else "")


Template = tuple[str, "re.Pattern[str]", Callable[[re.Match[str]], str]]


def _t(needle: str, pattern: str, build: str | Callable[[re.Match[str]], str], flags: int = A) -> Template:
    rx = re.compile(pattern, flags)
    if isinstance(build, str):
        text = build
        return (needle, rx, lambda m: m.expand(text))
    return (needle, rx, build)


# (needle, pattern, canonical): the needle is a cheap lower-case substring test run before the regex,
# so a 400-line log costs a few ``in`` checks per line rather than a few dozen regex searches.
TEMPLATES: list[Template] = [
    _t(
        "undefined reference",
        r"undefined reference to (?:symbol )?(?:[`'\u2018\"](?P<sym>[^`'\u2019\"]+)[`'\u2019\"]|(?P<bare>\S+))"
        r"(?P<macho>(?!))?",
        lambda m: "undefined symbol: " + _library(clean_symbol(m.group("sym") or m.group("bare"))),
    ),
    _t("undefined symbol", r"^(?:\S*ld(?:\.\w+)?:\s)?(?:error:\s)?undefined symbol: (?P<sym>.+?)\s*$(?P<macho>(?!))?", _undefined),
    _t("referenced from", r"^\"(?P<macho>_)?(?P<sym>[^\"]+)\", referenced from", _undefined),
    _t(
        "unresolved external symbol",
        r"unresolved external symbol \"?(?P<macho>_(?=[A-Za-z]))?(?P<sym>[^\s\"]+)\"?",
        _undefined,
    ),
    _t("multiple definition", r"multiple definition of [`'\u2018\"][^`'\u2019\"]+", "multiple definition of <symbol>"),
    _t("duplicate symbol", r"^(?:\S*ld(?:\.\w+)?:\s)?(?:error:\s)?duplicate symbol", "multiple definition of <symbol>"),
    _t("cannot find -l", r"cannot find -l(\S+)", r"cannot find -l\1"),
    _t("library not found for -l", r"library not found for -l(\S+)", r"cannot find -l\1"),
    _t("unable to find library -l", r"unable to find library -l(\S+)", r"cannot find -l\1"),
    _t("no such file or directory", r"fatal error: ([\w./+-]+): No such file or directory", r"fatal error: \1: file not found"),
    _t("file not found", r"fatal error: '([\w./+-]+)' file not found", r"fatal error: \1: file not found"),
    _t("exec format error", r"exec format error", "exec format error"),
    _t("cannot import name", r"cannot import name '?([\w.]+)'?(?: from '([\w.]+)')?", r"ImportError: cannot import name '\1' from '\2'"),
    _t("no module named", r"No module named '?([\w.]+)'?", r"ModuleNotFoundError: No module named '\1'"),
    _t(
        "compiled by a more recent version",
        r"has been compiled by a more recent version of the Java Runtime",
        "java.lang.UnsupportedClassVersionError: <class> has been compiled by a more recent version of the Java Runtime",
    ),
    _t(
        "cannot access class",
        r"class ([\w.$]+) \(in (?:unnamed )?module[^)]*\) cannot access class ([\w.$]+) \(in module ([\w.]+)\)",
        r"java.lang.IllegalAccessError: class \1 cannot access class \2 (in module \3)",
    ),
    _t("unsupported class file major version", r"Unsupported class file major version", "Unsupported class file major version <n>"),
    _t(
        "could not find a declaration file for module",
        r"Could not find a declaration file for module",
        "error TS7016: Could not find a declaration file for module <module>",
    ),
    _t("error ts", r"\berror TS([0-9]+):\s*(.*)", r"error TS\1: \2"),
    _t("ts", r"^TS([0-9]+):\s*(.*)", r"error TS\1: \2"),
    _t("ts(", r"^(.*?)\s*\bts\(([0-9]+)\)\s*$", r"error TS\2: \1"),
    _t("[err_", r"(?P<type>\w*Error) \[(?P<code>ERR_[A-Z0-9_]+)\]:?(?P<rest>.*)", _node_code),
    _t("executable file not found", r"exec: \"([^\"]+)\": executable file not found in", r'exec: "\1": executable file not found in $PATH'),
    _t(
        "not found",
        r"^(?:\S*/)?(?:ba|z|da|k|fi)?sh:\s(?:line\s[0-9]+:\s)?(?:[0-9]+:\s)?(\S+?):\s(?:command\s)?not\sfound\s*$",
        r"command not found: \1",
    ),
    _t("command not found:", r"command not found: (\S+)", r"command not found: \1"),
    _t("not recognized as an internal", r"'([^']+)' is not recognized as an internal", r"command not found: \1"),
    _t("is not recognized as the name of", r"The term '([^']+)' is not recognized", r"command not found: \1"),
    _t("rejected]", r"!\s?\[(remote )?rejected\]\s+\S+\s+->\s+\S+\s+\(([^)]+)\)", r"! [\1rejected] <ref> -> <ref> (\2)"),
    _t("setting locale failed", r"Setting locale failed", "perl: warning: Setting locale failed"),
]

# -- Code symbols ------------------------------------------------------------------------------------

ERRNO = frozenset(
    "ENOENT EACCES EPERM EEXIST EADDRINUSE EADDRNOTAVAIL ECONNREFUSED ECONNRESET ECONNABORTED ETIMEDOUT "
    "ENOTFOUND EAI_AGAIN ENOSPC EMFILE ENFILE ENOMEM EISDIR ENOTDIR ENOTEMPTY EPIPE EROFS EBUSY EINVAL EAGAIN "
    "EHOSTUNREACH ENETUNREACH ELOOP ENAMETOOLONG EXDEV ESRCH ENOEXEC EBADF ETXTBSY ENOSYS EPROTO ENOTCONN "
    "EINTR EIO ENODEV ENXIO EDQUOT ESPIPE ERANGE EDOM EOVERFLOW EILSEQ ECANCELED ENOTSUP EOPNOTSUPP ENOTSOCK".split()
)
_STOP = frozenset("main type module any true false null none None self this default unset C POSIX y n".split())
_FILE_EXT = frozenset(
    "c h cc cpp cxx hpp hh o obj a so dylib dll exe lib js mjs cjs ts tsx jsx py pyc pyi rs go java class jar kt kts "
    "gradle json yaml yml toml xml txt md log lock cfg ini sh bash bat cmd ps1 pc html css venv whl zip gz tgz mk "
    "cmake in am rb php swift m mm sql d map vue svelte dart lua pl pm r scala".split()
)
_TLD = frozenset("com org net io dev edu gov co uk cn de jp ru fr info app".split())

# (pattern, group, cleaner-kind): specific patterns first; their spans keep the generic ones out.
_SPECIFIC: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"undefined reference to (?:symbol )?[`'\u2018\"]([^`'\u2019\"]+)[`'\u2019\"]", A), "link"),
    (re.compile(r"undefined reference to ([A-Za-z_][\w$.:@]*)", A), "link"),
    (re.compile(r"undefined symbol: ([^\s,]+)", A), "link"),
    (re.compile(r"\"(_[^\"\s]+)\", referenced from", A), "macho"),
    (re.compile(r"unresolved external symbol \"?([^\s\"]+)", A), "msvc"),
    (re.compile(r"(?:multiple definition of|duplicate symbol:?) [`'\u2018\"]?([^`'\u2019\"\s;]+)", A), "link"),
    (re.compile(r"\bin function [`'\u2018]([^`'\u2019]+)[`'\u2019]", A), "skip"),
    (re.compile(r"No module named '?([\w.]+)'?", A), "plain"),
    (re.compile(r"named '([^'\s]+)'", A), "plain"),
    (re.compile(r"(?:^|\s)([\w.+-]+): command not found", re.M | A), "plain"),
    (re.compile(r"command not found: ([\w.+-]+)", A), "plain"),
    (re.compile(r"`([\w-]+) v[0-9][^`]*`", A), "plain"),
    (re.compile(r"error\[(E[0-9]{4})\]|\b(E[0-9]{4})\b|\b(TS[0-9]{4,5})\b|\b(LNK[0-9]{4})\b|\b(C[0-9]{4})\b", A), "plain"),
    (re.compile(r"\bts\(([0-9]{4,5})\)", A), "ts"),
    (re.compile(r"\b(ERR_[A-Z0-9_]+)\b", A), "plain"),
    (re.compile(r"\b(?:npm (?:ERR!|error) code|code:?) '?(E[A-Z0-9]{2,})\b", A), "plain"),
    (re.compile(r"\b(E[A-Z][A-Z_]{2,})\b", A), "errno"),
    (re.compile(r"\[([a-z]+(?:-[a-z]+)+)\]\s*$", re.M | A), "plain"),  # mypy error codes
    (re.compile(r"(?<![\w$.])((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Iteration))\b", A), "exc"),
]
_QUOTED = re.compile(
    r"(?<![\w])`([^`'\s]{2,100})[`']|(?<![A-Za-z0-9])'([^'\s]{2,100})'(?![A-Za-z0-9])|\"([^\"\s]{2,100})\""
    r"|\u2018([^\u2019\s]{2,100})\u2019",
    A,
)
_DOTTED = re.compile(r"(?<![\w$./\\-])[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+", A)
_IDENT = re.compile(r"^(?:@[\w.-]+/)?[A-Za-z_$][\w$.:+-]*$", A)
_URLISH = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+|(?<![\w])(?:[A-Za-z]:)?(?:[\\/][^\s'\"`:]+){2,}", A)


def _clean(raw: str, kind: str) -> str | None:
    if kind == "ts":
        return "TS" + raw
    if kind in ("link", "macho", "msvc"):
        sym = clean_symbol(raw, macho=kind == "macho")
        if kind == "msvc" and sym.startswith("_") and sym[1:2].isalpha():
            sym = sym[1:]
        return sym.split("(")[0] or None
    if kind == "errno":
        return raw if raw in ERRNO else None
    sym = raw.strip().strip(".,:;")
    if len(sym) < 2 or len(sym) > 100 or sym in _STOP or not _IDENT.match(sym):
        return None
    parts = re.split(r"\.|::", sym)
    if "." in sym and "::" not in sym:
        if parts[-1].lower() in _FILE_EXT or parts[-1].lower() in _TLD or all(len(p) <= 1 for p in parts):
            return None
    return sym


def symbols(text: str, limit: int) -> tuple[str, ...]:
    """Code symbols of the whole text in order of first appearance; specific ones win the places."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []  # (rank, position, symbol): rank 0 specific, 1 generic

    def overlaps(a: int, b: int) -> bool:
        return any(a < e and s < b for s, e in taken)

    def add(rank: int, pos: int, sym: str | None) -> None:
        if sym:
            found.append((rank, pos, sym))

    for rx, kind in _SPECIFIC:
        for m in rx.finditer(text):
            g = next(i for i in range(1, (m.lastindex or 0) + 1) if m.group(i) is not None) if m.lastindex else 0
            if overlaps(m.start(g), m.end(g)):
                continue
            taken.append((m.start(g), m.end(g)))
            if kind == "skip":
                continue
            sym = _clean(m.group(g), kind)
            add(0, m.start(g), sym)
            if kind == "exc" and sym and "." in sym:
                add(0, m.start(g) + len(sym) - len(sym.rsplit(".", 1)[1]), sym.rsplit(".", 1)[1])
    for m in _URLISH.finditer(text):
        taken.append((m.start(), m.end()))
    for m in _QUOTED.finditer(text):
        g = m.lastindex or 1
        if not overlaps(m.start(g), m.end(g)):
            add(1, m.start(g), _clean(m.group(g), "plain"))
            taken.append((m.start(g), m.end(g)))
    for m in _DOTTED.finditer(text):
        if not overlaps(m.start(), m.end()):
            add(1, m.start(), _clean(m.group(0), "plain"))
    best: dict[str, tuple[int, int]] = {}
    for rank, pos, sym in found:
        if sym not in best or (rank, pos) < best[sym]:
            best[sym] = (rank, pos)
    chosen = sorted(best.items(), key=lambda kv: kv[1])[:limit]
    return tuple(sym for sym, _ in sorted(chosen, key=lambda kv: kv[1][1]))


# -- Tool ---------------------------------------------------------------------------------------------

# Ordered most specific first; tried on the key lines, then on the whole text.
TOOLS: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(p, re.M | A))
    for name, p in [
        ("pytest", r"^E\s{2,}\S|^(?:FAILED|ERROR) \S+::|\bpytest\b|short test summary info|fixture '[^']+' not found"),
        ("pip", r"\bpip[0-9.]*\s|externally-managed-environment|subprocess-exited-with-error|"
         r"Could not find a version that satisfies|No matching distribution found|Failed building wheel"),
        ("tsc", r"\berror TS[0-9]+|^TS[0-9]+:|\bts\([0-9]+\)|Could not find a declaration file for module"),
        ("npm", r"^npm (?:ERR!|error|WARN)|\bnpm (?:install|run|ci)\b"),
        ("yarn", r"^(?:error|warning) .*yarn|\byarn (?:install|add|run)\b"),
        ("cargo", r"error\[E[0-9]{4}\]|\bcargo\b|^\s*Compiling \S+ v[0-9]|could not compile `|rustc|custom build command"
         r"|linker `[^`]+` not found|can't find crate"),
        ("go", r"\bc?go: |^# [\w./-]+$|\.go:[0-9]+|goroutine [0-9]+|\bgo (?:build|run|test|get|mod|install)\b"
         r"|executable file not found in"),
        ("ld", r"undefined reference to|undefined symbol|referenced from:|multiple definition of|collect2"
         r"|\bld(?:\.lld|\.gold)?: |cannot find -l|library not found for -l|LNK[0-9]{4}|duplicate symbol"),
        ("node", r"node:internal|Node\.js v[0-9]|\[ERR_[A-Z_]+\]|at Module\._compile|\(node:[0-9]+\)"
         r"|Cannot use import statement outside a module|Cannot find module '|\bnode \S+\.m?js\b"),
        ("maven", r"^\[(?:ERROR|INFO)\]|maven"),
        ("gradle", r"gradle|\* What went wrong:|FAILURE: Build failed"),
        ("java", r"Exception in thread|\bjava\.(?:lang|io|util)\.|\bjavac?\b|class file version"),
        ("clang", r"\bclang(?:\+\+)?(?:-[0-9]+)?:|^\S+:[0-9]+:[0-9]+: (?:fatal )?error: .*\[-W"),
        ("gcc", r"^\S+:[0-9]+:[0-9]+: (?:fatal )?error:|^(?:\S*/)?(?:\S+-)?g(?:cc|\+\+)(?:-[0-9.]+)?(?::|\s)|\bcc1(?:plus)?:"),
        ("python", r"Traceback \(most recent call last\)|^\s*File \".*\", line [0-9]+|^(?:[\w.]+\.)?[A-Z]\w*Error: "
         r"|No module named|cannot import name|\bpython[0-9.]*\b"),
        ("docker", r"\bdocker\b|exec format error|failed to solve|standard_init_linux|\bDockerfile\b"),
        ("git", r"^fatal: |^error: failed to push|\bgit\b|! \[(?:remote )?rejected\]"),
        ("cmake", r"CMake Error|\bcmake\b"),
        ("perl", r"^perl: "),
        ("make", r"^g?make(?:\[[0-9]+\])?: "),
        ("bash", r"^(?:\S*/)?bash: |command not found"),
        ("zsh", r"^zsh: "),
        ("sh", r"^(?:\S*/)?sh: "),
    ]
]


def tool(key_lines: list[str], text: str) -> str | None:
    keys = "\n".join(key_lines)
    for haystack in (keys, text):
        if haystack:
            for name, rx in TOOLS:
                if rx.search(haystack):
                    return name
    return None
