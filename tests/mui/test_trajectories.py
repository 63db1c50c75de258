"""Tests of kit.mui.trajectories: notebook 02's settings and their directions on the tiny world
and on Hugging Face models, its profiles and parameters (no built world)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import kit.mui.trajectories as tr
from kit.configs.training_trajectories import Config
from kit.core.params import ParamsError, load_params
from kit.mui import directions, trajectory_sections


@pytest.fixture(autouse=True)
def _seed():
    random.seed(0)
    np.random.seed(0)


# --- tiny-world plumbing (no world needed) ----------------------------------------------------


MEMBERS = [
    "zoo/base-s",
    "zoo/base-m",
    "zoo/base-l",
    "zoo/base-l@step-1000",
    "zoo/base-l@step-200",
    "zoo/base-l@step-600",
    "zoo/base-s@step-10",
    "zoo/base-m+math",
    "zoo/base-m+code",
    "zoo/base-m+math-test-x1",
    "zoo/base-m+math-test-x5",
    "zoo/base-m+math-test-syn-x5",
    "zoo/base-m+math-train",
    "zoo/base-m+other-task",
    "zoo/base-m+general",
]


def test_checkpoint_series_numeric_order_and_final():
    assert tr.checkpoint_series(MEMBERS) == [
        "zoo/base-l@step-200",
        "zoo/base-l@step-600",
        "zoo/base-l@step-1000",
        "zoo/base-l",
    ]
    assert tr.checkpoint_series(MEMBERS, base="zoo/base-s") == ["zoo/base-s@step-10", "zoo/base-s"]
    # the last checkpoint is the final model (1000 = the base's steps): do not add a zero step
    assert tr.checkpoint_series(MEMBERS, final_step=1000)[-1] == "zoo/base-l@step-1000"
    assert tr.checkpoint_series(MEMBERS, final_step=1200)[-1] == "zoo/base-l"
    tie = MEMBERS + [
        "zoo/base-xl",
        "zoo/base-xl@step-100",
        "zoo/base-xl@step-300",
        "zoo/base-xl@step-500",
    ]
    assert tr.checkpoint_series(tie)[0] == "zoo/base-l@step-200", "ties: the base listed first"
    with pytest.raises(ValueError, match="no '<base>@step-<N>'"):
        tr.checkpoint_series(["zoo/base-s"])
    with pytest.raises(ValueError, match="bases with checkpoints"):
        tr.checkpoint_series(MEMBERS, base="zoo/base-m")


def test_finetune_pairs_kinds():
    assert tr.finetune_pairs(MEMBERS, "specialised") == {
        "zoo/base-m+math": "zoo/base-m",
        "zoo/base-m+code": "zoo/base-m",
    }
    assert set(tr.finetune_pairs(MEMBERS, "contaminated")) == {
        "zoo/base-m+math-test-x1",
        "zoo/base-m+math-test-x5",
        "zoo/base-m+math-test-syn-x5",
    }
    assert set(tr.finetune_pairs(MEMBERS, "control")) == {
        "zoo/base-m+math-train",
        "zoo/base-m+other-task",
        "zoo/base-m+general",
    }
    with pytest.raises(ValueError, match="allowed values"):
        tr.finetune_pairs(MEMBERS, "leaked")


def _settings():
    return tr.Settings(
        checkpoints=["zoo/base-l@step-200", "zoo/base-l"],
        specialised={"zoo/base-m+math": "zoo/base-m"},
        specialised_targets={"zoo/base-m+math": "math"},
        contaminated={"zoo/base-m+math-test-x5": "zoo/base-m"},
        controls={},
        contaminated_tasks=["add"],
        tasks=["add", "add2", "code"],
    )


def _measurements():
    groups = {"add": "math", "add2": "math", "code": "code"}
    table = {  # model -> task -> (perf, mui) on the test split
        "zoo/base-l@step-200": {"add": (10, 2.0), "add2": (5, 2.0), "code": (20, 3.0)},
        "zoo/base-l": {"add": (30, 3.0), "add2": (15, 1.0), "code": (20.5, 2.0)},
        "zoo/base-m": {"add": (40, 2.0), "add2": (30, 2.0), "code": (50, 3.0)},
        "zoo/base-m+math": {"add": (60, 3.0), "add2": (45, 2.5), "code": (30, 4.0)},
        "zoo/base-m+math-test-x5": {"add": (90, 2.5), "add2": (20, 1.0), "code": (40, 2.0)},
    }
    return pd.DataFrame(
        [
            {
                "model": m,
                "task": t,
                "group": groups[t],
                "split": "test",
                "n": 10,
                "perf": p,
                "mui": u,
            }
            for m, d in table.items()
            for t, (p, u) in d.items()
        ]
    )


def test_analyse_settings_from_measurements():
    s = _settings()
    assert s.models() == [
        "zoo/base-l@step-200",
        "zoo/base-l",
        "zoo/base-m",
        "zoo/base-m+math",
        "zoo/base-m+math-test-x5",
    ]
    out = tr.analyse(_measurements(), s, tol_perf=1.0, tol_mui=0.0)
    pre = out["pretraining"].set_index("task")
    assert (
        pre.loc["add", "direction"] == "accumulating" and pre.loc["add2", "direction"] == "evolving"
    )
    assert pre.loc["code", "direction"] == "flat", "a 0.5-point change is below tol_perf=1"
    spec = out["specialised"].set_index("task")
    assert spec.loc["add", "domain"] == "in-domain" and spec.loc["code", "domain"] == "ood"
    assert (
        spec.loc["add", "direction"] == "accumulating"
        and spec.loc["code", "direction"] == "coarsening"
    )
    cont = out["contaminated"].set_index("task")
    assert list(cont["domain"]) == ["in-domain", "in-group", "ood"]
    assert (
        cont.loc["add", "direction"] == "accumulating"
        and cont.loc["add2", "direction"] == "collapsing"
    )
    assert out["controls"].empty and "direction" in out["controls"].columns


def test_tiny_pairs_requires_measured_bases():
    with pytest.raises(ValueError, match="were not measured"):
        tr.tiny_pairs(_measurements(), {"zoo/base-m+code": "zoo/base-x"}, tr.specialised_domain())


def test_resolve_settings_explicit_config_needs_no_world():
    cfg = Config(
        checkpoints=["a@step-1", "a"],
        specialised={"b+code": "b"},
        contaminated={},
        controls={},
        contaminated_tasks=["gsm8k"],
        tasks=["gsm8k", "mbpp"],
    )
    s = tr.resolve_settings(cfg)
    assert s.specialised_targets == {"b+code": "code"} and s.contaminated == {}
    bad = Config(
        checkpoints=[],
        specialised={},
        contaminated={},
        controls={},
        contaminated_tasks=["gsm8k"],
        tasks=["mbpp"],
    )
    assert tr.resolve_settings(bad).tasks == ["mbpp", "gsm8k"], (
        "the leaked task must always be measured"
    )


# --- config and figures -----------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["tiny", "smoke", "paper", "paper-pythia", "dryrun"])
def test_every_profile_validates(profile):
    cfg = load_params("02_training_trajectories", profile)
    assert cfg.tol_perf >= 0 and cfg.n_items >= 4
    if profile == "smoke":
        assert cfg.world == "micro"


def test_config_rejects_bad_tolerance_with_field_name():
    with pytest.raises(ParamsError, match="tol_mui"):
        load_params("02_training_trajectories", "tiny", overrides={"tol_mui": -0.1})
    with pytest.raises(ParamsError, match="splits"):
        load_params("02_training_trajectories", "tiny", overrides={"splits": ["dev"]})


def test_contamination_text_reports_leak_and_ood_collapse():
    out = tr.analyse(_measurements(), _settings(), tol_perf=1.0)
    text = directions.contamination_text(out["contaminated"], out["controls"])
    # base-m add 40/2.0 -> x5 90/2.5; OOD is only `code` (50/3.0 -> 40/2.0: collapsing)
    assert "add 40.0->90.0% perf, MUI 2.00->2.50% (accumulating)" in text
    assert "OOD collapsing on 1/1 tasks" in text and "no control fine-tunes measured" in text


def test_notebook_follows_the_parameters_convention():
    import json
    import re as _re

    from kit.core.paths import REPO_ROOT

    nb = json.loads((REPO_ROOT / "notebooks" / "02_training_trajectories.ipynb").read_text())
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for c in code_cells:
        c["source"] = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
    tagged = [i for i, c in enumerate(code_cells) if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1, "exactly one code cell must be tagged 'parameters'"
    assert code_cells[tagged[0]]["source"].startswith('profile = "tiny"'), (
        "the parameters cell starts with the profile"
    )
    assert (
        'kit.start("02_training_trajectories", profile, out_dir, namespace=globals())'
        in code_cells[tagged[0] + 1]["source"]
    )
    for c in code_cells[tagged[0] + 1 :]:
        assert not _re.search(r"^\s*(profile|out_dir)\s*=", c["source"], _re.M), (
            "a later cell reassigns a parameter"
        )


def test_coarse_checkpoints_keep_first_and_last():
    names = [f"c{i}" for i in range(10)]
    assert tr.coarse_checkpoints(names, 3) == ["c0", "c5", "c9"]  # index 4.5 rounds half up
    assert tr.coarse_checkpoints(names, 2) == ["c0", "c9"]
    assert tr.coarse_checkpoints(names[:2], 5) == ["c0", "c1"]
    with pytest.raises(ValueError, match="at least 2"):
        tr.coarse_checkpoints(names, 1)


def test_dryrun_profile_is_the_paper_profile_on_revision_twins():
    paper, dry = (
        load_params("02_training_trajectories", "paper"),
        load_params("02_training_trajectories", "dryrun"),
    )
    # the same OLMo-2 revisions, in order, on the OLMo-2 twin
    assert [c.split("@")[1] if "@" in c else None for c in dry.checkpoints] == [
        c.split("@")[1] if "@" in c else None for c in paper.checkpoints
    ]
    assert all(c.startswith("twin/olmo2") for c in dry.checkpoints)
    assert len(dry.specialised) == len(paper.specialised) and set(dry.specialised_targets) == set(
        dry.specialised
    )
    assert sorted(dry.specialised_targets.values()) == sorted(paper.specialised_targets.values())
    assert all(m.startswith("twin/") for m in tr.resolve_settings(dry).models())
    assert (dry.tasks, dry.splits, dry.contaminated_tasks) == (
        paper.tasks,
        paper.splits,
        paper.contaminated_tasks,
    )
    assert (
        trajectory_sections.source_label(dry.checkpoints) == "measured"
        and trajectory_sections.source_label(["zoo/base-s"]) == "tiny world"
    )


def test_real_profiles_name_contaminated_recipes_and_refuse_others():
    cfg = load_params("02_training_trajectories", "real", {})
    assert cfg.items_of in cfg.contaminated and cfg.checkpoints == []
    # one specialised fine-tune (+arc-train): its claims read "cannot be decided here"
    assert list(cfg.specialised) == ["real/smollm2-135m-instruct+arc-train"]
    smoke = load_params("02_training_trajectories", "realsmoke", {})
    assert smoke.items_of in smoke.contaminated and len(smoke.controls) == 1
    with pytest.raises(ParamsError, match="items_of"):
        load_params(
            "02_training_trajectories", "real", {"items_of": "real/smollm2-135m-instruct+arc-train"}
        )
