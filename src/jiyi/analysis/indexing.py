"""What the store indexes for a record, derived from its text in one place."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Record
from . import lexical

# How key lines are chosen and normalised (signature.py, signature_rules.py), as a number a store
# keeps: bumped when a change gives stored texts other signatures, so a store signed before re-signs
# its records (store/reindex.py) rather than miss them. Here, not in signature.py: a store checks it
# on every open, and the signature rules cost ~10 ms to import. Version 2: headers promote their
# message past lines that say nothing (Spring's banner), a program's own lower level inside an error
# prefix is no key line (`npm error gyp info`), git's consequences yield to their cause. Version 3: a
# shell's report of a signal (`Aborted (core dumped)`) yields to the program's message, and an error
# line that only says where (webpack's `ERROR in ./a.css 1:38`) is a header. Version 4: a record's
# symbols include its title's (signature.record_symbols). Version 5: Markdown's code marks around a
# line are decorations, a sentence quoting its error as inline code is keyed by what it quotes, an
# exception's message may follow its colon in quotes (`XamlLoadException:“…”`), a Windows folder's
# name may hold spaces and brackets (`C:\Program Files (x86)\…`), and a structured log line is keyed
# by its message fields (`{"level":"error",…,"message":"…"}`). Version 6: so is a pretty-printed
# object (Ansible's `FAILED! => {` and its fields on the lines after), and a message field whose
# string runs past its line.
SIGNATURE_VERSION = 6


@dataclass(frozen=True)
class Derived:
    key_lines: tuple[str, ...]
    normalized: tuple[str, ...]  # kept so records can be re-signed after an algorithm change
    index_title: str
    index_body: str


def lexical_index(
    title: str, what: str, why: str, where: str, learned: str, key_lines: tuple[str, ...] | None = None
) -> tuple[str, str]:
    """The full-text terms of a record's title and key error lines, and of its body, as the store
    indexes them (lexical.VERSION 3).

    The key lines (``key_lines``, else found in ``what``) join the title: they say what failed as
    the title does, and the ``lexical`` signal weighs that field above the body (ranking.py). Their
    terms are also what a near-identical key line of another occurrence is found by. The body holds
    ``what`` as a search reads a query (``signature.search_words``): no stack frames (every
    traceback shares their words; the query side drops them too), paths cut to what names the
    failure. The frames' names stay findable as code symbols.

    A mangled C++ name in ``what`` is indexed as written and demangled as well, so a query naming
    ``c10::Error::Error(…)`` meets a record that pasted ``_ZN3c105ErrorC1E…`` (queries are demangled
    by ``signature.search_words``, so the other way round meets too). The demangler is imported only
    when ``_Z`` appears: most records never pay for ctypes.
    """
    # Imported here, as in derive: the signature rules cost ~10 ms to import.
    from .signature import analyze, search_words

    if key_lines is None:
        key_lines = analyze(what).key_lines
    body = f"{search_words(what, demangle=False)}\n{why}\n{where}\n{learned}"
    if "_Z" in what:
        from .demangle import in_text

        readable = in_text(what)
        if readable != what:
            body += "\n" + readable
    index_title = lexical.index_text("\n".join((title, *key_lines)))
    index_body = lexical.index_text(body)
    if not (index_title.isascii() and index_body.isascii()) and any(
        lexical.is_bigram(t) for t in (*index_title.split(), *index_body.split())
    ):
        index_body += " " + lexical.BIGRAM_TEXT  # lexical.VERSION 5: the population of a bigram's rarity
    return index_title, index_body


def derive(record: Record) -> Derived:
    # Imported here: the store re-derives the lexical index (lexical_index) on paths that never
    # sign anything, and the signature rules cost ~10 ms to import.
    from .signature import analyze

    analysis = analyze(record.what)
    index_title, index_body = lexical_index(
        record.title, record.what, record.why, record.where, record.learned, analysis.key_lines
    )
    return Derived(
        key_lines=analysis.key_lines,
        normalized=analysis.normalized,
        index_title=index_title,
        index_body=index_body,
    )
