"""The rule tables behind :mod:`jiyi.analysis.signature`: what a key line is, what to rewrite, symbols, tool.

Kept apart from the pipeline so the tables can grow without burying the logic. Every pattern is
ASCII-only on purpose (``re.ASCII`` or explicit ``[0-9]`` classes): Python's ``\\d`` and ``\\w``
match non-ASCII digits and letters, and ``\\b`` finds no boundary between a CJK character and a
digit (``第42行``), which would split one error into several signatures.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from .regex_cache import compile as compile_rx

# The ablation switch of docs/spec.md §4 ("rules add on top"): with JIYI_RANK_RULES=off every
# family-specific rule below is off (the canonical rewrites of TEMPLATES, the linker's library
# families, the ecosystem-specific symbol patterns of _SPECIFIC) and only what reads any error text
# alike remains: key-line choice, masking, exception names, quoted and dotted names. Read once, at
# import; the retrieval bench flips it between its two stores (bench/retrieval.py).
RULES = os.environ.get("JIYI_RANK_RULES", "on").strip().lower() not in ("off", "0", "false", "no")

A = re.ASCII
V = re.VERBOSE | re.ASCII

# -- Line decorations: when and where a line was printed, never what went wrong --------------------

# Stripped repeatedly from the start of a line.
PREFIXES = compile_rx(
    r"""^(?:
        \s+
      | [0-9]{4}-[0-9]{2}-[0-9]{2}[T\s][0-9:.,]+(?:Z|[+-][0-9]{2}:?[0-9]{2})?\s*  # ISO stamp (Actions)
      | \[?[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?\]?\s+                   # [12:00:01]
      | [A-Z][a-z]{2}\s[0-9]{1,2}\s[0-9:]{8}(?:\s[AP]M)?\s+                 # May 19 11:35:19 AM
      | \#[0-9]+\s(?:[0-9]+\.[0-9]+\s+)?                                     # buildkit "#0 9.445"
      | [0-9]+\.[0-9]{3}(?:\s+|$)                                             # buildx "3.026"
      | \#\#\[(?:error|warning|group|endgroup|debug)\] | ::(?:error|warning)[^:]*::  # GitHub Actions
      | [\w.-]+\s+\|\s?                                                       # compose "name  | "
      | [|>\u2502\u2551\u00d7]\s?                                             # quotes, rich / pip boxes
      | \u2570\u2500>\s*                                                      # pip's ╰─>
    )""",
    V,
)
# A line wholly inside quotes, as pasted from a script's output.
QUOTED_LINE = compile_rx(r"""^(['"])(.+)\1$""")
# Shell prompts: the line is a command someone typed, not an error.
PROMPT = compile_rx(
    r"""^(?:[$\u276f\u279c%+]\s|>>>\s|PS\s\S.*?>\s|[A-Za-z]:\\[^>]*>\S|[^\s@]+@[^\s:@]+[:\s].*?[$#%]\s
      | [\w.-]+:[\w~/.-]+\s\w+\$\s | \([\w.-]+\)\s\S+[$#]\s)""",
    V,
)
# Severity words: they add nothing once a line is known to be the error.
SEVERITY = compile_rx(
    r"^(?:\[(?:ERROR|FATAL|error)\]\s*|(?:npm\s+)?ERR!\s*|npm\s+error\s+|E\s(?=\S)|(?:fatal\s+)?error:\s*|"
    r"ERROR:\s*|Error:\s+|fatal:\s*|FATAL:\s*|FAILED:?\s+)",
    A,
)
# Where, not what: "src/a.c:12:5:", "a.ts(9,24):", "a.ts:1:24 -", "x.o:(.text+0x1f):", "libz.a(a.o):",
# a pytest node id "tests/t.py::test_x[1] - ", the linker's or the shell's own name ("/bin/sh: 1: ").
# A Windows folder's name may hold spaces and brackets (`C:\Program Files (x86)\MSBuild\…`), as in
# signature._PATH.
LOCATION = compile_rx(
    r"""^(?:(?:[A-Za-z]:[\\/](?:[^\\/:*?"<>|\r\n]+[\\/])*|[A-Za-z]:)?[^\s:()]*[^\s:()/\\](?::[0-9]+(?::[0-9]+)?|\([0-9]+(?:,[0-9]+)?\))(?::\(\.[^)]*\))?(?::\s*|\s+-\s+)
      | \S+\.(?:o|a|so|obj|lib)(?:\([^)]*\))?:(?:\(\.[^)]*\):)?\s+
      | [^\s:]+(?:::[^\s:\[]+)+(?:\[[^\]]*\])?\s+-\s+
      | (?:[^\s:]*/)?(?:[\w.+-]*-)?(?:ld(?:\.[a-z]+)?|collect2|lld):\s+
      | -?(?:[^\s:]*/)?(?:ba|z|da|k|fi)?sh:\s(?:line\s[0-9]+:\s)?(?:[0-9]+:\s)?)""",
    V,
)

# -- Lines that frame an error without being it ----------------------------------------------------

# Anchored at the (cleaned) line start, so one ``match`` settles them all.
_WRAPPER_START = compile_rx(
    r"""(?:
        g?make(?:\[[0-9]+\])?:\s\*\*\*\s(?:\[.*\]\sError\s[0-9]+|Waiting\sfor) | \S*Makefile\S*:\s?recipe\sfor\starget
      | (?:error:\s)?(?:[Cc]ould\snot\scompile|aborting\sdue\sto|build\sfailed) | warning:\sbuild\sfailed
      | To\slearn\smore,\srun\sthe\scommand | Caused\sby:\s*$
      | (?:npm\s(?:ERR!|error)|ERR!)\s*(?:$|A\scomplete\slog|code\sELIFECYCLE|errno\s|Exit\sstatus|Failed\sat\sthe
            |(?:path|syscall|cwd|signal|command|dest|file)\s
            |This\sis\sprobably|Tell\sthe\sauthor|You\scan\sget|Make\ssure|Please\sinclude|If\syou\sneed|Test\sfailed
            |[^\s]*\.log\s*$|[^\s]*_logs|Log\sfiles\swere)
      | Process\sfailed | (?:error\s)?Command\sfailed\swith\sexit\scode | \s*exit\s(?:code|status):?\s[0-9]+\s*$
      | \[?end\sof\soutput\]? | (?:ERROR:\s)?failed\sto\ssolve: | BUILD\sFAIL
      | \*\s(?:Try|Where|Exception\sis|Get\smore\shelp): | Run\swith\s--(?:stacktrace|info|debug|scan)
      | Get\smore\shelp\sat | startup\sfailed:\s*$ | Execution\sfailed\sfor\stask
      | \[(?:ERROR|INFO)\]\s*(?:$|->\s\[Help|Re-run\sMaven|For\smore\sinformation|To\ssee\sthe\sfull|COMPILATION\sERROR
            |After\scorrecting|Failure\sexecuting\sjavac|BUILD\sFAILURE|Help\s[0-9]|[0-9]+\serrors?\s*$|-{5,})
      | -+\sConfiguring\sincomplete | =+\s.*\b(?:failed|passed|errors?)\b.*\sin\s[0-9.]+s | !+\sInterrupted
      | (?:FAILED|ERROR)\s+\S*(?:\.py|::)\S*\s*$ | _{3,}\s | FAIL\s+\S+\s+[0-9.]+s\s*$ | FAIL\s*$
      | exit\sstatus\s[0-9]+\s*$
      | error:\sfailed\sto\spush\ssome\srefs\s*$ | Undefined\ssymbols\sfor\sarchitecture | ld:\ssymbol\(s\)\snot\sfound
      | error:\scommand\s'.*'\sfailed\swith\sexit | Error:\sexit\sstatus | [Ii]n\sfunction\s
      | error:\slinking\swith\s`[^`]*`\sfailed | (?:npm\s(?:ERR!|error)\s)?code\s[0-9]+\s*$ | Task\s\S+\sFAILED\s*$
      | FAILED\s\((?:failures|errors)= | (?:ERROR:\s)?Job\sfailed:\sexit\scode
    )""",
    V,
)
# Anywhere in the line: (lower-case needle, pattern or None when the needle says it all).
_WRAPPER_ANY: list[tuple[str, re.Pattern[str] | None]] = [
    (n, compile_rx(p, A) if p else None)
    for n, p in [
        ("ld returned", r"collect2:\s(?:fatal\s)?error:\sld\sreturned"),
        ("linker command failed with exit code", ""),
        ("for more information about th", r"For\smore\sinformation\sabout\sth(?:is|ese)\serrors?,\stry"),
        ("didn't exit successfully", ""),
        ("most recent call last", ""),
        ("during handling of the above exception", ""),
        ("the above exception was the direct cause", ""),
        ("with exit code", r"Process\s(?:completed|finished)\swith\sexit\scode"),
        ("exited with", r"exited\swith\s(?:(?:exit\s)?code\s)?'?[0-9]+'?\.?$"),
        ("unable to compile typescript", ""),  # ts-node's wrapper around the TS diagnostics
        ("non-zero exit status", ""),
        ("subprocess-exited-with-error", ""),
        ("metadata-generation-failed", ""),
        ("legacy-install-failure", ""),
        ("this error originates from a subprocess", ""),
        ("failed building wheel for", ""),
        ("could not build wheels for", ""),
        ("command errored out with exit status", ""),
        ("lines of output]", ""),
        ("did not run successfully", ""),
        ("did not complete successfully", ""),
        ("returned a non-zero code", ""),
        ("executor failed running", ""),
        ("failed to build:", r"failed\sto\sbuild:\s*$"),
        ("failure: build failed", ""),
        ("compilation failure", r"Failed\sto\sexecute\sgoal\s.*?:\s(?:Compilation\sfailure:?\s*)+$"),
        ("cmake", r"CMake(?:Error|Output)\.log"),
        ("short test summary info", ""),
    ]
]


def is_wrapper(content: str, lower: str) -> bool:
    """A line that frames an error without being it (``make: ***``, ``collect2: … ld returned``)."""
    if _WRAPPER_START.match(content):
        return True
    return any(n in lower and (rx is None or rx.search(content)) for n, rx in _WRAPPER_ANY)


# Headers: the error's own message is on the next line that says anything.
HEADERS = compile_rx(
    r"""(?:^thread\s'[^']*'(?:\s\([0-9]+\))?\spanicked\sat\s(?:'|\S+:[0-9]+:[0-9]+:)$ | ^CMake\sError\sat\s.*:$
      | ^\*\sWhat\swent\swrong:$ | ^\W?(?i:error)\sin\s\S+(?:\s[0-9]+:[0-9]+(?:-[0-9]+)?)?:?$
      | ^.*\b(?:ERROR|SEVERE|FATAL)\b.*\S\s:$)  # a log line's empty message: `ERROR 1 --- [main] o.s.b.Reporter :`""",
    V,
)
# A family's header, off with the rules: Spring Boot's banner over every start-up failure, whose
# message follows a `Description:` label.
_FAMILY_HEADERS = compile_rx(r"^\*{0,40}\s*APPLICATION\sFAILED\sTO\sSTART\s*\*{0,40}$", A)
# Lines that say nothing between a header and its message: decoration (`*****`, `-----`) and a
# section label (`Description:`).
SAYS_NOTHING = compile_rx(r"^(?:[\W_]+|[A-Z][a-z]+:)$", A)
# Inside an error prefix, a program's own lower level: npm 10 prints `npm error` before every line
# node-gyp writes, `gyp info it worked if it ends with ok` included.
NESTED_LEVEL = compile_rx(r"^[\w.-]+\s(?:info|verb|verbose|http|timing|silly|sill|notice|debug)\b", A)
# What a tool says after the cause, whatever the cause was, off with the rules: a key line only when
# nothing else in the text is one. git prints these after `Permission denied (publickey).`, `Host key
# verification failed.`, `RPC failed` and a dozen other causes.
_CONSEQUENCES = compile_rx(
    r"^(?:fatal:\s*)?(?:[Cc]ould\snot\sread\sfrom\sremote\srepository|[Tt]he\sremote\send\shung\sup\sunexpectedly)", A
)


# How a shell reports a process that a signal ended (bash, dash, zsh, fish, a job number or a pid in
# front): the program's own message, printed before it, says why. Like the consequences above a key
# line only when nothing else in the text is one, but no family's: every shell prints it for every
# program (`Aborted (core dumped)` after Qt's `Could not load the Qt platform plugin "xcb"`).
_SIGNAL_DEATH = compile_rx(
    r"""^(?:(?:\[[0-9]+\]\s+(?:[+-]\s+)?(?:[0-9]+\s+)?|(?:\S*sh:|\S+:\sline\s[0-9]+:)\s+(?:line\s[0-9]+:\s+)?(?:[0-9]+\s+)?)
          (?:Job\s[0-9]+,\s.*\sterminated\sby\ssignal\s.* | (?:{death})(?:\s+\(core\sdumped\))?(?:\s+\S.*)?)
      | (?:{death})\s+\(core\sdumped\)(?:\s+\S.*)? | (?:{death}))\W*$""".replace(
        "{death}",
        r"(?i:aborted|abort|segmentation\sfault|illegal\s(?:hardware\s)?instruction|bus\serror|trace/breakpoint\strap"
        r"|iot\sinstruction|floating\spoint\sexception)",
    ),
    V,
)


def is_header(content: str) -> bool:
    """A line whose message follows on the next line that says anything (HEADERS)."""
    return bool(HEADERS.search(content)) or (RULES and bool(_FAMILY_HEADERS.match(content)))


def is_consequence(content: str) -> bool:
    return bool(_SIGNAL_DEATH.match(content)) or (RULES and bool(_CONSEQUENCES.match(content)))


# Context, never a key line even with an error word in it: hints, notes, warnings, stack frames.
CONTEXT = compile_rx(
    r"""(?:^(?i:hint|note|help|info|warning|warn)(?:\[[^\]]*\])?[:\s] | ^=\s(?:note|help):
      | ^\S+:\s(?:warning|note):\s | ^\(node:[0-9]+\)\s | ^at\s\S | ^File\s" | ^\S+Warning:\s | ^[\s^~|]*$
      | ^-{3}\s(?:stdout|stderr) | ^cargo:)""",
    V,
)

# -- What makes a line the error ---------------------------------------------------------------------

# "Type: message" of Python / Java / JavaScript, with Java's prefixes.
EXCEPTION = compile_rx(
    r"^(?:Exception\sin\sthread\s\"[^\"]*\"\s|Caused\sby:\s|Uncaught\s)?"
    r"(?:[A-Za-z_][\w$]*\.)*(?:[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Fault|Iteration)|Error)"
    # The message may follow the colon in quotes with no space: .NET's debugger in Chinese prints
    # `System.IO.IOException:“…”`, Avalonia's loader `XamlLoadException:"…"`.
    r"(?:\s\[[A-Z0-9_]+\])?:(?:\s|$|(?=[\"'\u201c\u2018]))",
    A,
)
# Exceptions that only say "a subprocess failed": the real error is elsewhere in the log.
WEAK_EXCEPTIONS = compile_rx(r"^(?:subprocess\.)?CalledProcessError:|^SystemExit:|^(?:Error:\s)?Command failed", A)
STRONG_START = compile_rx(
    r"""(?:error(?:\[[A-Z]*[0-9]+\])?:\s | (?:fatal\s)?error:\s | fatal:\s | FATAL:?\s | ERROR:?\s | \[ERROR\]\s+\S
      | (?:npm\s(?:ERR!|error)|ERR!)\s+\S | E\s\S | (?:FAILED|ERROR)\s+\S+::\S*.*\s-\s\S | panic:\s
      | thread\s'[^']*'.*\spanicked\sat\s | TS[0-9]+:\s | CMake\sError | E:\s | \S+:\s(?:fatal\s)?error:\s | Killed\s*$
      | (?:[^\s:]+:[0-9]+(?::[0-9]+)?:\s)?undefined:\s | failed\sto\srun\scustom\sbuild\scommand)""",
    V,
)
_STRONG_ANY = compile_rx(
    r"(?:^|\s|:)(?:fatal\s)?error(?:\[[A-Z]*[0-9]+\])?:\s|\berror\sTS[0-9]+|command\snot\sfound|Segmentation\sfault"
    r"|core\sdumped",
    A,
)


def is_strong(content: str, lower: str) -> bool:
    """An explicit error line: a severity word, a compiler diagnostic, a crash."""
    if STRONG_START.match(content):
        return True
    return any(n in lower for n in ("error", "not found", "fault", "dumped")) and bool(_STRONG_ANY.search(content))


WEAK = compile_rx(
    r"(?:\b(?:errors?|fail(?:s|ed|ure)?|cannot|can't|could\snot|couldn't|unable|not\sfound|no\ssuch|undefined|"
    r"unresolved|denied|refus(?:ed|ing)|missing|invalid|unsupported|not\ssupported|incompatible|exception|"
    r"panicked|abort(?:ed)?|fatal|timed\sout|timeout|not\sallowed|forbidden|unauthori[sz]ed|rejected|conflict(?:s|ing)?|"
    r"mismatch|unrecognized|not\srecognized|illegal|not\spermitted|unexpected|overflow|violation|externally-managed|"
    r"truncated|corrupt(?:ed)?|bad|unknown|undeclared|not\sdefined|(?:does\snot|doesn't)\sexist|no\srule|"
    r"permission|out\sof\smemory|killed|terminated|segmentation\sfault|core\sdumped|no\srequired\smodule)\b"
    r"|错误|失败|找不到|无法|未找到|未定义|エラー|失敗)",
    A,  # searched in the lower-cased line: IGNORECASE costs twice the time
)

# -- Canonical lines: one wording for one failure, whoever printed it ---------------------------------

# Which system library a missing symbol lives in decides the fix (-lm, -lpthread, -ldl, -lrt), not
# which of its functions a program happened to call first: sqrt and floorf share one signature.
_LIBM = (
    "sqrt cbrt pow exp exp2 expm1 log log10 log2 log1p sin cos tan asin acos atan atan2 sinh cosh tanh asinh "
    "acosh atanh floor ceil round lround llround trunc fmod remainder hypot fmin fmax fma ldexp frexp modf erf "
    "erfc tgamma lgamma nearbyint rint lrint llrint copysign nextafter sincos fdim scalbn ilogb logb"
)
LIB_FAMILY: dict[str, str] = {name + suffix: "libm" for name in _LIBM.split() for suffix in ("", "f", "l")}
LIB_FAMILY.update(dict.fromkeys("dlopen dlsym dlclose dlerror dladdr dlinfo dlvsym dlmopen".split(), "libdl"))
LIB_FAMILY.update(
    dict.fromkeys("clock_gettime clock_settime clock_getres shm_open shm_unlink timer_create mq_open".split(), "librt")
)
_PTHREAD = compile_rx(r"^(?:pthread_\w+|sem_(?:open|close|unlink|wait|post|init|destroy|timedwait|trywait))$", A)
_RUST_HASH = compile_rx(r"::h[0-9a-f]{16}\b", A)
_SYMBOL_VERSION = compile_rx(r"@@?[A-Za-z_]+[0-9.]*$", A)


def clean_symbol(raw: str, *, macho: bool = False) -> str:
    """A linker symbol as its source spells it: no Rust hash, no GLIBC version, no Mach-O ``_``."""
    sym = _SYMBOL_VERSION.sub("", _RUST_HASH.sub("", raw.strip().strip("`'\"\u2018\u2019")))
    if sym.startswith("__imp_"):  # MSVC import thunk
        sym = sym[6:]
    if macho and sym.startswith("_"):
        sym = sym[1:]
    return sym


def _library(sym: str) -> str:
    if sym in LIB_FAMILY:
        return f"<{LIB_FAMILY[sym]}>"
    return "<libpthread>" if _PTHREAD.match(sym) else sym


def _undefined(m: re.Match[str]) -> str:
    groups = m.groupdict()
    sym = clean_symbol(groups.get("sym") or groups.get("bare") or "", macho=bool(groups.get("macho")))
    return "undefined symbol: " + _library(sym)


def _node_code(m: re.Match[str]) -> str:
    # Node reworded its coded errors between releases; the code and the package stayed.
    rest = m.group("rest")
    pkg = re.search(r"node_modules[\\/]((?:@[\w.-]+[\\/])?[\w.-]+)", rest, A)
    name = re.search(r"""['"]([^'"\s]+)['"]""", rest, A)
    subject = pkg.group(1).replace("\\", "/") if pkg else (name.group(1) if name else "")
    return f"{m.group('type')} [{m.group('code')}]" + (f": {subject}" if subject else "")


def _import_name(m: re.Match[str]) -> str:
    source = f" from '{m.group(2)}'" if m.group(2) else ""
    return f"ImportError: cannot import name '{m.group(1)}'{source}"


def _certificate(m: re.Match[str]) -> str:
    reason = (m.group(1) or "").strip()
    return "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed" + (f": {reason}" if reason else "")


Template = tuple[str, "re.Pattern[str]", Callable[[re.Match[str]], str]]


def _t(needle: str, pattern: str, build: str | Callable[[re.Match[str]], str]) -> Template:
    rx = compile_rx(pattern, A)
    if isinstance(build, str):
        text = build
        return (needle, rx, lambda m: m.expand(text))
    return (needle, rx, build)


_Q = "[`'\u2018\"]"  # opening quote of a symbol
_NQ = "[^`'\u2019\"]"  # inside it

# (needle, pattern, canonical). The needle, a lower-case substring, is tested before the regex, so
# a 400-line log costs a few ``in`` checks per line rather than dozens of regex searches.
TEMPLATES: list[Template] = [
    # The linker family: GNU ld, gold, lld, ld64 and link.exe word a missing symbol differently.
    _t(
        "undefined reference",
        rf"undefined reference to (?:symbol )?(?:{_Q}(?P<sym>{_NQ}+)|(?!symbol\b)(?P<bare>\S+))",
        _undefined,
    ),
    _t("undefined symbol", r"^(?:\S*ld(?:\.\w+)?:\s)?(?:error:\s)?undefined symbol:? (?P<sym>\S.*?)\s*$", _undefined),
    _t("referenced from", r"^\"(?P<macho>_)?(?P<sym>[^\"]+)\", referenced from", _undefined),
    _t(
        "unresolved external symbol",
        r"unresolved external symbol \"?(?P<macho>_(?=[A-Za-z]))?(?P<sym>[^\s\"]+)",
        _undefined,
    ),
    # A user's own global defined twice: the name differs per project, the fix (-fcommon / extern) not.
    _t("multiple definition", rf"multiple definition of {_Q}", "multiple definition of <symbol>"),
    _t("duplicate symbol", r"^(?:\S*ld(?:\.\w+)?:\s)?(?:error:\s)?duplicate symbol", "multiple definition of <symbol>"),
    _t("cannot find -l", r"cannot find -l(\S+)", r"cannot find -l\1"),
    _t("library not found for -l", r"library not found for -l(\S+)", r"cannot find -l\1"),
    _t("unable to find library -l", r"unable to find library -l(\S+)", r"cannot find -l\1"),
    _t(
        "can not be used when making a",
        r"relocation \S+ against .* can ?not be used when making an? (\w+) object",
        r"relocation against <symbol> can not be used when making a \1 object",
    ),
    # A missing header, as gcc and clang say it.
    _t(
        "no such file or directory",
        r"fatal error: ([\w./+-]+): No such file or directory",
        r"fatal error: \1: file not found",
    ),
    _t("file not found", r"fatal error: '([\w./+-]+)' file not found", r"fatal error: \1: file not found"),
    _t("exec format error", r"exec format error", "exec format error"),
    _t("cannot import name", r"cannot import name '?([\w.]+)'?(?: from '([\w.]+)')?", _import_name),
    _t("no module named", r"No module named '?([\w.]+)'?", r"ModuleNotFoundError: No module named '\1'"),
    _t("certificate verify failed", r"certificate verify failed(?::\s*([^()'\"\]>]+))?", _certificate),
    _t("ssl certificate problem", r"SSL certificate problem: ([^()'\"\]]+)", r"SSL certificate problem: \1"),
    _t(
        "compiled by a more recent version",
        r"has been compiled by a more recent version of the Java Runtime",
        "java.lang.UnsupportedClassVersionError: <class> has been compiled by a more recent version of the Java"
        " Runtime",
    ),
    _t(
        "cannot access class",
        r"class ([\w.$]+) \(in (?:unnamed )?module[^)]*\) cannot access class ([\w.$]+) \(in module ([\w.]+)\)",
        r"java.lang.IllegalAccessError: class \1 cannot access class \2 (in module \3)",
    ),
    _t(
        "unsupported class file major version",
        r"Unsupported class file major version",
        "Unsupported class file major version <n>",
    ),
    # TS7016's fix is mechanical (@types/<name> or a declare): the module name is the user's.
    _t(
        "could not find a declaration file for module",
        r"Could not find a declaration file for module",
        "error TS7016: Could not find a declaration file for module <module>",
    ),
    _t("error ts", r"\berror TS([0-9]+):\s*(.*)", r"error TS\1: \2"),
    _t("ts", r"^TS([0-9]+):\s*(.*)", r"error TS\1: \2"),
    _t("ts(", r"^(.*?)\s*\bts\(([0-9]+)\)\s*$", r"error TS\2: \1"),
    _t("[err_", r"(?P<type>\w*Error) \[(?P<code>ERR_[A-Z0-9_]+)\]:?(?P<rest>.*)", _node_code),
    _t(
        "executable file not found",
        r"exec: \"([^\"]+)\": executable file not found in",
        r'exec: "\1": executable file not found in $PATH',
    ),
    _t(
        "not found",
        r"^(?:\S*/)?(?:ba|z|da|k|fi)?sh:\s(?:line\s[0-9]+:\s)?(?:[0-9]+:\s)?(\S+?):\s(?:command\s)?not\sfound\s*$",
        r"command not found: \1",
    ),
    _t("command not found:", r"command not found: (\S+)", r"command not found: \1"),
    _t("not recognized as an internal", r"'([^']+)' is not recognized as an internal", r"command not found: \1"),
    _t("is not recognized as the name of", r"The term '([^']+)' is not recognized", r"command not found: \1"),
    _t(
        "rejected]", r"!\s?\[(remote )?rejected\]\s+\S+\s+->\s+\S+\s+\(([^)]+)\)", r"! [\1rejected] <ref> -> <ref> (\2)"
    ),
    _t("src refspec", r"src refspec \S+ does not match any", "src refspec <ref> does not match any"),
    _t(
        "dubious ownership",
        r"detected dubious ownership in repository",
        "detected dubious ownership in repository at <dir>",
    ),
    _t(
        "permission denied while trying to connect to the docker daemon",
        r"permission denied while trying to connect to the Docker daemon",
        "permission denied while trying to connect to the Docker daemon socket",
    ),
    # No daemon behind the client's socket: Docker clients before 1.13 printed the raw dial error (the
    # socket file does not exist) where later ones say "Cannot connect to the Docker daemon"; one
    # failure, one fix (start the daemon; moby/moby#11989). The wording is that of later clients, as
    # normalised, so their signatures stay as they were.
    _t(
        "docker.sock",
        r"dial unix \S*docker\.sock: no such file or directory",
        "Cannot connect to the Docker daemon at <url> Is the docker daemon running?",
    ),
    _t("port is already allocated", r"port is already allocated", "Bind for <addr> failed: port is already allocated"),
    _t("setting locale failed", r"Setting locale failed", "perl: warning: Setting locale failed"),
    _t("bad interpreter", r"(\S+): bad interpreter: (.+)", r"bad interpreter: \1: \2"),
    _t("javascript heap out of memory", r"JavaScript heap out of memory", "JavaScript heap out of memory"),
    _t(
        "microsoft visual c++",
        r"Microsoft Visual C\+\+ ([0-9.]+) (?:or greater )?is required",
        "error: Microsoft Visual C++ <n> or greater is required",
    ),
    # Node: "Error: Cannot find module 'x'" with or without quotes, with or without npm's advice.
    _t("cannot find module", r"^(?:Error: )?Cannot find module '?([^'\s]+?)'?(?:[.\s]|$)", r"Cannot find module '\1'"),
]


def canonical(content: str, lower: str) -> str | None:
    """The canonical wording of a well-known failure in ``content`` (``lower``: lower-cased)."""
    if not RULES:
        return None
    for needle, rx, build in TEMPLATES:
        if needle in lower:
            m = rx.search(content)
            if m:
                return build(m)
    return None


# -- Code symbols ------------------------------------------------------------------------------------

ERRNO = frozenset(
    "ENOENT EACCES EPERM EEXIST EADDRINUSE EADDRNOTAVAIL ECONNREFUSED ECONNRESET ECONNABORTED ETIMEDOUT "
    "ENOTFOUND EAI_AGAIN ENOSPC EMFILE ENFILE ENOMEM EISDIR ENOTDIR ENOTEMPTY EPIPE EROFS EBUSY EINVAL EAGAIN "
    "EHOSTUNREACH ENETUNREACH ELOOP ENAMETOOLONG EXDEV ESRCH ENOEXEC EBADF ETXTBSY ENOSYS EPROTO ENOTCONN "
    "EINTR EIO ENODEV ENXIO EDQUOT ESPIPE ERANGE EDOM EOVERFLOW EILSEQ ECANCELED ENOTSUP EOPNOTSUPP ENOTSOCK".split()
)
_STOP = frozenset("main type module any true false null none None self this default unset C POSIX ld.lld".split())
_FILE_EXT = frozenset(
    "c h cc cpp cxx hpp hh o obj a so dylib dll exe lib js mjs cjs ts tsx jsx py pyc pyi rs go java class jar kt kts "
    "gradle json yaml yml toml xml txt md log lock cfg ini sh bash bat cmd ps1 pc html css venv whl zip gz tgz mk "
    "cmake in am rb php swift m mm sql d map vue svelte dart lua pl pm r scala".split()
)
_TLD = frozenset("com org net io dev edu gov co uk cn de jp ru fr info app".split())

# Specific patterns first: their spans keep the generic quote / dotted-name patterns out. Each has
# a needle: a pattern runs only over a text that contains it.
_SPECIFIC: list[tuple[str, re.Pattern[str], str]] = [
    (n, compile_rx(p, f), kind)
    for n, p, kind, f in [
        ("undefined reference", rf"undefined reference to (?:symbol )?{_Q}({_NQ}+)", "link", A),
        ("undefined reference", r"undefined reference to (?!symbol\b)([A-Za-z_][\w$.:@]*)", "link", A),
        ("undefined symbol", r"undefined symbol:? ([^\s,]+)", "link", A),
        ("referenced from", r"\"(_[^\"\s]+)\", referenced from", "macho", A),
        ("unresolved external", r"unresolved external symbol \"?([^\s\"]+)", "msvc", A),
        ("multiple definition", rf"multiple definition of {_Q}([^`'\u2019\"\s;]+)", "link", A),
        ("duplicate symbol", rf"duplicate symbol:? {_Q}?([^`'\u2019\"\s;]+)", "macho", A),
        ("n function", rf"\b[Ii]n function {_Q}({_NQ}+)", "skip", A),  # where it was called: user code
        ("named", r"No module named '?([\w.]+)'?", "plain", A),
        ("named", r"named '([^'\s]+)'", "plain", A),
        ("command not found", r"(?:^|\s)([\w.+-]+): command not found", "plain", re.M | A),
        ("command not found", r"command not found: ([\w.+-]+)", "plain", A),
        ("` v", r"`([\w-]+) v[0-9][^`]*`", "plain", A),  # a crate with its version
        ("fatal error", r"fatal error: '?([\w./+-]+\.h[a-z]*)'?", "file", A),  # a missing header
        ("require", r"(?:the requirement|distribution found for) ([A-Za-z0-9][\w.-]*)", "plain", A),  # pip
        ("", r"\b(E[0-9]{4}|TS[0-9]{4,5}|LNK[0-9]{4}|C[0-9]{4})\b", "plain", A),
        ("ts(", r"\bts\(([0-9]{4,5})\)", "ts", A),
        ("ERR_", r"\b(ERR_[A-Z0-9_]+)\b", "plain", A),
        ("[SSL:", r"\[SSL: ([A-Z_]+)\]", "plain", A),
        ("", r"\b(?:code|errno):? '?([A-Z][A-Z0-9_]{3,})\b", "plain", A),
        ("", r"\b(E[A-Z][A-Z_]{2,})\b", "errno", A),
        ("-", r"\[([a-z]+(?:-[a-z]+)+)\]\s*$", "plain", re.M | A),  # mypy error codes
        ("", r"(?<![\w$.])((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Exit|Interrupt|Iteration))\b", "exc", A),
    ]
]
# With the rules off (RULES), only the exception names: they read alike in every ecosystem.
_SPECIFIC_GENERIC = [entry for entry in _SPECIFIC if entry[2] == "exc"]
_QUOTED = compile_rx(
    r"(?<![\w])`([^`'\s]{2,100})[`']|(?<![A-Za-z0-9])'([^'\s]{2,100})'(?![A-Za-z0-9])|\"([^\"\s]{2,100})\""
    r"|\u2018([^\u2019\s]{2,100})\u2019",
    A,
)
_DOTTED = compile_rx(r"(?<![\w$./\\-])[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+", A)
_IDENT = compile_rx(r"^(?:@[\w.-]+/)?[A-Za-z_$][\w$.:+-]*$", A)
_URL = compile_rx(r"[A-Za-z][A-Za-z0-9+.-]*://\S+", A)
_PATHISH = compile_rx(r"(?<![\w])(?:[A-Za-z]:)?(?:[\\/][^\s'\"`:]+){2,}", A)


def _clean(raw: str, kind: str) -> str | None:
    if kind == "ts":
        return "TS" + raw
    if kind in ("link", "macho", "msvc"):
        sym = clean_symbol(raw, macho=kind == "macho")
        if kind == "msvc" and sym.startswith("_") and sym[1:2].isalpha():
            sym = sym[1:]  # x86 cdecl decoration
        return sym.split("(")[0] or None
    if kind == "errno":
        return raw if raw in ERRNO else None
    if kind == "file":
        return raw
    sym = raw.strip().strip(".,:;")
    if len(sym) < 2 or len(sym) > 100 or sym in _STOP or not _IDENT.match(sym):
        return None
    parts = re.split(r"\.|::", sym)
    if "." in sym and "::" not in sym:
        last = parts[-1].lower()
        if last in _FILE_EXT or last in _TLD or all(len(p) <= 1 for p in parts):
            return None  # a file name, a domain, "e.g"
    return sym


MAX_MATCHES = 1_000


def _is_json_key(text: str, start: int, end: int) -> bool:
    # A key of a JSON object (`{"errorMessage": ...`, `, "stackTrace": []`) names a field of an answer's
    # format, which every error of that service shares, not code; `exec: "gcc": executable file not
    # found` is no object, and its "gcc" stays a name. Pretty-printed keys (Google's `"reason" : "…"`)
    # too: as symbols they tied unrelated Play Console errors (set P; below c3400 +3 recurring, no loss).
    # So do the single-quoted keys of a Python dict printed in an error (python-ldap's `{'desc': …,
    # 'info': …}`): `desc` and `info` ranked an LDAP look-alike first (set T's c5100; below c5300 +1
    # recurring, no loss).
    while end < len(text) and text[end] in " \t":
        end += 1
    if not text.startswith(":", end):
        return False
    i = start - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    return i >= 0 and text[i] in "{,"


def symbols(text: str, limit: int) -> tuple[str, ...]:
    """Code symbols of the whole text in order of first appearance; specific ones win the places."""
    taken = bytearray(len(text) + 1)  # characters already claimed by a more specific pattern
    found: list[tuple[int, int, str]] = []  # (rank, position, symbol): rank 0 specific, 1 generic

    def claim(a: int, b: int) -> bool:
        if taken.find(1, a, b) != -1:
            return False
        taken[a:b] = b"\x01" * (b - a)
        return True

    # Only the first ``limit`` distinct symbols of a pattern can win a place: stop there (or after
    # MAX_MATCHES matches), so a log of ten thousand names costs what one of forty does.
    for needle, rx, kind in _SPECIFIC if RULES else _SPECIFIC_GENERIC:
        if needle not in text:
            continue
        seen: set[str] = set()
        for n, m in enumerate(rx.finditer(text)):
            g = m.lastindex or 0
            if n == MAX_MATCHES:
                break
            if not claim(m.start(g), m.end(g)) or kind == "skip":
                continue
            sym = _clean(m.group(g), kind)
            if sym:
                found.append((0, m.start(g), sym))
                seen.add(sym)
                if len(seen) >= limit:
                    break
                if kind == "exc" and "." in sym:  # java.lang.IllegalAccessError is also IllegalAccessError
                    short = sym.rsplit(".", 1)[1]
                    found.append((0, m.end(g) - len(short), short))
    for rx in (_URL, _PATHISH) if "://" in text else (_PATHISH,):
        for m in rx.finditer(text):
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    cleaned: dict[str, str | None] = {}  # a log repeats its names: clean each once
    for rx in (_QUOTED, _DOTTED):
        seen = set()
        for n, m in enumerate(rx.finditer(text)):
            g = m.lastindex or 0
            if n == MAX_MATCHES:
                break
            if claim(m.start(g), m.end(g)):
                if g in (2, 3) and _is_json_key(text, m.start(), m.end()):
                    continue
                raw = m.group(g)
                sym = cleaned[raw] if raw in cleaned else cleaned.setdefault(raw, _clean(raw, "plain"))
                if sym:
                    found.append((1, m.start(g), sym))
                    seen.add(sym)
                    if len(seen) >= limit:
                        break
    best: dict[str, tuple[int, int]] = {}
    for rank, pos, sym in found:
        if sym not in best or (rank, pos) < best[sym]:
            best[sym] = (rank, pos)
    chosen = sorted(best.items(), key=lambda kv: kv[1])[:limit]
    return tuple(sym for sym, _ in sorted(chosen, key=lambda kv: kv[1][1]))


# -- Tool ---------------------------------------------------------------------------------------------

# Most specific first; tried on the key lines, then on the whole text.
TOOLS: list[tuple[str, re.Pattern[str]]] = [
    (name, compile_rx(p, re.M | A))
    for name, p in [
        ("bash", r"^(?:\S*/)?bash: "),
        ("zsh", r"^zsh: "),
        ("sh", r"^(?:\S*/)?sh: (?:[0-9]+: )?\S+: not found"),
        ("pytest", r"^E\s+\S|^(?:FAILED|ERROR) \S+::|\bpytest\b|short test summary info|fixture '[^']+' not found"),
        (
            "pip",
            r"\bpip[0-9.]*\s|externally-managed-environment|subprocess-exited-with-error|"
            r"Could not find a version that satisfies|No matching distribution found|Failed building wheel",
        ),
        ("tsc", r"\berror TS[0-9]+|^TS[0-9]+:|\bts\([0-9]+\)|Could not find a declaration file for module"),
        ("npm", r"^npm (?:ERR!|error|WARN)|\bnpm (?:install|run|ci|i)\b"),
        ("yarn", r"\byarn (?:install|add|run)\b|^error .*yarn"),
        (
            "cargo",
            r"error\[E[0-9]{4}\]|\bcargo\b|^\s*Compiling \S+ v[0-9]|could not compile `|\brustc\b|custom build command"
            r"|linker `[^`]+` not found|can't find crate|thread '[^']*'.* panicked at|build-script-build",
        ),
        ("docker", r"\bdocker\b|exec format error|failed to solve|standard_init_linux|\bDockerfile\b"),
        (
            "go",
            r"\bc?go: |^# [\w./-]+$|\.go:[0-9]+|goroutine [0-9]+|\bgo (?:build|run|test|get|mod|install)\b"
            r"|executable file not found in",
        ),
        ("msvc", r"\berror C[0-9]{4}:|\bLNK[0-9]{4}\b|\bcl\.exe\b"),
        (
            "ld",
            r"undefined reference to|^(?:\S*ld\S*: )?(?:error: )?undefined symbol|referenced from:"
            r"|multiple definition of|collect2|duplicate symbol"
            r"|\bld(?:\.lld|\.gold)?: |cannot find -l|library not found for -l|LNK[0-9]{4}|making a shared object",
        ),
        (
            "node",
            r"\(?node:[a-z_]+[:/]|Node\.js v[0-9]|\[ERR_[A-Z_]+\]|at Module\._compile|\(node:[0-9]+\)"
            r"|Cannot use import statement outside a module|Cannot find module '|\bnode \S+\.m?js\b",
        ),
        ("maven", r"^\[(?:ERROR|INFO)\]|maven"),
        ("gradle", r"gradle|\* What went wrong:|FAILURE: Build failed"),
        ("java", r"Exception in thread|\bjava\.(?:lang|io|util)\.|\bjavac?\b|class file version"),
        ("clang", r"\bclang(?:\+\+)?(?:-[0-9]+)?:|^\S+:[0-9]+:[0-9]+: (?:fatal )?error: .*\[-W|' file not found"),
        (
            "gcc",
            r"^\S+:[0-9]+:[0-9]+: (?:fatal )?error:|^(?:\S*/)?(?:\S+-)?g(?:cc|\+\+)(?:-[0-9.]+)?(?::|\s)"
            r"|\bcc1(?:plus)?:|fatal error: \S+: No such file",
        ),
        (
            "python",
            r"Traceback \(most recent call last\)|^\s*File \".*\", line [0-9]+|^(?:[\w.]+\.)?[A-Z]\w*Error: "
            r"|No module named|cannot import name|\bpython[0-9.]*\b",
        ),
        ("git", r"^fatal: |^error: failed to push|\bgit\b|! \[(?:remote )?rejected\]|src refspec"),
        ("cmake", r"CMake Error|\bcmake\b"),
        ("perl", r"^perl: "),
        ("make", r"^g?make(?:\[[0-9]+\])?: "),
        ("sh", r"^(?:\S*/)?sh: |command not found"),
    ]
]


def tool(key_lines: list[str], text: str) -> str | None:
    """The tool that printed the text, judged by its key lines first."""
    keys = "\n".join(key_lines)
    for haystack in (keys, text):
        if haystack:
            for name, rx in TOOLS:
                if rx.search(haystack):
                    return name
    return None
