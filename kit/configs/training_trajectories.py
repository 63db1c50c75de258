"""Config of notebooks/02_training_trajectories.ipynb (seed 000, sections 3.3–3.4, B.2/B.3)."""

from typing import Literal

from pydantic import Field, field_validator

from kit.configs.utility_law import Score, Threshold
from kit.core.params import BaseConfig


class Config(BaseConfig):
    published_tol_perf: float = Field(0.0, ge=0.0, le=100.0)
    """Tolerance on |Δperformance| (percentage points) for labelling the published tables; below it
    a change is ``flat``."""
    published_tol_mui: float = Field(0.0, ge=0.0, le=100.0)
    """Tolerance on |ΔMUI| (percentage points of MUI) for the published tables; the tables print one
    decimal."""
    tol_perf: float = Field(2.0, ge=0.0, le=100.0)
    """Tolerance on |Δperformance| (points) for the computed trajectories: accuracy on n_items items
    is noisy."""
    tol_mui: float = Field(0.05, ge=0.0, le=100.0)
    """Tolerance on |ΔMUI| (points of MUI) for the computed trajectories."""
    late_steps: int = Field(2, ge=1, le=20)
    """How many final checkpoint steps of the computed trajectory count as "late" pre-training (the
    published OLMo table always uses the paper's 2: 3T->3.5T->4T)."""
    coarse_checkpoints: int = Field(5, ge=2, le=100)
    """How many evenly spaced checkpoints (first and last included) the coarse trajectory keeps; its
    last step is its "late" step (5 -> the last quarter of training, like the paper's 3T->4T)."""
    checkpoints: list[str] | None = None
    """Checkpoint trajectory in training order (kit.load_model names; hub checkpoints as
    ``org/model@<revision>``, e.g. ``allenai/OLMo-2-1124-7B@stage1-step122000-tokens512B``); None:
    every ``@step-`` member of the world's base with the most checkpoints, then that base; []: no
    trajectory (a trajectory needs >= 2)."""
    specialised: dict[str, str] | None = None
    """Specialised fine-tune -> its base; None: the world's ``+math``/``+code`` members."""
    specialised_targets: dict[str, str] | None = None
    """Specialised fine-tune -> the task group it targets (``math``, ``code``); None: the name's
    ``+<group>`` suffix."""
    contaminated: dict[str, str] | None = None
    """Contaminated fine-tune -> its base; None: the world's ``+<task>-test-xN`` /
    ``+<task>-test-syn-xN`` members."""
    controls: dict[str, str] | None = None
    """Uncontaminated fine-tune -> its base; None: the world's ``+<task>-train``, ``+other-task``,
    ``+general`` members."""
    contaminated_tasks: list[str] | None = Field(None, min_length=1)
    """Tasks whose test split leaked into the contaminated fine-tunes; None:
    ``[kit.world.CONTAMINATED_TASK]``."""
    items_of: str | None = None
    """Real fine-tunes: a contaminated recipe of ``kit.models.recipes.RECIPES`` whose injected test
    items are the leaked benchmark's ``test`` split (its unseen test items the ``fresh`` one), every
    model asked them as the fine-tunes were trained (``kit.mui.measurements.leak_items``); None:
    each model's own items (tiny-world splits, or a benchmark's first test items)."""
    tasks: list[str] | None = Field(None, min_length=1)
    """Tasks to evaluate: ``kit.world.TASKS`` names for zoo models, ``kit.load_benchmark`` names for
    hub models; None: every task of the world."""
    n_items: int = Field(100, ge=4, le=200)
    """Items per task and split (the public test split has 200)."""
    splits: list[Literal["test", "fresh", "test-syn", "fresh-syn"]] = Field(
        ["test", "fresh"], min_length=1
    )
    """Splits evaluated: the public ``test`` split and unseen ``fresh`` items (the true
    capability)."""
    score: Score = "score"
    """Neuron contribution score for MUI (kit.mui.metric)."""
    threshold: Threshold = "topk"
    """Key-neuron threshold for MUI (kit.mui.metric); ``topk`` keeps max(1, round(d_mlp/1000)) per
    layer and token."""
    max_new_tokens: int = Field(1, ge=1, le=512)
    """Greedy response length whose tokens MUI is measured on (every tiny-world answer is one
    token)."""
    mui_batch_size: int = Field(32, ge=1, le=4096)
    """Zoo models: rows per MUI scoring pass (real models are batched by ``max_batch_tokens``)."""
    max_batch_tokens: int = Field(8192, ge=1)
    """Real models: padded tokens per teacher-forced MUI pass (rows x longest row); lower it when
    the GPU runs out of memory."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Real models: weight dtype (``bfloat16`` for 7B checkpoints: ~15 GB each, one loaded at a
    time); zoo models are float32."""
    prompt_style: Literal["instructed", "plain"] = "instructed"
    """Real benchmarks: ``instructed`` wraps each question in its benchmark's answer-format
    instruction (``kit.data.prompts``: lm-evaluation-harness's Llama-3 instruct templates where they
    exist), ``plain`` shows the bare question (as the MUI paper's code shows instruct models).
    Tiny-world tasks keep their format."""

    reseeds: int = Field(1, ge=0, le=10)
    """Further item draws (item seeds ``seed + 1`` ... ``seed + reseeds``) on which every model is
    measured again and the measured claims recomputed, to mark the verdicts that flip
    (``kit.core.claims.mark_stability``); each costs one more measurement pass; 0: no stability
    check."""

    @field_validator("items_of")
    @classmethod
    def _contaminated_recipe(cls, v: str | None) -> str | None:
        from kit.models.recipes import RECIPES

        leaking = sorted(n for n, r in RECIPES.items() if r.inject == "test")
        if v is not None and v not in leaking:
            raise ValueError(
                f"items_of={v!r} is not a contaminated fine-tune; allowed: {', '.join(leaking)}"
            )
        return v

    @field_validator("checkpoints")
    @classmethod
    def _trajectory(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(v) == 1:
            raise ValueError(f"{v} is one checkpoint: a trajectory needs >= 2 (or [] for none)")
        if v is not None and len(set(v)) != len(v):
            raise ValueError(f"{v} lists a checkpoint twice; list each once")
        return v
