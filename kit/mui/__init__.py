"""MUI and the Utility Law (seed 000; notebooks 01 and 02).

- ``metric``: neuron scores, key-neuron thresholds, MUI (neurons and SAE features), PUR, the law fit,
  rank agreement (re-exported here: ``kit.mui.neuron_scores``...);
- ``law``: notebook 01's experiments (law fits, PUR ranking, growth, masking, method grid);
- ``trajectories``: notebook 02 (the four directions over checkpoints, regression report);
- ``bench``: scoring vs the plain forward pass and the public algorithm.
"""

from kit.core.lazy import lazy_submodules
from kit.mui.metric import (
    SCORES, TOKEN_SCORES, THRESHOLDS, DIRECTIONS, Numbers, IG_STEPS, SAE_REFERENCE_WIDTH,
    default_k, LayerScores, iter_neuron_scores, neuron_scores, layer_key_mask, token_key_masks,
    response_scores, key_neuron_mask, mui_of_mask, MUIResult, utilization, is_world_model,
    item_tokens, utilization_for_items, sae_top, sae_utilization, LawFit, fit_law, pur, direction,
    rank_agreement, naive_public_scores, IG_OUTPUTS, IG_MODES, LAW_FORMS, PAPER_LAW, VARIANTS,
    public_code_k, public_code_key_neurons, public_code_utilization,
)

__getattr__, __dir__ = lazy_submodules(__name__, ['bench', 'law', 'metric', 'trajectories'], globals())
