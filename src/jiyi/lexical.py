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


def coverage(query_terms: list[str], doc_terms: set[str], weights: dict[str, float]) -> tuple[float, list[str]]:
    """IDF-weighted share of the query's terms found in the document, and which they are.

    Terms the store has never seen get the mean weight of those it has: with the plain IDF of an
    unseen term they would outweigh everything in a small store, and one stray word in a query
    would hide a record that matches the rest.
    """
    known = [weights[t] for t in query_terms if weights.get(t, 0.0) > 0.0]
    if not known:
        return 0.0, []
    mean = sum(known) / len(known)
    matched = [t for t in query_terms if t in doc_terms]
    if not any(t not in GENERIC for t in matched):
        return 0.0, matched
    total = sum(weights.get(t) or mean for t in query_terms)
    return sum(weights.get(t) or mean for t in matched) / total, matched
