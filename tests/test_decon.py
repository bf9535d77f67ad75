"""Decontamination (stage ``decon``) and PII scrubbing (stage ``pii``) on real text with planted items."""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from datapipe import normalize
from datapipe.config.stages import DeconConfig, EvalSet
from datapipe.decon.evalsets import EvalItem
from datapipe.decon.index import EvalIndex
from datapipe.decon.stage import DeconStage
from datapipe.pii.scrub import EMAIL, IP, PHONE, scrub
from datapipe.runtime.stats import StageStats
from tests.conftest import CORPORA, REPO, run_build, write_mixture


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


@pytest.fixture(scope="module")
def planted(fixture_texts):
    """Evaluation items written from real documents, planted into copies of other real documents.

    Long items: two lines of one document (15+ and 13+ words) that occur nowhere else in the corpus, as a question
    and its answer. Short items: one such line of 8-12 words. Common-phrase items: a line found in several
    documents followed by a rarer line twice as long, so the documents holding only the common line share a third
    of the item's n-grams at most.
    """
    rng = random.Random(13)
    docs = [t for t in fixture_texts if len(t.split()) > 80]
    # "occurs nowhere else" is judged on 13-word runs, so near-copies of a document (the fixtures plant some) count
    norm = [" " + normalize(t) + " " for t in docs]
    grams: Counter = Counter()
    for t in norm:
        w = t.split()
        grams.update({tuple(w[k : k + 13]) for k in range(len(w) - 12)})

    @functools.cache
    def docs_holding(n: int) -> Counter:
        """For every run of ``n`` consecutive words, how many documents hold it (a normalized text is its words
        joined by single spaces, so this is how many hold it as a substring between spaces)."""
        runs: Counter = Counter()
        for t in norm:
            w = t.split()
            runs.update({tuple(w[k : k + n]) for k in range(len(w) - n + 1)})
        return runs

    def alone(line: str) -> bool:
        w = normalize(line).split()
        if len(w) >= 13:
            return all(grams[tuple(w[k : k + 13])] == 1 for k in range(len(w) - 12))
        return bool(w) and docs_holding(len(w))[tuple(w)] == 1

    seen: Counter = Counter()
    for t in docs:
        seen.update({normalize(line) for line in _lines(t)})
    unique = [[ln for ln in _lines(t) if len(normalize(ln).split()) >= 8 and alone(ln)] for t in docs]
    order = list(range(len(docs)))
    rng.shuffle(order)
    items, sources = [], set()
    for i in order:
        long_lines = [ln for ln in unique[i] if len(normalize(ln).split()) >= 15]
        if len(long_lines) >= 2 and len([it for it in items if it[0] == "long"]) < 40:
            q, a = rng.sample(long_lines, 2)
            items.append(("long", {"id": f"q{len(items)}", "question": q, "answer": a}))
            sources.add(i)
            continue
        short_lines = [ln for ln in unique[i] if 8 <= len(normalize(ln).split()) <= 12]
        if short_lines and len([it for it in items if it[0] == "short"]) < 20:
            items.append(("short", {"id": f"s{len(items)}", "question": rng.choice(short_lines)}))
            sources.add(i)
    # a common line of words (a table row of numbers, "0 0 0 ...", is shared by chance with any numeric text)
    common = [
        ln
        for ln, n in seen.items()
        if n >= 3 and 13 <= len(ln.split()) <= 20 and sum(w.isalpha() for w in ln.split()) >= 10
    ]
    common_items = []
    for k, phrase in enumerate(sorted(common)[:5]):
        tail = next(
            ln
            for i in order
            if i not in sources
            for ln in unique[i]
            if len(normalize(ln).split()) >= 3 * len(phrase.split())
        )
        common_items.append({"id": f"c{k}", "question": phrase + " " + tail})  # the phrase: under a third
        sources.update(i for i in range(len(docs)) if tail in docs[i])
    assert (
        len([it for it in items if it[0] == "long"]) == 40
        and len([it for it in items if it[0] == "short"]) == 20
    )
    assert common_items, "no line of 13-20 words occurs in 3+ fixture documents"
    hosts = [i for i in order if i not in sources]
    planted_docs = []
    for n, (kind, item) in enumerate(items):
        lines = docs[hosts[n % len(hosts)]].split("\n")
        at = rng.randrange(len(lines) + 1)
        text = item["question"] if kind == "short" else item["question"] + "\n" + item["answer"]
        planted_docs.append((kind, item["id"], "\n".join(lines[:at] + [text] + lines[at:])))
    clean = [docs[i] for i in range(len(docs)) if i not in sources]
    phrases = sorted(common)[: len(common_items)]
    sharing_common = [t for t in clean if any(p in normalize(t) for p in phrases)]
    return [it for _, it in items] + common_items, planted_docs, clean, sharing_common


def _stage(items: list[dict], tmp_path, per_field_off: bool = False, **config) -> DeconStage:
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = tmp_path / "evals.jsonl"
    f.write_text("".join(json.dumps(it) + "\n" for it in items))
    sets = (EvalSet("fixture_eval", (str(f),), per_field=not per_field_off),)
    stage = DeconStage("web", DeconConfig(sets, **config), "", str(tmp_path))
    stage.setup()
    return stage


def _decide(stage: DeconStage, texts: list[str]) -> tuple[list[bool], StageStats]:
    """Whether each text is kept, and the stage's counts (a removal counted as the stage base counts it)."""
    stats = StageStats()
    kept = []
    for i, t in enumerate(texts):
        why = stage.keep(i, {"text": t}, stats)
        if why is not None:
            stats.remove(why)
        kept.append(why is None)
    return kept, stats


@pytest.mark.parametrize("mode", ["exact", "bloom"])
def test_every_planted_item_is_caught_and_common_phrases_are_not(planted, tmp_path, mode):
    items, planted_docs, clean, sharing_common = planted
    stage = _stage(items, tmp_path, max_exact_ngrams=0 if mode == "bloom" else 50_000_000)
    assert stage._index.stats["mode"] == mode
    kept, stats = _decide(stage, [t for _, _, t in planted_docs])
    caught = {
        kind: sum(not k for k, (kd, _, _) in zip(kept, planted_docs, strict=True) if kd == kind)
        for kind in ("long", "short")
    }
    kept_clean, _ = _decide(stage, clean)
    kept_common, _ = _decide(stage, sharing_common)
    fp = kept_clean.count(False)
    print(
        f"{mode}: recall whole items {caught['long']}/40, short lines {caught['short']}/20; false positives "
        f"{fp}/{len(clean)} unplanted documents ({len(sharing_common)} share a common phrase with an item: "
        f"{kept_common.count(False)} removed)"
    )
    assert caught == {"long": 40, "short": 20}
    assert stats.removed["decon/contaminated"] == 60
    assert len(sharing_common) >= 3
    # Bloom mode sums a text's matches over all items of a size class: a text that also shares n-grams with
    # other items of that class (here a Debian handbook page holding two command lines of the items) may be
    # flagged, as rarely as the false positives below
    assert kept_common.count(False) <= (0 if mode == "exact" else max(1, len(sharing_common) // 50))
    if mode == "exact":
        assert fp == 0
        assert {h.split("#")[0] for h in stage._hits} == {f"fixture_eval:{i}" for _, i, _ in planted_docs}
    else:
        assert fp <= len(clean) // 100  # Bloom mode may flag more, never less
        assert stage._index.stats["false_positive_rate"] <= 1e-9


@pytest.mark.parametrize("scope", ["document", "paragraph"])
def test_span_action_drops_only_the_planted_lines(planted, tmp_path, scope):
    """Document scope: the item planted as its two lines; paragraph scope: as one line (a paragraph holding only
    the question of a question-and-answer item shares too little of it, which is what paragraph scope means)."""
    items, planted_docs, _, _ = planted
    stage = _stage(items, tmp_path, action="span", scope=scope)
    for kind, item_id, text in planted_docs:
        item = next(it for it in items if it["id"] == item_id)
        if scope == "paragraph" and kind == "long":
            text = text.replace(
                item["question"] + "\n" + item["answer"], item["question"] + " " + item["answer"]
            )
        doc = {"text": text}
        assert stage.keep(0, doc, StageStats()) is None
        assert normalize(item["question"]) not in normalize(doc["text"])
        planted_lines = {
            item["question"],
            item.get("answer"),
            item["question"] + " " + item.get("answer", ""),
        }
        assert _lines(doc["text"]) == [ln for ln in _lines(text) if ln not in planted_lines], (kind, item_id)


def test_a_leaked_question_alone_is_caught_per_field(planted, tmp_path):
    """A question copied without its answer can share under half of the whole item's n-grams, but it shares all
    of its own field's: per-field items catch it, whole items alone do not."""
    items, _, clean, _ = planted

    def grams(text: str) -> int:
        return max(1, len(normalize(text).split()) - 12)

    minor = [
        it
        for it in items
        if it["id"].startswith("q")
        and grams(it["question"]) < 0.5 * grams(it["question"] + " " + it["answer"])
    ]
    assert len(minor) >= 5
    texts = [doc + "\n" + it["question"] for doc, it in zip(clean, minor, strict=False)]
    kept, _ = _decide(_stage(items, tmp_path / "per_field"), texts)
    assert not any(kept)
    kept, _ = _decide(_stage(items, tmp_path / "whole_only", per_field_off=True), texts)
    assert all(kept)


def test_short_items_below_min_words_are_skipped_and_counted():
    index = EvalIndex.build(
        [EvalItem("a", "only five words are here"), EvalItem("b", " ".join(["word"] * 20))]
    )
    assert index.stats["items_too_short"] == 1 and index.stats["items"] == 1


def test_pii_planted_into_real_text_is_replaced_and_documentation_kept(fixture_texts):
    rng = random.Random(5)
    docs = [t for t in fixture_texts if len(t.split()) > 50][:60]
    planted, doc_values = [], []
    for k, text in enumerate(docs):
        email = f"{rng.choice(['ana', 'j.smith', 'li_wei'])}{k}@{rng.choice(['gmail.com', 'posteo.de', 'uni-bonn.de'])}"
        ipv4 = f"{rng.randint(11, 99)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        ipv6 = f"2a00:1450:{rng.randint(0x1000, 0xFFFF):x}:{k:x}::{rng.randint(1, 0xFFFF):x}"
        phone = rng.choice([f"555-{k:03d}-{rng.randint(1000, 9999)}", f"(212) 555 {rng.randint(1000, 9999)}",
                            f"+44 20 7946 {rng.randint(1000, 9999)}"])  # fmt: skip
        keep = [f"admin{k}@example.com", f"192.0.2.{k + 1}", f"2001:db8::{k + 1:x}"]
        lines = text.split("\n")
        at = rng.randrange(len(lines) + 1)
        extra = f"Contact {email} (phone {phone}); server {ipv4}, v6 {ipv6}; docs: {', '.join(keep)}."
        planted.append((("\n".join(lines[:at] + [extra] + lines[at:])), email, ipv4, ipv6, phone))
        doc_values.append(keep)
    totals: Counter = Counter()
    for (text, *pii), keep in zip(planted, doc_values, strict=True):
        out, counts = scrub(text)
        totals += counts
        for value in pii:
            assert value not in out, value
        for value in keep:
            assert value in out, value
        assert out.count(EMAIL) >= 1 and out.count(IP) >= 2 and out.count(PHONE) >= 1
    print(f"pii over {len(planted)} real documents: {dict(totals)}")
    assert totals["email"] >= 60 and totals["ip"] >= 120 and totals["phone"] >= 60
    assert totals["email_kept"] >= 60 and totals["ip_kept"] >= 120


def test_decon_and_pii_stages_in_a_build(planted, tmp_path):
    items, planted_docs, clean, _ = planted
    data = tmp_path / "data"
    data.mkdir()
    docs = (
        [t for _, _, t in planted_docs]
        + clean[:100]
        + ["Mail bob.jones@gmail.com or call 555-867-5309 today."]
    )
    (data / "web.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    (data / "evals.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    mix = write_mixture(
        tmp_path,
        f"""name: decon
data_root: {data}
tokenizer: {{path: "builtin:gpt2"}}
sources:
  web:
    weight: 1
    format: jsonl
    paths: [web.jsonl]
    decon: {{eval_sets: [{{name: fixture_eval, paths: [evals.jsonl]}}]}}
    pii: {{}}
""",
    )
    out = tmp_path / "out"
    proc = run_build("--mixture", str(mix), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    decon = json.loads(next(out.glob("web/decon-*/stage.json")).read_text())
    assert decon["counts"]["removed"] == {"decon/contaminated": 60}
    from datapipe import read_removed

    rows = read_removed(str(next(out.glob("web/decon-*")))).to_pylist()  # each removal with what matched
    assert len(rows) == 60 and all(
        re.fullmatch(
            r"eval_\d+_grams=\d+ \(items fixture_eval:\S+(, fixture_eval:\S+)*( and \d+ more)?\)",
            r["evidence"],
        )
        and r["value"] >= 1
        for r in rows
    ), rows[:3]
    assert decon["decon"]["index"]["mode"] == "exact"
    assert {k.split("#")[0] for k in decon["decon"]["items_hit"]} == {
        f"fixture_eval:{i}" for _, i, _ in planted_docs
    }
    pii = json.loads(next(out.glob("web/pii-*/stage.json")).read_text())
    assert pii["counts"]["counters"]["pii/email"] >= 1 and pii["counts"]["counters"]["pii/phone"] >= 1
    report = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "report", str(out), "--html", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    section = report.read_text().split('<section id="contamination">')[1].split("</section>")[0]
    first = min(f"fixture_eval:{i}" for _, i, _ in planted_docs)  # items hit once each: listed by name
    assert f"<td>{first}</td>" in section and "pii/email" in section and "pii/phone" in section
    bad = write_mixture(
        tmp_path, (tmp_path / "mix.yaml").read_text().replace("evals.jsonl", "nope-*.jsonl"), "bad.yaml"
    )
    proc = run_build("--mixture", str(bad), "--output", str(out))
    assert proc.returncode == 2 and "sources.web.decon.eval_sets[0].paths[0]" in proc.stderr
    assert CORPORA.exists()
