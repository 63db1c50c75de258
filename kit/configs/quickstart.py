"""Config of notebooks/00_quickstart.ipynb."""

from pydantic import Field

from kit.core.params import BaseConfig


class Config(BaseConfig):
    model: str = "zoo/base-s"
    """Model to load through ``kit.load_model`` (a zoo name, ``random/<shape>`` or a Hugging Face id)."""
    task: str = "add"
    """Tiny-world task whose first test item is the prompt (``kit.world.TASKS`` lists them)."""
    layer: int = Field(0, ge=0)
    """Layer whose MLP activations (``blocks.{layer}.mlp.hook_post``) are shown."""
    top_neurons: int = Field(16, ge=1, le=512)
    """How many neurons (largest mean |activation| over the prompt) the activation views show."""
    n_eval: int = Field(100, ge=1, le=200)
    """Test items of ``task`` scored to report the model's accuracy (a task's test split holds 200: ``kit.world.tasks.TEST_SIZE``)."""
