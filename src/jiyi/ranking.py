"""The nine ranking signals of docs/spec.md §4, and candidate generation.

Every hit carries all nine signals with their detail and contribution, so the answer can say *why*
it matched. Only topical signals (error_signature, code_symbol, lexical) can make a hit; the rest
reorder. Candidates come from exact indexes first (signatures, symbols) and then from the query's
rarest terms only: a query OR-ing every term costs ~80 ms at 100 000 records (docs/research/performance.md),
the rarest eight ~2 ms. A candidate found by words alone is scored only when it shares enough of
them; each record loaded and scored costs ~0.1 ms, the bulk of a search at 100 000 records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import shapes
from .analysis import lexical
from .analysis.signature import digest, quoted_lines
from .query import Prepared, Query, glossed_term, prepare, worth_of
from .records import Record, parse_time
from .store.base import Indexed, Store

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


# Per exact source, records sharing most of the query's signatures or symbols first: a key such as
# `ImportError` on 1 000 records would otherwise load and score a hundred look-alikes each query.
CANDIDATES_PER_SOURCE = 50
# Term candidates come best BM25 first; past the first few dozen they share a common word or two with
# the query and fall under LEXICAL_FLOOR, after costing a record load and a scoring each.
TERM_CANDIDATES = 50


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


def near_match(
    parts: Prepared, normalized: Iterable[str], title: dict[str, int] | None = None
) -> tuple[float, str, float]:
    """The IDF-weighted token-set Jaccard of one of the query's normalised key lines with one of the
    record's, that record line, and that query line's worth (``shapes.NearLine.worth``): the pair that
    gives the most evidence (``shapes.near_strength``), the most similar among pairs that give none. A
    record line without a query line's rarest word (``shapes.NearLine.key``) does not count for that
    line. Chosen by similarity alone, a bare `error` line that both print (worth 0) hid the query's
    message nearly matching the record's (bench/data: c5912's ngrok record printed both). With the
    exact line worth most below (_facts), tune split (below c56500, one store state): recurring top-1
    8 140 -> 8 142 of 9 063, confusions 559 -> 557 (c5912#2, c5008#1 won, none lost; four exact ties
    whose order follows the store's state moved both ways); rules off 8 137 -> 8 139, 565 -> 563."""
    best, line, worth, gain = 0.0, "", 0.0, 0.0
    near = parts.near if title is None else [n for n in parts.near if n.reachable(title)]
    if not near:
        return best, line, worth
    known = parts.weights.weights
    for theirs in normalized:
        other = shapes.tokens(theirs)
        for mine in near:
            if mine.key is not None and mine.key not in other:
                continue
            weights = mine.weights
            shared = sum(weights[t] for t in mine.tokens & other)
            rest = sum(mine.weight(t, known) for t in other - mine.tokens)
            similarity = shared / (mine.total + rest) if mine.total + rest else 0.0
            evidence = shapes.near_strength(similarity, mine.worth)
            if evidence > gain or (evidence == gain and similarity > best):
                best, line, worth, gain = similarity, theirs, mine.worth, evidence
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
    signals' at ``share`` (shapes.context_share), a key line's and the shared symbols' at their share of
    ``best_cover`` (shapes.signature_share), lexical at its words' share of ``best_held`` (shapes.words_held). The
    details' text is built only for the hits shown (``score``): most candidates are only counted."""
    # Of the key lines the record shares, the one worth most; a shared line worth less than a whole
    # match (a bare `error`) leaves the record's other lines to nearly match the query's message.
    shared_lines = [s for s in parts.signatures if s in record.signatures]
    sig = max(shared_lines, key=lambda s: parts.signature_worth.get(s, 1.0), default=None)
    exact = parts.signature_worth.get(sig, 1.0) if sig else 0.0
    signature = exact * shapes.signature_share(cover[0], best_cover) if sig else 0.0
    if exact < 1.0 and indexed is not None and (lines := _near_lines(record, parts, indexed)):
        similarity, line, line_info = near_match(parts, lines, indexed.title)
        if similarity >= shapes.NEAR_MIN:
            # The same line but for a mask or a quote counts as an exact one, at an exact one's share.
            power = None if similarity >= shapes.NEAR_AS_EXACT else shapes.NEAR_SHARE_POWER
            near = shapes.near_strength(similarity, line_info) * shapes.signature_share(cover[0], best_cover, power)
            if near > signature or sig is None:
                signature, sig = near, f"~{similarity:.2f} {digest(line)}"
    own = record.symbols
    shared = [s for s in parts.symbols if s in own]
    symbol_share = shapes.signature_share(cover[0], best_cover, shapes.SYMBOL_SHARE_POWER) if shared else 1.0
    worth = parts.symbol_worth
    # The query's symbols that are worth anything decide how many make a full match.
    known = sum(1 for s in parts.symbols if worth.get(s, 1.0) > 0)
    denominator = max(1, min(known, len(own), SYMBOLS_FOR_FULL))
    strength, matched = cover
    strength = min(1.0, strength)  # cover may be lexical.evidence, past the cap
    if strength < LEXICAL_FLOOR:
        strength = 0.0
    elif best_cover > 1.0 and best_held > 0:
        strength *= min(1.0, shapes.words_held(parts.weights, matched) / best_held) ** shapes.LEXICAL_SHARE_POWER
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
# against the best candidate's (shapes.context_share). An os match and a recent date would otherwise lift a
# record holding two of the query's words over one holding all of them (tune split: 383 → 389 of 396).
# same_project and tool_name stay whole: they name the agent's own project and failing tool.
CONTEXT = ("environment", "recency", "trust", "evidence")
_CONTEXT_AT = tuple(_ORDER.index(name) for name in CONTEXT)


def _topical(strengths: list[float], lexical_evidence: float = 0.0) -> float:
    # Past its cap, lexical evidence still counts here (shapes.context_share): of two records whose words
    # both fill the lexical signal, the one holding more of the query keeps more of its context, so an
    # os match cannot decide between look-alikes that one of them matches word for word better.
    extra = max(0.0, lexical_evidence - strengths[2]) if strengths[2] > 0 else 0.0
    return sum(WEIGHTS[_ORDER[i]] * strengths[i] for i in _TOPICAL_AT) + WEIGHTS["lexical"] * extra


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
    ``share`` of its CONTEXT signals (shapes.context_share); ``best_cover``, the best candidate's lexical
    evidence (shapes.signature_share); ``best_held``, the most of the query's words a candidate holds
    (shapes.words_held)."""
    if cover is None:
        cover = lexical.strength(parts.weights, indexed.title, indexed.body) if indexed else (0.0, [])
    strengths, sig, shared, matched, env_match, age, tool, same_project, same_tool = _facts(
        record, query, parts, cover, now, indexed, share, best_cover, best_held
    )
    details = [
        sig or "-",
        ",".join(s for s in shared if worth_of(parts, s) > 0) or ",".join(shared) or "-",
        ",".join(sorted(glossed_term(t, parts) for t in matched)) if strengths[2] else "-",
        record.project if same_project else "-",
        ",".join(env_match) or "-",
        f"{age}d",
        tool if same_tool else "-",
        record.origin,
        f"sources={record.sources},used_success={record.used_success}",
    ]
    return Hit(record, [Signal(n, v, d) for n, v, d in zip(_ORDER, strengths, details, strict=True)])


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
    parts = prepare(store, query, by_keys=CANDIDATES_PER_SOURCE)
    excluded = set(exclude_hexes)
    exact = {h: None for h in parts.by_keys if h not in excluded}  # ordered: ties keep their order
    # Ranking reads these terms of a candidate's index and no other (lexical.evidence, near_match,
    # promising below), and its length.
    symbol_terms = {t for s in parts.symbols for t in lexical.terms(s)}
    forms = (f for held in parts.weights.forms.values() for f in held)
    read = {*parts.weights.terms, *forms, *(t for line in parts.near for t in line.tokens), *symbol_terms}
    by_words, indexed = store.by_terms_indexed(parts.rare_terms, TERM_CANDIDATES, exact, read)
    lexical_only = [h for h in by_words if h not in excluded and h not in exact]
    nothing = Indexed({}, {}, ())
    covers = {}
    candidates = [*exact, *lexical_only]
    lengths = lexical.relative_length({h: indexed[h].length for h in candidates if h in indexed})
    for h in candidates:
        fields = indexed.get(h, nothing)
        held, words = lexical.evidence(parts.weights, fields.title, fields.body, lengths.get(h, 1.0))
        if held > 0 and parts.pairs.total > 0:
            held += shapes.PHRASE_WEIGHT * shapes.phrase_share(parts.pairs, fields, words)
        covers[h] = (held, words)
    # A candidate found by its words alone that shares too few of them with the query cannot make a
    # hit: dropped before its record is loaded (a load and a scoring cost ~0.1 ms a record), unless
    # it names one of the query's symbols or its key line nearly matches the query's.

    def promising(h: str) -> bool:
        fields = indexed.get(h, nothing)
        if covers[h][0] >= LEXICAL_FLOOR:
            return True
        if not symbol_terms.isdisjoint(fields.title) or not symbol_terms.isdisjoint(fields.body):
            return True
        return bool(fields.normalized) and near_match(parts, fields.normalized, fields.title)[0] >= shapes.NEAR_MIN

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
    best_held = max((shapes.words_held(parts.weights, covers[r.hex][1]) for r in records), default=0.0)
    for r in records:
        strengths = _facts(
            r, query, parts, covers[r.hex], moment, indexed.get(r.hex), best_cover=best_cover, best_held=best_held
        )[0]
        if any(strengths[i] > 0 for i in _TOPICAL_AT):
            facts.append((strengths, r))
    best = max((_topical(s, covers[r.hex][0]) for s, r in facts), default=0.0)
    counted: list[tuple[float, float, str, Record, float]] = []
    for strengths, r in facts:
        share = shapes.context_share(_topical(strengths, covers[r.hex][0]), best)
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
