"""The registry of model-name forms (kit.models.sources): every form resolves its example, unknown
names are refused naming the field, identities are the ones caches were keyed by before the
registry existed, and no module outside the registry dispatches on a name prefix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kit
from kit.models import sources
from kit.models.identity import name_identity


@pytest.mark.parametrize("form", sources.sources(), ids=lambda s: s.key)
def test_every_form_resolves_its_example(form):
    assert sources.source_of(form.example) is form
    assert form.form and form.description and form.owner


def test_the_tiny_world_registers_its_own_forms():
    owners = {s.key: s.owner for s in sources.sources()}
    assert owners["zoo"] == owners["zoo-checkpoint"] == owners["extra"] == "kit.world.sources"
    assert owners["twin"] == owners["hub"] == "kit.models.load"  # beside their loaders
    saes = {s.key: s.owner for s in sources.sae_sources()}
    assert saes["zoo-sae"] == "kit.world.sources" and saes["twin-sae"] == "kit.models.load"


@pytest.mark.parametrize(
    "name, key",
    [
        ("zoo/base-m", "zoo"),
        ("zoo/base-l@step-300", "zoo-checkpoint"),
        ("extra/base-m+math-test-x1-sparse:split", "extra"),
        ("random/tiny-gated", "random"),
        ("minilm", "encoder"),
        ("sentence-transformers/all-MiniLM-L6-v2", "encoder"),  # an exact name before a hub id
        ("real/smollm2-135m-instruct+arc-test-x5", "recipe"),  # a recipe before real/
        ("real/smollm2-135m-instruct", "real"),
        ("twin/llama", "twin"),
        ("twin/llama@perturbed-1", "twin-perturbed"),
        ("twin/olmo2@stage1", "twin-revision"),
        ("/models/x.gguf", "gguf"),
        ("/models/llama", "local"),
        ("a/b/c", "local"),  # more than one '/': only a path
        ("allenai/OLMo-2-1124-7B@stage1-step1000", "hub-revision"),
        ("Qwen/Qwen2.5-7B-Instruct", "hub"),
        ("gpt2", "hub"),
    ],
)
def test_names_resolve_to_their_form(name, key):
    assert sources.source_of(name).key == key


def test_attributes_answer_what_prefix_tests_did():
    assert sources.form_of("zoo/base-m").world_member and sources.form_of("zoo/base-m").tiny_world
    assert sources.form_of("zoo/base-l@step-300").world_member
    extra = sources.form_of("extra/base-m+math-test-x1-sparse:split")
    assert extra.tiny_world and not extra.world_member
    assert sources.form_of("random/gpt2-small").random_init
    assert not sources.form_of("twin/llama").world_member
    assert not sources.form_of("twin/llama").random_init
    # a label that is no model name has no form, and every attribute is False
    assert sources.form_of("not a model") is sources.NO_FORM
    assert not sources.NO_FORM.world_member and not sources.NO_FORM.tiny_world
    assert sources.form_of(None) is sources.NO_FORM
    assert sources.source("zoo").rest("zoo/base-m") == "base-m"


@pytest.mark.parametrize("bad", ["not a model", "", None, "bad name@x"])
def test_unknown_names_are_refused_naming_the_field_and_the_forms(bad):
    with pytest.raises(sources.UnknownModelError) as e:
        sources.source_of(bad, field="decoder_model")
    msg = str(e.value)
    assert msg.startswith(f"decoder_model={bad!r}")
    assert "zoo/<member>" in msg and "twin/<arch>" in msg and "org/name@<revision>" in msg


def test_load_model_of_a_name_of_no_form_keeps_its_message():
    with pytest.raises(kit.models.UnknownModelError, match="unknown model 'not a model'"):
        kit.load_model("not a model")


def test_a_key_belongs_to_one_module():
    twin = sources.source("twin")
    with pytest.raises(ValueError, match="registered by kit.models.load already"):
        sources.register(
            sources.ModelSource(**{**twin.__dict__, "owner": "somewhere.else"})  # type: ignore[arg-type]
        )


def test_unknown_key_lists_the_keys():
    with pytest.raises(ValueError, match="allowed: .*zoo"):
        sources.source("zooo")


def test_listings_come_from_where_the_names_live():
    assert "random/gpt2-small" in sources.source("random").names("micro")  # type: ignore[misc]
    assert "twin/llama" in sources.source("twin").names(None)  # type: ignore[misc]
    zoo = sources.source("zoo").names("micro")  # type: ignore[misc]
    steps = sources.source("zoo-checkpoint").names("micro")  # type: ignore[misc]
    assert "zoo/base-m" in zoo and all("@step-" not in n for n in zoo)
    assert steps and all("@step-" in n for n in steps)
    assert sources.source("extra").names is None  # open: options make any number of names


# Computed on the code before the registry existed (same cache, same worlds): the tiny world's
# caches are keyed by these strings, so they must not change by a byte.
BEFORE = {
    ("tiny", "zoo/base-m"): "zoo:tiny:base-m:164aaa22e424",
    ("tiny", "zoo/base-m+math-test-x1-sparse"): "zoo:tiny:base-m+math-test-x1-sparse:e84882ffb2ad",
    ("micro", "zoo/base-m"): "zoo:micro:base-m:ce90d59b5e4f",
    ("micro", "zoo/base-l@step-80"): "zoo:micro:base-l@step-80:eb420b0dc2d2",
    ("micro", "zoo/nope"): "name:zoo/nope",
    ("micro", "twin/llama"): "name:twin/llama",
    ("micro", "gpt2"): "name:gpt2",
    ("micro", "random/tiny-gated"): "name:random/tiny-gated",
    ("micro", "extra/base-m+math-test-x1-sparse:split"): (
        "name:extra/base-m+math-test-x1-sparse:split"
    ),
    ("micro", "Qwen/Qwen2.5-7B-Instruct@main"): "name:Qwen/Qwen2.5-7B-Instruct@main",
    ("micro", ""): "name:",
}


@pytest.mark.parametrize("world, name", sorted(BEFORE))
def test_identities_are_byte_identical_to_before(world, name):
    assert name_identity(name, world) == BEFORE[(world, name)]


def test_a_local_directory_is_identified_by_its_content(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    # the same directory content as before the registry: {"config.json": "{}"}
    assert name_identity(str(tmp_path)) == (
        "dir-sha256:5cdd1fc1098b5ba431b95eb00b4ef709e691a49cecd91cd9a262b5ef2c3c88bc"
    )


def test_the_table_names_every_form(capsys):
    from kit.__main__ import main

    assert main(["models"]) == 0
    text = capsys.readouterr().out
    for s in sources.sources():
        assert s.form in text and s.example in text
    assert main(["models", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| key | form | example |") and "`zoo/<member>`" in md
    assert main(["models", "--list", "random"]) == 0
    assert "random/gpt2-small" in capsys.readouterr().out


# A prefix test on a model, SAE or generated-task name outside the registry modules:
# ``startswith("zoo/")``, ``startswith(("zoo/", ...))``, ``removeprefix("twin/")``,
# ``[len("zoo/"):]``.
PREFIXES = "zoo|extra|twin|real|random|zoo-sae|minilm-sae|twin-sae|tiny"
DISPATCH = re.compile(
    rf"""(startswith|removeprefix)\(\s*\(?\s*f?["']({PREFIXES})/["']|len\(["']({PREFIXES})/["']\)"""
)
REGISTRY_MODULES = {"kit/models/sources.py", "kit/world/sources.py"}


def test_no_module_outside_the_registry_dispatches_on_a_name_prefix():
    root = Path(kit.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel in REGISTRY_MODULES:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if DISPATCH.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, (
        "ask kit.models.sources (form_of(name) / sae_source_of(name)) instead:\n" + "\n".join(found)
    )


def test_the_dispatch_pattern_catches_what_it_is_for():
    for line in [
        'if name.startswith("zoo/"):',
        "if name.startswith(('zoo/', 'random/')):",
        'arch = name.removeprefix("twin/")',
        'short = name[len("extra/") :]',
    ]:
        assert DISPATCH.search(line), line
    assert DISPATCH.search('if name.startswith("zoo-sae/"):')  # SAE names too
    assert DISPATCH.search("if name.startswith(('minilm-sae/', 'zoo-sae/')):")
    assert not DISPATCH.search('if name.startswith("zoo-saes"):')
    assert not DISPATCH.search('kinds = {"zoo/": 1}')  # not a prefix test


def test_the_docs_page_holds_the_registrys_table():
    page = (Path(__file__).parents[2] / "docs" / "models.md").read_text()
    held = page.split("<!-- models:start -->\n")[1].split("\n<!-- models:end -->")[0]
    assert held == sources.table(markdown=True).strip(), (
        "docs/models.md is stale: paste `python -m kit models --markdown` between its markers"
    )


@pytest.mark.parametrize("form", sources.sae_sources(), ids=lambda s: s.key)
def test_every_sae_form_resolves_its_example(form):
    if form.key == "sae-dir":  # a directory's form needs the directory
        pytest.skip("resolved in test_sae_names_resolve_to_their_form")
    assert sources.sae_source_of(form.example) is form
    assert form.form and form.description and form.owner


@pytest.mark.parametrize(
    "name, key",
    [
        ("zoo-sae/base-m/topk-384", "zoo-sae"),
        ("minilm-sae/L4/topk-256-k8-t8000", "minilm-sae"),
        ("twin-sae/llama/blocks.1.hook_resid_post", "twin-sae"),
        ("gemma-scope-2b-pt-res-canonical/layer_20/width_16k/canonical", "release"),
    ],
)
def test_sae_names_resolve_to_their_form(name, key, tmp_path):
    assert sources.sae_source_of(name).key == key
    assert sources.sae_source_of(str(tmp_path)).key == "sae-dir"


def test_sae_forms_answer_what_prefix_tests_did():
    zoo = sources.sae_source_of("zoo-sae/base-m/topk-384")
    assert zoo.model is not None and zoo.model("zoo-sae/base-m/topk-384") == "zoo/base-m"
    assert not zoo.published and sources.sae_source_of("gpt2-small-res-jb/x").published
    assert sources.sae_source_of("minilm-sae/L4/topk-6144").neuronpedia_model == "all-minilm-l6-v2"
    with pytest.raises(ValueError, match="sae=''.*allowed forms:.*zoo-sae/"):
        sources.sae_source_of("")
