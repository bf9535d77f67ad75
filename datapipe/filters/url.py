"""A URL domain blocklist: a document whose host, or any domain above it, is listed is removed."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from datapipe.errors import InputError
from datapipe.filters.document import FilterDoc
from datapipe.io import fs
from datapipe.runtime.evidence import Removal


def read_entries(url: str, what: str) -> frozenset[str]:
    """A list file: one entry per line, blank lines and ``#`` comments ignored, lower-cased."""
    if not fs.exists(url):
        raise InputError(url, f"{what} file not found")
    entries = (line.split("#", 1)[0].strip().lower() for line in fs.read_text(url).splitlines())
    return frozenset(e for e in entries if e)


def load_domains(url: str) -> frozenset[str]:
    return frozenset(d.lstrip(".").rstrip(".") for d in read_entries(url, "URL blocklist"))


@dataclass(frozen=True)
class UrlBlocklist:
    domains: frozenset[str]

    def __call__(self, doc: FilterDoc) -> str | None:
        if not doc.url or not self.domains:
            return None
        host = (urlsplit(doc.url).hostname or "").lower().rstrip(".")
        parts = host.split(".")
        for i in range(len(parts)):
            if (domain := ".".join(parts[i:])) in self.domains:
                return Removal("url_blocklist", "domain", domain)
        return None
