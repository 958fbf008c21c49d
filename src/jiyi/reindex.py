"""Re-sign every record after the signature algorithm or the full-text terms change.

A record's signatures come from its ``what`` and, when it was written, from the failure its session
had met. The first kind is recomputed from the text; the second cannot be (the failure's log is not
kept), so those signatures are carried over as they were: they are recognised as the ones that the
stored normalised lines of ``what`` do not explain under the algorithm that made them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .indexing import derive
from .signature import ALGORITHM, analyze, digest
from .store import Store


@dataclass(frozen=True)
class ReindexReport:
    records: int
    changed: int  # records whose signatures or symbols changed


def reindex(store: Store, progress: Callable[[int], None] | None = None) -> ReindexReport:
    seen = changed = 0
    for record in list(store.iter_records()):
        algorithm, normalized = store.signed_with(record.hex)
        from_what = {digest(line, algorithm) for line in normalized} if algorithm else set()
        carried = [s for s in record.signatures if s not in from_what]
        analysis = analyze(record.what)
        signatures = tuple(dict.fromkeys([*analysis.signatures, *carried]))
        symbols = tuple(dict.fromkeys([*analysis.symbols, *record.symbols]))[:64]
        updated = replace(record, signatures=signatures, symbols=symbols)
        store.reindex_record(updated, derive(updated))
        seen += 1
        before = (set(record.signatures), set(record.symbols), algorithm)
        changed += before != (set(signatures), set(symbols), ALGORITHM)
        if progress:
            progress(1)
    return ReindexReport(seen, changed)
