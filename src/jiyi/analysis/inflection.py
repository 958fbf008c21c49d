"""The other English inflections of a query's words, for the ``lexical`` signal.

A question says `installing` where its record says `install`, `crashes` where it says `crashed`.
The index keeps words as written (lexical.py: no stemming, so that its terms are exactly FTS5's and
a key line's words stay exact), so the query side asks the store which of a word's other forms it
holds, and a record holding one of them matches the word at INFLECTION_WEIGHT (lexical.evidence).

The forms are made by the regular rules of English inflection (plural and third person `-s`/`-es`/
`-ies`, past `-ed`/`-ied`, participle `-ing`, a silent `e`, a doubled consonant), not a dictionary:
a form the store does not hold is dropped there, and one that happens to be another word
(`windows` → `window`) counts at a share of the word's weight, as a CJK bigram does. A stemmer
(Snowball's English) as a filter on the forms made no difference on the benchmark (below c3800:
natural-language top-1 2 282 -> 2 280 of 2 783), so none is used.
"""

from __future__ import annotations

import functools
import re

# A form matches the query's word at this share of its weight. Below c3800 (4 769 recurring, 2 783
# natural-language, 888 zh/mixed queries; recurring / NL / zh top-1, look-alike confusions): without
# forms 4 513 / 2 257 / 658 / 121; at 0.3 4 513 / 2 274 / 657 / 121; 0.5 4 512 / 2 282 / 657 / 122;
# 0.8 4 509 / 2 267 / 659 / 123; 1.0 4 508 / 2 255 / 657 / 124: a form is weaker evidence than the
# word, as `windows` is not `window`.
INFLECTION_WEIGHT = 0.5
# Lower-case ASCII letters only, four or more: `go`, `npm`, `v8` and identifiers have no inflections.
_INFLECTABLE = re.compile(r"[a-z]{4,}")
_MIN_STEM = 3
_SIBILANT = ("s", "x", "z", "ch", "sh")
# A short stem ending consonant, vowel, consonant doubles its last letter (`map` -> `mapped`).
_DOUBLES = re.compile(r"[^aeiou][aeiou][^aeiouwxy]")


def _stems(word: str) -> set[str]:
    """``word`` and what it may be an inflection of (`caches` -> `cache`, `cach`; `copied` -> `copy`):
    the word itself stays one too (`string`, `status` and `embedded` are words of their own)."""
    stems = {word}
    if word.endswith("ies"):
        stems.add(word[:-3] + "y")
    elif word.endswith("es"):
        stems |= {word[:-2], word[:-1]}
    elif word.endswith("s") and not word.endswith("ss"):
        stems.add(word[:-1])
    for suffix in ("ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= _MIN_STEM:
            stems |= {stem, stem + "e"}  # `failed` -> `fail`; `parsed` -> `parse`
            if len(stem) > _MIN_STEM and stem[-1] == stem[-2]:
                stems.add(stem[:-1])  # `mapped` -> `map`
            if suffix == "ed" and stem.endswith("i"):
                stems.add(stem[:-1] + "y")  # `copied` -> `copy`
    return {s for s in stems if len(s) >= _MIN_STEM}


def _inflected(stem: str) -> list[str]:
    """The regular forms of ``stem`` taken as a word, spelled by English rules."""
    if stem.endswith("e"):
        return [stem, stem + "s", stem + "d", stem[:-1] + "ing"]
    if stem.endswith("y") and stem[-2:-1] not in ("a", "e", "o", "u"):
        return [stem, stem[:-1] + "ies", stem[:-1] + "ied", stem + "ing"]
    if stem.endswith(_SIBILANT):
        return [stem, stem + "es", stem + "ed", stem + "ing"]
    made = [stem, stem + "s", stem + "ed", stem + "ing"]
    if _DOUBLES.search(stem[-3:]) and len(stem) <= 6:
        made += [stem + stem[-1] + "ed", stem + stem[-1] + "ing"]
    return made


@functools.lru_cache(maxsize=4096)
def _made(word: str) -> tuple[str, ...]:
    stems = _stems(word)
    made = [f for stem in sorted(stems - {word}) for f in _inflected(stem)]
    # A word that looks inflected may be a word of its own (`string`, `status`): its plural only.
    made += _inflected(word) if len(stems) == 1 else [_inflected(word)[1]]
    return tuple(f for f in dict.fromkeys(made) if f != word)


def forms(word: str) -> tuple[str, ...]:
    """The other inflections of ``word`` (``installing`` -> ``install``, ``installs``, ``installed``,
    …): forms a store may hold of the same word, to be looked up there. None for a word that is not
    plain lower-case letters, or shorter than four."""
    # Cached: a store's queries say the same words again and again.
    return _made(word) if _INFLECTABLE.fullmatch(word) else ()
