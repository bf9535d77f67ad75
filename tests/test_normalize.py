"""The dedup stage's one-pass normalization against the step-by-step one (``normalize``, itself checked against
datatrove's ``simplify_text``): the same bytes for every character, in the contexts where the steps interact."""

from __future__ import annotations

import unicodedata

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe.kernels.normalize import _TABLE, _one_pass_of, normalize, normalized_utf8


def _contexts(c: str) -> str:
    # next to letters, inside and around numbers (joined by ".", "," and Arabic's comma), doubled, alone
    return f"A{c}b 1{c}2 3.{c}4 {c}5,6{c} 7{c}.8 x{c}{c} 1،{c}2 {c}"


def test_every_character_in_every_context():
    slow_path = []
    for cp in range(_TABLE):
        if 0xD800 <= cp < 0xE000:  # surrogates cannot be written as UTF-8, by either path
            continue
        text = _contexts(chr(cp))
        fast = _one_pass_of(text)
        if fast is None:
            slow_path.append(cp)
            continue
        assert fast == normalize(text).encode("utf-8"), (hex(cp), text)
    # the slow path is for digits of other scripts and the few characters whose decomposition holds a separator
    # everything else (every letter, mark, space, punctuation mark, emoji) is checked above
    assert len(slow_path) < 1000
    # (digits as the slow path's ``regex`` module knows them: its Unicode tables may be newer than Python's)
    assert all(
        regex.match(r"\p{Nd}", chr(cp)) or unicodedata.normalize("NFD", chr(cp)) != chr(cp)
        for cp in slow_path
    )


def test_examples():
    cases = {
        "Héllo,  WORLD!\n3.14 apples; 42 pears…": b"hello world 0 apples 0 pears",
        "1.2.3 and 4,5 and 6،7 and 8.": b"0 0 and 0 and 0 and 0",
        "Ça coûte 1 000 €": "ca coute 0 0 €".encode(),
        "a ≠ b; x\u037ey": b"a = b x;y",  # "≠" and the Greek question mark decompose to "=" and ";" after the punctuation is gone: they stay
        "٣.٥ مرات": "0 مرات".encode(),
        "\u00a0\u2003 lead and trail \t\n": b"lead and trail",
        "": b"",
        "¶": "¶".encode(),
    }
    for text, want in cases.items():
        assert normalized_utf8(text) == want, text
        assert normalize(text).encode("utf-8") == want, text


_POOL = "aZé1٣0.,،٫⎖ \t\n\u00a0\u2003-;!…¶\u0301\u0338=≠\u037ëeŉǅ𝟘🙂İß"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(_POOL), max_size=40))
def test_mixtures(text):
    assert normalized_utf8(text) == normalize(text).encode("utf-8")
