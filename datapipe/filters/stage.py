"""The ``filter`` stage: heuristic rules and line modifiers over extracted documents.

A removed document is counted under ``filter/<rule>``; a kept one may come out with lines removed (RefinedWeb's
modifiers, C4's line rules). A language preset (``fineweb2``) judges each document by the rules of its own language
(``metadata.language``, from language ID), built once per language and worker; a document whose language has no
config is removed as ``language/no_config``, or judged by ``filters.fallback``'s rules when the mixture names one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from datapipe.config.stages import FilterConfig
from datapipe.errors import ConfigError
from datapipe.filters.document import FilterDoc
from datapipe.filters.fineweb2 import Finishing
from datapipe.filters.presets import LANGUAGE_PRESETS, FilterChain, build_chain
from datapipe.languages import LanguageError, Splitter, word_splitter
from datapipe.runtime.evidence import Removal, prefixed
from datapipe.runtime.stage import WARM_TEXT, ConfiguredStage
from datapipe.runtime.stats import StageStats

NO_CONFIG = "language/no_config"


@dataclass
class FilterStage(ConfiguredStage[FilterConfig]):
    name: str = "filter"
    _chain: FilterChain | None = field(default=None, repr=False)
    # a language preset's rules and word splitter per language, or why the language cannot be judged
    _by_language: dict[str, tuple[FilterChain, Splitter] | Removal] = field(default_factory=dict, repr=False)
    _finish: Finishing | None = field(default=None, repr=False)  # FineWeb-2's finishing touches, when asked

    def __getstate__(self) -> dict[str, object]:  # rebuilt per worker: splitters hold tokenizer models
        return {**self.__dict__, "_chain": None, "_by_language": {}, "_finish": None}

    @property
    def per_language(self) -> bool:
        return self.config.preset in LANGUAGE_PRESETS

    def setup(self) -> None:
        c = self.config
        if self._finish is None and (c.ftfy or c.table_pipes):
            self._finish = Finishing(c.ftfy, c.table_pipes)
        if self._chain is None and not self.per_language:
            self._chain = build_chain(
                c.preset, dict(c.overrides), url_blocklist=c.url_blocklist, bad_words=c.bad_words
            )

    def warm(self) -> None:
        """Set up, and for a preset of one language (not per-language) run each rule once on :data:`WARM_TEXT`:
        the word splitter they count with loads on a process's first document (spaCy's tokenizer, its affix tables
        and compiled kernels: ~0.27 s of each process's first shard on e2e's pages), and each rule its own tables
        and kernels. Each rule, not the chain: the chain stops at the first rule that removes the text, and the
        rules after it (Gopher repetition's n-gram kernels, the line modifiers' table) then loaded on the first
        page that reached them (0.06-0.1 s more of each process's first filter shard on e2e's pages)."""
        self.setup()
        if self._chain is not None:
            for rule in self._chain.rules:
                rule(FilterDoc(WARM_TEXT))  # a view each: a line modifier edits the one it is given

    def _build(self, language: str) -> FilterChain:
        c = self.config
        return build_chain(c.preset, dict(c.overrides), url_blocklist=c.url_blocklist, language=language)

    def rules_for(self, language: str) -> tuple[FilterChain, Splitter] | Removal:
        """The language's rules and words; the fallback's rules when it has no config (with its own words when
        datatrove assigns it a tokenizer); else the removal that says why."""
        got = self._by_language.get(language)
        if got is None:
            fallback = self.config.fallback
            try:
                got = (self._build(language), word_splitter(language))
            except (LanguageError, ConfigError) as e:
                if fallback is None:
                    got = Removal(NO_CONFIG, "language", language, note=str(e).rsplit(": ", 1)[-1])
                else:
                    try:
                        words = word_splitter(language)
                    except LanguageError:
                        words = word_splitter(fallback)
                    got = (self._build(fallback), words)
            self._by_language[language] = got
        return got

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        meta = doc["metadata"]
        language = meta.get("language") or "unknown"
        if self.per_language:
            got = self.rules_for(language)
            if isinstance(got, Removal):
                stats.counters[f"language/{language}/removed"] += 1
                return got
            chain, words = got
            view = FilterDoc(doc["text"], url=meta.get("url", ""), words_by=words)
        else:
            assert self._chain is not None
            chain, view = self._chain, FilterDoc(doc["text"], url=meta.get("url", ""))
        reason = chain.apply(view)
        if self.per_language:  # per-language rows of the stage's counts: what each language kept
            stats.counters[f"language/{language}/{'kept' if reason is None else 'removed'}"] += 1
        if reason is not None:
            return prefixed("filter", reason)
        doc["text"] = self._finish(view.text) if self._finish is not None else view.text
        return None
