"""Unicode spaces become ASCII spaces, so that every later rule sees the words a reader sees.

resiliparse renders ``&nbsp;`` and ``<pre>`` whitespace as U+00A0; on pages that join every word with it, lid.176
(which splits on ASCII whitespace) reads English as ``ca`` at 0.15, Gopher's rules count one word per line and
GPT-2 spends 1.37x the tokens. Space separators (Unicode category Zs: U+00A0, U+2000-U+200A, U+202F, U+3000, ...)
become U+0020 and the line and paragraph separators U+2028/U+2029 become a newline. Invisible characters that
neither write a letter nor separate words go (:data:`INVISIBLE`): the soft hyphen, a hyphenation hint that German
sites put inside every long word (``Ita\u00adli\u00adens``), splits the word for a tokenizer, a word-level
language model, dedup's shingles and a search for the word; 68 of Trafilatura's 990 evaluation pages have it.
Zero-width spaces and joiners stay (they mark word and glyph boundaries in Thai, Persian, emoji). ASCII text
returns at once; otherwise a regular expression, which is 2x faster than ``str.translate`` with a table here.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode's category Zs without U+0020 (tests/test_extract_content.py checks it against unicodedata)
SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_SPACE = re.compile(f"[{SPACES}]")
_LINE = re.compile("[\u2028\u2029]")
# the soft hyphen, the word joiner and U+FEFF (a byte-order mark, or a zero-width no-break space)
INVISIBLE = "\u00ad\u2060\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
# any character normalize_spaces changes: one scan finds a text with none of them (most non-ASCII pages: a pilcrow
# or a curly quote), where three scans did (0.21 -> 0.07 CPU s over e2e's 3,415 kept pages)
_CHANGED = re.compile(f"[{SPACES}\u2028\u2029{INVISIBLE}]")


def drop_invisible(text: str) -> str:
    """``text`` without :data:`INVISIBLE` characters (the same object when there is none). Three ``in`` tests
    find a page without them faster than the class's scan (0.072 -> 0.004 CPU s over e2e's 3,415 texts)."""
    if text.isascii() or not any(ch in text for ch in INVISIBLE):
        return text
    return _INVISIBLE.sub("", text)


def nfc(text: str) -> str:
    """``text`` in Unicode's composed normal form (NFC), as Trafilatura writes its text: a page written on a Mac
    spells ``ü`` as ``u`` and a combining diaeresis, which a tokenizer, dedup's hashes and a search see as another
    word than the ``ü`` of every other page (16 of Trafilatura's 990 evaluation pages do). The same object when it
    is already composed."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def normalize_spaces(text: str) -> str:
    """``text`` with every Unicode space separator as an ASCII space, U+2028/U+2029 as newlines and no
    :data:`INVISIBLE` character (the same object when there is none of them)."""
    if text.isascii() or _CHANGED.search(text) is None:
        return text
    text = drop_invisible(text)
    if _SPACE.search(text) is not None:
        text = _SPACE.sub(" ", text)
    if _LINE.search(text) is not None:
        text = _LINE.sub("\n", text)
    return text


def as_written(text: str, *, extracted: bool, normalize: bool) -> str:
    """The text as the extract stage writes it: text extracted from HTML always gets its spaces normalized and
    is composed (:func:`nfc`), a JSONL/Parquet text gets its spaces normalized when the source says so
    (``extract.normalize_spaces``). The one rule for every reader of that text (the stage, the quality trainer's
    examples)."""
    if extracted:
        return nfc(normalize_spaces(text))
    return normalize_spaces(text) if normalize else text
