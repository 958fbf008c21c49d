"""The shapes of the topical signals' strengths (docs/spec.md §4), by the evidence they carry rather
than by presence: a symbol by its rarity in the store, an exact key line by its words' information, a
near one by its IDF-weighted similarity, a record's words said in the query's order (phrase_share), and
the shares by which look-alikes keep a shared key, their lexical strength and their context against
the best candidate's. ``ranking`` combines them.

The powers here are read when a search runs: tests set them on this module.
"""

from __future__ import annotations

import functools
import itertools
import math
import re

from .analysis import inflection, lexical
from .store.base import SYMBOL_COUNT_SHARE, Indexed

# A symbol's worth falls with the share of the store that holds it (symbol_rarity): on one record
# 1.0, on SYMBOL_COUNT_SHARE of them 0. A small store counts as if it held SYMBOL_SCALE_MIN / share
# records: three records sharing a name out of five is no evidence either way.
SYMBOL_SCALE_MIN = 20.0
# A bare exception type (`RuntimeError`, `TypeError`, `NullPointerException`) names a category that
# unrelated failures share, in every store, however few of them this store holds yet: worth at most
# this much. So does an errno-style code (`ECONNRESET`, `ETIMEDOUT`, npm's `ERESOLVE`): set P gave the
# sharp and Electron download records the signal over node-sass's on a shared `ETIMEDOUT`. Below
# c3400: recurring top-1 4 353 -> 4 355 of 4 593, confusions 115 -> 114, natural-language 2 161 ->
# 2 163 of 2 641.
CATEGORY_WORTH = 0.1
# And so does an exception type qualified by its module (`requests.exceptions.ConnectionError`,
# `org.postgresql.util.PSQLException`): the module says which library raised it, not which of its
# failures, and a store that holds a few of them gave a record sharing only that name and a log's
# words the signal over the one holding the query's message (sets CF to CI: a wandb `ConnectionError`
# under a tiktoken download's record, read in that run before this was tried). Tune split (below c36500,
# sets dev to CE, one store state): recurring top-1 7 358 -> 7 366 of 8 130, confusions 446 -> 445,
# natural-language 3 830 -> 3 828 of 4 854, zh/mixed 1 350 both; rules off 7 353 -> 7 361, 447 ->
# 446; at most 0.3 the same, 444 confusions; 0.6: 7 361. On sets CF to CI 94 of 100 before and after.
_CATEGORY = re.compile(
    r"(?:[A-Za-z_][\w.]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Warning)|E[A-Z]{2,15}", re.ASCII
)
# A key line that nearly equals one of the record's (IDF-weighted token-set Jaccard of the normalised
# lines, near_match) gives error_signature NEAR_SCALE × similarity from NEAR_MIN up, as an exact one from
# NEAR_AS_EXACT up; an exact one 1.0.
NEAR_MIN = 0.6
NEAR_SCALE = 0.5
# From this similarity up a near line is the query's line itself, one masked value or a quote mark
# apart (a title quoting `[coc.nvim] build/index.js not found, …` against a log printing it): it counts
# as an exact one, not at NEAR_SCALE, or a look-alike whose log holds the line byte for byte wins on
# that alone. Tune split (below c32000, sets dev to BV, one store state): recurring top-1 7 157 ->
# 7 165 of 7 913, confusions 435 -> 430, natural-language and zh/mixed unchanged (rules off 7 154 ->
# 7 162, 436 -> 431); from 0.99 the same, 0.95 7 164, 0.9 7 165 (and one recurring query less on sets
# BW to CA, read before).
NEAR_AS_EXACT = 0.97


def near_strength(similarity: float, worth: float) -> float:
    """What a query key line of ``worth`` nearly matching a record's at ``similarity`` gives
    error_signature before the record's share (ranking._facts): nothing under NEAR_MIN, its worth
    from NEAR_AS_EXACT, NEAR_SCALE × similarity × worth between."""
    if similarity < NEAR_MIN:
        return 0.0
    return worth if similarity >= NEAR_AS_EXACT else NEAR_SCALE * similarity * worth


# Look-alikes share key lines (`ERROR: Failed to build gem native extension.` over every gem's
# missing library): an exact one counts by the record's lexical evidence (past its cap) as a share of
# the best candidate's, to this power (signature_share). Of two records that print the query's key
# line, or of one that does and one that holds much more of the query, the one holding more of it goes
# first. Tune split (below c2000): recurring top-1 2 789 -> 2 797 of 2 920, confusions 68 -> 63;
# rules off 2 783 -> 2 794, 70 -> 65; powers 1 / 2 / 8: 2 788 / 2 788 / 2 797. A near key line is
# already tempered by its similarity: the same share lost there (4: 2 788, 69 confusions).
SIGNATURE_SHARE_POWER = 4
# A near key line keeps the plain share (power 1): a look-alike whose line is a few hundredths nearer
# but which holds less of the query (set T's ClickHouse users, `illegal hardware instruction` of bun
# against MongoDB's CPU check) no longer goes first on that line alone. Tune split (below c6200):
# recurring top-1 5 180 -> 5 184 of 5 543, natural-language 2 773 -> 2 774, confusions 196 both;
# rules off 5 173 -> 5 176, 199 -> 198; power 0.5: 5 182, power 2: 5 182 and 198 confusions.
NEAR_SHARE_POWER = 1
# So does a shared code symbol: of two records, one naming the query's `netcdf.mod` and little else of
# it and one holding many more of its words, the name no longer decides alone (gfortran's module of
# another compiler's version against a module not found). Tune split (below c6200): recurring top-1
# 5 184 -> 5 193 of 5 543, natural-language 2 774 -> 2 777, zh/mixed 791 both, confusions 196 -> 197;
# rules off 5 176 -> 5 187, 2 770 -> 2 774, 198 both. Power 0.5: 5 192 and 196; 2: 5 189 and 201.
SYMBOL_SHARE_POWER = 1
# Lexical strength is capped at 1.0, and look-alikes of a pasted log mostly reach it: then a key line
# both print, a context signal or a few hundredths decided, though one held more of the query's words
# (a gem's `pg_config` and `libpq` under the native-extension banner; tokio's `reqwest` under `no
# reactor running`). When the best candidate is past the cap, a candidate's lexical strength is
# scaled by the weight of the query's words it holds against the best holder's (words_held), to this
# power. It counts which words, not how often or in how long a text: two records holding the same
# words keep the same strength, and the context decides between them as before (a record marked
# outdated by a newer note of the same error still goes second). Tune split (below c10000, sets dev to
# AD, read after their runs): recurring top-1 5 843 -> 5 851 of 6 314, confusions 263 -> 259,
# natural-language 3 144 -> 3 151 of 3 928, zh/mixed 993 -> 999 of 1 316; rules off 5 839 -> 5 848,
# 262 -> 260, 3 142 -> 3 149, 992 -> 998. Powers 1 / 2: 5 846 / 5 850. Scaling by the evidence itself
# (its length norm included) instead won 4 and put the outdated record first.
LEXICAL_SHARE_POWER = 4
# An exact signature is worth its line's information: the IDF of its specific words (not GENERIC,
# masks or function words) against this many words found in one record only. A key line of common
# words (`APPLICATION FAILED TO START`, Spring's banner over every start-up failure) names no
# particular error; one rare word and a half names one.
SIGNATURE_FULL_WORDS = 1.5


def line_worth(tokens: frozenset[str], query: lexical.QueryWeights, full: float) -> float:
    """The strength of an exact match of a normalised key line made of ``tokens`` (SIGNATURE_FULL_WORDS):
    words the store has not seen count at the query's mean weight."""
    known, mean = query.weights, query.mean
    info = sum(known.get(t) or mean for t in tokens if t not in _NOT_INFORMATIVE)
    return min(1.0, info / full) if full > 0 else 1.0


# Tokens of masked values (`<n>`, `<dir>`) say little about which error it is.
_PLACEHOLDER_WEIGHT = 0.5
_PLACEHOLDERS = frozenset("n dir hex url tmp uuid time addr size duration email project".split())
_NOT_INFORMATIVE = lexical.GENERIC | lexical.FUNCTION_WORDS | _PLACEHOLDERS  # line_worth


def symbol_rarity(count: int, total: int) -> float:
    """A symbol's worth by how many of ``total`` records hold it: 1.0 on one, 0 on
    ``SYMBOL_COUNT_SHARE`` of the store or more, log-scaled between (as IDF)."""
    scale = max(SYMBOL_COUNT_SHARE * total, SYMBOL_SCALE_MIN)
    if count <= 1:
        return 1.0
    return max(0.0, math.log(scale / count) / math.log(scale))


def symbol_worth(symbol: str, count: int, total: int) -> float:
    """What sharing ``symbol`` is evidence of: its rarity, at most CATEGORY_WORTH for an exception type,
    bare or qualified, or an errno-style code."""
    rarity = symbol_rarity(count, total)
    return min(rarity, CATEGORY_WORTH) if _CATEGORY.fullmatch(symbol) else rarity


@functools.lru_cache(maxsize=8192)
def tokens(line: str) -> frozenset[str]:
    # Cached: the same normalised lines come back search after search (a store's common errors).
    return frozenset(lexical.terms(line))


class NearLine:
    """One normalised key line of the query: its tokens and their weights, computed once a search.
    Words the query's statistics do not weigh count at their mean weight; masks (`<n>`) little."""

    __slots__ = ("key", "mean", "tokens", "total", "weights", "worth")

    def __init__(self, tokens: frozenset[str], query: lexical.QueryWeights, full: float) -> None:
        known = query.weights
        self.mean = query.mean
        self.tokens = tokens
        self.weights = {t: self.weight(t, known) for t in tokens}
        self.total = sum(self.weights.values())
        # The line's rarest word (ties: the first in order) names which error it is: a line that
        # lacks it is another error, however much else it shares (`libnss3.so: cannot open shared
        # object file` is not `libssl.so.1.1: cannot open shared object file`).
        words = sorted(t for t in tokens if t not in _PLACEHOLDERS)
        self.key = max(words, key=self.weights.__getitem__) if words else None
        # As an exact match's (line_worth): a near copy of `**Errors:**` names no error.
        self.worth = line_worth(tokens, query, full)

    def weight(self, t: str, known: dict[str, float]) -> float:
        if t in _PLACEHOLDERS:
            return _PLACEHOLDER_WEIGHT
        return known.get(t) or self.mean

    def reachable(self, title: dict[str, int]) -> bool:
        # The record's key lines are indexed with its title: a line sharing too little of it (masks
        # aside) cannot come near, and most candidates are settled here without cutting lines into terms.
        if self.key is not None and self.key not in title:
            return False
        shared = sum(w for t, w in self.weights.items() if t in title or t in _PLACEHOLDERS)
        return shared >= NEAR_MIN * self.total


# A record that says the query's words in the query's order (`doesn't match any versions, version
# solving failed`) holds its message, where a look-alike holds the same words scattered over another
# one (a title naming `flutter pub get`, a log's `sdk` and `version`): the weight of the query's pairs
# of adjacent words that the record says adjacent too, as a share of all its pairs' (phrase_share),
# adds this much to its lexical evidence. The evidence past the cap is what tells apart look-alikes
# (ranking.py: the shares of key lines and context, the tie-break), and the signal itself under it.
# Tune split (below c17500, sets dev to AS), recurring top-1 / confusions / natural-language /
# zh-mixed of 7 126 / 4 275 / 1 470: 6 546 / 319 / 3 382 / 1 134 -> 6 560 / 310 / 3 411 / 1 137;
# rules off 6 543 / 321 / 3 382 / 1 133 -> 6 558 / 310 / 3 411 / 1 136. At 0.2: 6 558 / 311 / 3 399.
# Pairs weighted by the lesser of their two words, at 0.15 / 0.3 / 0.5 / 1.0: recurring 6 557 / 6 561
# / 6 561 / 6 549, natural-language 3 396 / 3 404 / 3 405 / 3 389; the evidence multiplied by
# 1 + 0.3 × the share instead of added to: 6 561 / 3 403. Ranking reads the share of every candidate
# that holds a word of the query: ~0.09 ms of a search at 100 000 records (bench/scale.py's queries).
PHRASE_WEIGHT = 0.3


class WordPairs:
    """The query's distinct pairs of adjacent words, each weighted by the mean of its two words'
    weights, by first word. Words the query weighs at nothing (function words, words past its
    terms' limit) break pairs, and two generic words together (`build failed`) name no one error."""

    __slots__ = ("following", "total")

    def __init__(self, following: dict[str, dict[str, float]], total: float) -> None:
        self.following = following
        self.total = total

    @classmethod
    def of(cls, sequence: list[str], weights: dict[str, float]) -> WordPairs:
        following: dict[str, dict[str, float]] = {}
        for first, second in itertools.pairwise(sequence):
            if first == second or (first in lexical.GENERIC and second in lexical.GENERIC):
                continue
            a, b = weights.get(first, 0.0), weights.get(second, 0.0)
            if a > 0 and b > 0:
                following.setdefault(first, {}).setdefault(second, (a + b) / 2)
        return cls(following, sum(w for seconds in following.values() for w in seconds.values()))


def phrase_share(pairs: WordPairs, indexed: Indexed, held: list[str]) -> float:
    """The weight of the query's adjacent word pairs that ``indexed`` says adjacent too, as a share of
    all of them; only pairs of words the record holds (``held``: lexical.evidence's matched words,
    those held in another form aside) are looked for."""
    if pairs.total <= 0:
        return 0.0
    words = set(held)
    found = 0.0
    for first in held:  # in the query's order: the same sum, to the last bit, in every process
        for second, weight in pairs.following.get(first, {}).items():
            if second in words and indexed.adjacent(first, second):
                found += weight
    return found / pairs.total


# The share is taken to this power: a record 5 % less on topic keeps two thirds of its context, 10 %
# less under half, 20 % less a sixth. In proportion (1), the context (up to 0.20) outweighed topical
# differences of a few hundredths between look-alikes, and the os of whoever noted a record first
# decided between two that hold one message (everything below c1600: recurring top-1 2 377 -> 2 398
# of 2 494, look-alike confusions 62 -> 49; 2 and 4 gave 2 386 and 2 396, 16 the same as 8).
CONTEXT_SHARE_POWER = 8


def words_held(query: lexical.QueryWeights, matched: list[str]) -> float:
    """The weight of the query's words a record holds (``lexical.evidence``'s matched list): each
    once, a word held in another form (``term~form``) at INFLECTION_WEIGHT, as evidence counts it."""
    weights = query.weights
    held = 0.0
    for m in matched:
        term, _, form = m.partition("~")
        held += weights.get(term, 0.0) * (inflection.INFLECTION_WEIGHT if form else 1.0)
    return held


def signature_share(lexical_evidence: float, best: float, power: float | None = None) -> float:
    """How much of a key's worth a candidate keeps: its lexical evidence (past the cap) as a share of
    the best candidate's, to ``power`` (an exact line's SIGNATURE_SHARE_POWER when None, a near one's
    NEAR_SHARE_POWER, shared symbols' SYMBOL_SHARE_POWER); all of it when no candidate holds any of
    the query's words. All of it, too, for a candidate that holds none of them: a key its own text
    gave would bring its words along, so one shared without them was linked to the failure by the
    session that wrote the record (Session.note: a bug fix noted after a failure gets the failure's
    signatures and symbols), and that link is the evidence."""
    if best <= 0 or lexical_evidence <= 0:
        return 1.0
    exponent = SIGNATURE_SHARE_POWER if power is None else power
    return min(1.0, lexical_evidence / best) ** exponent


def context_share(topical: float, best: float) -> float:
    """How much of its CONTEXT signals a candidate keeps: its topical score (the weighted sum of
    error_signature, code_symbol and lexical) as a share of the best candidate's, to the power
    CONTEXT_SHARE_POWER: they reorder records about equally on topic, not records less on it."""
    return min(1.0, topical / best) ** CONTEXT_SHARE_POWER if best > 0 else 1.0
