"""Full-text terms for the ``lexical`` signal, in every language the users write.

Text is NFKC-folded and lowercased, then split into ASCII words (underscores kept, so
``pthread_create`` stays one term) and CJK runs cut into overlapping bigrams (``链接时`` → ``链接``,
``接时``), so a Chinese query meets Chinese text without a segmenter or a dictionary. The store
indexes these terms space-separated, and queries are built from the same function, so no user text
ever reaches FTS5's query syntax: every term is quoted.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

# Hiragana, katakana, CJK ideographs (incl. extension A and compatibility), Hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[a-z0-9_]+|[{_CJK}]+")
_ASCII_WORD = re.compile(r"[a-z0-9_]+", re.ASCII)
MAX_TERM = 40

# Words so common in error text that they say nothing about which error it is. Kept short on
# purpose: IDF weighting does the rest, and a long list would drop real words like `module`.
STOPWORDS = frozenset(
    "a an and are as at be by can for from in into is it no not of on or s t that the this to was were with".split()
)


# Words that occur in almost every error: matching only these is no evidence of the same error.
GENERIC = frozenset(
    """error errors failed fail failure fatal warning line file files found cannot could unable command exit code
    status returned exception traceback recent call last most see run running build make""".split()
)


def _bigrams(run: str) -> Iterable[str]:
    if len(run) == 1:
        yield run
        return
    for i in range(len(run) - 1):
        yield run[i : i + 2]


def terms(text: str) -> list[str]:
    """Every term of ``text`` in order (with repeats), as indexed and queried."""
    folded = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for match in _TOKEN.finditer(folded):
        token = match.group(0)
        if _ASCII_WORD.fullmatch(token):
            token = token.strip("_")
            if token and token not in STOPWORDS and len(token) <= MAX_TERM:
                out.append(token)
        else:
            out.extend(_bigrams(token))
    return out


def unique_terms(text: str) -> list[str]:
    return list(dict.fromkeys(terms(text)))


def index_text(text: str) -> str:
    return " ".join(terms(text))


def match_expression(query_terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so none is read as syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms)


def idf(doc_count: int, total: int) -> float:
    return math.log(1.0 + (total - doc_count + 0.5) / (doc_count + 0.5))


@dataclass(frozen=True)
class QueryWeights:
    """The query's terms with their IDF weights, computed once per query rather than per candidate.

    Words the store has never seen get the mean weight of those it has: with the plain IDF of an
    unseen term they would outweigh everything in a small store, and one stray word in a query
    would hide a record that matches the rest.
    """

    terms: tuple[str, ...]
    weights: dict[str, float]  # every query term, unseen ones at the mean
    total: float

    @classmethod
    def of(cls, query_terms: Iterable[str], idf_of: dict[str, float]) -> QueryWeights:
        ordered = tuple(dict.fromkeys(query_terms))
        known = [idf_of[t] for t in ordered if idf_of.get(t, 0.0) > 0.0]
        if not known:
            return cls(ordered, {}, 0.0)
        mean = sum(known) / len(known)
        # A CJK bigram no record holds is mostly a cut across two words (`模块安装` → `块安`): it says
        # nothing, and at the mean weight it would push a Chinese query under LEXICAL_FLOOR.
        weights = {t: idf_of.get(t) or (mean if t.isascii() else 0.0) for t in ordered}
        return cls(ordered, weights, sum(weights.values()))


def coverage(query: QueryWeights, doc_terms: set[str]) -> tuple[float, list[str]]:
    """IDF-weighted share of the query's terms found in the document, and which they are.

    Generic words alone (``error``, ``failed``) are no evidence: their share counts as 0.
    """
    if not query.total:
        return 0.0, []
    matched = [t for t in query.terms if t in doc_terms]
    if not any(t not in GENERIC for t in matched):
        return 0.0, matched
    weights = query.weights
    return sum(weights[t] for t in matched) / query.total, matched
