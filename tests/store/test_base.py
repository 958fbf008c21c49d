"""The policy both stores share (store/base.py), apart from their SQL."""

from __future__ import annotations

from jiyi.store import base


def test_symbol_counts_keep_the_common_ones_while_the_store_stays_within_one_percent() -> None:
    asked: list[tuple[list[str], int]] = []
    held = {"RuntimeError": 400, "deflate": 3}

    def count(keys: list[str], cap: int) -> list[tuple[str, int]]:
        asked.append((keys, cap))
        return [(k, min(held.get(k, 0), cap)) for k in keys]

    cache: dict[str, tuple[int, int]] = {}
    first = base.counted_symbols(["RuntimeError", "deflate", "deflate", "nowhere"], 1000, cache, count)
    assert first == {"RuntimeError": 301, "deflate": 3, "nowhere": 0}  # counted up to 30 % of 1000, and one more
    assert asked == [(["RuntimeError", "deflate", "nowhere"], 301)]
    assert cache == {"RuntimeError": (301, 1000)}  # only a count worth keeping: it is in many queries
    assert base.counted_symbols(["RuntimeError"], 1009, cache, count) == {"RuntimeError": 301}
    assert len(asked) == 1  # the store grew by under 1 %: the kept count serves
    base.counted_symbols(["RuntimeError"], 1011, cache, count)
    assert asked[-1] == (["RuntimeError"], 304)  # past 1 %: counted again
