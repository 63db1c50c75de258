"""Config of notebooks/00_quickstart.ipynb."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kit.core.params import BaseConfig


class Config(BaseConfig):
    model: str = "zoo/base-s"
    """Model to load through ``kit.load_model`` (a zoo name, ``random/<shape>`` or a Hugging Face
    id)."""
    task: str = "add"
    """Task whose first test item is the prompt: a tiny-world task (``kit.world.TASKS``) for
    ``zoo/`` models, else a real benchmark (``kit.load_benchmark`` name, e.g. ``arc_challenge``)."""
    layer: int = Field(0, ge=0)
    """Layer whose MLP activations (``blocks.{layer}.mlp.hook_post``) are shown."""
    top_neurons: int = Field(16, ge=1, le=512)
    """How many neurons (largest mean |activation| over the prompt) the activation views show."""
    n_eval: int = Field(100, ge=1, le=200)
    """Test items of ``task`` scored to report the model's accuracy (a task's test split holds 200:
    ``kit.world.tasks.TEST_SIZE``)."""
    max_new_tokens: int = Field(1, ge=1, le=4096)
    """Greedy response length in tokens (tiny-world answers are one token; a real benchmark's answer
    needs room: a response that reaches it without an end token counts as truncated)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Real models: weight dtype (``bfloat16`` halves the memory of a 7B model to ~15 GB); zoo
    models are float32."""
    responses: str | None = None
    """Real models: responses you already have instead of generating them: a published response set
    (``kit.data.responses.RESPONSE_SETS``, e.g. ``arc/llama3.1-8b-instruct``) or the path of an
    lm-evaluation-harness ``--log_samples`` jsonl; its first ``n_eval`` items replace ``task``'s.
    None: batched greedy generation."""
    filter: str | None = None
    """With an lm-evaluation-harness ``responses`` file: the harness filter whose answers are read
    (its name in the file, e.g. ``strict-match`` or ``flexible-extract`` for GSM8K). None: the
    file's only filter; a file with several (GSM8K's two) is refused, naming them."""
    max_batch_tokens: int = Field(8192, ge=1)
    """Real models: padded tokens per teacher-forced MUI pass (rows x longest row); lower it when
    the GPU runs out of memory."""
    prompt_style: Literal["instructed", "plain"] = "instructed"
    """Real benchmarks: ``instructed`` wraps each question in its benchmark's answer-format
    instruction (``kit.data.prompts``: lm-evaluation-harness's Llama-3 instruct templates where they
    exist), ``plain`` shows the bare question (as the MUI paper's code shows instruct models).
    Tiny-world tasks keep their format."""
    scoring: Literal["generate", "loglik-letter", "loglik-text"] = "generate"
    """How answers are read: ``generate`` (the greedy response, scored by the benchmark's rule), or
    for a real multiple-choice benchmark the most likely option (``loglik-letter``: its letter after
    the instruction's answer prefix; ``loglik-text``: its text after lm-eval's ``Question:
    ...\nAnswer:``, without a chat template: lm-evaluation-harness's ``hf`` model's
    log-likelihoods; ``kit.subjects.loglik``)."""

    compare_models: list[str] = []
    """Models asked at the end exactly as ``model`` is (one loaded at a time), one row per model x
    ``compare_tasks`` benchmark: accuracy with its interval, chance, parse failures, truncations
    and MUI. [] skips that section."""
    compare_tasks: dict[str, Annotated[int, Field(ge=1, le=4096)]] = {}
    """Benchmarks (or world tasks) of that comparison, each with its greedy response length in
    tokens (a multiple-choice letter needs ~16, a worked GSM8K answer ~256)."""
    compare_n: int = Field(20, ge=1, le=200)
    """Test items per (model, benchmark) of the comparison (the first ``compare_n`` of ``seed``'s
    draw, as the walk-through's)."""

    @model_validator(mode="after")
    def _comparison_is_whole(self) -> "Config":
        from kit.core.params import distinct

        distinct("compare_models", self.compare_models)
        if bool(self.compare_models) != bool(self.compare_tasks):
            raise ValueError(
                f"compare_models={self.compare_models!r} with compare_tasks="
                f"{self.compare_tasks!r}: the comparison needs both (or neither: [] and {{}})"
            )
        return self

    @model_validator(mode="after")
    def _filter_needs_a_file(self) -> "Config":
        if self.filter is not None and self.responses is None:
            raise ValueError(
                f"filter={self.filter!r} chooses the answers of an lm-evaluation-harness "
                "responses file; responses is null (set responses to a --log_samples file, or "
                "filter: null)"
            )
        return self

    @model_validator(mode="after")
    def _scoring_needs_multiple_choice(self) -> "Config":
        from kit.data.scorers import CHOICE_BENCHMARKS  # lazy: a config loads without kit.data
        from kit.subjects import is_world_name

        if self.scoring == "generate":
            return self
        if is_world_name(self.model):  # zoo/ members and notebook 03's extra/ fine-tunes
            raise ValueError(
                f"scoring={self.scoring!r}: tiny-world models are scored on their generated "
                "answer; allowed for them: generate"
            )
        if self.responses is not None:
            raise ValueError(
                f"scoring={self.scoring!r} with responses={self.responses!r}: answers read from a "
                "file are scored by the file; allowed: generate"
            )
        mc = CHOICE_BENCHMARKS + ("agieval", "logicbench")
        if self.task.split("/", 1)[0] not in mc:
            raise ValueError(
                f"scoring={self.scoring!r} needs a multiple-choice benchmark; task={self.task!r} "
                f"is not (allowed: {', '.join(mc)}, or scoring: generate)"
            )
        return self

    def requirements(self) -> list[str]:
        """``layer`` is a layer of ``model``, where its shape is known from its config alone (a
        world member, a random shape, a twin, a local directory or a cached hub config; a ``real/``
        model is skipped: its config may need a dequantisation first)."""
        from kit.models.sources import form_of

        if form_of(self.model).key in ("real", "recipe"):  # a real model or a fine-tune of one
            return []
        from kit.audits.cost import model_shape

        shape = model_shape(self.model, self.world)
        if shape is not None and self.layer >= shape.n_layers:
            return [
                f"field 'layer': {self.layer} is not a layer of {self.model}; allowed values: "
                f"0..{shape.n_layers - 1}"
            ]
        return []
