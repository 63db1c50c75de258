"""Config of notebooks/00_quickstart.ipynb."""

from typing import Literal

from pydantic import Field

from kit.core.params import BaseConfig


class Config(BaseConfig):
    model: str = "zoo/base-s"
    """Model to load through ``kit.load_model`` (a zoo name, ``random/<shape>`` or a Hugging Face id)."""
    task: str = "add"
    """Task whose first test item is the prompt: a tiny-world task (``kit.world.TASKS``) for ``zoo/`` models, else a real benchmark (``kit.load_benchmark`` name, e.g. ``arc_challenge``)."""
    layer: int = Field(0, ge=0)
    """Layer whose MLP activations (``blocks.{layer}.mlp.hook_post``) are shown."""
    top_neurons: int = Field(16, ge=1, le=512)
    """How many neurons (largest mean |activation| over the prompt) the activation views show."""
    n_eval: int = Field(100, ge=1, le=200)
    """Test items of ``task`` scored to report the model's accuracy (a task's test split holds 200: ``kit.world.tasks.TEST_SIZE``)."""
    max_new_tokens: int = Field(1, ge=1, le=4096)
    """Real models: greedy response length scored on the benchmark (tiny-world answers are one token: unused there)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Real models: weight dtype (``bfloat16`` halves the memory of a 7B model to ~15 GB); zoo models are float32."""
    responses: str | None = None
    """Real models: responses you already have instead of generating them: a published response set (``kit.data.responses.RESPONSE_SETS``, e.g. ``arc/llama3.1-8b-instruct``) or the path of an lm-evaluation-harness ``--log_samples`` jsonl; its first ``n_eval`` items replace ``task``'s. None: batched greedy generation."""
    max_batch_tokens: int = Field(8192, ge=1)
    """Real models: padded tokens per teacher-forced MUI pass (rows x longest row); lower it when the GPU runs out of memory."""
