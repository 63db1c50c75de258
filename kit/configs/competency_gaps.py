"""Config of notebooks/04_competency_gaps.ipynb (Competency Gaps, seed 002)."""

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from kit.core.params import BaseConfig

REAL_BENCHMARKS = (
    "gsm8k",
    "math500",
    "arc_challenge",
    "mmlu",
    "bbh",
    "mbpp",
    "humaneval",
    "svamp",
    "bbq",
    "crows_pairs",
    "agieval",
    "logicbench",
)


def _once(field: str, v: list[str]) -> list[str]:
    """``v`` if no entry repeats, else a ValueError naming ``field``."""
    if len(set(v)) != len(v):
        raise ValueError(f"{field}={v}: each entry once")
    return v


class Config(BaseConfig):
    concept_space: Literal["minilm", "model"] = "minilm"
    """Where concepts come from: ``minilm`` = SAEs we train on the offline all-MiniLM-L6-v2 encoder
    (another model's SAE, the paper's section 4.2.3); ``model`` = the evaluated model's own SAEs
    (``model_saes``, needs network + GPU)."""
    sae_layer: int = Field(4, ge=0, le=5)
    """MiniLM layer whose residual stream (``blocks.{L}.hook_resid_post``) the SAEs read."""
    sae_widths: list[int] = Field(default_factory=lambda: [1536, 6144], min_length=2, max_length=2)
    """The two dictionary sizes compared (the paper's Table 3 uses two SAEs); the second is the main
    one."""
    sae_k: int = Field(32, ge=1, le=256)
    """TopK sparsity: active concepts per token."""
    sae_train_tokens: int = Field(100_000, ge=1000, le=50_000_000)
    """MiniLM tokens (corpus + benchmark text) the SAEs are trained on."""
    benchmarks: list[str] = Field(default_factory=lambda: list(REAL_BENCHMARKS), min_length=2)
    """Real benchmarks for coverage (``bbh`` pools several BBH tasks); any ``kit.load_benchmark``
    name."""
    n_items: int = Field(200, ge=4, le=20_000)
    """Items sampled (seeded) per benchmark for coverage."""
    response_sets: list[str] = Field(
        default_factory=lambda: [
            "arc/llama3.1-8b-instruct",
            "arc/qwen2.5-7b-instruct",
            "gsm8k/gemma2-9b-base",
        ]
    )
    """Published response sets giving real models' per-item correctness
    (``kit.data.responses.RESPONSE_SETS``); may be empty when ``responses: generate`` gives the
    models' own answers."""
    n_response_items: int = Field(300, ge=1, le=2000)
    """Published responses: items (file order) taken from each response set. ``responses: generate``
    on the MiniLM space: items each model answers per benchmark, a seeded subset of the ``n_items``
    coverage sample (:func:`kit.cg.answers.answered_positions`)."""
    include_responses: bool = False
    """X_model's concept activations read prompt + response (True) or the prompt only (False,
    default): the paper reads the response only for LMSYS-Chat, whose items are conversations;
    benchmark items are scored by prompt."""
    max_length: int = Field(256, ge=16, le=512)
    """Tokens per text fed to the encoder (longer texts are truncated)."""
    eps: float = Field(1e-5, gt=0, le=0.1)
    """Epsilon for missing concepts and model gaps (paper: 1e-5)."""
    x_bench_denominator: Literal["all", "active"] = "all"
    """Eq. 3: ``all`` divides by |B| as the equation prints (default: a concept only one benchmark
    covers is under-represented in the suite); ``active`` divides by |B_c| as the text says ("mean
    across B_c")."""
    n_reruns: int = Field(100, ge=2, le=1000)
    """Robustness: reruns, each dropping ``drop_frac`` of every benchmark's items."""
    drop_frac: float = Field(0.2, gt=0, lt=1)
    """Robustness: fraction of items dropped per rerun."""
    adv_n_concepts: int = Field(100, ge=1)
    """Adversarial removal: how many best / worst concepts."""
    adv_n_items: int = Field(100, ge=1)
    """Adversarial removal: how many most salient datapoints are removed."""
    adv_repeats: int = Field(10, ge=1, le=100)
    """Adversarial removal: repetitions (each on a random 90% subsample)."""
    gap_n_perm: int = Field(1000, ge=20, le=100_000)
    """Per-concept gap test: within-benchmark permutations of the scores
    (``kit.cg.significance.gap_test``)."""
    min_support: int = Field(5, ge=1, le=1000)
    """Per-concept gap test and split-half: a concept is tested only if active on at least this many
    scored items."""
    alpha: float = Field(0.05, gt=0, lt=1)
    """Per-concept gap test: Benjamini-Hochberg false discovery rate, per side (gaps /
    strengths)."""
    null_perms: int = Field(200, ge=100, le=5000)
    """Shuffled-correctness copies for every model null (gap count, split half, dropout, adversarial
    removal): at least 100, so that a 2.5-97.5% range is a 95% band (:mod:`kit.cg.nulls`)."""
    claim_reruns: int = Field(20, ge=2, le=1000)
    """Dropout claim: reruns per copy (the observed value and each shuffled copy get the same
    reruns; the robustness table keeps ``n_reruns``, the paper's 100)."""
    null_text_items: int = Field(1000, ge=0, le=20_000)
    """Coverage claim: held-out corpus paragraphs read as general text, the size-controlled null
    (:func:`kit.cg.size_control.coverage_vs_text`); 0 = the claim is not testable."""
    size_draws: int = Field(200, ge=100, le=10_000)
    """Coverage claim: equal-size subsamples drawn of the suite and of the general text each."""
    swap_draws: int = Field(20, ge=1, le=1000)
    """SAE-swap claim: random equal-size cuts per benchmark averaged into its missing fraction."""
    stability_seeds: list[int] = Field(default_factory=lambda: [1, 2], max_length=10)
    """Seeds the claims are recomputed under (permutations, splits, reruns, subsamples; not the
    items or the world) to mark verdicts that flip (:func:`kit.core.claims.mark_stability`); empty =
    not checked."""
    calibration_sizes: list[int] = Field(
        default_factory=lambda: [10, 25, 50, 100, 150, 300], min_length=1
    )
    """Items per benchmark at which the missing fraction is recomputed (capped at what the
    suite has)."""
    calibration_repeats: int = Field(5, ge=1, le=100)
    """Random subsamples per calibration size."""
    n_table: int = Field(5, ge=1, le=50)
    """Rows per best/worst list in the tables."""
    explorer_examples: int = Field(3, ge=1, le=20)
    """Datapoints shown per concept and kind (correct / incorrect) in the explorer."""
    zoo_model: str = "zoo/base-m"
    """Tiny-world suite: the zoo model whose correctness is analysed."""
    zoo_sae: str = "auto"
    """Tiny-world suite: the zoo model's own SAE (``kit.world.saes(world)`` lists them); ``auto`` =
    its widest TopK SAE."""
    zoo_n_items: int = Field(100, ge=4, le=5000)
    """Tiny-world suite: test items per task."""
    zoo_tasks: list[str] = Field(default_factory=list)
    """Tiny-world suite: task names (empty = every task in ``kit.world.TASKS``)."""
    gap_member: str = "auto"
    """Planted-gap check: the zoo member fine-tuned to fail one concept, read
    against its parent (the world's spec names both and the concept; ``kit.world.planted_gap_items``
    gives the planted items). ``auto`` = the world's planted-gap member
    (``zoo/base-m+gap-dyck-curly`` in the tiny and micro worlds; skipped with the reason if the
    world has none); ``""`` = skipped; any other value must be a planted-gap member of ``world``."""
    gap_n_items: int = Field(200, ge=4, le=200)
    """Planted-gap check: items per tiny-world task (the test split has 200; the gap's task takes
    this many fresh items, about a quarter of them planted)."""
    gap_sae_hooks: list[str] = Field(default_factory=lambda: ["world", "last"], min_length=1)
    """Planted-gap check: the concept dictionaries, one analysis each, shown side by side. ``world``
    = the world's SAE of the parent at its own site (layer 0's residual stream in tiny and micro:
    mostly token identity); ``last`` = the same SAE recipe (``kit.world.saes.site_sae``) trained on
    demand and cached at the parent's last residual stream ``blocks.{n_layers -
    1}.hook_resid_post``, where contextual concepts such as "the innermost open bracket is '{'" can
    live (the same site as ``world`` for a one-layer parent, as micro's base-m: then skipped, saying
    so); or an explicit hook ``blocks.L.hook_...`` of the parent."""
    gap_pooling: list[str] = Field(default_factory=lambda: ["mean", "last"], min_length=1)
    """Planted-gap check only (the main CG tables always use eq. 1): how an item's token activations
    become its concept activations, one analysis per value and dictionary. ``mean`` = eq. 1, the
    paper's (SAE activations averaged over the prompt's tokens); ``last`` = our ablation, the
    prompt's last token only (where a contextual concept such as "the next closing bracket is '}'"
    is read, undiluted by the other tokens)."""
    gap_share: float = Field(0.5, gt=0, le=1)
    """Planted-gap check: a concept whose activation mass is at least this share on the planted
    items is a planted concept."""
    models: list[str] = Field(default_factory=list)
    """``responses=generate``: the evaluated models, any ``kit.load_model`` name of a Hugging Face
    causal LM (hub ids, local directories, ``real/...``, ``twin/...``)."""
    model_saes: list[str] = Field(default_factory=list)
    """``concept_space=model``: one sae_lens ``<release>/<sae_id>`` per model (its own SAE)."""
    responses: Literal["published", "generate"] = "published"
    """``published``: the shipped greedy responses; ``generate``: ``models`` answer the suite's
    items here (one job per model and benchmark, :mod:`kit.cg.answers`; the paper's setting: with
    their own SAEs, network + GPU)."""
    max_new_tokens: int = Field(512, ge=1, le=4096)
    """``responses=generate``: generation length."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """``concept_space=model``: weights' dtype of the evaluated models (generation and concept
    reads)."""
    gen_batch_size: int = Field(16, ge=1, le=1024)
    """``responses=generate``: prompts per batched ``generate`` call (KV cache, left padding)."""
    max_batch_tokens: int = Field(8192, ge=16, le=1_000_000)
    """``concept_space=model``: padded tokens per forward pass when the model's SAE reads the
    datapoints."""
    labels: Literal["auto", "local", "neuronpedia"] = "auto"
    """``concept_space=model``: concept labels. ``auto`` = the SAE's Neuronpedia explanations when
    it has a Neuronpedia id and the hub answers, else local; ``local`` = top-activating words over
    ``label_texts`` prompts, stop-words and punctuation filtered (``kit.cg.labels``);
    ``neuronpedia`` = Neuronpedia or fail."""
    label_texts: int = Field(200, ge=1, le=100_000)
    """``concept_space=model``, local labels: prompts (spread over the benchmarks) whose tokens
    label the concepts."""

    @field_validator("sae_widths")
    @classmethod
    def _widths(cls, v: list[int]) -> list[int]:
        if any(not 16 <= w <= 131072 for w in v) or v[0] == v[1]:
            raise ValueError(f"sae_widths={v}: two different widths in 16..131072")
        return v

    @field_validator("calibration_sizes")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if any(x < 1 for x in v):
            raise ValueError(f"calibration_sizes={v}: every size must be >= 1 item")
        return v

    @field_validator("response_sets")
    @classmethod
    def _sets(cls, v: list[str]) -> list[str]:
        from kit.data.responses import RESPONSE_SETS

        bad = [s for s in v if s not in RESPONSE_SETS]
        if bad:
            raise ValueError(
                f"unknown response set(s) {bad}; allowed values: {', '.join(RESPONSE_SETS)}"
            )
        return v

    @field_validator("models")
    @classmethod
    def _models(cls, v: list[str]) -> list[str]:
        from kit.models import real  # lazy: reads package metadata only
        from kit.models.sources import form_of

        for name in v:
            form = form_of(name)
            if form.family == "real":
                if form.rest(name) not in real.REAL_MODELS:
                    raise ValueError(
                        f"models: {name!r} unknown; allowed real models: "
                        + ", ".join("real/" + n for n in real.REAL_MODELS)
                    )
                # installed or not: the run's pre-flight says (kit.models.real.install_problems),
                # so the profile validates where make real has not run
        return _once("models", v)

    @field_validator("gap_member")
    @classmethod
    def _gap_member(cls, v: str, info: ValidationInfo) -> str:
        from kit.cg.planted import resolve_gap_member

        resolve_gap_member(v, info.data.get("world", "tiny"))  # raises naming the allowed values
        return v

    @field_validator("gap_sae_hooks")
    @classmethod
    def _gap_sae_hooks(cls, v: list[str]) -> list[str]:
        import re

        from kit.cg.planted_settings import GAP_SAE_SITES, HOOK_PATTERN

        bad = [h for h in v if h not in GAP_SAE_SITES and not re.fullmatch(HOOK_PATTERN, h)]
        if bad:
            raise ValueError(
                f"gap_sae_hooks={v}: {bad} not allowed; allowed values: {', '.join(GAP_SAE_SITES)} "
                "or a hook name blocks.L.hook_... (e.g. blocks.1.hook_resid_post)"
            )
        return _once("gap_sae_hooks", v)

    @field_validator("gap_pooling")
    @classmethod
    def _gap_pooling(cls, v: list[str]) -> list[str]:
        from kit.cg.metrics import POOLINGS

        bad = [p for p in v if p not in POOLINGS]
        if bad:
            raise ValueError(
                f"gap_pooling={v}: {bad} not allowed; allowed values: {', '.join(POOLINGS)}"
            )
        return _once("gap_pooling", v)

    @model_validator(mode="after")
    def _setting(self) -> "Config":
        if self.responses == "generate" and not self.models:
            raise ValueError(
                "responses='generate' needs models (e.g. [real/smollm2-135m-instruct]); got "
                "models=[]"
            )
        if self.concept_space == "minilm" and self.responses == "generate":
            if self.model_saes:
                raise ValueError(
                    f"model_saes={self.model_saes}: the MiniLM space reads concepts with its own "
                    "SAEs; model_saes go with concept_space='model'"
                )
            if self.response_sets:
                raise ValueError(
                    f"response_sets={self.response_sets}: with responses='generate' the models "
                    "answer the suite's own coverage samples; set response_sets: []"
                )
            if self.n_response_items > self.n_items:
                raise ValueError(
                    f"n_response_items={self.n_response_items} > n_items={self.n_items}: the "
                    "models answer a subset of each benchmark's coverage sample"
                )
        if self.responses == "published" and not self.response_sets:
            raise ValueError(
                "responses='published' needs response_sets; allowed values: "
                "arc/llama3.1-8b-instruct, arc/qwen2.5-7b-instruct, gsm8k/gemma2-9b-base"
            )
        if self.concept_space == "model":
            if not self.models or len(self.models) != len(self.model_saes):
                raise ValueError(
                    f"concept_space='model' needs models and model_saes paired one to one; got "
                    f"models={self.models}, model_saes={self.model_saes}"
                )
            if self.responses != "generate":
                raise ValueError(
                    "concept_space='model' generates responses with the models: set "
                    "responses='generate'"
                )
        return self

    def sae_names(self) -> list[str]:
        """``minilm-sae/...`` names of the two SAEs (width order as configured)."""
        from kit.cg.saes import MinilmSAESpec

        return [
            MinilmSAESpec(self.sae_layer, w, self.sae_k, self.sae_train_tokens).name
            for w in self.sae_widths
        ]
