"""What a multilingual user trips on (issue 66), on the bundled LibreOffice help in 18 languages: language codes
written either way mean one language (weights, stage hashes), per-language counts and reasons in every stage,
checks that answer in the dry run (a misspelt rehydration table, a weight for a language the source cannot have, a
missing dictionary, settings that would do nothing), weights that say what they count, and warnings where a weight
cannot be honoured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CORPORA, run_build, write_mixture


def _mixture(folder: Path, source: str, extra: str = "") -> Path:
    return write_mixture(
        folder,
        f"name: ml\ndata_root: {CORPORA}\nseed: 0\n{extra}tokenizer: {{path: 'builtin:gpt2'}}\nsources:\n"
        f"  web:\n    weight: 1\n    format: jsonl\n    paths: [multilingual/lo-help-*.jsonl.zst]\n{source}",
    )


RECIPE = """\
    langid: {languages: [de, ja]}
    filters: {preset: fineweb2}
    dedup: {exact: false, minhash: {preset: fineweb2}}
    rehydrate: {weights: up_to_05_reps}
"""


def _stage(out: Path, name: str) -> dict:
    (path,) = (out / "web").glob(f"{name}-*/stage.json")
    return json.loads(path.read_text())


def test_weights_by_short_code_build_each_languages_component_with_reasons(tmp_path: Path) -> None:
    out = tmp_path / "out"
    mix = _mixture(tmp_path, RECIPE + "    by_language: {weights: {de: 2, ja: 1}}\n")
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "mixture.json").read_text())
    assert sorted(c["name"] for c in manifest["components"]) == ["web/deu_Latn", "web/jpn_Jpan"]
    weights = {c["name"]: c["weight"] for c in manifest["components"]}
    assert weights["web/deu_Latn"] == pytest.approx(2 * weights["web/jpn_Jpan"])
    assert manifest["by_language"]["web"]["by"] == "tokens"
    # per language at every stage: language ID's removals under the language it found, the filters' reasons
    extract = _stage(out, "extract")["counts"]["by_language"]
    assert extract["fra_Latn"]["kept"] == 0 and extract["fra_Latn"]["removed"]["langid/language"] > 0
    assert extract["deu_Latn"]["kept"] > 0
    filters = _stage(out, "filter")["counts"]["by_language"]
    assert set(filters) == {"deu_Latn", "jpn_Jpan"}
    for lang, c in filters.items():
        assert c["in"] == c["kept"] + sum(c["removed"].values()), lang
    assert any(c["removed"] for c in filters.values())
    # the report's language funnel and the browser's language dimension over language ID's removals
    from datapipe.report.html import render_report

    page = render_report(str(out))
    assert "langid/language" in page[page.index('<section id="languages">') :]
    assert "&middot; 2 components</p>" in page  # the manifest's components, not the sources
    from starlette.testclient import TestClient

    from datapipe.browse.app import create_app

    client = TestClient(create_app(str(out), str(tmp_path / "index"), say=lambda _: None))
    removed = client.get("/docs", params={"language": "fra_Latn", "outcome": "removed"})
    assert removed.status_code == 200 and "langid/language" in removed.text
    # and such a document opens, with the text language ID read (kept in the removal list)
    import re
    from html import unescape

    link = re.search(r'href="(/doc\?source=web&(?:amp;)?ref=[^"]+)"', removed.text)
    assert link is not None
    page = client.get(unescape(link.group(1)))
    french = _first_text(out, "fra_Latn")
    assert page.status_code == 200 and french[:60] in unescape(page.text)


def _first_text(out: Path, language: str) -> str:
    """The text of the first document the extract stage's language ID removed as ``language``."""
    import pyarrow.parquet as pq

    (folder,) = (out / "web").glob("extract-*")
    for part in sorted(folder.glob("part-*.removed.parquet")):
        for row in pq.read_table(part).to_pylist():
            if row["language"] == language and row["text"]:
                return str(row["text"])
    raise AssertionError(f"no {language} removal with its text")


def test_the_same_languages_written_two_ways_are_one_stage_hash(tmp_path: Path) -> None:
    from datapipe.config.mixture import load_mixture
    from datapipe.orchestrate.plan import check_inputs, plan_mixture

    hashes = []
    for i, langs in enumerate(("[de, ja]", "[deu_Latn, jpn_Jpan]")):
        folder = tmp_path / str(i)
        folder.mkdir()
        mix = load_mixture(
            str(_mixture(folder, f"    langid: {{languages: {langs}}}\n")), output=str(tmp_path / "o")
        )
        plans = plan_mixture(mix, mix.sources, check_inputs(mix, mix.sources), "0" * 64)
        hashes.append([st.hash for st in plans[0].stages])
    assert hashes[0] == hashes[1]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (RECIPE.replace("up_to_05_reps", "up_to_5_reps"), "did you mean up_to_05_reps?"),
        (
            RECIPE + "    by_language: {weights: {de: 2, ko: 1}}\n",
            "by_language.weights.ko: kor_Hang: the source's",
        ),
        (
            "    langid: {languages: [de]}\n    rehydrate: {weights: up_to_05_reps}\n",
            "sources.web.rehydrate: needs",
        ),
        ("    by_language: {weights: tokens}\n", "sources.web.by_language: needs langid"),
    ],
)
def test_a_mistake_answers_in_the_dry_run_in_one_line(tmp_path: Path, source: str, says: str) -> None:
    out = tmp_path / "out"
    proc = run_build("--mixture", str(_mixture(tmp_path, source)), "--output", str(out), "--dry-run")
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and 1 <= len(lines) <= 3 and says in lines[0], proc.stderr
    assert not out.exists()


def test_a_missing_dictionary_is_named_before_any_work(monkeypatch, tmp_path: Path) -> None:
    """Without sudachidict_core, Japanese's word splitter cannot run: the plan says so, naming the package."""
    import importlib.util

    from datapipe.config.mixture import load_mixture
    from datapipe.errors import ConfigError
    from datapipe.orchestrate.plan import check_inputs

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sudachidict_core" else real(name, *a)
    )
    mix = load_mixture(str(_mixture(tmp_path, RECIPE)), output=str(tmp_path / "o"))
    with pytest.raises(ConfigError, match=r"sources\.web\.langid\.languages\[1\].*sudachidict-core"):
        check_inputs(mix, mix.sources, dry_run=True)


def test_weights_by_characters_and_the_warnings_a_weight_cannot_keep(tmp_path: Path) -> None:
    out = tmp_path / "out"
    source = (
        "    langid: {languages: [de, ja, sw]}\n"
        "    by_language: {weights: unimax, max_epochs: 1, by: chars}\n"
    )
    mix = _mixture(tmp_path, source, extra="train_tokens: 100000000\n")
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out / "mixture.json").read_text())["by_language"]["web"]
    assert record["by"] == "chars" and set(record["chars"]) == {"deu_Latn", "jpn_Jpan"}
    assert record["chars"]["deu_Latn"] != record["tokens"]["deu_Latn"]
    (line,) = [x for x in proc.stderr.splitlines() if "max_epochs" in x]
    assert (
        line.startswith("warning:")
        and "lower the source's weight or train_tokens, or raise max_epochs" in line
    )
    explicit = _mixture(
        tmp_path, "    langid: {languages: [de, ja, sw]}\n    by_language: {weights: {de: 1, sw: 1}}\n"
    )
    proc = run_build("--mixture", str(explicit), "--output", str(tmp_path / "explicit"), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "no document in that language" in x]
    assert "by_language.weights.swh_Latn" in line or "by_language.weights.swa_Latn" in line


def test_an_unverified_minhash_removal_shows_no_threshold() -> None:
    from datapipe.browse.index import _minhash_threshold
    from datapipe.report.collect import StageView

    def record(verify: bool) -> StageView:
        doc = {"config": {"minhash": {"threshold": 0.8, "verify": verify}}, "counts": {}}
        return StageView("web", "dedup", "dedup-x", "u", doc)

    assert _minhash_threshold(record(True)) == 0.8
    assert _minhash_threshold(record(False)) is None


def test_the_planned_vs_available_chart_shows_its_smallest_bar(monkeypatch) -> None:
    """On a log axis fitted to the data the smallest bar started at the axis and could not be seen."""
    from datapipe.report import plots

    axes = []
    monkeypatch.setattr(plots, "_png", lambda fig: axes.append(fig.axes[0]) or "")
    rows = [
        {"name": "small", "tokens": 405_000, "planned_tokens": 300_000},
        {"name": "large", "tokens": 900_000_000, "planned_tokens": 500_000_000},
    ]
    plots.planned_vs_available(rows, 500_300_000)
    bottom, _ = axes[0].get_ylim()
    assert bottom <= 300_000 / 4
