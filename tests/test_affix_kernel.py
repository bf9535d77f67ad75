"""English's affix tier compiled (``datapipe.languages.affix_kernel``) and the words it numbers in compiled code
(``datapipe.languages.chunk_ids``): the Python tier's tokens, or a decline, for every chunk."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

from datapipe.kernels.utf8 import TABLE_END
from datapipe.languages.affix_kernel import AffixProgram
from datapipe.languages.chunk_ids import MAX_CHUNK_BYTES, ChunkIds
from datapipe.languages.spacy_words import WordSplitter


@functools.cache
def _english() -> tuple[WordSplitter, AffixProgram]:
    splitter = WordSplitter("en")
    program = splitter._compiled_tiers()
    assert program is not None  # English's patterns compile: else nothing below would test the compiled tier
    return splitter, program


def _same_or_declined(chunks: list[str]) -> int:
    """Each chunk's compiled tokens are the Python tier's; a chunk is declined only where the Python tier leaves
    it to spaCy or it holds a character past the tables. Returns how many were declined."""
    splitter, program = _english()
    declined = 0
    for chunk, got in zip(chunks, program.split(chunks), strict=True):
        want = splitter._affix_split(chunk)
        if got is None:
            declined += 1
            assert want is None or max(map(ord, chunk)) >= TABLE_END, chunk
        else:
            assert got == want, chunk
    return declined


def test_every_fixture_chunk_and_its_ends_split_as_the_python_tier_splits_them(fixture_texts):
    chunks = sorted({c for t in fixture_texts for c in t.split() if not c.isalpha()})
    chunks += [s for c in chunks[::3] for s in (c[1:], c[:-1]) if s]
    declined = _same_or_declined(chunks)
    assert len(chunks) > 20_000 and declined < 0.05 * len(chunks)  # the compiled tier takes nearly all


def test_generated_chunks_over_the_patterns_characters_split_as_the_python_tier_splits_them():
    rnd = random.Random(7)
    alphabet = list("aZe9.,;:!?()[]{}-–—_'\"‘’“”$€£%&/\\+*=<>#@°…") + ["é", "ß", "\u0301", "km", "n't", "'s"]
    chunks = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 8))) for _ in range(40_000)]
    _same_or_declined(chunks)


def test_every_code_point_alone_and_between_letters_and_punctuation():
    points = [chr(c) for c in range(0x20, TABLE_END) if not chr(c).isspace() and not 0xD800 <= c < 0xE000]
    _same_or_declined(points + [f"a{c}," for c in points[::3]] + [f"({c}1" for c in points[1::3]])


def test_a_text_of_declined_and_compiled_chunks_keeps_its_words_in_order_with_their_arrays():
    """Chunks the compiled tiers decline (special cases, a character past the tables, a chunk over the scratch
    size) and chunks whose middle the URL pattern decides, between chunks they take: the words of ``split``, and
    each word's length, code points and letter test as Python's."""
    splitter, program = _english()
    memo = ChunkIds(splitter.words_of, 1_000_000, program=program)
    long = "x" * (MAX_CHUNK_BYTES + 5) + ","
    parts = ["(Hello", "e.g.", "world),", ":)", "U.S.", "www.example.com,", "3.5%", "end.Next", "\U0002a6b0x,",
             "\U0001f600", "dont", long, "well-known", "it's", "10km", "\U0002a6b0", "𝔸."]  # fmt: skip
    text = " ".join(parts * 3)
    ids, table = memo.split(text)
    words = table.texts(ids)
    assert words == splitter.split(text)
    assert table.lengths[ids].tolist() == [len(w) for w in words]
    assert table.alpha[ids].tolist() == [any(ch.isalpha() for ch in w) for w in words]
    codes = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32)
    assert (
        np.concatenate([table.codes[table.starts[i] : table.starts[i + 1]] for i in ids]).tolist()
        == codes.tolist()
    )
    assert sorted(table.texts(np.array(table.lookup({"world", "e.g.", "nowhere"})))) == ["e.g.", "world"]
    assert table.lookup({"nowhere"}) == []
    table.runs([["nowhere"]])
    assert table.texts(np.array(table.lookup({"nowhere"}))) == ["nowhere"]  # a word not found is asked again


def test_the_table_of_words_grows_in_the_middle_of_the_compiled_pass():
    splitter, program = _english()
    memo = ChunkIds(splitter.words_of, 1_000_000, program=program)
    before = len(memo.table.lengths)
    many = " ".join(f"w{i}, ({i}x)" for i in range(30_000))  # 60,000 new chunks, 150,000 words
    ids, table = memo.split(many)
    assert table.texts(ids) == splitter.split(many) and len(table.lengths) > before


def test_a_failure_in_the_python_tiers_leaves_no_chunk_without_its_words():
    splitter, program = _english()
    calls = []

    def words_of(chunks):
        calls.append(chunks)
        if "e.g." in chunks:
            raise RuntimeError("boom")
        return splitter.words_of(chunks)

    memo = ChunkIds(words_of, 1_000_000, program=program)
    with pytest.raises(RuntimeError):
        memo.split("one two, e.g. three")
    ids, table = memo.split("one two, three e.g")
    assert table.texts(ids) == ["one", "two", ",", "three", "e.g"]
    assert not {"one", "two,", "three"}.intersection(c for call in calls for c in call)  # compiled, not asked


def test_may_be_url_is_true_wherever_spacys_url_pattern_matches():
    """The test that spares ``re`` most middles holding a dot never says no where spaCy's URL pattern matches:
    generated hosts, labels, top-level domains (lower and upper case, digits, ``ALPHA_LOWER`` past U+FFFF), IP
    addresses, ports, paths, schemes and users, every code point as a domain's letter, and the fixture's chunks."""
    from spacy.lang.tokenizer_exceptions import URL_MATCH

    from datapipe.languages.affix_kernel import ASK_PLAUSIBLE_URL, may_be_url

    _, program = _english()
    assert program.url_ask == ASK_PLAUSIBLE_URL  # spaCy's URL pattern is the one the test was written for

    def check(strings: list[str]) -> int:
        said_no = 0
        for s in strings:
            codes = np.array([ord(c) for c in s], dtype=np.int64)
            if max(codes, default=0) >= TABLE_END:
                continue
            maybe = may_be_url(codes, 0, len(codes))
            if URL_MATCH(s) is not None:
                assert maybe, s
            said_no += not maybe
        return said_no

    rnd = random.Random(11)
    parts = [
        "a",
        "Z",
        "9",
        "é",
        "ß",
        "ё",
        "α",
        "\U0001ee00",
        "\U0001f200",
        "-",
        "_",
        ".",
        "..",
        ":",
        "/",
        "?",
        "#",
    ]
    parts += [
        "@",
        "://",
        "com",
        "org",
        "Com",
        "de",
        "py",
        "x",
        "10",
        "192",
        "168",
        "1",
        "255",
        "256",
        "0",
        "8080",
    ]
    parts += [
        "(",
        ")",
        "'",
        '"',
        "$",
        "%",
        "~",
        "\u00a0",
        "\u00a1",
        "\uffff",
        "\U00010000",
        "www",
        "http",
        "A-b",
    ]
    generated = ["".join(rnd.choice(parts) for _ in range(rnd.randint(1, 9))) for _ in range(60_000)]
    generated += [f"{h}{t}{p}" for h in ("a.", "a.b.", "1.2.3.", "x-y.", "é.", "a..") for t in (
        "co", "c", "Co", "c1", "c_", "c-", "cé", "éé", "\U0001ee00\U0001ee00", "4", "44", "c\U0001f200",
    ) for p in ("", ":80", ":8", "/x", "?q", "#f", ".", "(", ":")]  # fmt: skip
    points = [chr(c) for c in range(0x21, TABLE_END) if not chr(c).isspace() and not 0xD800 <= c < 0xE000]
    generated += (
        [f"a.{c}{c}" for c in points] + [f"{c}.de" for c in points[::2]] + [f"x.y{c}" for c in points[1::2]]
    )
    generated += ["192.168.0.1", "10.0.0.1", "172.16.0.1", "8.8.8.8", "1.2.3.4:80/x", "user@host", "ftp://a"]
    said_no = check(generated)
    assert said_no > 40_000  # and says no to many


def test_may_be_url_on_the_fixture_chunks(fixture_texts):
    from spacy.lang.tokenizer_exceptions import URL_MATCH

    from datapipe.languages.affix_kernel import may_be_url

    chunks = sorted({c for t in fixture_texts for c in t.split() if "." in c})
    chunks += [c.strip("()[]{}\"'.,;:!?") for c in chunks]
    for s in chunks:
        codes = np.array([ord(c) for c in s], dtype=np.int64)
        if len(codes) and max(codes) < TABLE_END and URL_MATCH(s) is not None:
            assert may_be_url(codes, 0, len(codes)), s
