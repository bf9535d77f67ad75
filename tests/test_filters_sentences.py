"""C4's sentence count from the kept lines' words (datapipe.filters.sentences) against spaCy's own sentencizer, which
datatrove's C4 rule runs: on the fixture documents' lines and on generated lines of punctuation, abbreviations and
every kind of white space; and the FineWeb English chain against datatrove's steps on texts of those lines."""

from __future__ import annotations

import random

import pytest
import spacy
from datatrove.data import Document
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)

from datapipe import FilterDoc, build_chain
from datapipe.filters.c4 import CITATION, C4Quality
from datapipe.filters.sentences import count_lines
from datapipe.languages.spacy_words import splitter


@pytest.fixture(scope="module")
def nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def spacy_count(nlp, line: str) -> int:
    """datatrove's ``len(split_into_sentences(line))``: every sentence the sentencizer makes."""
    nlp.max_length = len(line) + 10
    return len(list(nlp(line).sents))


def ours(lines: list[str]) -> int:
    got = splitter("en").split_ids("\n".join(lines))
    assert got is not None
    return count_lines(lines, *got)


WORDS = [
    "the", "cat", "Dr.", "e.g.", "U.S.", "3.14", "10km", "can't", "dont", ":)", "(see", "it)", "http://x.org/a.b",
    "Mr", "ok", "a", "I", "$5", "50%", "«quote»", "“so”", "wait...", "what?!", "yes.", "no!", "why?", "end.",
    ".", "!", "?", "...", "…", "。", "！", "‼", "?!", "-", "--", "—", ",", ";", ":", '"', "'", ")", "(", "[1]",
    "[edit]", "[citation needed]", "x.y", "!!!", "a.b.c.", "«", "»", "¡", "¿", "٫", "।", "։",
]  # fmt: skip
SPACES = [" "] * 12 + ["  ", "\t", "\u00a0", "\u3000", " \t", "\u2009", "   ", "\x0b ", " \u00a0"]


def generated_lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        k = rng.randint(1, 14)
        parts = [rng.choice(WORDS) for _ in range(k)]
        line = "".join(p + rng.choice(SPACES) for p in parts[:-1]) + parts[-1]
        if rng.random() < 0.15:
            line = rng.choice(SPACES) + line
        if rng.random() < 0.15:
            line += rng.choice(SPACES)
        lines.append(line)
    return lines


def test_generated_lines_count_as_spacy_counts(nlp):
    """White space of every kind, at the ends and inside (spaCy makes a token of it there, which starts a sentence
    after a period), punctuation tokens, abbreviations; each line alone, and 2,000 together."""
    lines = generated_lines(0, 2000)
    for line in lines:
        assert ours([line]) == spacy_count(nlp, line), repr(line)
    assert ours(lines) == sum(spacy_count(nlp, line) for line in lines)


def test_white_space_tokens(nlp):
    """The cases by hand: two spaces after a period make a token that starts a sentence; one space does not; a
    trailing plain space does not, two do; a leading one always does."""
    cases = {
        "One two. three": 2,
        "One two.  three": 2,
        "One two.  .": 2,
        "One two. .": 1,
        "One two. ": 1,
        "One two.  ": 2,
        "One two.\t": 2,
        " . One two": 2,
        " One two three": 1,
    }
    for line, n in cases.items():
        assert spacy_count(nlp, line) == n, repr(line)
        assert ours([line]) == n, repr(line)


def test_fixture_lines_count_as_spacy_counts(nlp, fixture_texts):
    """Every line C4 would count (stripped, citations removed, three words or more) of every fifth fixture text,
    one text's lines at a time."""
    checked = 0
    for text in fixture_texts[::5]:
        lines = [CITATION.sub("", s.strip()) for s in text.splitlines()]
        lines = [s for s, raw in zip(lines, text.splitlines(), strict=True) if len(raw.split()) >= 3]
        if lines:
            assert ours(lines) == sum(spacy_count(nlp, s) for s in lines)
            checked += len(lines)
    assert checked > 5000


DATATROVE_FINEWEB = (
    GopherRepetitionFilter,
    GopherQualityFilter,
    lambda: C4QualityFilter(filter_no_terminal_punct=False),
    FineWebQualityFilter,
)


def datatrove_chain(text: str) -> tuple[str | None, str]:
    doc = Document(text=text, id="x")
    for make in DATATROVE_FINEWEB:
        got = make().filter(doc)
        if got is not True:
            return got[1], doc.text
    return None, doc.text


@pytest.mark.parametrize("punct", [True, False])
def test_c4_on_generated_texts(punct):
    """C4's rule, with and without its terminal-punctuation line rule, on texts of generated lines: the same
    decisions and the same rewritten text as datatrove's."""
    rng = random.Random(1)
    lines = generated_lines(2, 3000)
    for _ in range(150):
        text = "\n".join(rng.sample(lines, rng.randint(1, 30)))
        doc = Document(text=text, id="x")
        got = C4QualityFilter(filter_no_terminal_punct=punct).filter(doc)
        expected = None if got is True else got[1]
        mine = FilterDoc(text)
        assert C4Quality(filter_no_terminal_punct=punct)(mine) == expected, text
        if expected is None:
            assert mine.text == doc.text


def test_fineweb_english_chain_on_fixture_texts(fixture_texts):
    """The ``fineweb_english`` preset against datatrove's four steps as FineWeb's pipeline runs them: every tenth
    fixture text (benchmarks/extract.py compares all of them)."""
    chain = build_chain("fineweb_english")
    reasons = set()
    for text in fixture_texts[::10]:
        doc = FilterDoc(text)
        mine = chain.apply(doc)
        expected, expected_text = datatrove_chain(text)
        assert mine == expected, text[:300]
        if mine is None:
            assert doc.text == expected_text
        reasons.add(mine)
    assert None in reasons and len(reasons) >= 5


def test_the_kept_text_keeps_its_words():
    """C4 hands the kept lines' words to the next rule (FineWeb quality counts them): the same words as a split of
    the rewritten text."""
    text = "\n".join(
        [
            "The first line is here.  It has two sentences [1].",
            "Second line, with\ttabs and  spaces. Yes!",
            "short.",
            "Third line of the text, e.g. this one. And more.",
        ]
    )
    doc = FilterDoc(text)
    assert C4Quality(filter_no_terminal_punct=False)(doc) is None
    assert doc.words == FilterDoc(doc.text).words


@pytest.mark.parametrize(
    "line",
    [
        "Lor[2]em ipsum dolor sit amet, yes.",
        "This page uses Java[edit]Script for its menus.",
        "This site uses [1]cookies to count its readers.",
        "Some text with { a curly bracket } in it.",
        "LOREM IPSUM is placeholder text for layouts.",
        "Read our PRIVACY Policy before you go on.",
        "İt uses javascrİpt in a Turkish spelling here.",
    ],
)
def test_c4_phrases_as_datatrove_finds_them(line):
    """The phrases C4 looks for, found in the lowered text first: also where removing a citation joins one, in
    capitals and next to characters whose lowercase is longer; the same decision and text as datatrove."""
    body = "\n".join(f"Sentence number {i} of this page is here." for i in range(6))
    for punct in (True, False):
        text = f"{body}\n{line}\n{body}"
        doc = Document(text=text, id="x")
        got = C4QualityFilter(filter_no_terminal_punct=punct).filter(doc)
        mine = FilterDoc(text)
        assert C4Quality(filter_no_terminal_punct=punct)(mine) == (None if got is True else got[1])
        assert got is not True or mine.text == doc.text
