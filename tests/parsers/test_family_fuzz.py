"""Every family's parser and the ANSI stripper on arbitrary and mutated text.

A parser may refuse text (an empty list, or one of the errors the scanner counts as a
parse error), never anything else; the stripper leaves no escape or control character
whatever it is given, and cleaning twice changes nothing.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from pdwatch.parsers.cleaning import clean_line, clean_raw
from pdwatch.parsers.families import FAMILIES
from pdwatch.parsers.scanner import _PARSE_ERRORS

_FAMILY = st.sampled_from(FAMILIES)


@st.composite
def _family_and_text(draw):
    family = draw(_FAMILY)
    if family.samples and draw(st.booleans()):
        text = list(draw(st.sampled_from(family.samples)).message)
        for _ in range(draw(st.integers(0, 5))):
            if not text:
                break
            pos = draw(st.integers(0, len(text) - 1))
            text[pos:pos + draw(st.integers(0, 6))] = draw(st.text(max_size=6))
        return family, "".join(text)
    needle = draw(st.sampled_from(family.needles)).decode()
    return family, draw(st.text(max_size=80)) + needle + draw(st.text(max_size=200))


@settings(max_examples=1500, deadline=None)
@given(_family_and_text())
def test_every_parser_returns_events_or_a_tolerated_error(case):
    family, text = case
    try:
        parsed = family.parse(text)
    except _PARSE_ERRORS:
        return
    assert isinstance(parsed, list)
    for kind, values in parsed:
        assert isinstance(kind, str) and isinstance(values, dict)


_CONTROL = {chr(c) for c in range(32) if c != 9} | {chr(127)} | {chr(c) for c in range(0x80, 0xA0)}


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
       | st.lists(st.sampled_from(["\x1b[", "\x1b]52;c;", "\x07", "\x1b\\", "m", "31", ";", "\r", "\x9b", "A",
                                   "\x1bP", "\x00", "x", " ", "[bold]", "\x1b]0;title"]), max_size=40).map("".join))
def test_ansi_stripper_leaves_no_escape_and_is_idempotent(text):
    cleaned = clean_line(text)
    assert not (set(cleaned) & _CONTROL)
    assert clean_line(cleaned) == cleaned


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_raw_bytes_clean_to_printable_text(raw):
    cleaned = clean_raw(raw.replace(b"\n", b" "))
    assert not (set(cleaned) & _CONTROL)
