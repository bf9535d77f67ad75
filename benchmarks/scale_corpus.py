"""A web crawl of any size from real text, with a known duplicate structure: the scale benchmark's input.

Real text: the paragraphs of every page of ``debian_pages.PACKAGES`` (installed by name when missing), extracted
with resiliparse (main content), split on blank lines and kept when 80-2,000 characters long, grouped by the
page's language (the handbook's language folder; ``en`` for the rest). About 5,250 pages give ~95,000 paragraphs.

Pages, page ``i`` of ``N`` decided by ``numpy.random.default_rng([seed, i])`` alone (so shards are written in
parallel and any page can be recomputed):

* ``unique`` (75%): a title and 6-18 paragraphs, runs of 2-6 consecutive paragraphs from 3 random pages of one
  language (so the text reads like a page and is not an exact copy of any other); in a page template with a
  navigation bar and a footer, as crawled pages have.
* ``exact`` (10%): the HTML of an earlier unique page, byte for byte, under its own URL.
* ``near`` (15%): an earlier unique page with 1-3 words in every 200 replaced by other words of the same page, and
  its own footer line: word 5-gram Jaccard about 0.86-0.95 with its original, above the 0.8 threshold of the
  ``fineweb`` MinHash preset.

Copies point at an earlier page, so the page that a dedup keeps (the first) is the original. ``truth.jsonl`` lists
every copy: ``{"url", "kind", "of" (the original's URL), "edits" (words replaced)}``.

Files: ``web-SSSSS.warc.gz``, ``PAGES_PER_SHARD`` pages each (the last may have fewer), gzipped WARC response
records written with warcio, as ``benchmarks/e2e.py`` writes its crawl; the record ids and dates are fixed, so the
same seed and size give the same bytes on any machine.

    .venv/bin/python benchmarks/scale_corpus.py --pages 100000 --out /tmp/scale-100k [--workers 2]
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import re
import sys
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PAGES_PER_SHARD = 2500
KINDS = (("unique", 0.75), ("exact", 0.10), ("near", 0.15))
WARC_DATE = "2024-05-01T12:00:00Z"
HTTP_DATE = "Wed, 01 May 2024 12:00:00 GMT"
POOL = "paragraphs.json"


def _language(path: Path) -> str:
    parts = path.parts
    if "debian-handbook" in parts and "html" in parts:
        return parts[parts.index("html") + 1]
    return "en"


def paragraph_pool(cache: Path) -> dict[str, list[list[str]]]:
    """``{language: [the paragraphs of one page, in order], ...}``, extracted once and cached in ``cache``."""
    if cache.exists():
        return json.loads(cache.read_text())
    import debian_pages

    sys.path.insert(0, str(REPO))
    from datapipe import HtmlExtractor

    extract = HtmlExtractor()
    pool: dict[str, list[list[str]]] = {}
    for path in debian_pages.pages():
        text = extract((path.read_bytes(), None))
        paras = [p.strip() for p in re.split(r"\n\s*\n", text)]
        paras = [re.sub(r"\s+", " ", p) for p in paras if 80 <= len(p) <= 2000]
        if len(paras) >= 4:
            pool.setdefault(_language(path), []).append(paras)
    cache.write_text(json.dumps(pool, ensure_ascii=False, sort_keys=True))
    return pool


def _kind(rng: np.random.Generator, i: int) -> str:
    if i == 0:
        return "unique"
    x = rng.random()
    return "unique" if x < KINDS[0][1] else "exact" if x < KINDS[0][1] + KINDS[1][1] else "near"


def url_of(i: int) -> str:
    return f"https://scale.example.org/{i % 997:03d}/page-{i:08d}.html"


class Pages:
    """Page ``i``'s HTML and ground truth, from the seed and the paragraph pool alone."""

    def __init__(self, pool: dict[str, list[list[str]]], seed: int) -> None:
        self.seed = seed
        self.languages = sorted(pool)
        self.pool = pool
        weights = np.array([len(pool[lang]) for lang in self.languages], dtype=float)
        self.weights = weights / weights.sum()

    def _rng(self, i: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, i])

    def original(self, i: int) -> int:
        """The unique page that page ``i`` copies (itself when unique)."""
        while True:
            rng = self._rng(i)
            if _kind(rng, i) == "unique":
                return i
            i = int(rng.integers(0, i))  # an earlier page; if it is a copy too, its original

    def _unique_html(self, i: int) -> tuple[str, list[str]]:
        rng = self._rng(i)
        _kind(rng, i)
        lang = self.languages[int(rng.choice(len(self.languages), p=self.weights))]
        pages = self.pool[lang]
        paras: list[str] = []
        for _ in range(3):
            page = pages[int(rng.integers(0, len(pages)))]
            run = int(rng.integers(2, 7))
            start = int(rng.integers(0, max(1, len(page) - run + 1)))
            paras.extend(page[start : start + run])
        title = paras[0][:70].rsplit(" ", 1)[0]
        return title, paras

    def page(self, i: int) -> tuple[str, dict | None]:
        """(HTML, truth record or None for a unique page)."""
        rng = self._rng(i)
        kind = _kind(rng, i)
        if kind == "unique":
            title, paras = self._unique_html(i)
            return _render(title, paras, f"Page {i}. Last updated 2024-05-01."), None
        orig = self.original(i)
        title, paras = self._unique_html(orig)
        if kind == "exact":
            return _render(title, paras, f"Page {orig}. Last updated 2024-05-01."), {
                "url": url_of(i),
                "kind": "exact",
                "of": url_of(orig),
                "edits": 0,
            }
        words = [p.split(" ") for p in paras]
        flat = [(a, b) for a, ws in enumerate(words) for b in range(len(ws))]
        rate = int(rng.integers(1, 4))  # words replaced per 200
        n = max(1, len(flat) * rate // 200)
        for k in rng.choice(len(flat), size=min(n, len(flat)), replace=False):
            a, b = flat[int(k)]
            donor = flat[int(rng.integers(0, len(flat)))]
            words[a][b] = words[donor[0]][donor[1]]
        edited = [" ".join(ws) for ws in words]
        footer = f"Mirror {i} of page {orig}. Retrieved 2024-05-01."
        return _render(title, edited, footer), {
            "url": url_of(i),
            "kind": "near",
            "of": url_of(orig),
            "edits": n,
        }


def _render(title: str, paras: list[str], footer: str) -> str:
    t = html.escape(title)
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paras)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{t}</title></head><body>\n'
        '<nav><a href="/">Home</a> | <a href="/docs/">Documentation</a> | <a href="/about/">About</a></nav>\n'
        f"<main><h1>{t}</h1>\n{body}\n</main>\n<footer>{html.escape(footer)}</footer>\n</body></html>\n"
    )


def _record_id(kind: str, key: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, kind + ':' + key)}>"


def write_shard(out: Path, pool_file: Path, seed: int, shard: int, first: int, last: int) -> list[dict]:
    """Pages ``first`` to ``last - 1`` as ``web-SSSSS.warc.gz``; the truth records of its copies."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = Pages(json.loads(pool_file.read_text()), seed)
    truth: list[dict] = []
    name = f"web-{shard:05d}.warc.gz"
    tmp = out / f".{name}.tmp"
    with open(tmp, "wb") as f:
        w = WARCWriter(f, gzip=True)
        info = w.create_warcinfo_record(name, {"software": "datapipe benchmarks/scale_corpus.py"})
        info.rec_headers.replace_header("WARC-Record-ID", _record_id("warcinfo", name))
        info.rec_headers.replace_header("WARC-Date", WARC_DATE)
        w.write_record(info)
        for i in range(first, last):
            page, record = pages.page(i)
            if record is not None:
                truth.append(record)
            body = page.encode("utf-8")
            http = StatusAndHeaders(
                "200 OK",
                [
                    ("Date", HTTP_DATE),
                    ("Server", "nginx"),
                    ("Content-Type", "text/html; charset=utf-8"),
                    ("Content-Length", str(len(body))),
                ],
                protocol="HTTP/1.1",
            )
            rec = w.create_warc_record(url_of(i), "response", payload=io.BytesIO(body), http_headers=http)
            rec.rec_headers.replace_header("WARC-Record-ID", _record_id("response", url_of(i)))
            rec.rec_headers.replace_header("WARC-Date", WARC_DATE)
            rec.rec_headers.add_header("WARC-Identified-Payload-Type", "text/html")
            w.write_record(rec)
    os.replace(tmp, out / name)
    return truth


def build(out: Path, pages: int, seed: int = 0, workers: int = 2) -> dict:
    """Write the corpus (or reuse it when ``corpus.json`` says it is this one); returns ``corpus.json``."""
    out.mkdir(parents=True, exist_ok=True)
    meta = {"pages": pages, "seed": seed, "pages_per_shard": PAGES_PER_SHARD, "kinds": dict(KINDS)}
    done = out / "corpus.json"
    if done.exists() and {k: v for k, v in json.loads(done.read_text()).items() if k in meta} == meta:
        return json.loads(done.read_text())
    pool_file = out / POOL
    pool = paragraph_pool(pool_file)
    shards = [
        (s, s * PAGES_PER_SHARD, min(pages, (s + 1) * PAGES_PER_SHARD))
        for s in range(-(-pages // PAGES_PER_SHARD))
    ]
    truth: list[dict] = []
    with ProcessPoolExecutor(max_workers=workers) as pool_exec:
        futures = [pool_exec.submit(write_shard, out, pool_file, seed, *s) for s in shards]
        for fut in futures:
            truth.extend(fut.result())
    with open(out / "truth.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in truth)
    meta.update(
        shards=len(shards),
        copies={k: sum(r["kind"] == k for r in truth) for k in ("exact", "near")},
        paragraphs=sum(len(p) for pages_ in pool.values() for p in pages_),
        bytes=sum((out / f"web-{s:05d}.warc.gz").stat().st_size for s, _, _ in shards),
    )
    done.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, required=True, help="pages to write (10^4 to 10^6)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes writing shards (default 2)")
    args = ap.parse_args()
    meta = build(Path(args.out), args.pages, args.seed, args.workers)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
