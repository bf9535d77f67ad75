"""A multilingual corpus of real HTML: LibreOffice's help pages in 18 languages, from Debian packages.

``libreoffice-help-<lang>`` installs the same ~2,560 help pages translated into one language (untranslated
strings stay English). Each page is extracted with datapipe's default extractor and labelled by lid.176 (mapped to
a language-script); a page joins its package's language only when lid.176 agrees, so English leftovers do not
stand in for Hindi or Khmer. Pages are read in path order, so the corpus is the same on any Debian 12 machine.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from debian_pages import ensure_packages, package_pages  # noqa: E402

# Debian package suffix -> FineWeb-2 language-script
LANGUAGES = {
    "de": "deu_Latn",
    "fr": "fra_Latn",
    "es": "spa_Latn",
    "it": "ita_Latn",
    "pt": "por_Latn",
    "pl": "pol_Latn",
    "nl": "nld_Latn",
    "cs": "ces_Latn",
    "tr": "tur_Latn",
    "id": "ind_Latn",
    "vi": "vie_Latn",
    "ru": "rus_Cyrl",
    "el": "ell_Grek",
    "hi": "hin_Deva",
    "ko": "kor_Hang",
    "ja": "jpn_Jpan",
    "zh-cn": "cmn_Hani",
    "km": "khm_Khmr",
}


@dataclass(frozen=True)
class Doc:
    id: str
    language: str
    score: float
    text: str


def packages() -> tuple[str, ...]:
    return tuple(f"libreoffice-help-{k}" for k in LANGUAGES)


def documents(
    per_language: int, languages: dict[str, str] = LANGUAGES, skip: int = 0
) -> dict[str, list[Doc]]:
    """Up to ``per_language`` extracted pages per language whose lid.176 label agrees with their package, after
    the first ``skip`` such pages (pages the development never looked at)."""
    from datapipe import HtmlExtractor, LanguageIdentifier, lid176_language

    ensure_packages(tuple(f"libreoffice-help-{k}" for k in languages))
    extract, lid = HtmlExtractor(), LanguageIdentifier()
    out: dict[str, list[Doc]] = {}
    for pkg, language in languages.items():
        docs: list[Doc] = []
        agreed = 0
        for path in package_pages((f"libreoffice-help-{pkg}",)):
            text = extract((path.read_bytes(), "utf-8"))
            if not text.strip():
                continue
            pred = lid.predict(text)
            if lid176_language(pred.language) == language:
                agreed += 1
                if agreed <= skip:
                    continue
                rel = str(path).split("/help/", 1)[-1]
                docs.append(Doc(f"lo-help:{rel}", language, round(pred.score, 4), text))
                if len(docs) >= per_language:
                    break
        out[language] = docs
    return out
