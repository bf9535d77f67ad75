"""Mixture YAML: validation errors name the file and the field, in one line, before any work starts."""

from __future__ import annotations

import pytest

from datapipe import ConfigError, load_mixture
from datapipe.config.env import expand_string
from datapipe.orchestrate.plan import check_inputs
from pipelines.mixtures import BUNDLED
from tests.conftest import CORPORA, REPO, SMALL_MIXTURE, run_build, write_mixture


def test_bundled_mixture_loads_with_all_sources():
    mix = load_mixture("dclm_phase3.yaml", search=(BUNDLED,))
    names = [s.name for s in mix.sources]
    assert names == [
        "dolmino_dclm",
        "starcoderdata",
        "pes2o",
        "arxiv",
        "finemath_3_plus",
        "stackexchange",
        "algebraic_stack",
        "open_web_math",
        "megawika",
        "wiki",
    ]
    weights = {s.name: s.weight for s in mix.sources}
    assert (
        weights["dolmino_dclm"] == 700 and weights["starcoderdata"] == 23 and weights["open_web_math"] == 5.06
    )
    files = check_inputs(mix, mix.sources)
    assert all(files[n] for n in names), "every component must have input files"
    # found by bare name as well
    assert load_mixture("dclm_phase3", search=(BUNDLED,)).file == mix.file


def _error_for(tmp_path, text: str) -> ConfigError:
    path = write_mixture(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        mix = load_mixture(str(path))
        check_inputs(mix, mix.sources)
    lines = str(info.value).splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines)  # every problem on its line, naming the file
    return info.value


BASE = SMALL_MIXTURE.format(root=CORPORA)


# (the mixture's text changed, the field the one-line error names, what its message says)
FIELD_ERRORS = [
    ("weight: 3", "weight: lots", "sources.web.weight", ["expected number", "'lots'"]),
    (
        "    format: parquet",
        "    format: parquet\n    colour: blue",
        "sources.code.colour",
        ["unknown key 'colour'", "allowed:"],
    ),
    (
        "code/stdlib-00000.parquet",
        "code/nothing-*.parquet",
        "sources.code.paths[0]",
        ["no file matches", "nothing-*.parquet"],
    ),
    ("weight: 1.5", "weight: -1.5", "sources.prose.weight", ["expected a number > 0, got -1.5"]),
]


@pytest.mark.parametrize(
    "old, new, field, said", FIELD_ERRORS, ids=["type", "unknown_key", "no_file", "negative"]
)
def test_an_error_names_the_field(tmp_path, old, new, field, said):
    err = _error_for(tmp_path, BASE.replace(old, new))
    assert err.field == field
    assert all(part in err.message for part in said), err.message


def test_an_option_the_extraction_method_lacks_names_both(tmp_path):
    """``main_content`` is Resiliparse's; the default extractor ignored it without a word (issue 39 item 7)."""
    text = BASE.replace("format: warc", "format: warc\n    extract: {main_content: false}")
    err = _error_for(tmp_path, text)
    assert err.field == "sources.web.extract.main_content"
    assert "method 'datapipe' has no option 'main_content'" in err.message and "resiliparse" in err.message
    ok = BASE.replace("format: warc", "format: warc\n    extract: {method: resiliparse, main_content: false}")
    assert not load_mixture(str(write_mixture(tmp_path, ok, "ok.yaml"))).sources[0].extract.main_content
    bad = BASE.replace("format: warc", "format: warc\n    extract: {method: resiliparse, markdown: true}")
    assert _error_for(tmp_path, bad).field == "sources.web.extract.markdown"


def test_every_classifier_recipe_gives_options_its_methods_have():
    from datapipe.config.recipe import load_recipe

    for path in sorted((REPO / "classifiers").glob("*.yaml")):
        recipe = load_recipe(str(path))  # raises ConfigError on an option the method lacks
        assert recipe.name


def test_every_problem_is_listed_with_a_near_miss_named(tmp_path):
    """Config errors list every problem, one per line in the file's order, each with file and field, and a key
    that is a near miss of an allowed one names it."""
    text = (
        BASE.replace("weight: 3", "wieght: 3")
        .replace("weight: 1.5", "weight: -1.5")
        .replace("    format: parquet", "    format: parquet\n    colour: blue")
    )
    err = _error_for(tmp_path, text)
    fields = [f for f, _ in err.problems]
    assert fields == [
        "sources.web.wieght",
        "sources.web.weight",
        "sources.code.colour",
        "sources.prose.weight",
    ]
    messages = dict(err.problems)
    assert messages["sources.web.wieght"] == "unknown key 'wieght'; did you mean 'weight'?"
    assert messages["sources.web.weight"] == "required key is missing"
    assert "allowed:" in messages["sources.code.colour"]
    assert len(str(err).splitlines()) == 4


def test_unknown_top_level_key(tmp_path):
    err = _error_for(tmp_path, BASE + "shuffle_buffer: 10\n")
    assert err.field == "shuffle_buffer"


def test_missing_required_and_bad_enum(tmp_path):
    assert _error_for(tmp_path, BASE.replace("  path: builtin:gpt2\n", "")).field == "tokenizer.path"
    assert _error_for(tmp_path, BASE.replace("format: warc", "format: xml")).field == "sources.web.format"


def test_bad_source_name(tmp_path):
    err = _error_for(tmp_path, BASE.replace("  web:", "  Web Pages:"))
    assert err.field == "sources.Web Pages"


def test_env_expansion(tmp_path, monkeypatch):
    text = BASE.replace("weight: 3", "weight: ${WEB_WEIGHT:-3}").replace(
        f"data_root: {CORPORA}", "data_root: ${ROOT}"
    )
    path = write_mixture(tmp_path, text)
    monkeypatch.setenv("ROOT", str(CORPORA))
    monkeypatch.setenv("WEB_WEIGHT", "12.5")
    mix = load_mixture(str(path))
    assert mix.source("web").weight == 12.5
    assert mix.data_root == str(CORPORA)
    monkeypatch.delenv("ROOT")
    with pytest.raises(ConfigError) as info:
        load_mixture(str(path))
    assert info.value.field == "data_root" and "${ROOT}" in info.value.message


def test_expand_string_default_and_value():
    assert expand_string("a-${X:-d}-b", file="f", field="x", env={}) == "a-d-b"
    assert expand_string("a-${X:-d}-b", file="f", field="x", env={"X": "v"}) == "a-v-b"


def test_relative_paths_resolve_against_yaml_folder(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"text": "hi"}\n')
    path = write_mixture(
        tmp_path,
        "name: rel\ndata_root: data\ntokenizer: {path: builtin:gpt2}\n"
        "sources:\n  a: {weight: 1, format: jsonl, paths: [a.jsonl]}\n",
    )
    mix = load_mixture(str(path))
    assert check_inputs(mix, mix.sources)["a"] == [str(tmp_path / "data" / "a.jsonl")]


def test_cli_prints_one_line_and_exits_2(tmp_path):
    path = write_mixture(tmp_path, BASE.replace("weight: 1.5", "weight: -2"))
    proc = run_build("--mixture", str(path), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sources.prose.weight" in lines[0] and lines[0].startswith("error: ")
    assert not (tmp_path / "out").exists(), "no work may start before the config is valid"


def test_unknown_bundled_mixture():
    with pytest.raises(ConfigError) as info:
        load_mixture("no_such_mixture.yaml", search=(BUNDLED,))
    assert "dclm_phase3.yaml" in str(info.value)


def test_the_reader_table_and_the_schema_name_the_same_formats():
    import schemas
    from datapipe import FORMATS
    from datapipe.io.readers import input_format

    enum = _find_format_enum(schemas.load("mixture"))
    assert sorted(enum) == sorted(FORMATS)
    assert [name for name, f in FORMATS.items() if f.pages] == ["warc", "html"]
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        input_format("xml")


def _find_format_enum(node):
    if isinstance(node, dict):
        if isinstance(node.get("format"), dict) and "enum" in node["format"]:
            return node["format"]["enum"]
        for v in node.values():
            found = _find_format_enum(v)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = _find_format_enum(v)
            if found is not None:
                return found
    return None
