"""Tables kept on disk (``datapipe.kernels.tables``): read back equal to what their builders give, built again when
the file is damaged, and never required (a folder that cannot be written only costs the time)."""

from __future__ import annotations

import numpy as np
import pytest

from datapipe.kernels import tables


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DATAPIPE_TABLES_DIR", str(tmp_path / "tables"))
    return tmp_path / "tables"


def _counting(value):
    calls = []

    def build():
        calls.append(1)
        return {"a": np.asarray(value), "b": tables.text_array({"x": ["é", "\ud800"]})}

    return build, calls


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def test_a_table_is_built_once_and_read_back_equal(folder):
    build, calls = _counting(np.arange(10, dtype=np.int32))
    first = tables.stored("t", {"k": 1}, build)
    again = tables.stored("t", {"k": 1}, build)
    assert len(calls) == 1 and _same(first, again)
    assert tables.array_text(again["b"]) == {"x": ["é", "\ud800"]}
    other = tables.stored("t", {"k": 2}, build)  # another key: another table
    assert len(calls) == 2 and _same(first, other)
    assert len(list(folder.glob("t-*.npz"))) == 2 and not list(folder.glob(".*"))  # no temporary file left


@pytest.mark.parametrize("damage", [b"", b"not a zip", b"PK\x03\x04 cut short"])
def test_a_damaged_file_is_built_again(folder, damage):
    build, calls = _counting([1, 2, 3])
    want = tables.stored("t", "key", build)
    (path,) = folder.glob("t-*.npz")
    path.write_bytes(damage)
    assert _same(tables.stored("t", "key", build), want) and len(calls) == 2
    assert _same(tables.stored("t", "key", build), want) and len(calls) == 2  # and stored whole again


def test_a_lone_array_under_the_name_is_built_again(folder):
    build, calls = _counting([1, 2, 3])
    want = tables.stored("t", "key", build)
    (path,) = folder.glob("t-*.npz")
    with open(path, "wb") as f:
        np.save(f, np.arange(3))
    assert _same(tables.stored("t", "key", build), want) and len(calls) == 2


def test_a_folder_that_cannot_be_written_costs_only_the_time(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DATAPIPE_TABLES_DIR", str(blocker / "tables"))  # under a file: no folder can be made
    build, calls = _counting([5])
    assert tables.stored("t", "key", build)["a"].tolist() == [5]
    assert tables.stored("t", "key", build)["a"].tolist() == [5] and len(calls) == 2


def test_the_default_folder_is_named_for_every_source_file():
    from datapipe.kernels.jit import PACKAGE, sources_digest

    assert tables.tables_dir() == PACKAGE / "__pycache__" / f"tables-{sources_digest()}"


def test_stored_affix_tables_equal_fresh_ones(folder):
    """English's affix program, its suffix and infix pieces and the letters, built into an empty folder and read
    back, against the builders called directly."""
    from datapipe.languages import affix_kernel, affixes
    from datapipe.languages.spacy_words import WordSplitter

    splitter = WordSplitter("en")
    tok = splitter._tokenizer
    built = affix_kernel.AffixProgram(tok, splitter._special, splitter._patterns).arrays
    read = affix_kernel.AffixProgram(tok, splitter._special, splitter._patterns).arrays
    searches = [
        (s.__self__.pattern, int(s.__self__.flags))
        for s in (tok.prefix_search, tok.suffix_search, tok.infix_finditer)
    ]
    direct = affix_kernel._program(searches, splitter._special, splitter._patterns)
    assert len(built) == len(read) == len(direct) == 24
    for i, (a, b) in enumerate(zip(read, built, strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), i
        assert np.array_equal(a, direct[f"a{i:02d}"]), i
    for pattern, last in ((tok.suffix_search.__self__, True), (tok.infix_finditer.__self__, False)):
        first, again = affixes._Pieces(pattern, last), affixes._Pieces(pattern, last)
        want = affixes._split(pattern, last)
        assert want is not None and len(want["pieces"]) > 5
        assert first.pieces == again.pieces == want["pieces"]
        assert first.edges == again.edges == [None if e is None else frozenset(e) for e in want["edges"]]
    letters = affix_kernel.letters.__wrapped__
    assert np.array_equal(letters(), letters()) and letters()[ord("a")] and not letters()[ord("1")]
    assert len(list(folder.glob("*.npz"))) == 4  # program, two pieces, letters: each written once


def test_stored_gpt2_tables_give_the_same_ids(folder, fixture_texts):
    """GPT-2's vocabulary table and classes, stored and read back, against the ones built from the tokenizer; the
    encoder on either gives tiktoken's ids; a tokenizer that is not GPT-2's is stored as such."""
    import regex

    from datapipe.config.stages import TokenizerConfig
    from datapipe.tokenize import fast, pieces
    from datapipe.tokenize.gpt2 import build_gpt2
    from datapipe.tokenize.tokenizer import load_tokenizer

    loaded = load_tokenizer(TokenizerConfig(path="builtin:gpt2"))
    tok, sha = loaded.tokenizer, loaded.identity.sha256
    ranks, literals = fast.gpt2_ranks(build_gpt2(), is_gpt2=True)
    for _ in range(2):  # built, then read
        got = fast._stored_ranks(tok, True, sha)
        assert got is not None
        assert got[0] == ranks and got[1] == literals == ("<|endoftext|>",)
        fresh = pieces.vocabulary_table(ranks).arrays()
        assert all(np.array_equal(got[2].arrays()[k], fresh[k]) for k in fresh)
    classes = pieces.classes.__wrapped__
    assert np.array_equal(classes(), classes()) and np.array_equal(classes(), pieces._classes(regex))
    tiktoken_encoding = fast._encoding(ranks)
    stored_encode, _ = fast.fast_encoder(tok, is_gpt2=True, sha256=sha)
    plain_encode, _ = fast.fast_encoder(tok, is_gpt2=True)
    for text in fixture_texts[:40]:
        want = tiktoken_encoding.encode_ordinary(text)
        assert stored_encode(text).tolist() == plain_encode(text).tolist() == want
    other = load_tokenizer(TokenizerConfig(path="builtin:gpt2"))
    other.tokenizer.add_tokens(["not-gpt2"])  # a vocabulary of another size: not GPT-2's
    for _ in range(2):
        assert fast._stored_ranks(other.tokenizer, False, "another-hash") is None


def test_stored_unicode_tables_of_dedup_and_the_line_filters_equal_fresh_ones(folder):
    from datapipe.filters import refinedweb
    from datapipe.kernels import normalize

    for _ in range(2):  # built, then read
        table, unsafe = normalize._classes.__wrapped__()
        fresh = normalize._build_classes()
        assert np.array_equal(table, fresh["table"]) and unsafe.pattern == tables.array_text(fresh["unsafe"])
        assert np.array_equal(refinedweb._char_table.__wrapped__(), refinedweb._build_char_table())
    assert len(list(folder.glob("*.npz"))) == 2


def test_the_bundled_tokenizer_is_built_only_when_asked_for(folder):
    """GPT-2's identity comes from the disk once stored (the same as from the built tokenizer); encoding ordinary
    text on the stored tables never builds the tokenizer; a text holding the added token's literal does, and gets
    its id; a wrong pin is refused whether or not the identity is stored."""
    from datapipe.config.stages import TokenizerConfig
    from datapipe.errors import DatapipeError
    from datapipe.tokenize.gpt2 import build_gpt2
    from datapipe.tokenize.tokenizer import _identity, load_tokenizer

    cfg = TokenizerConfig(path="builtin:gpt2", add_bos=True)
    for stored_before in (False, True):
        loaded = load_tokenizer(cfg)
        assert loaded.identity == _identity(cfg, build_gpt2())
        assert loaded.encode_batch(["Hello world"]) == [[50256, 15496, 995, 50256]]
        assert ("tokenizer" in loaded.__dict__) is not stored_before  # built only to store the tables
    assert loaded.encode_batch(["a<|endoftext|>b"]) == [[50256, 64, 50256, 65, 50256]]
    assert "tokenizer" in loaded.__dict__
    pinned = TokenizerConfig(path="builtin:gpt2", sha256="0" * 64)
    for _ in range(2):
        with pytest.raises(DatapipeError, match="does not match tokenizer.sha256"):
            load_tokenizer(pinned)
