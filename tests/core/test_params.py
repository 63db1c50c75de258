"""Params profiles: every bad input names the file, the field and what is allowed."""

from __future__ import annotations

import pytest

from kit.core.params import (
    ParamsError,
    load_params,
    notebook_names,
    parse_assignment,
    read_profiles,
)
from kit.core.paths import REPO_ROOT


def write(tmp_path, text: str):
    path = tmp_path / "00_quickstart.yaml"
    path.write_text(text)
    return path


GOOD = """
default: tiny
profiles:
  tiny: {model: zoo/base-s, layer: 0}
  smoke: {inherit: tiny, world: micro}
"""


def test_default_profile_and_inheritance(tmp_path):
    cfg = load_params("00_quickstart", path=write(tmp_path, GOOD))
    assert cfg.world == "tiny" and cfg.model == "zoo/base-s"
    smoke = load_params("00_quickstart", "smoke", path=write(tmp_path, GOOD))
    assert smoke.world == "micro" and smoke.model == "zoo/base-s", (
        "inherit should copy the parent's fields"
    )


def test_overrides_are_validated(tmp_path):
    cfg = load_params("00_quickstart", "tiny", {"n_eval": 5}, path=write(tmp_path, GOOD))
    assert cfg.n_eval == 5
    with pytest.raises(ParamsError, match="'layer'"):
        load_params("00_quickstart", "tiny", {"layer": -1}, path=write(tmp_path, GOOD))
    with pytest.raises(ParamsError, match="'layer': 1 is not a layer of zoo/base-s"):  # 1 layer
        load_params("00_quickstart", "tiny", {"layer": 1}, path=write(tmp_path, GOOD))


def test_unknown_profile_lists_allowed(tmp_path):
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "huge", path=write(tmp_path, GOOD))
    msg = str(e.value)
    assert "00_quickstart.yaml" in msg and "'huge'" in msg and "tiny, smoke" in msg


def test_unknown_key_names_field_and_allowed_fields(tmp_path):
    path = write(tmp_path, "profiles:\n  tiny: {modle: zoo/base-s}\n")
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "tiny", path=path)
    msg = str(e.value)
    assert (
        "'modle'" in msg
        and "unknown field" in msg
        and "model" in msg
        and "00_quickstart.yaml" in msg
    )


def test_wrong_type_names_field(tmp_path):
    path = write(tmp_path, "profiles:\n  tiny: {layer: two}\n")
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "tiny", path=path)
    assert "'layer'" in str(e.value) and "'two'" in str(e.value)


def test_out_of_range_names_bound(tmp_path):
    path = write(tmp_path, "profiles:\n  tiny: {top_neurons: 100000}\n")
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "tiny", path=path)
    assert "'top_neurons'" in str(e.value) and "512" in str(e.value)


def test_literal_lists_allowed_values(tmp_path):
    path = write(tmp_path, "profiles:\n  tiny: {world: huge}\n")
    with pytest.raises(ParamsError) as e:
        load_params("00_quickstart", "tiny", path=path)
    assert "'world'" in str(e.value) and "'tiny'" in str(e.value) and "'micro'" in str(e.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("profiles: [1, 2\n", "malformed YAML"),
        ("just a string\n", "'profiles:'"),
        ("profiles: {}\n", "'profiles:'"),
        ("default: big\nprofiles:\n  tiny: {}\n", "default profile 'big'"),
        ("profiles:\n  tiny: {}\nextra: 1\n", "unknown top-level key"),
        ("default: a\nprofiles:\n  a: {inherit: b}\n  b: {inherit: a}\n", "loops"),
        ("profiles:\n  tiny: {inherit: nope}\n", "inherits 'nope'"),
    ],
)
def test_malformed_files(tmp_path, text, fragment):
    with pytest.raises(ParamsError, match=fragment):
        load_params(
            "00_quickstart", "tiny" if "a:" not in text else "a", path=write(tmp_path, text)
        )


def test_missing_file_and_unknown_notebook():
    with pytest.raises(ParamsError, match="no params file"):
        load_params("99_nothing")


@pytest.mark.parametrize("notebook", notebook_names())
def test_every_shipped_profile_validates(notebook):
    """Each params/NN_*.yaml has tiny (default), smoke and paper, and all of them validate."""
    default, profiles = read_profiles(REPO_ROOT / "params" / f"{notebook}.yaml")
    assert default == "tiny"
    assert {"tiny", "smoke", "paper"} <= set(profiles), f"{notebook}: profiles {sorted(profiles)}"
    for profile in profiles:
        load_params(notebook, profile)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("n_eval=5", ("n_eval", 5)),
        ("tasks=[add, code]", ("tasks", ["add", "code"])),
        ("models=null", ("models", None)),
        ("model=zoo/base-m", ("model", "zoo/base-m")),
        ("frac=0.5", ("frac", 0.5)),
    ],
)
def test_parse_assignment_reads_values_as_yaml(text, expected):
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["n_eval", "=5", "n eval=5", "tasks=[add"])
def test_parse_assignment_rejects_malformed(text):
    with pytest.raises(ParamsError, match="--set"):
        parse_assignment(text)


@pytest.mark.parametrize(
    "notebook, override, fragment",
    [
        ("00_quickstart", {"task": "addd"}, "'addd' is not a task of the world"),
        (
            "00_quickstart",
            {"model": "zoo/base-xxl"},
            "'zoo/base-xxl' is not a zoo member of world 'micro'",
        ),
        ("00_quickstart", {"model": "random/gpt3"}, "'random/gpt3' is not a random shape"),
        (
            "01_utility_law",
            {"sae_names": ["zoo-sae/base-m/topk-9"]},
            "'zoo-sae/base-m/topk-9' is not a SAE",
        ),
        ("01_utility_law", {"tasks": ["add", "gsm9k"]}, "'gsm9k' is not a task of the world"),
        (
            "02_training_trajectories",
            {"specialised": {"zoo/base-m+maths": "zoo/base-m"}},
            "'zoo/base-m+maths'",
        ),
        (
            "04_competency_gaps",
            {"benchmarks": ["gsm8k", "mmlu/astrology"]},
            "mmlu has no subject 'astrology'",
        ),
    ],
)
def test_names_are_checked_in_the_loader(notebook, override, fragment):
    """`task: addd` used to be caught 11 s into the run, after a run directory
    existed."""
    with pytest.raises(ParamsError) as e:
        load_params(notebook, "smoke", override)
    msg = str(e.value)
    assert fragment in msg and f"{notebook}.yaml" in msg and repr(next(iter(override))) in msg


def test_hub_names_and_world_names_pass():
    models = ["gpt2", "zoo/base-s", "zoo/base-m"]  # three to rank; a hub model needs the true order
    cfg = load_params(
        "01_utility_law",
        "smoke",
        {"tasks": ["add", "gsm8k", "bbh/navigate"], "models": models, "reference_order": models},
    )
    assert cfg.tasks == ["add", "gsm8k", "bbh/navigate"]


def test_quickstart_n_eval_cannot_exceed_the_test_split():
    """``n_eval`` 10000 was silently cut to the 200 test items while params.yaml said
    10000."""
    from kit.world.tasks import TEST_SIZE

    with pytest.raises(ParamsError, match=f"'n_eval'.*less than or equal to {TEST_SIZE}"):
        load_params("00_quickstart", "tiny", {"n_eval": 10_000})


# Settings that failed late or lied are refused when the config loads, naming the
# field, its value and what is allowed, in a line or two (never a dump of the whole config).
@pytest.mark.parametrize(
    "notebook, override, fragments",
    [
        ("00_quickstart", {"seed": -1}, ["field 'seed'", "got -1", ">= 0, <= 2147483647"]),
        ("00_quickstart", {"seed": 2**40}, ["field 'seed'", "<= 2147483647"]),
        (
            "00_quickstart",
            {"device": "nonsense"},
            ["field 'device'", "'nonsense'", "cpu, cuda, cuda:N", "mps"],
        ),
        ("00_quickstart", {"device": "cuda:x"}, ["field 'device'", "'cuda:x'"]),
        (
            "01_utility_law",
            {"growth_sizes": [-1, 0]},
            [
                "field 'growth_sizes[0]'",
                "got -1 in growth_sizes=[-1, 0]",
                "field 'growth_sizes[1]'",
                ">= 1",
            ],
        ),
        (
            "01_utility_law",
            {"growth_sizes": [1, 50]},
            ["field 'growth_sizes'", "[50] exceed growth_pool_size=12"],
        ),
        ("01_utility_law", {"masking_ks": []}, ["field 'masking_ks'", "got []", "at least 1 item"]),
        ("01_utility_law", {"tasks": []}, ["field 'tasks'", "got []", "None: every world task"]),
        (
            "01_utility_law",
            {"tasks": ["add", "add"]},
            ["field 'tasks'", "['add'] listed more than once"],
        ),
        (
            "01_utility_law",
            {"grid_topscore_fracs": [0.2, 1.5]},
            ["field 'grid_topscore_fracs[1]'", "got 1.5", "<= 1"],
        ),
        (
            "02_training_trajectories",
            {"checkpoints": ["zoo/base-l"]},
            ["field 'checkpoints'", "a trajectory needs >= 2"],
        ),
        ("03_shortcut_neurons", {"generation_seed": -3}, ["field 'generation_seed'", "got -3"]),
        ("05_neuronvote", {"layers": [-1]}, ["field 'layers[0]'", ">= 0"]),
        (
            "06_measurement_audits",
            {"weber_baselines": [0.0]},
            ["field 'weber_baselines[0]'", "> 0"],
        ),
    ],
)
def test_bad_settings_fail_at_load_naming_field_value_and_allowed(notebook, override, fragments):
    with pytest.raises(ParamsError) as e:
        load_params(notebook, "smoke", override)
    msg = str(e.value)
    for fragment in fragments:
        assert fragment in msg, msg
    assert "(config)" not in msg and len(msg) < 1200, "a config dump instead of the field"


def test_a_check_across_fields_prints_its_message_not_the_config():
    """Validator errors printed '(config)' and a 2 KB dump of every field."""
    with pytest.raises(ParamsError) as e:
        load_params("03_shortcut_neurons", "smoke", {"locate_pair": ["+test", "+5x test"]})
    msg = str(e.value)
    assert "locate_pair=['+test', '+5x test']: the first must be a contaminated label" in msg
    assert "(config)" not in msg and "'variants'" not in msg and len(msg) < 500, msg


def test_meaningful_empty_lists_stay_allowed():
    """[] where a field documents it: skip the SAE section, no multi-token section, no
    trajectory."""
    assert (
        load_params("01_utility_law", "smoke", {"sae_names": [], "multi_token_tasks": []}).sae_names
        == []
    )
    assert load_params("02_training_trajectories", "smoke", {"checkpoints": []}).checkpoints == []
