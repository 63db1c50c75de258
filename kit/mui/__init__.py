"""MUI and the Utility Law (seed 000; notebooks 01 and 02).

The metric (re-exported here: ``kit.mui.neuron_scores``, ``kit.mui.utilization``,
``kit.mui.fit_law``...):

- ``scores``: neuron contribution scores (Eq. 3, 13, 14; integrated gradients);
- ``metric``: thresholds, key neurons, MUI of a dataset (and MUI-Eval's public-code variant);
- ``sae``: SAE-feature MUI (and notebook 01's SAE section);
- ``law``: the law fit, PUR, rank agreement (and notebook 01's law grid);
- ``directions``: the four directions of a change and corollaries 1-2.

Notebook 01's experiments: ``responses`` (items, responses, correctness, MUI of a model),
``published`` (the paper's tables, also notebook 02's), ``growth`` (§3.6), ``correctness`` (§3.7),
``masking`` (§3.8), ``methods`` (B.6's grid, the public code), ``multi_token`` (item 7). Notebook
02: ``trajectories`` (settings, measurements, sections), ``regression`` (the training takeaway).
Both: ``checkpoints`` (a member's training checkpoints, by name). Figures: ``plots``.
``quickstart``: notebook 00; ``claims``: the claims of 01 and 02 (02's declared in
``direction_claims``); ``bench``: scoring vs the plain forward pass and the public algorithm.
"""

from kit.core.lazy import lazy_submodules
from kit.mui.directions import DIRECTIONS, direction
from kit.mui.law import LAW_FORMS, PAPER_LAW, LawFit, Numbers, fit_law, pur, rank_agreement
from kit.mui.metric import (
    THRESHOLDS,
    VARIANTS,
    MUIResult,
    default_k,
    is_world_model,
    item_tokens,
    key_neuron_mask,
    layer_key_mask,
    mui_of_mask,
    public_code_k,
    public_code_key_neurons,
    public_code_utilization,
    response_scores,
    token_key_masks,
    utilization,
    utilization_for_items,
)
from kit.mui.sae import SAE_REFERENCE_WIDTH, sae_top, sae_utilization
from kit.mui.scores import (
    IG_MODES,
    IG_OUTPUTS,
    IG_STEPS,
    SCORES,
    TOKEN_SCORES,
    LayerScores,
    iter_neuron_scores,
    naive_public_scores,
    neuron_scores,
)

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "bench",
        "checkpoints",
        "claims",
        "correctness",
        "direction_claims",
        "directions",
        "growth",
        "law",
        "masking",
        "methods",
        "metric",
        "multi_token",
        "plots",
        "published",
        "quickstart",
        "regression",
        "responses",
        "sae",
        "scores",
        "trajectories",
    ],
    globals(),
)
