"""One config class per notebook (``Config``), loaded by ``kit.core.params.load_params``.

Importing this package (``import kit`` does) registers with the core where those classes are and
how the names they mention are checked (:mod:`kit.configs.names`), and the pre-flight checks that
need model code (:mod:`kit.core.preflight` imports none)."""

import importlib
import re

from kit.configs.names import name_errors
from kit.core.params import BaseConfig, ParamsError, notebook_names, register_configs
from kit.core.preflight import register


def config_class(notebook: str) -> type[BaseConfig]:
    """``01_utility_law`` -> ``kit.configs.utility_law.Config``."""
    stem = re.sub(r"^\d\d_", "", notebook)
    try:
        module = importlib.import_module(f"kit.configs.{stem}")
    except ModuleNotFoundError as e:
        raise ParamsError(
            f"notebook {notebook!r} has no config module kit/configs/{stem}.py; "
            f"notebooks with params: {', '.join(notebook_names())}"
        ) from e
    return module.Config


def _hub_ids(cfg) -> list[str]:
    from kit.models.hub import hub_id_problems  # lazy: huggingface_hub

    return hub_id_problems(cfg)


def _real_models(cfg) -> list[str]:
    from kit.core.memory import strings_in
    from kit.models.real import install_problems  # lazy: package metadata

    return install_problems(list(strings_in(cfg.model_dump())))


register_configs(config_class, name_errors)
register(_hub_ids)
register(_real_models)
