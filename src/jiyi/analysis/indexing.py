"""What the store indexes for a record, derived from its text in one place."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Record
from . import lexical


@dataclass(frozen=True)
class Derived:
    key_lines: tuple[str, ...]
    normalized: tuple[str, ...]  # kept so records can be re-signed after an algorithm change
    index_title: str
    index_body: str


def lexical_index(title: str, what: str, why: str, where: str, learned: str) -> tuple[str, str]:
    """The full-text terms of a record's title and of its body, as the store indexes them.

    A mangled C++ name in ``what`` is indexed as written and demangled as well, so a query naming
    ``c10::Error::Error(…)`` meets a record that pasted ``_ZN3c105ErrorC1E…`` (queries are demangled
    by ``signature.search_words``, so the other way round meets too). The demangler is imported only
    when ``_Z`` appears: most records never pay for ctypes.
    """
    body = f"{what}\n{why}\n{where}\n{learned}"
    if "_Z" in what:
        from .demangle import in_text

        readable = in_text(what)
        if readable != what:
            body += "\n" + readable
    return lexical.index_text(title), lexical.index_text(body)


def derive(record: Record) -> Derived:
    # Imported here: the store re-derives the lexical index (lexical_index) on paths that never
    # sign anything, and the signature rules cost ~10 ms to import.
    from .signature import analyze

    analysis = analyze(record.what)
    index_title, index_body = lexical_index(record.title, record.what, record.why, record.where, record.learned)
    return Derived(
        key_lines=analysis.key_lines,
        normalized=analysis.normalized,
        index_title=index_title,
        index_body=index_body,
    )
