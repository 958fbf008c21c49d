"""Full-text terms for the ``lexical`` signal, in every language the users write.

Text is NFKC-folded and case-folded. Outside ASCII, letters lose their accents and other combining
marks (``naïve`` → ``naive``, ``Ошибка: не найден`` → ``ошибка``, ``не``, ``наиден``), and
punctuation and symbols of any script separate words. Then:

- words of any alphabetic script (letters, digits and underscores by Unicode category: Latin,
  Cyrillic, Greek, Arabic, Hebrew, Devanagari, …) are terms; ``pthread_create`` stays one;
- CJK runs (kana, ideographs, Hangul) and the scripts written without spaces (Thai, Lao, Myanmar,
  Khmer) are cut into overlapping bigrams (``链接时`` → ``链接``, ``接时``), so a query meets the
  text without a segmenter or a dictionary.

Accents are folded rather than indexed beside the accented form: the SQLite index (FTS5's
``unicode61``) folds Latin accents itself, so both forms would be one term there anyway, and
agents and users often type ``naive`` for ``naïve``, ``e`` for ``é``. Every term is a single token
to ``unicode61`` exactly as written here (tests/analysis/test_lexical.py checks it), so the index, its
vocabulary counts and the terms read back from the stored text agree.

The store indexes these terms space-separated, and queries are built from the same function, so no
user text ever reaches FTS5's query syntax: every term is quoted. ``VERSION`` names this
definition; a store whose index was built with an older one re-derives it (reindex.py).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .inflection import INFLECTION_WEIGHT

# The definition of the terms below; stored with the index (see reindex.py). 1: ASCII words and CJK
# bigrams only; 2: every script's words, accents folded, Thai/Lao/Myanmar/Khmer bigrams; 3: a record's
# key error lines indexed with its title, stack frames out of its body (indexing.lexical_index); 4: the
# words of compound identifiers indexed beside them (identifier_words); 5: a record holding text cut
# into bigrams says so (BIGRAM_TEXT).
VERSION = 5

# Kana (without their punctuation `・` `゠`), bopomofo, CJK ideographs (extension A, the BMP block,
# compatibility, extensions B and later), Hangul syllables: kept as written (NFKC composed them).
_CJK = (
    "\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0003134f"
)
# Thai, Lao, Myanmar, Khmer: no spaces between words either, so bigrams too.
_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_RUNS = _CJK + _UNSPACED
_ASCII_WORD = re.compile(r"\w+", re.ASCII)


@functools.cache
def _mixed_token() -> re.Pattern[str]:
    """Group 1: a word (word characters of no bigram script); group 2: a run to cut into bigrams.
    After _Fold no punctuation or mark is left outside ASCII, so the ranges hold letters and digits
    only. Compiled on first use (~3.5 ms, twice the ASCII pattern): English text never needs it."""
    return re.compile(rf"([^\W{_RUNS}]+)|([{_RUNS}]+)")


@functools.cache
def _run_start() -> re.Pattern[str]:
    return re.compile(f"[{_RUNS}]")


def is_bigram(term: str) -> bool:
    """Whether ``term`` was cut from a CJK (or Thai, …) run rather than being a word."""
    return not term.isascii() and _run_start().match(term) is not None


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Letters with a stroke or without a dot have no decomposition to drop an accent from, but are typed
# as the plain letter on an ASCII keyboard just the same (Turkish `bulunamadı`, Polish `błąd`).
_PLAIN = {"ı": "i", "ł": "l", "ø": "o", "đ": "d", "ħ": "h"}
MAX_TERM = 40


class _Fold(dict[int, str]):
    """``str.translate`` table for text outside ASCII, filled on first sight of each character.

    A letter or digit loses its combining marks (``ï`` → ``i``, ``й`` → ``и``); a lone mark is
    dropped (it belongs to the letter before it); anything else (punctuation, symbols, spaces of
    any script) becomes a space. Kana stay as written: NFKC composed them, and decomposing would
    fold ``が`` into ``か`` (Hangul decomposes into letters, not marks, and composes back). Filled
    lazily: building the whole table means looking at 1.1 million code points, and a store meets a
    few hundred of them.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        kind = unicodedata.category(char)[0]
        if kind == "M":
            folded = ""
        elif kind not in "LN":
            folded = " "
        elif 0x3040 <= code < 0x3100:  # kana: the only CJK letters with marks to decompose into
            folded = char
        elif char in _PLAIN:
            folded = _PLAIN[char]
        else:
            bare = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.category(c).startswith("M"))
            folded = unicodedata.normalize("NFC", bare)
        self[code] = folded
        return folded


_FOLD = _Fold()


def _fold_run(match: re.Match[str]) -> str:
    return match.group(0).translate(_FOLD)


def fold(text: str) -> str:
    """``text`` as terms are cut from it: NFKC, case-folded (``ß`` → ``ss``, final ``ς`` → ``σ``, as
    FTS5 folds it), and outside ASCII without marks and punctuation (see _Fold)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():  # the common case (English logs) pays one check
        return folded
    return _NON_ASCII.sub(_fold_run, folded)


def _bigrams(run: str) -> Iterable[str]:
    if len(run) == 1:
        yield run
        return
    for i in range(len(run) - 1):
        yield run[i : i + 2]


def terms(text: str) -> list[str]:
    """Every term of ``text`` in order (with repeats), as indexed and queried."""
    folded = fold(text)
    if folded.isascii():
        return [w for w in (t.strip("_") for t in _ASCII_WORD.findall(folded)) if _kept(w)]
    out: list[str] = []
    for word, run in _mixed_token().findall(folded):
        if word:
            word = word.strip("_")
            if _kept(word):
                out.append(word)
        else:
            out.extend(_bigrams(run))
    return out


def runs(text: str) -> list[str]:
    """The runs of ``text`` that ``terms`` cuts into bigrams (CJK, Thai, …), folded as it folds them."""
    folded = fold(text)
    if folded.isascii():
        return []
    return [run for _, run in _mixed_token().findall(folded) if run]


def _kept(word: str) -> bool:
    return bool(word) and word not in STOPWORDS and len(word) <= MAX_TERM


# Words so common in error text that they say nothing about which error it is. Kept short on
# purpose: IDF weighting does the rest, and a long list would drop real words like `module`.
STOPWORDS = frozenset(
    "a an and are as at be by can for from in into is it no not of on or s t that the this to was were with".split()
)


# Words that occur in almost every error: matching only these is no evidence of the same error.
# With "error" and "warning" in the languages whose messages tests/analysis/test_lexical.py holds (ошибка,
# Fehler, erreur, σφάλμα, hata, …), written as terms() folds them: folding them here at import
# would compile the non-ASCII pattern in every process (the test checks the spelling). Chinese says
# error, reported an error, warning, failed and exception as the two-character words 错误, 报错, 警告,
# 失败 and 异常, each one bigram as terms() cuts it: a Chinese question that shares only `报错` with
# a record (`启动后选择应用报错`, "choosing an app after start-up reports an error") held its whole
# lexical signal when the store knew none of the question's other words, and the bench's set N
# answered two such questions with a note about `pthread_create`.
GENERIC = frozenset(
    """error errors failed fail failure fatal warning line file files found cannot could unable command exit code
    status returned exception traceback recent call last most see run running build make
    ошибка предупреждение fehler warnung erreur avertissement σφαλμα προειδοποιηση hata uyari
    错误 报错 警告 失败 异常""".split()
)


# English function words (pronouns, auxiliaries, conjunctions, the commonest adverbs and
# prepositions: the usual IR list): in a query they weigh nothing. A problem told in words is full of
# them (`I am getting this error when ...`) and a store of logs holds them rarely, so by their IDF
# they would count as rare words, matching whichever record's prose happens to say `I` or `when`.
# Still indexed, and still part of a key line's signature: only a query's lexical weights ignore them
# (tune split: natural-language top-1 110 → 113 of 135).
FUNCTION_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
    hers herself it its itself they them their theirs themselves what which who whom this that these those
    am is are was were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after above below to
    from up down in out on off over under again further then once here there when where why how all any
    both each few more most other some such no nor not only own same so than too very s t can will just
    don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn
    shan shouldn wasn weren won wouldn""".split()
)


def unique_terms(text: str) -> list[str]:
    return list(dict.fromkeys(terms(text)))


# An ASCII identifier made of words: snake_case or SCREAMING_CASE, camelCase or PascalCase (an acronym
# inside too: `HTTPServer`), letters glued to digits (`cuda11`).
_COMPOUND = re.compile(
    r"[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Za-z]*[A-Z]{2}[a-z][A-Za-z0-9]*"
    r"|[A-Za-z]+[0-9][A-Za-z0-9]*",
    re.ASCII,
)
_WORD_JOINS = re.compile(
    r"_+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", re.ASCII
)


def identifier_words(text: str) -> list[str]:
    """The words compound identifiers of ``text`` are spelled with, in order, with repeats
    (``VK_ERROR_INCOMPATIBLE_DRIVER`` and ``ErrorIncompatibleDriver`` → ``error``, ``incompatible``,
    ``driver``), besides the identifiers themselves, which ``terms`` keeps whole: one program prints
    the enum a driver returns, another its name in camel case, and a person writes the words apart.
    Pieces of one character, and stopwords, say nothing."""
    out: list[str] = []
    for match in _COMPOUND.finditer(text):
        pieces = [p for p in _WORD_JOINS.split(match.group(0)) if p]
        if len(pieces) > 1:
            out += [w for w in (p.lower() for p in pieces) if len(w) > 1 and w not in STOPWORDS]
    return out


def index_text(text: str) -> str:
    """``text`` as the full-text index keeps it: its terms, then its identifiers' words (VERSION 4)."""
    return " ".join([*terms(text), *identifier_words(text)])


def match_expression(query_terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so none is read as syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms)


def match_all(query_terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression asking for every one of the terms (the review page's text filter),
    each quoted as in ``match_expression``."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in query_terms)


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
    full: float = 0.0  # the weight of a full match: the query's FULL_MATCH_TERMS heaviest terms
    body: dict[str, float] = field(default_factory=dict)  # a term's body_weight, BODY_WEIGHT when absent
    # A term's other inflections that the store holds (inflection.forms): a record lacking the term
    # and holding one of them matches it at INFLECTION_WEIGHT.
    forms: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        """The mean weight of the query's terms: what a word they do not weigh counts (shapes.py)."""
        return self.total / len(self.weights) if self.weights else 1.0

    @classmethod
    def of(
        cls,
        query_terms: Iterable[str],
        idf_of: dict[str, float],
        optional: frozenset[str] = frozenset(),
        doc_counts: Mapping[str, int] | None = None,
        docs: int = 0,
    ) -> QueryWeights:
        """``doc_counts`` (of ``docs`` records): how many records hold each term, for body_weight."""
        ordered = tuple(dict.fromkeys(query_terms))
        known = [idf_of[t] for t in ordered if idf_of.get(t, 0.0) > 0.0]
        if not known:
            return cls(ordered, {}, 0.0)
        mean = sum(known) / len(known)
        # A CJK bigram no record holds is mostly a cut across two words (`模块安装` → `块安`): it says
        # nothing, and at the mean weight it would push a Chinese query under LEXICAL_FLOOR.
        weights = {t: 0.0 if t in FUNCTION_WORDS else idf_of.get(t) or (mean if t.isascii() else 0.0) for t in ordered}
        if not all(t.isascii() for t in ordered):
            weights = {t: w * BIGRAM_WEIGHT if is_bigram(t) else w for t, w in weights.items()}
        # Optional terms (a Chinese word's English glosses) count when a record holds them, and are
        # no part of a full match: a record lacking one is not the weaker for it.
        ranked = sorted((w for t, w in weights.items() if t not in GENERIC and t not in optional), reverse=True)
        full = sum(ranked[:FULL_MATCH_TERMS]) + FULL_MATCH_REST * sum(ranked[FULL_MATCH_TERMS:])
        counts = doc_counts or {}
        body = {t: body_weight(counts[t], docs) for t in ordered if counts.get(t, 0) > 0}
        return cls(ordered, weights, sum(weights.values()), full, body)


# A term cut from a CJK (or Thai, …) run, as a share of its IDF: overlapping bigrams count each
# character twice (QueryWeights.of). Its IDF is its rarity among the records that hold such text
# (query.py, BIGRAM_TEXT): at 0.5, the weight it had when that IDF was the whole store's, tune split
# (below c20500) zh/mixed top-1 1 145 -> 1 166 of 1 497 but recurring 6 728 -> 6 724 of 7 341 and
# confusions 341 -> 345; at 0.7: 1 159, 6 728, 342; at 1.0: 1 153, 6 729, 341; at 0.35: 1 167, 6 724.
BIGRAM_WEIGHT = 0.7
# The term a record's index holds besides its own when its text holds any run cut into bigrams
# (indexing.lexical_index): how many records hold one is the population a bigram's rarity is taken
# in. ``terms`` strips a leading `_`, so no text, indexed or asked, ever yields it as a word.
BIGRAM_TEXT = "_bigrams"

# Field weights and saturation of ``strength`` (docs/spec.md §4, tuned on the benchmark's tune split).
# A term in the title or a key error line counts 1; in the body BODY_WEIGHT; repeats saturate as in
# BM25 (k1 = SATURATION), scaled so that one title occurrence is a full match of the term: a record
# that is about a word says it more than once (up to 1 + k1 times as much), as BM25's term frequency.
# Capped at one title occurrence, the words of a question (`nbconvert dependency issue`) were held
# alike by every record that named them once (tune split: natural-language top-1 1 070 -> 1 092 of
# 1 310).
BODY_WEIGHT = 0.25
SATURATION = 1.0
# How much a record's length tempers its matches, as BM25's b: a long record holds many words of any
# query by its length alone. Measured against the query's other candidates (relative_length), not the
# whole store: what a long record is depends on which records compete. BM25's usual 0.75 since repeats
# count (a long record also says its words more often); with them, 0.5 -> 0.75 moved the tune split's
# recurring top-1 2 134 -> 2 136, confusions 56 -> 55, natural-language 1 092 -> 1 095.
LENGTH_NORM = 0.75


# A word on this many records or fewer counts in a record's body more than BODY_WEIGHT, up to as
# much as in its title for a word on one record (body_weight): a name that few records hold
# (`TOCropViewController`, a package, a setting) names them wherever they hold it, where the body's
# common words are mostly a log's or a question's filler. Tune split (below c2000): natural-language
# top-1 1 409 -> 1 430 of 1 709, recurring 2 791 -> 2 789 of 2 920, confusions 69 -> 68 (5: 1 421;
# 50 and 150: 1 433, recurring 2 788).
RARE_BODY_DOCS = 20
# A store of few records cannot tell a rare word from one that few records happen to hold (in a store
# of three, every word is on "one record"): rarity counts in full from this many records on, in
# proportion below.
RARE_BODY_STORE = 1000


def body_weight(doc_count: int, total: int) -> float:
    """What one occurrence of a term in a record's body counts against one in its title: BODY_WEIGHT
    for a term on RARE_BODY_DOCS records or more, rising with its IDF to 1.0 for a term on one (in a
    store of RARE_BODY_STORE records or more)."""
    high, low = idf(1, total), idf(RARE_BODY_DOCS, total)
    if doc_count <= 0 or high <= low:
        return BODY_WEIGHT
    rarity = min(1.0, max(0.0, (idf(doc_count, total) - low) / (high - low)))
    return BODY_WEIGHT + (1.0 - BODY_WEIGHT) * rarity * min(1.0, total / RARE_BODY_STORE)


def relative_length(lengths: dict[str, int]) -> dict[str, float]:
    """Each candidate's length (its indexed terms) as a share of the candidates' mean."""
    if not lengths:
        return {}
    mean = sum(lengths.values()) / len(lengths)
    return {h: n / mean if mean else 1.0 for h, n in lengths.items()}


# A query matching this many of its heaviest words (rarest first) in a record's title is a full
# match: a pasted log of sixty words names its error by a few rare ones, and the record holds those.
FULL_MATCH_TERMS = 8
# The query's other words count this much towards a full match: a long log's records differ in how
# many of them they hold, and a cap reached by every look-alike would no longer tell them apart.
FULL_MATCH_REST = 0.25


def strength(
    query: QueryWeights, title: dict[str, int], body: dict[str, int], length: float = 1.0
) -> tuple[float, list[str]]:
    """``evidence`` capped at 1.0: the lexical signal's strength."""
    found, matched = evidence(query, title, body, length)
    return min(1.0, found), matched


def evidence(
    query: QueryWeights, title: dict[str, int], body: dict[str, int], length: float = 1.0
) -> tuple[float, list[str]]:
    """Field-weighted, saturating relevance of a record's terms (``title``: title and key lines,
    ``body``; counts) to the query, 1.0 when it holds the query's heaviest words in its title, more
    when it holds more of the query's words than that (``strength`` caps it; ranking.py still tells
    apart two records past the cap by it). ``length``: the record's length against its fellow
    candidates' (``relative_length``).

    Generic words alone (``error``, ``failed``) are no evidence: then 0. A term matched in another
    form is listed as ``term~form``.
    """
    if not query.full:
        return 0.0, []
    matched: list[str] = []
    score = 0.0
    specific = False
    one = 1.0 / (1.0 + SATURATION)  # a single title occurrence
    k = SATURATION * (1.0 - LENGTH_NORM + LENGTH_NORM * length)
    weights, forms = query.weights, query.forms
    for t in query.terms:
        f = title.get(t, 0) + query.body.get(t, BODY_WEIGHT) * body.get(t, 0)
        share, shown = 1.0, t
        if not f:
            # The record says it in another form (`installing` for the query's `install`): the first
            # one it holds counts, as a part of the word. Most candidates lack most of the query's
            # words: this loop runs for them all, so it makes nothing when there is nothing to try.
            if t not in forms:
                continue
            for form in forms[t]:
                if form in title or form in body:
                    f = title.get(form, 0) + query.body.get(form, BODY_WEIGHT) * body.get(form, 0)
                    share, shown = INFLECTION_WEIGHT, f"{t}~{form}"
                    break
            else:
                continue
        matched.append(shown)
        specific = specific or t not in GENERIC
        score += share * weights[t] * f / (f + k) / one
    if not specific:
        return 0.0, matched
    return score / query.full, matched


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
