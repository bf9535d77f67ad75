"""The bundled GPT-2 tokenizer, built offline from OpenAI's encoder.json / vocab.bpe."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe import DatapipeError, TokenizerConfig, load_tokenizer
from datapipe.tokenize.tokenizer import build_gpt2
from tests.conftest import REPO


def test_hello_world_is_gpt2():
    assert build_gpt2().encode("Hello world").ids == [15496, 995]


def test_identity_and_eos():
    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_bos=False, add_eos=True))
    ident = tok.identity
    assert ident.vocab_size == 50257 and ident.eos_id == 50256
    assert len(ident.sha256) == 64
    assert tok.encode_batch(["Hello world", ""]) == [[15496, 995, 50256], [50256]]
    text = "naïve café — ünïcode 😀\n\tindented"
    assert tok.decode(tok.encode_batch([text])[0][:-1]) == text
    # stable across loads
    assert load_tokenizer(TokenizerConfig("builtin:gpt2")).identity == ident


def test_load_from_tokenizer_json_path(tmp_path):
    (tmp_path / "tokenizer.json").write_text(build_gpt2().to_str())
    by_dir = load_tokenizer(TokenizerConfig(str(tmp_path)))
    by_file = load_tokenizer(TokenizerConfig(str(tmp_path / "tokenizer.json")))
    builtin = load_tokenizer(TokenizerConfig("builtin:gpt2"))
    assert by_dir.identity.sha256 == by_file.identity.sha256 == builtin.identity.sha256
    assert by_file.encode_batch(["Hello world"]) == [[15496, 995, 50256]]


def test_missing_tokenizer_and_bos_errors(tmp_path):
    with pytest.raises(DatapipeError, match="no tokenizer file"):
        load_tokenizer(TokenizerConfig(str(tmp_path / "nope")))
    with pytest.raises(DatapipeError, match="unknown bundled tokenizer"):
        load_tokenizer(TokenizerConfig("builtin:llama3"))


def test_long_text_in_pieces_equals_whole(fixture_texts):
    from datapipe.tokenize.tokenizer import split_long

    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=True))
    text = "\n\n".join(fixture_texts[:400])  # several MB of real, varied text: prose, code, many languages
    assert len(text) > 1_200_000
    pieces = split_long(text, piece=50_000)
    assert len(pieces) > 20 and "".join(pieces) == text
    whole = tok.tokenizer.encode(text, add_special_tokens=False).ids + [tok.identity.eos_id]
    assert tok.encode_arrays([text])[0].tolist() == whole


def test_hub_tokenizer_without_network_is_one_line_in_seconds(tmp_path):
    """An ``hf:`` tokenizer the hub cannot serve (an unreachable endpoint, nothing cached): one line within seconds
    saying to give a local tokenizer.json, not the hub client's ~25 s of retries."""
    env = {**os.environ, "HF_ENDPOINT": "https://hub.invalid", "HF_HOME": str(tmp_path / "hf")}
    code = (
        "from datapipe.config.stages import TokenizerConfig\n"
        "from datapipe.errors import DatapipeError\n"
        "from datapipe.tokenize.tokenizer import load_tokenizer\n"
        "try:\n    load_tokenizer(TokenizerConfig(path='hf:openai-community/gpt2'))\n"
        "except DatapipeError as e:\n    print(e)\n"
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert time.monotonic() - t0 < 15, "waited on retries"
    (line,) = proc.stdout.strip().splitlines()
    assert line.startswith("hf:openai-community/gpt2: the Hugging Face hub (hub.invalid) cannot be reached (")
    assert line.endswith("give the path of a local tokenizer.json as tokenizer.path")


def _hf_ids(tok, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tok.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def test_gpt2_through_tiktoken_gives_tokenizers_ids(fixture_texts):
    """GPT-2 is encoded by tiktoken (datapipe/tokenize/fast.py); its ids must be tokenizers' on every vocabulary
    entry, on runs of random entries and on every fixture text (prose, code and many languages)."""
    import random

    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=False))
    assert tok.fast is not None
    vocab = tok.tokenizer.decode_batch([[i] for i in range(50256)])
    rng = random.Random(0)
    runs = ["".join(rng.choices(vocab, k=rng.randint(2, 40))) for _ in range(20_000)]
    texts = [*vocab, *(" " + v for v in vocab), *runs, *fixture_texts]
    got = [a.tolist() for a in tok.encode_arrays(texts)]
    want = _hf_ids(tok, texts)
    assert [t for t, g, w in zip(texts, got, want, strict=True) if g != w] == []


def test_an_added_token_literal_is_its_id_on_both_paths():
    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=False))
    text = "one<|endoftext|>two"
    assert tok.encode_batch([text]) == _hf_ids(tok, [text]) and 50256 in tok.encode_batch([text])[0]


def test_only_gpt2_itself_takes_the_fast_path(tmp_path):
    """A tokenizer that differs from GPT-2 in anything that decides ids (here one merge fewer) is encoded by
    tokenizers alone; the same tokenizer.json given by path takes the fast path."""
    import json

    from datapipe.tokenize.fast import fast_encoder

    data = json.loads(build_gpt2().to_str())
    (tmp_path / "same.json").write_text(json.dumps(data))
    data["model"]["merges"] = data["model"]["merges"][:-1]
    (tmp_path / "other.json").write_text(json.dumps(data))
    assert load_tokenizer(TokenizerConfig(str(tmp_path / "same.json"))).fast is not None
    other = load_tokenizer(TokenizerConfig(str(tmp_path / "other.json")))
    assert other.fast is None and fast_encoder(other.tokenizer) is None


def test_the_stage_shares_a_bundled_tokenizer_and_rereads_a_file(tmp_path):
    """A worker's DoFns share the bundled tokenizer (the one that finishes the stage needs it again); a tokenizer
    file is read again each time, so an edited file is never served from memory."""
    from datapipe.tokenize.stage import TokenizeStage

    def stage(cfg: TokenizerConfig) -> TokenizeStage:
        return TokenizeStage("s", cfg, str(tmp_path), str(tmp_path / "out"))

    bundled = TokenizerConfig(path="builtin:gpt2")
    assert stage(bundled).tokenizer is stage(bundled).tokenizer
    path = tmp_path / "tok.json"
    path.write_text(build_gpt2().to_str())
    first = stage(TokenizerConfig(path=str(path))).tokenizer
    tok = build_gpt2()
    tok.add_special_tokens(["<|pad|>"])
    path.write_text(tok.to_str())
    second = stage(TokenizerConfig(path=str(path))).tokenizer
    assert second.identity.sha256 != first.identity.sha256 and second.identity.vocab_size == 50258


# -- GPT-2's split in compiled code (datapipe/tokenize/pieces.py) against tiktoken's own ---------------------------
@pytest.fixture(scope="module")
def gpt2_pieces():
    from datapipe.tokenize.fast import gpt2_tiktoken
    from datapipe.tokenize.pieces import PieceEncoder

    enc, ranks, _ = gpt2_tiktoken(build_gpt2(), is_gpt2=True)
    return enc, PieceEncoder(enc._core_bpe, ranks)


def same_as_tiktoken(enc, pieces, text: str) -> bool:
    """Whether the compiled split gives tiktoken's ids; True when it declines the text (tiktoken encodes it)."""
    got = pieces.encode(text)
    return got is None or got.tolist() == enc.encode_ordinary(text)


def test_every_code_point_splits_as_tiktoken_splits_it(gpt2_pieces):
    """Each code point the pass takes, in the places where the pattern's alternatives meet: after a space, inside
    and after letters, digits and punctuation, after an apostrophe, around runs of white space, at the end."""
    import numpy as np

    from datapipe.kernels.utf8 import TABLE_END
    from datapipe.tokenize.pieces import UNSURE, classes

    enc, pieces = gpt2_pieces
    table = classes()
    sure = [c for c in range(TABLE_END) if table[c] != UNSURE and not 0xD800 <= c < 0xE000]
    assert len(sure) > 80_000  # the assigned code points of both Unicode versions below the table end
    contexts = ["a{c}b ", " {c}{c}x", "1{c}2 ", "'{c} ", "!{c}. ", "\n {c}  ", "{c}'s ", "  {c}\t{c}", "{c}"]
    for start in range(0, len(sure), 2048):
        text = "".join(ctx.format(c=chr(c)) for c in sure[start : start + 2048] for ctx in contexts)
        got = pieces.encode(text)
        assert got is not None and np.array_equal(got, enc.encode_ordinary(text)), hex(sure[start])
    unsure = [c for c in range(TABLE_END) if table[c] == UNSURE and not 0xD800 <= c < 0xE000]
    assert all(pieces.encode(f"a{chr(c)}b") is None for c in unsure[:: max(1, len(unsure) // 500)])
    assert pieces.encode("beyond the table: \U00020000") is None and pieces.encode("a lone \ud800") is None


def test_a_text_over_the_bound_goes_to_tiktoken(gpt2_pieces):
    from datapipe.tokenize.fast import gpt2_tiktoken
    from datapipe.tokenize.pieces import PieceEncoder

    enc, ranks, _ = gpt2_tiktoken(build_gpt2(), is_gpt2=True)
    bounded = PieceEncoder(enc._core_bpe, ranks, max_chars=10)
    assert bounded.encode("short text") is not None and bounded.encode("a longer text") is None
    tok = load_tokenizer(TokenizerConfig("builtin:gpt2"))
    text = "word " * 300_000  # over the default bound: the fast path's tiktoken encodes it
    assert len(text) > 1 << 20 and tok.encode_arrays([text])[0].tolist()[:-1] == enc.encode_ordinary(text)


ALPHABET = (
    " \n\t\r\x0b\x0c\x1c\x85\xa0\u2003\u3000'sdmtlvreSA\u00e9\u4e2d1\u0663\u00bd!.\u0301\u200b\U0001f600-x"
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=40))
def test_texts_of_the_patterns_edge_characters_split_as_tiktoken_splits_them(gpt2_pieces, text):
    assert same_as_tiktoken(*gpt2_pieces, text)


def test_a_memo_that_starts_over_gives_the_same_ids(fixture_texts):
    from datapipe.tokenize.fast import gpt2_tiktoken
    from datapipe.tokenize.pieces import PieceEncoder

    enc, ranks, _ = gpt2_tiktoken(build_gpt2(), is_gpt2=True)
    small = PieceEncoder(enc._core_bpe, ranks, memo_pieces=50)
    for text in fixture_texts[:40]:
        assert same_as_tiktoken(enc, small, text)
        assert small.encode(text) is not None
    assert int(small._memo.counts[0]) - small._vocab_size <= 50 + max(len(t) for t in fixture_texts[:40])


def test_the_bundled_gpt2_is_read_from_the_tokenizer_as_from_its_serialization():
    """builtin:gpt2's vocabulary and added tokens are read with the tokenizer's own calls, not by serializing it:
    the same byte ranks and literals as the path that compares a tokenizer's JSON with GPT-2's."""
    from datapipe.tokenize.fast import gpt2_tiktoken

    tok = build_gpt2()
    found, compared = gpt2_tiktoken(tok, is_gpt2=True), gpt2_tiktoken(tok, is_gpt2=False)
    assert found is not None and compared is not None
    assert found[1] == compared[1] and len(found[1]) == 50256
    assert found[2] == compared[2] == ("<|endoftext|>",)
