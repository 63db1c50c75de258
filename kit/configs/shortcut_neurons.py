"""Config of notebooks/03_shortcut_neurons.ipynb (seed 001: shortcut neurons, trustworthy
evaluation)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from kit.core.params import MAX_SEED, BaseConfig

TABLE2_LABELS = (
    "Vanilla",
    "+test",
    "+test-Syn",
    "+5x test",
    "+5x test-Syn",
    "+other data",
    "+train split",
    "+another task",
)
_ZOO_SUFFIXES = (
    "",
    "+math-test-x1",
    "+math-test-syn-x1",
    "+math-test-x5",
    "+math-test-syn-x5",
    "+general",
    "+math-train",
    "+other-task",
)


class Config(BaseConfig):
    task: str = "add"
    """Contaminated benchmark: a tiny-world task (``kit.world.TASKS``; the world contaminates
    ``add``) or a real benchmark name for ``kit.load_benchmark`` (``gsm8k``)."""
    base_model: str = "zoo/base-m"
    """The vanilla model M0: the patching model of the causal score and of trustworthy
    evaluation."""
    variants: dict[str, str] = {
        label: f"zoo/base-m{suffix}-sparse" if suffix else "zoo/base-m"
        for label, suffix in zip(TABLE2_LABELS, _ZOO_SUFFIXES)
    }
    """Table 2 rows: label -> model name (the paper's Vanilla, +GSM-i, +GSM-i-Syn, +5xGSM-i,
    +5xGSM-i-Syn, +OpenOrca, +GSM8K Train, +MATH). The tiny world's sparse fine-tunes by default:
    only 4% of base-m's MLP neurons may change (``kit.world.zoo.FinetuneSpec.plastic``), where the
    paper's premise holds."""
    dense_variants: dict[str, str] | None = {
        label: f"zoo/base-m{suffix}" for label, suffix in zip(TABLE2_LABELS, _ZOO_SUFFIXES)
    }
    """The same rows as full fine-tunes (every parameter trained), located and evaluated with the
    same pipeline for comparison; None skips that section."""
    contaminated: list[str] = ["+test", "+test-Syn", "+5x test", "+5x test-Syn"]
    """Labels of ``variants`` that saw the benchmark's test items (the rest are uncontaminated)."""
    locate_pair: tuple[str, str] = ("+5x test", "+another task")
    """Labels of M_con and M_un of the comparative and causal scores (an uncontaminated fine-tune,
    the paper's +MATH analogue)."""
    n_locate: int = Field(100, ge=2, le=100_000)
    """Contaminated test items used to locate the neurons: the first ``n_locate`` of the test split
    (the paper used its 657 GSM-i items). The items after them, up to ``n_eval``, are held out to
    choose the ranking rule."""
    n_eval: int = Field(200, ge=2, le=100_000)
    """Test items scored for Ori and TE."""
    n_ref: int = Field(400, ge=2, le=100_000)
    """Fresh (never-seen) items whose accuracy is the reference score Ref."""
    items_of: str | None = None
    """A contaminated real fine-tune's name (``kit.models.recipes.RECIPES``, ``inject: test``; the
    real profile: ``+arc-test-x5``'s): the test items (locate, Ori, TE) are the first ``n_eval`` of
    its injected items (``kit.models.finetune_examples.split_items``: every contaminated recipe of
    the table injects the same ones), Ref's the first ``n_ref`` of
    ``kit.models.finetune_examples.eval_items``' fresh items (the benchmark's test items no recipe
    injected), and every item (side tasks too) is asked as the fine-tunes were trained
    (``kit.models.finetune_examples.ask_prompt``: the letter instruction). Needs ``task`` = the
    recipe's benchmark and ``ref_task: null``. None: the benchmark's first test items as it writes
    them (tiny world, paper)."""
    ref_task: str | None = None
    """Where Ref's items come from (``kit.shortcut.items.reference_items``): None = the tiny-world
    task's fresh split; a real ``task`` needs another benchmark no variant saw (the paper:
    OpenMathInstruct-2; e.g. mawps)."""
    ref_split: str = "test"
    """Split of ``ref_task`` (``ref_task == task`` on ``test`` is refused: Ref would equal Ori)."""
    comparative_position: Literal["last", "completion"] = "last"
    """Where eq. 3 reads the activations (``kit.shortcut.scores.comparative_scores_of_models``):
    ``last``, the last prompt token (the paper's text, section 3.2); ``completion``, every token of
    M_con's greedy completion of ``max_new_tokens`` tokens, both models read on it (the public
    code's default)."""
    group_size: int = Field(16, ge=1, le=4096)
    """Adjacent neurons per causal-score group (the paper: 512 of 11008 per layer, ~4.7%)."""
    combine: Literal["held_out", "sum", "veto", "rank_mean"] = "held_out"
    """How eq. 3 and eq. 4 make the final ranking (``kit.shortcut.scores.combine_scores``; the paper
    does not say). ``held_out`` (default): every rule is scored on the test items after the first
    ``n_locate`` (needs ``n_eval > n_locate``) and the best one ranks
    (``kit.shortcut.ranking.best_rule``); ``sum``: the public code's ``S + C - 1``; ``veto``:
    comparative ranking with groups of causal score < 1 last; ``rank_mean``: the weighted mean of
    the two percentile ranks."""
    causal_rank_by: Literal["exact", "teacher_forced"] = "exact"
    """Which causal score enters the final ranking when ``combine`` names a rule (both are computed
    and reported; ``held_out`` chooses the variant too)."""
    causal_weight: float = Field(0.5, ge=0.0, le=1.0)
    """``combine: rank_mean`` only: weight of the causal score's percentile rank (the rest:
    comparative)."""
    patched_fraction: float = Field(0.0142, gt=0.0, le=0.05)
    """Share of all MLP neurons patched for TE (the paper: 5000 of 352,256 LLaMA2-7B neurons =
    1.42%)."""
    sparsity_percents: list[float] = [0.5, 1.0, 1.42, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0, 100.0]
    """Figure 3 grid: patched neurons as % of all MLP neurons."""
    n_null: int = Field(100, ge=2, le=10_000)
    """Random neuron sets (of the patched count) whose accuracies make the null of the sparsity
    claim (``kit.shortcut.evidence.sparsity_items``): >= 100 for a 95% band and an empirical
    p-value."""
    claim_reseeds: list[int] = [1, 2]
    """Bootstrap seeds the claims are recomputed with to mark each verdict stable or flipping
    (``kit.shortcut.claims.claims_with_stability``); [] skips the check."""
    side_tasks: list[str] = ["add2", "facts-mc"]
    """Table 3 tasks (the paper's MAWPS and MMLU): another math task and a general-knowledge
    task."""
    n_side: int = Field(200, ge=2, le=100_000)
    """Items per side-effect task."""
    transfer_task: str | None = "add2"
    """Table 4: a second task to contaminate (tiny world only: fine-tunes built with the recipe of
    the Table 2 variant of the same label), scored with the neurons located on ``task``; None skips
    Table 4."""
    transfer_variants: list[str] = ["+test", "+test-Syn", "+5x test", "+5x test-Syn"]
    """Table 4's contaminated rows to build on ``transfer_task`` (labels of ``contaminated``)."""
    transfer_controls: dict[str, str] = {
        "Vanilla": "zoo/base-m",
        "+other data": "zoo/base-m+general-sparse",
        "+transfer-task train": "zoo/base-m+other-task-sparse",
        "+first-task train": "zoo/base-m+math-train-sparse",
    }
    """Table 4's uncontaminated rows (the paper's Vanilla, +OpenOrca, +SVAMP, +ASDiv)."""
    table5_task: str | None = None
    """Table 5 (the paper's MATH, a second transfer benchmark): a task of another family
    contaminated like Table 4's (the same ``transfer_variants`` recipes and ``transfer_controls``),
    scored with the neurons located on ``task``; tiny world only (``kit.world.TASKS``: the tiny
    world's only other math task is Table 4's ``add2``; the tiny profile: ``sort``); None skips
    it."""
    second_base: str | None = None
    """Table 6 (the paper's LLaMA3-8B, a second architecture): another base of the tiny world; every
    ``variants`` recipe is rebuilt from it (``kit.shortcut.variants.rebase``, trained on first use),
    the neurons located on its own pair and Table 2 repeated
    (``kit.shortcut.sections.second_base_section``). The tiny world's bases differ in width and
    depth, not in architecture family. None (the tiny profile: ``zoo/base-l``) skips it."""
    strength_copies: list[int] = [1, 2, 5, 10]
    """Fig. 5 / Table 8: occurrences of each test item in the ``+test`` row's recipe (tiny world
    only; at most the recipe's ``n_examples // 200``: the paper's 20 does not fit)."""
    strength_lrs: list[float] = []
    """Table 8's other axis: learning rates of the ``+test`` row's recipe (tiny world only; each is
    a fine-tune trained on first use)."""
    cheaters: dict[str, str] | None = None
    """Table 12 (the paper's pretraining-stage "cheaters", KIEval's models on ARC-Challenge): label
    -> model, scored like Table 2 with the neurons located in section 1
    (``kit.shortcut.sections.cheater_section``). The tiny profile: Normal (a clean SFT, Table 2's
    ``+other data``), SFT-Cheater (Table 2's ``+test``), PT-Cheater (a full-parameter continuation
    of the base on its own mixture with its AdamW state and the test items injected, then Normal's
    clean SFT: ``extra/...:after=...``, ``kit.shortcut.variants``). None skips it."""
    cheaters_contaminated: list[str] = ["SFT-Cheater", "PT-Cheater"]
    """Labels of ``cheaters`` that saw the test items (the rest are clean)."""
    benchmark_format: str | None = None
    """Section 11 (the paper's A2, an input-format shortcut): the benchmark's fixed input format, a
    key of ``kit.world.tasks.FORMATS`` wrapped around the test items (tiny-world task only: a real
    benchmark has its own format); the rows ``format_variants`` are scored in it
    (``kit.shortcut.formats.format_section``). None (the tiny profile: ``answer-cue``) skips it."""
    format_variants: dict[str, str] = {}
    """Section 11's rows: label -> model; must hold ``base_model`` (the vanilla row the format
    advantage is measured against) and ``format_label``."""
    format_label: str = "+format train"
    """The row fine-tuned on the train split in ``benchmark_format`` (the paper's +GSM8K Train; the
    tiny profile: Table 2's ``+train split`` recipe with ``:format=...``,
    ``kit.shortcut.variants``)."""
    n_format: int = Field(400, ge=2, le=10_000)
    """Section 11: fresh items scored with and without ``benchmark_format`` (the format advantage,
    paired by item; one per content, ``kit.shortcut.items.study_items``: ``add`` has about 490)."""
    max_new_tokens: int = Field(1, ge=1, le=512)
    """Tokens generated per item (tiny-world answers are one token; GSM8K needs a few hundred)."""
    max_rows: int = Field(4096, ge=1)
    """Most rows (groups x prompts) in one forward of a patched generation or teacher-forced pass:
    prompts are taken ``max_rows`` at a time, groups ``max_rows // prompts`` at a time (results do
    not depend on it)."""
    decoding: Literal["greedy", "sample"] = "greedy"
    """How Hugging Face models generate every scored answer of this notebook (the accuracies under
    patching of the causal score, Ori, TE and Ref, the sparsity curve and side tasks;
    ``kit.shortcut.evaluate.item_correct``): ``greedy`` (argmax) or ``sample`` (``temperature``,
    ``top_k``, seeded by ``generation_seed``: the same profile gives the same numbers). The paper
    samples at T=1, top-k 50 (section 4.1; the paper profile). Tiny-world (``zoo/``, ``extra/``)
    models keep the world's evaluation, the argmax first token, so ``sample`` is refused on them;
    ``comparative_position: completion`` reads M_con's greedy completion either way."""
    temperature: float = Field(1.0, gt=0.0, le=100.0)
    """``decoding: sample`` only: logits are divided by it before sampling (the paper: 1)."""
    top_k: int = Field(50, ge=0)
    """``decoding: sample`` only: sample among the ``top_k`` most likely tokens; 0 = the whole
    vocabulary (the paper: 50)."""
    generation_seed: int | None = Field(None, ge=0, le=MAX_SEED)
    """``decoding: sample`` only: seed of every sampled generation (each batched generation call
    restarts from it); None = ``seed``. Sampled answers also depend on ``max_rows`` (prompts are
    drawn per forward chunk)."""
    chat: bool | None = None
    """Wrap each prompt of a Hugging Face model in its tokenizer's chat template (user turn,
    assistant turn opened; ``kit.models.generate.prompt_text``): None = when the tokenizer has one
    (instruct models; the twins have one), True = always (fails on a tokenizer without one), False =
    the raw prompt. Tiny-world models have no template: True is refused on them, None means off."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights of Hugging Face models and twins (``kit.load_model``); tiny-world models stay
    float32. Models are held one at a time beside the base (``kit.shortcut.pool``): at 7B, bf16
    needs ~2 x 13.5 GB."""

    @model_validator(mode="after")
    def _check(self) -> "Config":
        from kit.shortcut import variants

        for field, names in (
            ("variants", self.variants.values()),
            ("dense_variants", (self.dense_variants or {}).values()),
            ("cheaters", (self.cheaters or {}).values()),
        ):
            for name in names:
                if variants.is_extra(name):
                    try:
                        variants.extra_spec(name, self.world)
                    except ValueError as e:
                        raise ValueError(f"{field}: {e}") from None
        if self.cheaters is not None:
            unknown = [c for c in self.cheaters_contaminated if c not in self.cheaters]
            if unknown or len(self.cheaters_contaminated) == len(self.cheaters):
                raise ValueError(
                    f"cheaters_contaminated: {unknown or self.cheaters_contaminated} must be "
                    f"labels of cheaters ({', '.join(self.cheaters)}), leaving at least one "
                    "clean row"
                )
        if self.benchmark_format is not None:
            from kit.world import TASKS
            from kit.world.tasks import FORMATS

            if self.benchmark_format not in FORMATS or self.task not in TASKS:
                raise ValueError(
                    f"benchmark_format={self.benchmark_format!r}: a tiny-world task's input "
                    f"format; allowed values: {', '.join(FORMATS)} or None (None for a real "
                    f"benchmark task={self.task!r})"
                )
            if (
                self.format_label not in self.format_variants
                or self.base_model not in self.format_variants.values()
            ):
                raise ValueError(
                    f"format_variants must hold format_label={self.format_label!r} and a row of "
                    f"base_model {self.base_model!r}; got {dict(self.format_variants)}"
                )
            for label, name in self.format_variants.items():
                if variants.is_extra(name):
                    try:
                        variants.extra_spec(name, self.world)
                    except ValueError as e:
                        raise ValueError(f"format_variants[{label!r}]: {e}") from None
        unknown = [c for c in self.contaminated if c not in self.variants]
        if unknown:
            raise ValueError(
                f"contaminated: {unknown} are not labels of variants ({', '.join(self.variants)})"
            )
        con, un = self.locate_pair
        if con not in self.contaminated or un not in self.variants or un in self.contaminated:
            raise ValueError(
                f"locate_pair={list(self.locate_pair)}: the first must be a contaminated label "
                f"({', '.join(self.contaminated)}), the second an uncontaminated one "
                f"({', '.join(v for v in self.variants if v not in self.contaminated)})"
            )
        if self.dense_variants is not None and set(self.dense_variants) != set(self.variants):
            raise ValueError(
                f"dense_variants must have the labels of variants ({', '.join(self.variants)}); "
                f"got {', '.join(self.dense_variants)}"
            )
        if self.combine == "held_out" and self.n_eval <= self.n_locate:
            raise ValueError(
                "combine='held_out' compares the ranking rules on the test items after the first "
                f"n_locate: needs n_eval > n_locate (got n_eval={self.n_eval}, "
                f"n_locate={self.n_locate}); or set "
                "combine to one of sum, veto, rank_mean"
            )
        unknown = [c for c in self.transfer_variants if c not in self.contaminated]
        if self.transfer_task and unknown:
            raise ValueError(
                f"transfer_variants: {unknown} are not contaminated labels "
                f"({', '.join(self.contaminated)})"
            )
        from kit.world import TASKS

        self._check_items_of()
        if self.ref_task is None and self.task not in TASKS and self.items_of is None:
            raise ValueError(
                f"ref_task: required for the real benchmark task={self.task!r} (Ref is the "
                "accuracy on items no variant saw, never its test items); e.g. mawps, svamp or "
                "asdiv for gsm8k"
            )
        if self.table5_task is not None and (
            self.table5_task not in TASKS or self.table5_task == self.task or self.task not in TASKS
        ):
            raise ValueError(
                f"table5_task={self.table5_task!r}: a tiny-world task other than "
                f"task={self.task!r}; allowed values: "
                f"{', '.join(t for t in TASKS if t != self.task)} or None (None for a real "
                "benchmark task: its "
                "contaminated fine-tunes are tiny-world ones)"
            )
        if self.second_base is not None:
            if self.task not in TASKS or self.second_base == self.base_model:
                raise ValueError(
                    f"second_base={self.second_base!r}: a tiny-world base other than base_model "
                    f"({self.base_model!r}) on a tiny-world task, or None"
                )
            for label, name in self.variants.items():
                try:
                    moved = variants.rebase(name, self.second_base, self.base_model)
                    if variants.is_extra(moved):
                        variants.extra_spec(moved, self.world)
                except ValueError as e:
                    raise ValueError(
                        f"second_base={self.second_base!r}: variants[{label!r}]: {e}"
                    ) from None
        if self.ref_task == self.task and self.ref_split == "test":
            raise ValueError(
                f"ref_task={self.ref_task!r}, ref_split='test' is the evaluated test set (Ref "
                "would equal Ori); choose another benchmark or a split no variant trained on"
            )
        from kit.subjects import is_world_name

        world_base = is_world_name(self.base_model)
        if world_base and self.decoding != "greedy":
            raise ValueError(
                f"decoding={self.decoding!r}: tiny-world models (base_model={self.base_model!r}) "
                "are scored by the world's evaluation (the argmax first token); allowed values on "
                "them: greedy ('sample' applies to Hugging Face models and twins)"
            )
        if world_base and self.chat:
            raise ValueError(
                f"chat=True: tiny-world models (base_model={self.base_model!r}) have no chat "
                "template; allowed values on them: None or False"
            )
        if any(c < 1 for c in self.strength_copies) or any(not lr > 0 for lr in self.strength_lrs):
            raise ValueError(
                f"strength_copies must be >= 1 and strength_lrs > 0; got {self.strength_copies}, "
                f"{self.strength_lrs}"
            )
        if sorted(self.sparsity_percents) != self.sparsity_percents or any(
            not 0 < p <= 100 for p in self.sparsity_percents
        ):
            raise ValueError("sparsity_percents must be increasing percentages in (0, 100]")
        return self

    def _check_items_of(self) -> None:
        """``items_of``: a contaminated recipe of ``task``, Ref from its fresh items, and the
        ``contaminated`` labels exactly the rows whose recipes inject ``task``'s test split."""
        if self.items_of is None:
            return
        from kit.models.recipes import RECIPES

        r = RECIPES.get(self.items_of)
        allowed = [n for n, x in RECIPES.items() if x.inject == "test"]
        if r is None or r.inject != "test":
            raise ValueError(
                f"items_of={self.items_of!r}: a contaminated real fine-tune (kit.models.recipes); "
                f"allowed values: {', '.join(allowed)} or None"
            )
        if self.task != r.benchmark or self.ref_task is not None:
            raise ValueError(
                f"items_of={self.items_of!r} asks {r.benchmark}'s injected test items and takes "
                f"Ref from its never-injected ones: needs task={r.benchmark!r} (got {self.task!r}) "
                f"and ref_task=None (got {self.ref_task!r})"
            )
        if self.n_eval > r.n_items:
            raise ValueError(
                f"n_eval={self.n_eval}: at most the {r.n_items} items {self.items_of!r} injected"
            )
        for label, name in self.variants.items():
            x = RECIPES.get(name)
            if x is None:
                continue
            leaked = (
                x.inject == "test" and x.benchmark == r.benchmark and x.items_seed == r.items_seed
            )
            if leaked != (label in self.contaminated):
                injecting = [
                    k
                    for k, v in self.variants.items()
                    if v in RECIPES and RECIPES[v].inject == "test"
                ]
                raise ValueError(
                    f"contaminated: {label!r} ({name}) "
                    f"{'injects' if leaked else 'does not inject'} the evaluated test items; "
                    "contaminated must list exactly the rows whose recipe injects them: "
                    f"{injecting}"
                )
