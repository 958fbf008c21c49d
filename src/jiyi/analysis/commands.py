"""What a shell command is to a pending failure (docs/spec.md §5): the same operation again, a
read-only look, a change of state, or a sibling run — so only a true fix becomes a memory.

A failure is fixed when the *same* operation succeeds afterwards; the fix is what changed in
between (``auto_record``). Which commands change nothing is decided by the command's shape first
and by a lexicon second, both written as data (the tables below):

- shape: a write redirect (``> file``, ``>> file``, ``| tee file``) or an in-place flag (``sed -i``)
  makes any command a change; a query flag (``--version``, ``--help``, ``--dry-run``) makes any
  command read-only; an inline probe (``python -c``, ``node -e``) without a redirect is read-only;
- the operation: the program after wrappers (``sudo``, ``env X=1``, ``timeout 60``, ``uv run``,
  ``npx``, ``python -m``…) and its positional words. The same operation is the same program whose
  success keeps every positional word of the failing one (flags and ``VAR=value`` may change:
  ``cc -o app main.c`` → ``cc -o app main.c -lz``; ``pytest t.py`` → ``pytest t.py -p no:cacheprovider``);
- the lexicon: programs that only read (listing, reading, searching, VCS status/log/diff, package
  queries) and the verbs that change state (install, add, get, clean, migrate…).

A command of another program that is neither read-only nor a sibling is taken as a change: the
commands agents run between a failure and its passing re-run are, in the sessions of
``bench/data/capture_sessions.jsonl``, the fix (``cmake ..``, ``./configure``, ``make clean``) far
more often than noise; a run of the failing program on another target (``pytest other.py``) is a
sibling, neither the fix nor the same operation, unless its verb is a change (``make clean``).

``JIYI_CAPTURE_RULES=off`` turns the lexicon off (shape and operation identity stay), the ablation
``bench/capture.py`` reports beside the full rules.

Imports ``os`` alone: the hook's fast path runs it.
"""

from __future__ import annotations

import os

SAME, READ_ONLY, CHANGE, SIBLING = "same", "read_only", "change", "sibling"

# Wrappers: the operation is the command they run. The value is how many words they take after
# their name before the command (None: words while they look like options or assignments).
_WRAPPERS = {
    "sudo": None, "doas": None, "env": None, "time": None, "nice": None, "nohup": None, "exec": None,
    "timeout": 1, "stdbuf": None, "xvfb-run": None, "caffeinate": None, "chronic": None,
    "npx": None, "bunx": None, "pnpx": None, "dotenv": None,
}  # fmt: skip
# ``<runner> run|exec <command>``: the command is the operation.
_RUNNERS = {
    "uv": ("run",), "poetry": ("run",), "pipenv": ("run",), "pdm": ("run",), "hatch": ("run",),
    "bundle": ("exec",), "pnpm": ("exec", "dlx"), "yarn": ("dlx", "exec"), "conda": ("run",), "rye": ("run",),
    "docker-compose": (), "mise": ("exec", "x"), "direnv": ("exec",),
}  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_PYTHONS = ("python", "python3", "python2", "py", "pypy", "pypy3")
_NAVIGATION = frozenset({"cd", "pushd", "popd", "source", ".", "set", "true", ":", "clear", "sleep", "wait"})

# Programs that only read, whatever their arguments (a write redirect still makes them a change).
_READ_PROGRAMS = frozenset(
    "ls ll la dir tree exa eza lsd cat bat batcat less more most head tail wc file stat du df find fd fdfind sed "
    "locate grep egrep fgrep rg ag ack awk gawk jq yq xq diff cmp colordiff sort uniq cut tr column nl od xxd "
    "hexdump strings nm objdump readelf ldd otool which whereis type whoami id groups uname hostname pwd env "
    "printenv echo printf date cal uptime ps pgrep pstree top htop lsof netstat ss free vmstat iostat history "
    "man help info tldr apropos realpath readlink basename dirname test [ false ping dig nslookup host "
    "md5sum sha1sum sha256sum shasum cksum lscpu lsblk lsusb lspci nproc getconf locale tput tty w who last "
    "command pip-show apt-cache dpkg-query rpm journalctl ldconfig-p pkg-config tokei cloc sloccount".split()
)  # fmt: skip
# ``<program> <subcommand>`` pairs that only read.
_READ_SUBCOMMANDS: dict[str, frozenset[str]] = {
    key: frozenset(value.split())
    for key, value in {
        "git": "status log diff show blame grep ls-files ls-tree ls-remote rev-parse rev-list describe shortlog "
        "reflog cat-file whatchanged show-ref show-branch count-objects fsck name-rev help version var",
        "pip": "show list freeze check index search inspect help debug config-list cache-list",
        "npm": "ls list ll la view info show v outdated why explain doctor bin root prefix help search audit "
        "fund docs repo query",
        "yarn": "why list info outdated licenses help",
        "pnpm": "ls list why outdated licenses help",
        "cargo": "tree metadata search help locate-project pkgid read-manifest verify-project version",
        "go": "env list version doc help",
        "rustup": "show which help",
        "rustc": "--print",
        "docker": "ps images inspect logs version info history top stats port diff events search",
        "podman": "ps images inspect logs version info history top stats port diff search",
        "kubectl": "get describe logs explain version api-resources api-versions top cluster-info events",
        "helm": "list ls status get history show search template lint version",
        "gh": "status",
        "brew": "list ls info search deps uses outdated doctor config --prefix leaves desc",
        "apt": "list show search policy",
        "dnf": "list info search repolist",
        "yum": "list info search",
        "dpkg": "-l -L -s -S --list --listfiles --status --search",
        "conda": "list info search",
        "poetry": "show check --version env-info",
        "uv": "tree --version",
        "mvn": "help:effective-pom dependency:tree",
        "gradle": "dependencies properties tasks projects",
        "gradlew": "dependencies properties tasks projects",
        "systemctl": "status is-active is-enabled list-units list-unit-files show cat",
        "terraform": "show output validate version providers graph state-list",
        "node": "--version -v",
        "java": "-version --version",
        "javac": "-version --version",
        "make": "-n --dry-run --just-print -p",
        "composer": "show info outdated depends why",
        "gem": "list info search query contents environment",
        "bundle": "list show info outdated",
        "dotnet": "--info --version --list-sdks --list-runtimes list",
        "nvm": "ls list current which",
        "pyenv": "versions version which",
        "asdf": "list current which",
        "ruby": "-v --version",
    }.items()
}
# Query flags: anything with one of these reads.
_CONFIG_READS = frozenset({"get", "list", "ls", "show", "view", "debug"})
_QUERY_FLAGS = frozenset({"--version", "-version", "--help", "-h", "-help", "--dry-run", "--dryrun", "-V", "--usage"})
_SUBCOMMAND_OWNERS = frozenset({"git", "docker", "podman", "kubectl", "helm", "gh"})  # options before the subcommand
# Verbs that change state: a sibling run with one of them is a change (``make clean``, ``mvn install``).
_CHANGE_VERBS = frozenset(
    "install i add remove rm uninstall un update upgrade up get mod tidy download vendor sync lock link unlink "
    "build buildx ci dedupe rebuild fetch clean distclean mrproper configure setup init generate gen migrate "
    "upgrade-db "
    "reset restore checkout switch pull merge rebase stash cherry-pick apply am revert commit config set "
    "unset use default target toolchain component override prune purge reinstall refresh pin unpin "
    "build-deps deps dependencies bootstrap prepare codegen compose-up login logout auth env-use create "
    "db:migrate db:setup db:create db:reset makemigrations collectstatic".split()
)  # fmt: skip
# Programs that change state whatever their arguments.
_CHANGE_PROGRAMS = frozenset(
    "rm mv cp mkdir rmdir touch chmod chown chgrp ln install tar unzip gunzip bunzip2 xz patch truncate export "
    "unset alias ulimit rsync scp dd mkfifo mktemp git-lfs".split()
)  # fmt: skip
_INLINE = {"-c", "-e", "--eval", "-p", "--print", "-E"}
_INLINE_PROGRAMS = frozenset({*_PYTHONS, "node", "deno", "bun", "ruby", "perl", "php", "bash", "sh", "zsh"})


def rules_on() -> bool:
    return os.environ.get("JIYI_CAPTURE_RULES", "on").strip().lower() not in ("off", "0", "false", "no")


class Op:
    """One simple command of a command line: its program, its words after it, whether it writes."""

    __slots__ = ("args", "program", "writes")

    def __init__(self, program: str, args: list[str], writes: bool) -> None:
        self.program, self.args, self.writes = program, args, writes

    @property
    def positionals(self) -> list[str]:
        """The words that name what it acts on: not options, not ``VAR=value``; a test id's
        ``::name`` is kept as its file."""
        return [a.split("::", 1)[0] for a in self.args if a and not a.startswith("-") and not _assignment(a)]

    def __repr__(self) -> str:
        return f"Op({self.program!r}, {self.args!r}, writes={self.writes})"


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[:1].isdigit()


_BLANK = frozenset(" \t\r\n")
_PUNCTUATION = frozenset(";&|<>")


def _tokens(command: str) -> list[str]:
    """The shell words of ``command``, quotes removed, runs of ``;&|<>()`` as their own tokens (as
    ``shlex`` with ``punctuation_chars`` splits them; written here because importing shlex costs
    the hook more than the split). Unbalanced quotes: the plain words. Parentheses stay in their
    words, as shlex keeps them (``$(pwd)/x`` is one word; a subshell's ``(cd`` is unwrapped by ``_op``)."""
    tokens: list[str] = []
    word: list[str] = []
    started = False
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in _BLANK or c in _PUNCTUATION:
            if started:
                tokens.append("".join(word))
                word, started = [], False
            if c in _PUNCTUATION:
                j = i
                while j < n and command[j] in _PUNCTUATION:
                    j += 1
                tokens.append(command[i:j])
                i = j
                continue
        elif c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                return command.split()
            word.append(command[i + 1 : end])
            started, i = True, end + 1
            continue
        elif c == '"':
            i += 1
            while i < n and command[i] != '"':
                if command[i] == "\\" and i + 1 < n and command[i + 1] in '"\\$`':
                    i += 1
                word.append(command[i])
                i += 1
            if i >= n:
                return command.split()
            started = True
        elif c == "\\" and i + 1 < n:
            word.append(command[i + 1])
            started, i = True, i + 2
            continue
        else:
            word.append(c)
            started = True
        i += 1
    if started:
        tokens.append("".join(word))
    return tokens


def parse(command: str | None) -> list[Op]:
    """The simple commands of ``command`` in order (a pipeline's filters included), wrappers unwrapped."""
    if not command or not command.strip():
        return []
    ops: list[Op] = []
    words: list[str] = []
    writes = False
    tokens = _tokens(command.replace("\\\n", " ").replace("\n", " ; "))
    i = 0
    while i <= len(tokens):
        token = tokens[i] if i < len(tokens) else ";"
        if token in (";", "&&", "||", "|", "&", "|&", ";;", "(", ")"):
            op = _op(words, writes)
            if op is not None:
                ops.append(op)
            words, writes = [], False
        elif token and set(token) <= set("<>&") and ">" in token:
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            to_fd = token in (">&", "&>") and target.isdigit()
            if not to_fd and target not in ("/dev/null", "/dev/stderr", "/dev/stdout") and not target.startswith("&"):
                writes = True
            if words and words[-1].isdigit():
                words.pop()  # the fd of ``2>``
            i += 1  # the redirect's target is no word of the command
        elif token and set(token) <= set("<"):
            i += 1
        else:
            words.append(token)
        i += 1
    return ops


def _op(words: list[str], writes: bool) -> Op | None:
    words = [w for w in (word.lstrip("(") if n == 0 else word for n, word in enumerate(words)) if w]
    if words and words[-1].endswith(")") and "$(" not in words[-1]:
        words[-1] = words[-1].rstrip(")")
        words = [w for w in words if w]
    while words and _assignment(words[0]):
        words = words[1:]
    while words:
        name = os.path.basename(words[0])
        if name in _WRAPPERS:
            take = _WRAPPERS[name]
            rest = words[1:]
            if take is None:
                while rest and (rest[0].startswith("-") or _assignment(rest[0])):
                    rest = rest[1:]
            else:
                while rest and rest[0].startswith("-"):
                    rest = rest[1:]
                rest = rest[take:]
            words = rest
            continue
        if name in _RUNNERS and len(words) > 1 and words[1] in _RUNNERS[name]:
            words = words[2:]
            continue
        if name in _PYTHONS and len(words) > 2 and words[1] == "-m":
            words = words[2:]
            continue
        if name in _SHELLS and len(words) > 1 and not words[1].startswith("-"):
            words = words[1:]  # ``bash ./build.sh`` runs ./build.sh
            continue
        break
    if not words:
        return None
    program = os.path.basename(words[0])
    if program.endswith(".exe"):
        program = program[:-4]
    if program == "tee" and any(not w.startswith("-") and w != "/dev/null" for w in words[1:]):
        writes = True
    return Op(program, words[1:], writes)


def _subcommand(op: Op) -> str | None:
    positionals = op.positionals
    if op.program in _SUBCOMMAND_OWNERS or not positionals:
        return positionals[0] if positionals else next((a for a in op.args if a.startswith("-")), None)
    return positionals[0]


def _reads(op: Op, lexicon: bool) -> bool:
    if op.writes:
        return False
    if op.program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in op.args):
        return False
    if any(a in _QUERY_FLAGS for a in op.args):
        return True
    if op.program in _INLINE_PROGRAMS and op.args and op.args[0] in _INLINE:
        return True  # an inline probe: ``python -c "import yaml"``
    if op.program in _NAVIGATION:
        return True
    if not lexicon:
        return False
    if op.program in _READ_PROGRAMS:
        return not (op.program == "find" and any(a in ("-delete", "-exec", "-execdir") for a in op.args))
    first = _subcommand(op)
    # ``npm config get proxy`` / ``pip config list`` / ``poetry config --list``: settings read back.
    if first == "config" and (
        (op.positionals[1:2] and op.positionals[1] in _CONFIG_READS) or "--list" in op.args or "-l" in op.args
    ):
        return True
    subcommands = _READ_SUBCOMMANDS.get(op.program)
    if subcommands is None:
        return False
    if first in subcommands or any(a in subcommands for a in op.args if a.startswith("-")):
        return True
    # ``git branch`` / ``git remote -v`` / ``git stash list`` / ``git config --get``: listings.
    return op.program == "git" and (
        (first in ("branch", "tag", "remote") and len(op.positionals) == 1)
        or (first == "stash" and op.positionals[1:2] == ["list"])
        or (first == "config" and any(a in ("--get", "--list", "-l", "--get-all") for a in op.args))
    )


def _changes(op: Op, lexicon: bool) -> bool:
    if op.writes or (op.program == "sed" and any(a.startswith("-i") for a in op.args)):
        return True
    return lexicon and (op.program in _CHANGE_PROGRAMS or any(p in _CHANGE_VERBS for p in op.positionals[:2]))


def same_operation(failed: Op, op: Op) -> bool:
    """``op`` runs ``failed`` again: the same program keeping every positional word (a failing
    command without any stays without: ``make`` → ``make clean`` is another operation)."""
    if failed.program != op.program or failed.program in _NAVIGATION:
        return False
    before, after = failed.positionals, op.positionals
    if not before:
        return not after
    return set(before) <= set(after)


def main_op(command: str | None) -> Op | None:
    """The operation a failing command line stands for: its last simple command that is not
    navigation nor a pipeline's filter (``cd build && make 2>&1 | tail`` → ``make``)."""
    ops = parse(command)
    lexicon = rules_on()
    kept = [o for o in ops if o.program not in _NAVIGATION]
    # A filter after the operation (``| tail -20``, ``| grep error``) reads its output.
    while len(kept) > 1 and _reads(kept[-1], lexicon):
        kept.pop()
    return kept[-1] if kept else None


def read_only(command: str | None) -> bool:
    """Every simple command of ``command`` only reads (a command without any counts as read-only)."""
    lexicon = rules_on()
    return all(_reads(op, lexicon) for op in parse(command))


def role(failed_command: str | None, command: str | None) -> str:
    """What the succeeding ``command`` is to the pending failure of ``failed_command``: SAME (it
    runs the failing operation again, maybe after changes on the same line: ``pip install x &&
    pytest``), READ_ONLY, CHANGE (a step of the fix) or SIBLING (the failing program on another
    target). Without a failing command to compare with, a success of the same tool is SAME."""
    if failed_command is None or command is None:
        return SAME
    failed = main_op(failed_command)
    lexicon = rules_on()
    ops = parse(command)
    if all(_reads(op, lexicon) for op in ops):
        return READ_ONLY
    changes = False
    for op in ops:
        if _reads(op, lexicon):
            continue
        if failed is not None and same_operation(failed, op):
            return SAME
        changes = changes or _changes(op, lexicon) or failed is None or op.program != failed.program
    return CHANGE if changes else SIBLING


def displaces(pending_command: str | None, command: str | None) -> bool:
    """A new failure of ``command`` takes the place of a pending failure of ``pending_command``:
    not when the pending one is a command and the new one only looked around (``grep`` finding
    nothing, ``cat`` of a missing file) or has no command at all (an edit that did not apply)."""
    if pending_command is None:
        return True
    return command is not None and not read_only(command)


def same_op(before: str | None, after: str | None) -> bool:
    """Two command lines stand for the same operation (their :func:`main_op`)."""
    a, b = main_op(before), main_op(after)
    return a is not None and b is not None and same_operation(a, b)


def same_words(before: str | None, after: str | None) -> bool:
    """The same command line word for word (spacing aside)."""
    return before is not None and after is not None and before.split() == after.split()
