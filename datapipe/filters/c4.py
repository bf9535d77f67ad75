"""The C4 paper's rules (Raffel et al. 2020, section 2.2), with datatrove's ``C4QualityFilter`` semantics.

Line rules drop lines (no terminal punctuation, fewer than 3 words, a word over 1000 characters, "javascript",
cookie/terms-of-use notices; Wikipedia-style citation marks are removed); document rules remove the page ("lorem
ipsum", a curly brace, fewer than 5 sentences after line filtering, a word from an optional bad-words list).
Sentences are counted as spaCy's rule-based sentencizer counts them, as datatrove does, from the words of the kept
lines, split once (:mod:`datapipe.filters.sentences`); those words become the kept document's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from datapipe.filters.document import FilterDoc
from datapipe.languages.spacy_words import splitter
from datapipe.runtime.evidence import Removal

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY_SUBSTRINGS = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


@dataclass(frozen=True)
class C4Quality:
    remove_citations: bool = True
    filter_no_terminal_punct: bool = True
    min_num_sentences: int = 5  # -1 disables
    min_words_per_line: int = 3  # -1 disables
    max_word_length: int = 1000  # -1 disables
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True
    bad_words: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, doc: FilterDoc) -> str | None:
        kept: list[str] = []
        chunks: list[list[str] | None] = []  # each kept line's split(), None where a citation was removed
        sentences = 0
        text = doc.text
        # a phrase no line holds needs no line lowered: a line's lowered characters are the text's (str.lower is
        # per character but for a final sigma, in no phrase), except where removing a citation joins two pieces
        low = text.lower()
        joins = self.remove_citations and "[" in text
        lorem = self.filter_lorem_ipsum and (joins or "lorem ipsum" in low)
        javascript = self.filter_javascript and (joins or "javascript" in low)
        policy = self.filter_policy and (joins or any(p in low for p in POLICY_SUBSTRINGS))
        curly = self.filter_curly_bracket and "{" in text
        for line in text.splitlines():
            line = line.strip()
            words = line.split()
            split: list[str] | None = words  # the kept line's, unless a citation is removed from it
            # a word over the limit needs a line over it
            if (
                self.max_word_length != -1
                and len(line) > self.max_word_length
                and any(len(w) > self.max_word_length for w in words)
            ):
                continue
            if self.remove_citations and "[" in line and (cited := CITATION.sub("", line)) != line:
                line, split = cited, None
            if self.filter_no_terminal_punct and (not line.endswith(END_PUNCTUATION) or line.endswith("...")):
                continue
            if len(words) < self.min_words_per_line:
                continue
            lowered = line.lower() if lorem or javascript or policy else ""
            if lorem and "lorem ipsum" in lowered:
                return Removal("lorem_ipsum", "phrase", "lorem ipsum")
            if javascript and "javascript" in lowered:
                continue
            if curly and "{" in line:
                return Removal("curly_bracket", "character", "{")
            if policy and any(p in lowered for p in POLICY_SUBSTRINGS):
                continue
            kept.append(line)
            chunks.append(split)
        joined = "\n".join(kept)
        got = None
        if self.min_num_sentences != -1 and kept:
            from datapipe.filters.sentences import count_lines, spacy_sentences

            got = splitter("en").split_ids(joined)  # datatrove's C4 counts English sentences
            if got is None:  # a text the compiled split does not take: spaCy counts each line
                sentences = sum(spacy_sentences(line) for line in kept)
            else:
                sentences = count_lines(kept, *got, chunks)
        if sentences < self.min_num_sentences:
            return Removal("too_few_sentences", "sentences", sentences, "<", self.min_num_sentences)
        text = joined.strip()
        if self.bad_words:
            bad = next((w for w in re.findall(r"\w+", text.lower()) if w in self.bad_words), None)
            if bad is not None:
                return Removal("bad_words", "word", bad)
        doc.rewrite(text, got)  # the same words: the kept lines' words, split above
        return None
