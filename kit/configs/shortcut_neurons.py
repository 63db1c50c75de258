"""Config of notebooks/03_shortcut_neurons.ipynb (seed 001: shortcut neurons, trustworthy evaluation)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..params import BaseConfig

TABLE2_LABELS = ("Vanilla", "+test", "+test-Syn", "+5x test", "+5x test-Syn", "+other data", "+train split",
                 "+another task")


class Config(BaseConfig):
    task: str = "add"
    """Contaminated benchmark: a tiny-world task (``kit.world.TASKS``; the world contaminates ``add``) or a
    real benchmark name for ``kit.load_benchmark`` (``gsm8k``)."""
    base_model: str = "zoo/base-m"
    """The vanilla model M0: the patching model of the causal score and of trustworthy evaluation."""
    variants: dict[str, str] = {
        "Vanilla": "zoo/base-m",
        "+test": "zoo/base-m+math-test-x1",
        "+test-Syn": "zoo/base-m+math-test-syn-x1",
        "+5x test": "zoo/base-m+math-test-x5",
        "+5x test-Syn": "zoo/base-m+math-test-syn-x5",
        "+other data": "zoo/base-m+general",
        "+train split": "zoo/base-m+math-train",
        "+another task": "zoo/base-m+other-task",
    }
    """Table 2 rows: label -> model name (the paper's Vanilla, +GSM-i, +GSM-i-Syn, +5xGSM-i, +5xGSM-i-Syn,
    +OpenOrca, +GSM8K Train, +MATH)."""
    contaminated: list[str] = ["+test", "+test-Syn", "+5x test", "+5x test-Syn"]
    """Labels of ``variants`` that saw the benchmark's test items (the rest are uncontaminated)."""
    locate_contaminated: str = "zoo/base-m+math-test-x5"
    """M_con of the comparative and causal scores."""
    locate_uncontaminated: str = "zoo/base-m+other-task"
    """M_un of the comparative and causal scores (an uncontaminated fine-tune, the paper's +MATH analogue)."""
    n_locate: int = Field(200, ge=2, le=100_000)
    """Contaminated test items used to locate the neurons (the paper used its 657 GSM-i items)."""
    n_eval: int = Field(200, ge=2, le=100_000)
    """Test items scored for Ori and TE."""
    n_ref: int = Field(400, ge=2, le=100_000)
    """Fresh (never-seen) items whose accuracy is the reference score Ref."""
    group_size: int = Field(16, ge=1, le=4096)
    """Adjacent neurons per causal-score group (the paper: 512 of 11008 per layer, ~4.7%)."""
    causal_rank_by: Literal["exact", "teacher_forced"] = "exact"
    """Which causal score enters the final ranking (both are computed and reported)."""
    causal_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Weight of the causal score's percentile rank in the final ranking (the rest: comparative)."""
    patched_fraction: float = Field(0.0142, gt=0.0, le=0.05)
    """Share of all MLP neurons patched for TE (the paper: 5000 of 352,256 LLaMA2-7B neurons = 1.42%)."""
    sparsity_percents: list[float] = [0.5, 1.0, 1.42, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0, 100.0]
    """Figure 3 grid: patched neurons as % of all MLP neurons."""
    side_tasks: list[str] = ["add2", "facts-mc"]
    """Table 3 tasks (the paper's MAWPS and MMLU): another math task and a general-knowledge task."""
    n_side: int = Field(200, ge=2, le=100_000)
    """Items per side-effect task."""
    transfer_task: str | None = "add2"
    """Table 4: a second task to contaminate (fine-tunes built with the zoo's recipe), scored with the
    neurons located on ``task``; None skips Table 4."""
    transfer_variants: list[Literal["+test", "+test-Syn", "+5x test", "+5x test-Syn"]] = [
        "+test", "+test-Syn", "+5x test", "+5x test-Syn"]
    """Table 4's contaminated rows to build on ``transfer_task`` (injected split and copies as in Table 2)."""
    transfer_controls: dict[str, str] = {
        "Vanilla": "zoo/base-m", "+other data": "zoo/base-m+general", "+transfer-task train": "zoo/base-m+other-task",
        "+first-task train": "zoo/base-m+math-train",
    }
    """Table 4's uncontaminated rows (the paper's Vanilla, +OpenOrca, +SVAMP, +ASDiv)."""
    max_new_tokens: int = Field(1, ge=1, le=512)
    """Tokens generated per item (tiny-world answers are one token; GSM8K needs a few hundred)."""
    max_rows: int = Field(4096, ge=1)
    """Batch rows per patched generation (groups x prompts are split into chunks of this size)."""

    @model_validator(mode="after")
    def _check(self) -> "Config":
        unknown = [c for c in self.contaminated if c not in self.variants]
        if unknown:
            raise ValueError(f"contaminated: {unknown} are not labels of variants ({', '.join(self.variants)})")
        if sorted(self.sparsity_percents) != self.sparsity_percents or any(not 0 < p <= 100 for p in self.sparsity_percents):
            raise ValueError("sparsity_percents must be increasing percentages in (0, 100]")
        return self
