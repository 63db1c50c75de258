"""Params profiles: every bad input names the file, the field and what is allowed."""

from __future__ import annotations

import pytest

from kit.core.params import ParamsError, load_params, notebook_names, read_profiles
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
    assert smoke.world == "micro" and smoke.model == "zoo/base-s", "inherit should copy the parent's fields"


def test_overrides_are_validated(tmp_path):
    cfg = load_params("00_quickstart", "tiny", {"layer": 1}, path=write(tmp_path, GOOD))
    assert cfg.layer == 1
    with pytest.raises(ParamsError, match="'layer'"):
        load_params("00_quickstart", "tiny", {"layer": -1}, path=write(tmp_path, GOOD))


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
    assert "'modle'" in msg and "unknown field" in msg and "model" in msg and "00_quickstart.yaml" in msg


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


@pytest.mark.parametrize("text, fragment", [
    ("profiles: [1, 2\n", "malformed YAML"),
    ("just a string\n", "'profiles:'"),
    ("profiles: {}\n", "'profiles:'"),
    ("default: big\nprofiles:\n  tiny: {}\n", "default profile 'big'"),
    ("profiles:\n  tiny: {}\nextra: 1\n", "unknown top-level key"),
    ("default: a\nprofiles:\n  a: {inherit: b}\n  b: {inherit: a}\n", "loops"),
    ("profiles:\n  tiny: {inherit: nope}\n", "inherits 'nope'"),
])
def test_malformed_files(tmp_path, text, fragment):
    with pytest.raises(ParamsError, match=fragment):
        load_params("00_quickstart", "tiny" if "a:" not in text else "a", path=write(tmp_path, text))


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
