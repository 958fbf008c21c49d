"""Re-sign every record after the signature algorithm or the full-text terms change, and bring a
store's full-text index up to the current terms (``lexical.VERSION``).

A record's signatures come from its ``what`` and, when it was written, from the failure its session
had met. The first kind is recomputed from the text; the second cannot be (the failure's log is not
kept), so those signatures are carried over as they were: they are recognised as the ones that the
stored normalised lines of ``what`` do not explain under the algorithm that made them.

The full-text terms are re-derived from the stored text alone (``upgrade_terms``), ``BATCH`` records
a transaction, resumable: ~84 µs a record since VERSION 3 (frames cut from the body; the key lines
as stored), so 10 000 records take ~0.8 s and 100 000 take ~8 s (bench/term_upgrade.py, bench stores,
loaded machine; VERSION 2 took ~34 µs). One transaction for all would hold the write lock that long, and
hooks writing meanwhile would give up after the busy timeout; batches let them in between. A store
opened with an older index re-derives batches for up to 0.2 s (the SQLite store), which finishes most
stores at once; ``jiyi reindex`` finishes any, with a progress bar. Meanwhile records not yet
re-derived are found as before (their ASCII words and CJK bigrams are the same terms), only not yet
by their other words: search misses what it missed before and says nothing wrong. ``jiyi doctor``
shows the version and how many records are left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..analysis.indexing import derive
from ..analysis.signature import ALGORITHM, analyze, digest, record_symbols, title_symbols
from ..records import Record
from .base import Store

BATCH = 500  # records a transaction (~17 ms): other writers wait no longer than that
# Re-signing analyses each record's text again (~0.2 ms; the few whose key lines changed are written
# anew): fewer a transaction, for the same short wait.
SIGN_BATCH = 200


@dataclass(frozen=True)
class ReindexReport:
    records: int
    changed: int  # records whose signatures or symbols changed


def upgrade_terms(store: Store, progress: Callable[[int], None] | None = None, *, limit: int | None = None) -> int:
    """Re-derive the full-text terms of records indexed with an older ``lexical.VERSION``, ``BATCH``
    a transaction, up to ``limit`` records (all when None); returns how many were re-derived."""
    done = 0
    while limit is None or done < limit:
        step = store.upgrade_lexical(BATCH if limit is None else min(BATCH, limit - done))
        if not step:
            break
        done += step
        if progress:
            progress(step)
    return done


def resigned(record: Record, algorithm: str, normalized: tuple[str, ...]) -> Record:
    """``record`` signed anew from its ``what``, the signatures its session's failure gave it carried
    over (those its stored ``normalized`` lines under ``algorithm`` do not explain)."""
    from_what = {digest(line, algorithm) for line in normalized} if algorithm else set()
    carried = [s for s in record.signatures if s not in from_what]
    analysis = analyze(record.what)
    signatures = tuple(dict.fromkeys([*analysis.signatures, *carried]))
    return replace(record, signatures=signatures, symbols=record_symbols(record.title, analysis, *record.symbols))


def signed_alike(what: str, algorithm: str, normalized: tuple[str, ...], title: str = "") -> bool:
    """Whether ``what`` is signed now as it was (same algorithm, same normalised key lines) and
    ``title`` names no code symbol: most records are, after a change of the key-line rules, and
    re-signing them would only cost. A title's symbols (signature.title_symbols, SIGNATURE_VERSION 4)
    are not told apart from those already stored without reading them: such a record is re-signed,
    which keeps what it had (``resigned``)."""
    return algorithm == ALGORITHM and analyze(what).normalized == normalized and not title_symbols(title)


def upgrade_signatures(store: Store, progress: Callable[[int], None] | None = None) -> int:
    """Re-sign the records signed under an older ``indexing.SIGNATURE_VERSION``, ``SIGN_BATCH`` a
    transaction, resumable; returns how many records were looked at."""
    done = 0
    while step := store.upgrade_signatures(SIGN_BATCH):
        done += step
        if progress:
            progress(step)
    return done


def reindex(store: Store, progress: Callable[[int], None] | None = None) -> ReindexReport:
    from ..analysis.indexing import SIGNATURE_VERSION
    from ..analysis.lexical import VERSION

    seen = changed = 0
    for record in list(store.iter_records()):
        algorithm, normalized = store.signed_with(record.hex)
        updated = resigned(record, algorithm, normalized)
        signatures, symbols = updated.signatures, updated.symbols
        store.reindex_record(updated, derive(updated))
        seen += 1
        before = (set(record.signatures), set(record.symbols), algorithm)
        changed += before != (set(signatures), set(symbols), ALGORITHM)
        if progress:
            progress(1)
    # Every live record's terms were just derived anew (forgotten ones have none indexed), and every
    # record signed with the current rules.
    store.lexical_rebuilt(VERSION)
    store.signatures_rebuilt(SIGNATURE_VERSION)
    return ReindexReport(seen, changed)
