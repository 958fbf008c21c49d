"""A search's query: what it asks (``Query``: the agent's text, its last failure, its setting) and
what ranking reads of it, prepared once a search (``Prepared``): its keys, its words weighted by the
store's statistics and their other forms, its rarest terms for finding candidates, the worth of its
symbols and of its key lines, exact or near (``shapes``). ``ranking`` scores candidates against it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from . import shapes
from .analysis import inflection, lexical
from .analysis.signature import Analysis, analyze, search_words
from .store.base import Store

MAX_QUERY_TERMS = 64
RARE_TERMS = 8
SPLIT_MIXED = True
_GLUED = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", re.ASCII)
# The words of a query's compound identifiers (`ErrorIncompatibleDriver` -> incompatible, driver) weigh
# this share of their IDF, as a CJK bigram weighs a share of its own (lexical.BIGRAM_WEIGHT); a
# record's are indexed beside its identifiers (lexical.VERSION 4). Tune split (below c1800): recurring
# top-1 2 624 -> 2 626 of 2 734, look-alike confusions 58 -> 60, natural-language 1 307 -> 1 320 of
# 1 597, zh/mixed 230 -> 232 of 285; at the full weight 2 624, 60, 1 314, 233; indexed but not
# queried 2 625, 55, 1 309, 231.
IDENTIFIER_WORD_WEIGHT = 0.5
RARE_BIGRAMS = 4  # of them at most this many CJK bigrams when the query has other words too
# A CJK bigram's rarity is taken among the records that hold such text (lexical.BIGRAM_TEXT), not the
# whole store: in a store of mostly English records every Chinese word (`问题`, `请问`, `安装`) was as
# rare as a package's name, and a question's filler outweighed the one English word naming its error
# (`安装pyaudio失败，请问如何处理`). A store whose records are mostly Chinese keeps its weights. Tune split
# (below c20500; 111 of 6 529 records hold Chinese), at the bigram weight before (0.5):
# zh/mixed top-1 1 145 -> 1 166 of 1 497, recurring 6 728 -> 6 724 of 7 341; at 0.7
# (lexical.BIGRAM_WEIGHT) 1 159 and 6 728. The population counts at least this many records (or the
# whole store when smaller): among a handful of Chinese notes every word is on "one record" of few,
# and a store indexed before lexical.VERSION 5 marks none. Not tuned: the bench holds more.
BIGRAM_POPULATION_MIN = 100
# Past its rarest term, the candidate query takes a term only while the postings it reads stay under
# this bound (BM25 costs ~3 µs a posting, a document-size look-up each): a term in a third of the
# store (`error`, `import`) would cost ~30 ms at 100 000 records and names no particular record.
RARE_TERM_POSTINGS = 1000
# Each form costs a look-up in the store's vocabulary (~30 a query of the bench): a pasted log's later
# words rarely decide, and 12 of them keep what all do (below c3800: recurring / natural-language /
# zh/mixed top-1 and confusions 4 512 / 2 282 / 659 / 122 for all, 4 511 / 2 281 / 659 / 121 for 12,
# 4 514 / 2 280 / 660 / 121 for 8). The forms do not find candidates: looked for too, they cost 4
# recurring answers and 3 confusions and won no natural-language one.
INFLECTED_WORDS = 12


@dataclass(frozen=True)
class Query:
    """What a search looks for: the agent's text and, when the session has one, its last failure."""

    text: str
    failure_tool: str | None = None
    failure_error: str | None = None
    project_key: str = ""
    environment: dict[str, str] = field(default_factory=dict)

    def analyses(self) -> list[Analysis]:
        found = [analyze(self.text)]
        if self.failure_error:
            found.append(analyze(self.failure_error))
        return found

    def lexical_text(self) -> str:
        # A pasted traceback's frames are shared by every traceback: only the rest of the text
        # speaks, a folder path by its folders' names (search_words). Of a failure's long log only
        # its key lines speak; the rest would drown the agent's words.
        own = search_words(self.text, folders=True, stamps=False)
        if not self.failure_error:
            return own
        return own + "\n" + "\n".join(analyze(self.failure_error).key_lines)


def glossed_term(term: str, parts: Prepared) -> str:
    # The detail says which Chinese word an English one stood for: `certificate=证书`.
    chinese = parts.glossed.get(term)
    return f"{term}={chinese}" if chinese else term


def worth_of(parts: Prepared, symbol: str) -> float:
    return parts.symbol_worth.get(symbol, 1.0)


@dataclass
class Prepared:
    signatures: list[str]
    symbols: list[str]
    terms: list[str]
    weights: lexical.QueryWeights
    rare_terms: list[str]
    symbol_worth: dict[str, float] = field(default_factory=dict)  # shapes.symbol_rarity of each query symbol
    near: list[shapes.NearLine] = field(default_factory=list)  # the query's normalised key lines
    signature_worth: dict[str, float] = field(default_factory=dict)  # an exact match's strength (shapes.line_worth)
    glossed: dict[str, str] = field(default_factory=dict)  # an English word -> the query's Chinese word
    pairs: shapes.WordPairs = field(default_factory=lambda: shapes.WordPairs({}, 0.0))  # its adjacent words
    # Records holding its signatures or symbols, those sharing most first (Store.by_keys).
    by_keys: list[str] = field(default_factory=list)


def _bigram_idf(bigrams: list[str], doc_counts: dict[str, int], total: int) -> dict[str, float]:
    """The IDF of the ``bigrams`` that the store holds, among the records holding text cut into bigrams
    (BIGRAM_POPULATION_MIN): at least as many as hold any one of them."""
    counts = {t: n for t in bigrams if (n := doc_counts.get(t, 0)) > 0}
    if not counts:
        return {}
    marked = doc_counts.get(lexical.BIGRAM_TEXT, 0)
    population = max(marked, min(total, BIGRAM_POPULATION_MIN), *counts.values())
    return {t: lexical.idf(n, population) for t, n in counts.items()}


def prepare(store: Store, query: Query, *, by_keys: int) -> Prepared:
    """What ranking reads of ``query``, and the records holding its keys, up to ``by_keys`` per kind
    of key, looked up with its terms' counts (``Store.term_stats_and_keys``)."""
    analyses = query.analyses()
    signatures = list(dict.fromkeys(s for a in analyses for s in a.signatures))
    symbols = list(dict.fromkeys(s for a in analyses for s in a.symbols))
    text = query.lexical_text()
    sequence = lexical.terms(text)  # in order, with repeats: its word pairs (shapes.WordPairs)
    terms = list(dict.fromkeys(sequence))
    if SPLIT_MIXED and not text.isascii():
        # Chinese text names software in English words glued to versions and to each other
        # (`cuda11.0`, `AndroidStudio`); the records spell them apart: so do the query's words too.
        terms += [t for t in lexical.unique_terms(_GLUED.sub(" ", text)) if t not in terms]
    terms = terms[:MAX_QUERY_TERMS]
    # The words of the query's compound identifiers (lexical.identifier_words), in the places its own
    # terms leave: optional terms at a share of their weight, as glosses below.
    pieces = [w for w in dict.fromkeys(lexical.identifier_words(text)) if w not in terms]
    pieces = pieces[: MAX_QUERY_TERMS - len(terms)]
    # English words for the query's Chinese words (analysis.glossary), kept only where the store
    # holds them: a Chinese question about an English error otherwise shares nothing with its record.
    # (Its bigrams also take their rarity among the records holding such text: _bigram_idf.)
    bigrams = [t for t in terms if lexical.is_bigram(t)] if not text.isascii() else []
    glosses = {}
    if bigrams:
        from .analysis import glossary

        said_in_english = glossary.english(bigrams, lexical.runs(text))
        glosses = {w: g for w, g in said_in_english.items() if w not in terms}
    # A symbol is no rarer than the rarest word it is spelled with, in the store's text: `install`,
    # `node` or `exception` taken for a name, or `go.mod`, are as common as their words are. One spelled
    # only with words found in almost every error (`errors` of a JSON answer; lexical.GENERIC) names
    # nothing, as those words alone are no lexical evidence either.
    spelled = {s: words for s in symbols if (words := lexical.terms(s))}
    # The other inflections of the query's first INFLECTED_WORDS words (analysis.inflection), kept
    # where the store holds them: a word the query says in one form counts in another at a share.
    inflected: dict[str, list[str]] = {}
    said = set(terms)
    for t in [*terms, *glosses]:
        if len(inflected) >= INFLECTED_WORDS:
            break
        skipped = t in lexical.FUNCTION_WORDS or t in lexical.GENERIC
        if not skipped and (made := [f for f in inflection.forms(t) if f not in said]):
            inflected[t] = made
    counted = [
        *([lexical.BIGRAM_TEXT] if bigrams else []),
        *terms,
        *glosses,
        *pieces,
        *(w for words in spelled.values() for w in words),
        *(f for made in inflected.values() for f in made),
    ]
    stats, found = store.term_stats_and_keys(counted, signatures, symbols, by_keys)
    glossed = {w: g for w, g in glosses.items() if stats.doc_counts.get(w, 0) > 0}
    counts = store.symbol_counts(symbols, stats.total) if symbols else {}
    worth = {s: shapes.symbol_worth(s, counts.get(s, 0), stats.total) for s in symbols}
    for s, words in spelled.items():
        rarest = max(shapes.symbol_rarity(stats.doc_counts.get(w, 0), stats.total) for w in words)
        worth[s] = 0.0 if all(w in lexical.GENERIC for w in words) else min(worth[s], rarest)
    # IDF 0 marks a term the store has never indexed (see lexical.QueryWeights).
    idf = {t: lexical.idf(stats.doc_counts[t], stats.total) if stats.doc_counts.get(t) else 0.0 for t in terms}
    if bigrams:
        idf.update(_bigram_idf(bigrams, stats.doc_counts, stats.total))
    # A gloss weighs its word's share of its Chinese word (glossary.english), counts when a record
    # holds it and is not needed for a full match; nor does it find candidates: the rarest of an
    # ambiguous word's senses (`代理` → behalf) would take the places of the query's own words
    # (tune split: zh/mixed 191 -> 169 with them, 199 without).
    idf.update((w, lexical.idf(stats.doc_counts[w], stats.total) * share) for w, (share, _) in glossed.items())
    # A piece of an identifier is part of a word, as a CJK bigram is: it counts at IDENTIFIER_WORD_WEIGHT,
    # only when a record holds it, and no record needs it for a full match.
    pieces = [w for w in pieces if stats.doc_counts.get(w, 0) > 0 and w not in glossed]
    idf.update((w, lexical.idf(stats.doc_counts[w], stats.total) * IDENTIFIER_WORD_WEIGHT) for w in pieces)
    weights = lexical.QueryWeights.of(
        [*terms, *glossed, *pieces], idf, frozenset([*glossed, *pieces]), stats.doc_counts, stats.total
    )
    held = {t: kept for t, made in inflected.items() if (kept := tuple(f for f in made if stats.doc_counts.get(f)))}
    if held:
        weights = dataclasses.replace(weights, forms=held)
    # Terms the query weighs at nothing (lexical.FUNCTION_WORDS) find no candidate either.
    present = sorted(
        (t for t in terms if stats.doc_counts.get(t, 0) > 0 and weights.weights.get(t, 1.0) > 0),
        key=lambda t: stats.doc_counts[t],
    )
    if RARE_BIGRAMS < RARE_TERMS and not text.isascii() and not all(map(lexical.is_bigram, present)):
        # A mixed query's Chinese bigrams are rare in any store of mostly English records: they would
        # take every place, and the English words that name the error would find nothing.
        bigrams = [t for t in present if lexical.is_bigram(t)][:RARE_BIGRAMS]
        present = [t for t in present if t in bigrams or not lexical.is_bigram(t)]
    rare: list[str] = []
    postings = 0
    for term in present[:RARE_TERMS]:
        postings += stats.doc_counts[term]
        if rare and postings > RARE_TERM_POSTINGS:
            break
        rare.append(term)
    lines = dict.fromkeys(shapes.tokens(n) for a in analyses for n in a.normalized)
    full = shapes.SIGNATURE_FULL_WORDS * lexical.idf(1, max(1, stats.total))
    near = [shapes.NearLine(t, weights, full) for t in lines if t]
    # An analysis's signatures are its distinct normalised lines' digests, in the same order.
    signature_worth = {
        s: shapes.line_worth(shapes.tokens(n), weights, full)
        for a in analyses
        for n, s in zip(a.normalized, a.signatures, strict=True)
    }
    glossed_words = {w: g for w, (_, g) in glossed.items()}
    pairs = shapes.WordPairs.of(sequence, weights.weights)
    return Prepared(
        signatures, symbols, terms, weights, rare, worth, near, signature_worth, glossed_words, pairs, found
    )
