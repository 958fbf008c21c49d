"""The nine ranking signals of docs/spec.md §4, and candidate generation.

Every hit carries all nine signals with their detail and contribution, so the answer can say *why*
it matched. Only topical signals (error_signature, code_symbol, lexical) can make a hit; the rest
reorder. Candidates come from exact indexes first (signatures, symbols) and then from the query's
rarest terms only: a query OR-ing every term costs ~80 ms at 100 000 records (docs/research/performance.md),
the rarest eight ~2 ms. A candidate found by words alone is scored only when it shares enough of
them; each record loaded and scored costs ~0.1 ms, the bulk of a search at 100 000 records.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .analysis import inflection, lexical
from .analysis.signature import Analysis, analyze, digest, quoted_lines, search_words
from .records import Record, parse_time
from .store.base import SYMBOL_COUNT_SHARE, Indexed, Store

WEIGHTS = {
    "error_signature": 0.30,
    "code_symbol": 0.20,
    "lexical": 0.15,
    "same_project": 0.10,
    "environment": 0.05,
    "recency": 0.05,
    "tool_name": 0.05,
    "trust": 0.05,
    "evidence": 0.05,
}
TOPICAL = ("error_signature", "code_symbol", "lexical")
TRUST = {"team_verified": 1.0, "human": 1.0, "local_auto": 0.6, "note": 0.4, "team": 0.3}
OUTDATED_FACTOR = 0.2
FAILED_REPLAY_FACTOR = 0.2  # as outdated: a fix a clean checkout could not confirm
RECENCY_HALF_LIFE_DAYS = 90.0
# Below this lexical strength a match is noise (a shared `error` or `file`), not evidence; shown
# as 0.00 and unable to make a hit on its own.
LEXICAL_FLOOR = 0.12
SYMBOLS_FOR_FULL = 3
# A symbol's worth falls with the share of the store that holds it (symbol_rarity): on one record
# 1.0, on SYMBOL_COUNT_SHARE of them 0. A small store counts as if it held SYMBOL_SCALE_MIN / share
# records: three records sharing a name out of five is no evidence either way.
SYMBOL_SCALE_MIN = 20.0
# A bare exception type (`RuntimeError`, `TypeError`, `NullPointerException`) names a category that
# unrelated failures share, in every store, however few of them this store holds yet: worth at most
# this much. A qualified one (`torch.cuda.OutOfMemoryError`) names where it was raised, and counts fully.
# So does an errno-style code (`ECONNRESET`, `ETIMEDOUT`, npm's `ERESOLVE`): set P gave the sharp and
# Electron download records the signal over node-sass's on a shared `ETIMEDOUT`. Below c3400: recurring
# top-1 4 353 -> 4 355 of 4 593, confusions 115 -> 114, natural-language 2 161 -> 2 163 of 2 641.
CATEGORY_WORTH = 0.1
_CATEGORY = re.compile(r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Warning)|E[A-Z]{2,15}", re.ASCII)
# A key line that nearly equals one of the record's (IDF-weighted token-set Jaccard of the normalised
# lines, near_match) gives error_signature NEAR_SCALE × similarity from NEAR_MIN up; an exact one 1.0.
NEAR_MIN = 0.6
NEAR_SCALE = 0.5
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
MAX_QUERY_TERMS = 64
RARE_TERMS = 8
SPLIT_MIXED = True
_GLUED = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", re.ASCII)
# The words of a query's compound identifiers (`ErrorIncompatibleDriver` -> incompatible, driver) weigh
# this share of their IDF, as a CJK bigram does (lexical.BIGRAM_WEIGHT); a record's are indexed beside
# its identifiers (lexical.VERSION 4). Tune split (below c1800): recurring top-1 2 624 -> 2 626 of
# 2 734, look-alike confusions 58 -> 60, natural-language 1 307 -> 1 320 of 1 597, zh/mixed 230 -> 232
# of 285; at the full weight 2 624, 60, 1 314, 233; indexed but not queried 2 625, 55, 1 309, 231.
IDENTIFIER_WORD_WEIGHT = 0.5
RARE_BIGRAMS = 4  # of them at most this many CJK bigrams when the query has other words too
# Past its rarest term, the candidate query takes a term only while the postings it reads stay under
# this bound (BM25 costs ~3 µs a posting, a document-size look-up each): a term in a third of the
# store (`error`, `import`) would cost ~30 ms at 100 000 records and names no particular record.
RARE_TERM_POSTINGS = 1000
# Per exact source, records sharing most of the query's signatures or symbols first: a key such as
# `ImportError` on 1 000 records would otherwise load and score a hundred look-alikes each query.
CANDIDATES_PER_SOURCE = 50
# Term candidates come best BM25 first; past the first few dozen they share a common word or two with
# the query and fall under LEXICAL_FLOOR, after costing a record load and a scoring each.
TERM_CANDIDATES = 50
# Each form costs a look-up in the store's vocabulary (~30 a query of the bench): a pasted log's later
# words rarely decide, and 12 of them keep what all do (below c3800: recurring / natural-language /
# zh/mixed top-1 and confusions 4 512 / 2 282 / 659 / 122 for all, 4 511 / 2 281 / 659 / 121 for 12,
# 4 514 / 2 280 / 660 / 121 for 8). The forms do not find candidates: looked for too, they cost 4
# recurring answers and 3 confusions and won no natural-language one.
INFLECTED_WORDS = 12


@dataclass(frozen=True)
class Signal:
    """One of the nine ranking signals of a hit: its strength (0..1), its detail, and its
    contribution to the score (its weight times its strength)::

        print([(signal.name, signal.detail, round(signal.contribution, 2)) for signal in hit.signals])
    """

    name: str
    strength: float
    detail: str

    @property
    def contribution(self) -> float:
        return WEIGHTS[self.name] * self.strength


@dataclass
class Hit:
    """A record a search found, best first: all nine signals, with their details, and the score
    they add up to::

        for hit in session.search("ld: undefined symbol deflate"):
            print(hit.record.id, round(hit.score, 2))
    """

    record: Record
    signals: list[Signal]
    score: float = field(init=False)

    def __post_init__(self) -> None:
        self.score = sum(s.contribution for s in self.signals)

    @property
    def topical(self) -> bool:
        return any(s.strength > 0 for s in self.signals if s.name in TOPICAL)


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
        own = search_words(self.text, folders=True)
        if not self.failure_error:
            return own
        return own + "\n" + "\n".join(analyze(self.failure_error).key_lines)


def _age_days(record: Record, now: datetime) -> int:
    try:
        return max(0, (now - parse_time(record.updated)).days)
    except ValueError:
        return 0


def _replayed(record: Record) -> float:
    """What its replays leave of a record's trust (docs/spec.md §5: failing runs lower it): all of it
    when every run passed or none ran, ``FAILED_REPLAY_FACTOR`` when none passed, between by share."""
    v = record.verification
    if v is None or v.tries <= 0 or v.passed >= v.tries:
        return 1.0
    return FAILED_REPLAY_FACTOR + (1.0 - FAILED_REPLAY_FACTOR) * max(0, v.passed) / v.tries


def symbol_rarity(count: int, total: int) -> float:
    """A symbol's worth by how many of ``total`` records hold it: 1.0 on one, 0 on
    ``SYMBOL_COUNT_SHARE`` of the store or more, log-scaled between (as IDF)."""
    scale = max(SYMBOL_COUNT_SHARE * total, SYMBOL_SCALE_MIN)
    if count <= 1:
        return 1.0
    return max(0.0, math.log(scale / count) / math.log(scale))


def symbol_worth(symbol: str, count: int, total: int) -> float:
    """What sharing ``symbol`` is evidence of: its rarity, at most CATEGORY_WORTH for a bare exception type."""
    rarity = symbol_rarity(count, total)
    return min(rarity, CATEGORY_WORTH) if _CATEGORY.fullmatch(symbol) else rarity


@functools.lru_cache(maxsize=8192)
def _tokens(line: str) -> frozenset[str]:
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


def near_match(
    parts: Prepared, normalized: Iterable[str], title: dict[str, int] | None = None
) -> tuple[float, str, float]:
    """The best IDF-weighted token-set Jaccard of the query's normalised key lines with the record's,
    and that record line; a record line without a query line's rarest word (``NearLine.key``) does
    not count for that line; and that query line's worth (``NearLine.worth``)."""
    best, line, worth = 0.0, "", 0.0
    near = parts.near if title is None else [n for n in parts.near if n.reachable(title)]
    if not near:
        return best, line, worth
    known = parts.weights.weights
    for theirs in normalized:
        other = _tokens(theirs)
        for mine in near:
            if mine.key is not None and mine.key not in other:
                continue
            weights = mine.weights
            shared = sum(weights[t] for t in mine.tokens & other)
            rest = sum(mine.weight(t, known) for t in other - mine.tokens)
            similarity = shared / (mine.total + rest) if mine.total + rest else 0.0
            if similarity > best:
                best, line, worth = similarity, theirs, mine.worth
    return best, line, worth


def _near_lines(record: Record, parts: Prepared, indexed: Indexed) -> tuple[str, ...]:
    """The record's lines a query's key line may nearly match: its own key lines, and the messages its
    title quotes (signature.quoted_lines) when one of the query's lines can reach its title at all.
    Tune split (below c2000): recurring top-1 2 797 -> 2 802 of 2 920, confusions 63 -> 60."""
    if not parts.near or ('"' not in record.title and "\u201c" not in record.title):
        return indexed.normalized
    if not any(line.reachable(indexed.title) for line in parts.near):
        return indexed.normalized
    return tuple(dict.fromkeys((*indexed.normalized, *quoted_lines(record.title))))


def _facts(
    record: Record,
    query: Query,
    parts: Prepared,
    cover: tuple[float, list[str]],
    now: datetime,
    indexed: Indexed | None,
    share: float = 1.0,
    best_cover: float = 0.0,
    best_held: float = 0.0,
) -> tuple[list[float], str | None, list[str], list[str], list[str], int, str, bool, bool]:
    """Each signal's strength in ``WEIGHTS`` order, and what their details are made of, the CONTEXT
    signals' at ``share`` (context_share), a key line's and the shared symbols' at their share of
    ``best_cover`` (signature_share), lexical at its words' share of ``best_held`` (words_held). The
    details' text is built only for the hits shown (``score``): most candidates are only counted."""
    sig = next((s for s in parts.signatures if s in record.signatures), None)
    signature = parts.signature_worth.get(sig, 1.0) * signature_share(cover[0], best_cover) if sig else 0.0
    if sig is None and indexed is not None and (lines := _near_lines(record, parts, indexed)):
        similarity, line, line_info = near_match(parts, lines, indexed.title)
        if similarity >= NEAR_MIN:
            signature = NEAR_SCALE * similarity * line_info * signature_share(cover[0], best_cover, NEAR_SHARE_POWER)
            sig = f"~{similarity:.2f} {digest(line)}"
    own = record.symbols
    shared = [s for s in parts.symbols if s in own]
    symbol_share = signature_share(cover[0], best_cover, SYMBOL_SHARE_POWER) if shared else 1.0
    worth = parts.symbol_worth
    # The query's symbols that are worth anything decide how many make a full match.
    known = sum(1 for s in parts.symbols if worth.get(s, 1.0) > 0)
    denominator = max(1, min(known, len(own), SYMBOLS_FOR_FULL))
    strength, matched = cover
    strength = min(1.0, strength)  # cover may be lexical.evidence, past the cap
    if strength < LEXICAL_FLOOR:
        strength = 0.0
    elif best_cover > 1.0 and best_held > 0:
        strength *= min(1.0, words_held(parts.weights, matched) / best_held) ** LEXICAL_SHARE_POWER
    env = record.environment
    # os and arch first: they decide most fixes, and the detail is cut at 24 characters.
    env_keys = sorted(env, key=lambda k: (k not in ("os", "arch"), k != "os", k)) if env else []
    env_match = [f"{k}={env[k]}" for k in env_keys if query.environment.get(k) == env[k]]
    age = _age_days(record, now)
    tool = (query.failure_tool or "").lower()
    trust = TRUST.get(record.origin, 0.3) * (OUTDATED_FACTOR if record.is_outdated else 1.0) * _replayed(record)
    weight_of_evidence = record.sources + 2 * record.used_success
    same_project = record.project_key == query.project_key
    same_tool = bool(tool) and (record.tool_name or "").lower() == tool
    strengths = [
        signature,
        min(1.0, sum(worth.get(s, 1.0) for s in shared) / denominator) * symbol_share,
        strength,
        1.0 if same_project else 0.0,
        len(env_match) / len(env_keys) if env_keys else 0.0,
        0.5 ** (age / RECENCY_HALF_LIFE_DAYS),
        1.0 if same_tool else 0.0,
        trust,
        1.0 - 0.8**weight_of_evidence,
    ]
    if share < 1.0:
        for i in _CONTEXT_AT:
            strengths[i] *= share
    return strengths, sig, shared, matched, env_match, age, tool, same_project, same_tool


_ORDER = tuple(WEIGHTS)
_TOPICAL_AT = tuple(_ORDER.index(name) for name in TOPICAL)
# Signals that say how much to trust a record or how close its setting is, not what it is about:
# they tell apart records equally on topic, and count in proportion to a record's topical evidence
# against the best candidate's (context_share). An os match and a recent date would otherwise lift a
# record holding two of the query's words over one holding all of them (tune split: 383 → 389 of 396).
# same_project and tool_name stay whole: they name the agent's own project and failing tool.
CONTEXT = ("environment", "recency", "trust", "evidence")
_CONTEXT_AT = tuple(_ORDER.index(name) for name in CONTEXT)
# The share is taken to this power: a record 5 % less on topic keeps two thirds of its context, 10 %
# less under half, 20 % less a sixth. In proportion (1), the context (up to 0.20) outweighed topical
# differences of a few hundredths between look-alikes, and the os of whoever noted a record first
# decided between two that hold one message (everything below c1600: recurring top-1 2 377 -> 2 398
# of 2 494, look-alike confusions 62 -> 49; 2 and 4 gave 2 386 and 2 396, 16 the same as 8).
CONTEXT_SHARE_POWER = 8


def _topical(strengths: list[float], lexical_evidence: float = 0.0) -> float:
    # Past its cap, lexical evidence still counts here (context_share): of two records whose words
    # both fill the lexical signal, the one holding more of the query keeps more of its context, so an
    # os match cannot decide between look-alikes that one of them matches word for word better.
    extra = max(0.0, lexical_evidence - strengths[2]) if strengths[2] > 0 else 0.0
    return sum(WEIGHTS[_ORDER[i]] * strengths[i] for i in _TOPICAL_AT) + WEIGHTS["lexical"] * extra


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


def _total(strengths: list[float]) -> float:
    # As Hit.score sums its signals' contributions: the same products in the same order.
    return sum(WEIGHTS[name] * strength for name, strength in zip(_ORDER, strengths, strict=True))


def score(
    record: Record,
    query: Query,
    parts: Prepared,
    indexed: Indexed | None,
    now: datetime,
    cover: tuple[float, list[str]] | None = None,
    share: float = 1.0,
    best_cover: float = 0.0,
    best_held: float = 0.0,
) -> Hit:
    """``record``'s hit for ``query``, every signal with its detail; ``cover`` when already known;
    ``share`` of its CONTEXT signals (context_share); ``best_cover``, the best candidate's lexical
    evidence (signature_share); ``best_held``, the most of the query's words a candidate holds
    (words_held)."""
    if cover is None:
        cover = lexical.strength(parts.weights, indexed.title, indexed.body) if indexed else (0.0, [])
    strengths, sig, shared, matched, env_match, age, tool, same_project, same_tool = _facts(
        record, query, parts, cover, now, indexed, share, best_cover, best_held
    )
    details = [
        sig or "-",
        ",".join(s for s in shared if worth_of(parts, s) > 0) or ",".join(shared) or "-",
        ",".join(sorted(_glossed(t, parts) for t in matched)) if strengths[2] else "-",
        record.project if same_project else "-",
        ",".join(env_match) or "-",
        f"{age}d",
        tool if same_tool else "-",
        record.origin,
        f"sources={record.sources},used_success={record.used_success}",
    ]
    return Hit(record, [Signal(n, v, d) for n, v, d in zip(_ORDER, strengths, details, strict=True)])


def _glossed(term: str, parts: Prepared) -> str:
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
    symbol_worth: dict[str, float] = field(default_factory=dict)  # symbol_rarity of each query symbol
    near: list[NearLine] = field(default_factory=list)  # the query's normalised key lines
    signature_worth: dict[str, float] = field(default_factory=dict)  # an exact match's strength (line_worth)
    glossed: dict[str, str] = field(default_factory=dict)  # an English word -> the query's Chinese word


def prepare(store: Store, query: Query) -> Prepared:
    analyses = query.analyses()
    signatures = list(dict.fromkeys(s for a in analyses for s in a.signatures))
    symbols = list(dict.fromkeys(s for a in analyses for s in a.symbols))
    text = query.lexical_text()
    terms = lexical.unique_terms(text)
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
    glosses = {}
    if not text.isascii() and (bigrams := [t for t in terms if lexical.is_bigram(t)]):
        from .analysis import glossary

        glosses = {w: g for w, g in glossary.english(bigrams).items() if w not in terms}
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
    stats = store.term_stats(
        [
            *terms,
            *glosses,
            *pieces,
            *(w for words in spelled.values() for w in words),
            *(f for made in inflected.values() for f in made),
        ]
    )
    glossed = {w: g for w, g in glosses.items() if stats.doc_counts.get(w, 0) > 0}
    counts = store.symbol_counts(symbols, stats.total) if symbols else {}
    worth = {s: symbol_worth(s, counts.get(s, 0), stats.total) for s in symbols}
    for s, words in spelled.items():
        rarest = max(symbol_rarity(stats.doc_counts.get(w, 0), stats.total) for w in words)
        worth[s] = 0.0 if all(w in lexical.GENERIC for w in words) else min(worth[s], rarest)
    # IDF 0 marks a term the store has never indexed (see lexical.QueryWeights).
    idf = {t: lexical.idf(stats.doc_counts[t], stats.total) if stats.doc_counts.get(t) else 0.0 for t in terms}
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
    lines = dict.fromkeys(_tokens(n) for a in analyses for n in a.normalized)
    full = SIGNATURE_FULL_WORDS * lexical.idf(1, max(1, stats.total))
    near = [NearLine(t, weights, full) for t in lines if t]
    # An analysis's signatures are its distinct normalised lines' digests, in the same order.
    signature_worth = {
        s: line_worth(_tokens(n), weights, full)
        for a in analyses
        for n, s in zip(a.normalized, a.signatures, strict=True)
    }
    glossed_words = {w: g for w, (_, g) in glossed.items()}
    return Prepared(signatures, symbols, terms, weights, rare, worth, near, signature_worth, glossed_words)


def rank(
    store: Store,
    query: Query,
    *,
    limit: int,
    exclude_session: str | None = None,
    exclude_hexes: Iterable[str] = (),
    now: datetime | None = None,
) -> list[Hit]:
    moment = now or datetime.now(timezone.utc)
    parts = prepare(store, query)
    excluded = set(exclude_hexes)
    found = store.by_keys(parts.signatures, parts.symbols, CANDIDATES_PER_SOURCE)
    exact = {h: None for h in found if h not in excluded}  # ordered: ties keep their order
    lexical_only = [
        h for h in store.by_terms(parts.rare_terms, TERM_CANDIDATES) if h not in excluded and h not in exact
    ]
    # Ranking reads these terms of a candidate's index and no other (lexical.evidence, near_match,
    # promising below), and its length.
    symbol_terms = {t for s in parts.symbols for t in lexical.terms(s)}
    forms = (f for held in parts.weights.forms.values() for f in held)
    read = {*parts.weights.terms, *forms, *(t for line in parts.near for t in line.tokens), *symbol_terms}
    indexed = store.indexed([*exact, *lexical_only], read)
    nothing = Indexed({}, {}, ())
    covers = {}
    candidates = [*exact, *lexical_only]
    lengths = lexical.relative_length({h: indexed[h].length for h in candidates if h in indexed})
    for h in candidates:
        fields = indexed.get(h, nothing)
        covers[h] = lexical.evidence(parts.weights, fields.title, fields.body, lengths.get(h, 1.0))
    # A candidate found by its words alone that shares too few of them with the query cannot make a
    # hit: dropped before its record is loaded (a load and a scoring cost ~0.1 ms a record), unless
    # it names one of the query's symbols or its key line nearly matches the query's.

    def promising(h: str) -> bool:
        fields = indexed.get(h, nothing)
        if covers[h][0] >= LEXICAL_FLOOR:
            return True
        if not symbol_terms.isdisjoint(fields.title) or not symbol_terms.isdisjoint(fields.body):
            return True
        return bool(fields.normalized) and near_match(parts, fields.normalized, fields.title)[0] >= NEAR_MIN

    wanted = [*exact] + [h for h in lexical_only if promising(h)]
    records = [
        r
        for r in store.get_many(wanted)
        if not r.is_wrong
        and (exclude_session is None or r.session_id != exclude_session)
        and (r.scope == "global" or r.project_key == query.project_key)
    ]
    # Every candidate is counted; only the hits shown get their signals' details (~3x the work).
    facts: list[tuple[list[float], Record]] = []
    best_cover = max((covers[r.hex][0] for r in records), default=0.0)
    best_held = max((words_held(parts.weights, covers[r.hex][1]) for r in records), default=0.0)
    for r in records:
        strengths = _facts(
            r, query, parts, covers[r.hex], moment, indexed.get(r.hex), best_cover=best_cover, best_held=best_held
        )[0]
        if any(strengths[i] > 0 for i in _TOPICAL_AT):
            facts.append((strengths, r))
    best = max((_topical(s, covers[r.hex][0]) for s, r in facts), default=0.0)
    counted: list[tuple[float, float, str, Record, float]] = []
    for strengths, r in facts:
        share = context_share(_topical(strengths, covers[r.hex][0]), best)
        for i in _CONTEXT_AT:
            strengths[i] *= share
        # Rounded: equal sums of the same signals may differ in their last bits, and then the
        # tie-breaks below would not decide.
        counted.append((round(_total(strengths), 9), covers[r.hex][0], r.updated, r, share))
    # Best first; equal scores: the record holding more of the query's words (lexical evidence past
    # its cap), then the newer. A reverse sort is stable too: full ties keep the order loaded.
    counted.sort(key=lambda c: (c[0], c[1], c[2]), reverse=True)
    hits = counted[:limit]
    return [
        score(r, query, parts, indexed.get(r.hex), moment, covers[r.hex], share, best_cover, best_held)
        for _, _, _, r, share in hits
    ]
