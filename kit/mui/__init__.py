"""MUI and the Utility Law (seed 000; notebooks 01 and 02).

The method, in one call: ``kit.mui.mui(model_or_subject, answers, score=..., threshold=...)``
(MUI in %); per item: ``kit.mui.per_item_key_neurons``; the variants by name:
``kit.mui.MUI_SCORES`` (in ``scores``) and ``kit.mui.MUI_THRESHOLDS`` (in ``key_neurons``), one
table each.

The metric (re-exported here: ``kit.mui.neuron_scores``, ``kit.mui.utilization``,
``kit.mui.fit_law``...):

- ``scores``: neuron contribution scores (Eq. 3, 13, 14; integrated gradients);
- ``key_neurons``: the thresholds and key-neuron masks;
- ``metric``: MUI of a dataset, of items (cached per item) and of a subject's answers (and
  MUI-Eval's public-code variant): every MUI computation lives there;
- ``sae``: SAE-feature MUI (and notebook 01's SAE section);
- ``law``: the law fit, PUR, rank agreement (and notebook 01's law grid);
- ``directions``: the four directions of a change and corollaries 1-2.

Notebook 01's experiments: ``published`` (the paper's tables), ``growth`` (§3.6), ``correctness``
(§3.7), ``masking`` (§3.8), ``methods`` (B.6's grid, the public code), ``multi_token``
(multi-token answers, k across widths).
Notebook 02: ``trajectories`` (settings, directions), ``measurements``, ``trajectory_sections``,
``published_trajectories`` (the paper's tables), ``regression`` (the training takeaway). Both:
``checkpoints`` (a member's training checkpoints, by name). Figures: ``plots``. ``quickstart``:
notebook 00; ``claims``: the claims of 01 and 02; ``bench``: scoring vs the plain forward pass
and the public algorithm.
"""

from kit.core.lazy import lazy_submodules
from kit.mui.directions import DIRECTIONS, direction
from kit.mui.key_neurons import (
    MUI_THRESHOLDS,
    THRESHOLDS,
    default_k,
    key_neuron_mask,
    layer_key_mask,
    response_scores,
    token_key_masks,
)
from kit.mui.law import LAW_FORMS, PAPER_LAW, LawFit, Numbers, fit_law, pur, rank_agreement
from kit.mui.metric import (
    VARIANTS,
    MUIResult,
    cached_items_mui,
    is_world_model,
    item_tokens,
    mui,
    mui_from_items,
    mui_key_neurons,
    mui_of_mask,
    per_item_key_neurons,
    public_code_k,
    public_code_key_neurons,
    public_code_rows,
    public_code_utilization,
    subject_mui,
    utilization,
    utilization_for_items,
)
from kit.mui.sae import SAE_REFERENCE_WIDTH, sae_top, sae_utilization
from kit.mui.scores import (
    IG_MODES,
    IG_OUTPUTS,
    IG_STEPS,
    MUI_SCORES,
    SCORES,
    TOKEN_SCORES,
    LayerScores,
    act_fn_site,
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
        "directions",
        "growth",
        "key_neurons",
        "law",
        "masking",
        "measurements",
        "methods",
        "metric",
        "multi_token",
        "plots",
        "published",
        "published_trajectories",
        "quickstart",
        "regression",
        "sae",
        "scores",
        "size_pair",
        "trajectories",
        "trajectory_sections",
    ],
    globals(),
)
