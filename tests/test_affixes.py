"""spaCy's affix searches, asking only the pieces that can match: the same matches as the whole pattern."""

from __future__ import annotations

import random
import re

import pytest

from datapipe.languages.affixes import InfixScan, SuffixSearch, top_level_pieces
from datapipe.languages.spacy_words import import_spacy

# languages whose blank spaCy tokenizer needs no extra package, with different affix tables
LANGUAGES = ["en", "de", "el", "id", "ru", "hi", "ar", "ca", "fr"]


def _strings(fixture_texts: list[str], alphabet: str, seed: int) -> list[str]:
    """Real chunks (and their tails and heads, which the affix loop searches) plus random strings over the
    characters the pieces are made of, where pieces meet their lookbehinds and one another."""
    rnd = random.Random(seed)
    chunks = sorted({c for t in fixture_texts[::7] for c in t.split() if not c.isalpha()})[:20_000]
    out = [s for c in chunks for s in (c, c[1:], c[:-1])]
    out += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 7))) for _ in range(30_000)]
    return out


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_pieces_find_what_the_whole_pattern_finds(fixture_texts, lang):
    tok = import_spacy().blank(lang).tokenizer
    suffix, infix = tok.suffix_search.__self__, tok.infix_finditer.__self__
    fast_suffix, fast_infix = SuffixSearch(suffix), InfixScan(infix)
    assert fast_suffix.dispatches  # else this test would compare the pattern with itself
    pieces = top_level_pieces(suffix.pattern) or []
    alphabet = "".join(sorted(set("".join(pieces) + "0123456789aZé.,;:-'") - set("\\$()?<=[]|^")))
    suffix_sets, infix_sets = set(), set()
    for s in _strings(fixture_texts, alphabet, seed=len(lang)):
        want = suffix.search(s)
        got = fast_suffix.search(s)
        assert (want and (want.span(), want.group())) == (got and (got.span(), got.group())), (lang, s)
        if s:
            suffix_sets.add(fast_suffix.pattern_for(s[-1]).pattern)
        assert [m.span() for m in infix.finditer(s)] == [m.span() for m in fast_infix.finditer(s)], (lang, s)
        infix_sets.add(fast_infix.dispatches and fast_infix._starts.isdisjoint(s))
    assert len(suffix_sets) > 20  # the strings reached many reduced patterns, not only the whole one
    assert infix_sets == ({True, False} if fast_infix.dispatches else {False})


def test_a_suffix_piece_is_kept_for_every_character_it_may_end_with():
    pattern = re.compile(r"(?<=[0-9])(?:km|kg|m)$|'s$|[.,]$|x+$|(?:ab|c)d?$")
    fast = SuffixSearch(pattern)
    assert fast.dispatches
    for s in ["10km", "10m", "10kg", "it's", "a.", "b,", "boxx", "ab", "abd", "cd", "c", "z", "10k", ""]:
        want, got = pattern.search(s), fast.search(s)
        assert (want and want.span()) == (got and got.span()), s
    assert fast.pattern_for("z").pattern == "(?:ab|c)d?$"
    assert fast.pattern_for("m").pattern == r"(?<=[0-9])(?:km|kg|m)$|(?:ab|c)d?$"
    assert (
        SuffixSearch(re.compile(r"'s$|[.,]$")).pattern_for("z").pattern == "(?!)"
    )  # no piece: nothing to search
    # an optional last item lets the character before it end the match: that piece is asked for every character
    assert "(?:ab|c)d?$" in fast.pattern_for("b").pattern and "(?:ab|c)d?$" in fast.pattern_for("q").pattern


def test_a_pattern_that_cannot_be_split_or_ignores_case_is_searched_whole():
    assert top_level_pieces(r"[|a]$|\|b$|(c|d)$") == [r"[|a]$", r"\|b$", r"(c|d)$"]
    assert top_level_pieces(r"[]|]x$|y$") == [r"[]|]x$", r"y$"]
    caseless = re.compile(r"a$|b$", re.IGNORECASE)
    assert not SuffixSearch(caseless).dispatches
    assert SuffixSearch(caseless).search("xA") is not None
    # an infix piece that may start with anything (an optional first item): every string gets the whole pattern
    loose = InfixScan(re.compile(r"x?-|\.\.+"))
    assert not loose.dispatches and [m.span() for m in loose.finditer("a-b")] == [(1, 2)]
    tight = InfixScan(re.compile(r"(?<=[a-z])-(?=[a-z])|\.\.+"))
    assert (
        tight.dispatches
        and list(tight.finditer("a_b")) == []
        and [m.span() for m in tight.finditer("a-b")] == [(1, 2)]
    )
