"""toml_flat reads the flat settings files without tomllib, and gives what tomllib gives or nothing."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jiyi import toml_flat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def _tomllib(text: str) -> object:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "error"


FLAT = [
    "",
    "\n\n",
    "notes = false\nread_budget = 100\nlocale = 'en'\n",
    '# settings\n[jiyi]\nnotes = true # on\nteam_url = "https://jiyi.example.com"\n',
    "read_budget=-0\r\nsession_id='a\"b'\r\n",
    'home = "~/记忆"\t# a folder\n',
    "a = 1\n[ jiyi ]\nb = +7\n",
    "[jiyi]\njiyi = 'inner'\n",
]
BEYOND = [
    "x = 1_000\n",  # underscores
    "x = 1.5\n",
    "x = 0x10\n",
    'x = "a\\tb"\n',  # an escape
    "x = [1]\n",
    "x = 1979-05-27\n",
    "a.b = 1\n",
    '"quoted" = 1\n',
    "[other]\nx = 1\n",
    "[jiyi]\n[jiyi]\n",
    "jiyi = 1\n[jiyi]\n",
    "x = 1\nx = 2\n",
    "x = 'a\rb'\n",
    "x = 1 y\n",
    "\ufeffx = 1\n",
    "x = 'a\x7f'\n",
    "\r",  # a CR not before an LF (hypothesis found it: tomllib refuses it)
    "x = 1\r",
]


@pytest.mark.parametrize("text", FLAT)
def test_flat_files_read_as_tomllib_reads_them(text: str) -> None:
    assert toml_flat.parse(text) == tomllib.loads(text)


@pytest.mark.parametrize("text", BEYOND)
def test_anything_else_is_left_to_tomllib(text: str) -> None:
    assert toml_flat.parse(text) is None


_KEYS = st.sampled_from(["notes", "read_budget", "locale", "home", "jiyi", "a-b_1", "x y", '"q"', "a.b", "true"])
_VALUES = st.one_of(
    st.sampled_from(["true", "false", "True", "0", "-0", "+12", "007", "1_0", "1.0", "'x'", '"x"', "[]", '"a\\"b"']),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(max_size=12).map(lambda t: f'"{t}"'),
    st.text(max_size=12).map(lambda t: f"'{t}'"),
)
_LINES = st.one_of(
    st.tuples(
        _KEYS, st.sampled_from(["=", " = ", "\t=\t", "=="]), _VALUES, st.sampled_from(["", " # c", "#", " x"])
    ).map("".join),
    st.sampled_from(["[jiyi]", "[ jiyi ]", "[other]", "# comment", "", "   ", "\t# ü", "[jiyi] # t"]),
    st.text(max_size=16),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_generated_files_read_as_tomllib_reads_them_or_not_at_all(lines: list[str], end: str) -> None:
    text = end.join(lines)
    flat = toml_flat.parse(text)
    assert flat is None or flat == _tomllib(text), (text, flat)


_FLAT_LINES = st.one_of(
    st.tuples(
        st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True),
        st.sampled_from(["=", " = "]),
        st.one_of(
            st.sampled_from(["true", "false"]),
            st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
            st.text(st.characters(blacklist_characters='"\\', blacklist_categories=("Cc", "Cs")), max_size=10).map(
                lambda t: f'"{t}"'
            ),
        ),
    ).map("".join),
    st.just("# a comment"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FLAT_LINES, max_size=8, unique_by=lambda line: line.split("=")[0].strip()), st.booleans())
def test_generated_flat_files_are_read_without_tomllib(lines: list[str], in_table: bool) -> None:
    text = "\n".join((["[jiyi]"] if in_table else []) + lines) + "\n"
    assert toml_flat.parse(text) == tomllib.loads(text), text
