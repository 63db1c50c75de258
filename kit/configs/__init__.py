"""One config class per notebook (``Config``), loaded by ``kit.core.params.load_params``.

The pre-flight checks that need model code (:mod:`kit.core.preflight` imports none) are registered
here, where every config comes from."""

from kit.core.preflight import register


def _hub_ids(cfg) -> list[str]:
    from kit.models.hub import hub_id_problems  # lazy: huggingface_hub

    return hub_id_problems(cfg)


register(_hub_ids)
