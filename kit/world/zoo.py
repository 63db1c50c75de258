"""The model zoo of the embedded world, under one name: ``kit.world.zoo.X`` for every X of

- :mod:`kit.world.specs`: what a world is made of (member and SAE specs), content keys, names, seeds;
- :mod:`kit.world.recipes`: the ``tiny`` and ``micro`` worlds' recipes, :func:`world_spec`;
- :mod:`kit.world.storage`: members on disk (write, verify, load, lock);
- :mod:`kit.world.members`: training bases, checkpoints, fine-tunes and extras.

Nothing is defined here; code and notebooks that name ``zoo.<X>`` keep working.
"""

from kit.world.members import (
    BUILD_THREADS,
    _gap,
    _train_base,
    _train_finetune,
    base_outputs,
    changed_neurons,
    deterministic,
    extra_finetune,
    finetune,
    finetune_items,
    plant_gap,
    planted_gap_items,
    plastic_neurons,
)
from kit.world.recipes import (
    CONTAMINATED_TASK,
    CONTAMINATION_BASE,
    GAP_MEMBER,
    GAPS,
    OTHER_TASK,
    PLASTIC_SHARE,
    SEED_ENV,
    SPARSE_SUFFIX,
    TEN_CHECKPOINTS,
    UNIFORM,
    WORLD_SPECS,
    XL_MIXTURE,
    _finetunes,
    _gap_finetune,
    _heavy,
    _saes,
    world_seed,
    world_spec,
)
from kit.world.specs import (
    CODE_VERSION,
    BaseSpec,
    FinetuneSpec,
    Gap,
    SAESpec,
    WorldSpec,
    _arch_of,
    _base,
    _base_dict,
    _check_name,
    _digest,
    _finetune_dict,
    _seed_of,
    check_after,
    checkpoint_steps,
    finetune_key,
    member_key,
    member_names,
    param_count,
    spec_hash,
    world_id,
)
from kit.world.storage import (
    MemberDamaged,
    NoSpaceLeft,
    WorldNotBuilt,
    _member_dir,
    _safe,
    card_path,
    load_member,
    member_info,
    member_status,
    members,
    not_built_error,
    save_member,
    tensor_digest,
    world_dir,
    world_lock,
)
from kit.world.train import Arch

__all__ = [
    "Arch", "BUILD_THREADS", "BaseSpec", "CODE_VERSION", "CONTAMINATED_TASK", "CONTAMINATION_BASE", "FinetuneSpec",
    "GAPS", "GAP_MEMBER", "Gap", "MemberDamaged", "NoSpaceLeft", "OTHER_TASK", "PLASTIC_SHARE", "SAESpec", "SEED_ENV",
    "SPARSE_SUFFIX", "TEN_CHECKPOINTS", "UNIFORM", "WORLD_SPECS", "WorldNotBuilt", "WorldSpec", "XL_MIXTURE",
    "_arch_of", "_base", "_base_dict", "_check_name", "_digest", "_finetune_dict", "_finetunes", "_gap",
    "_gap_finetune", "_heavy", "_member_dir", "_saes", "_safe", "_seed_of", "_train_base", "_train_finetune",
    "base_outputs", "card_path", "changed_neurons", "check_after", "checkpoint_steps", "deterministic",
    "extra_finetune", "finetune", "finetune_items", "finetune_key", "load_member", "member_info", "member_key",
    "member_names", "member_status", "members", "not_built_error", "param_count", "plant_gap", "planted_gap_items",
    "plastic_neurons", "save_member", "spec_hash", "tensor_digest", "world_dir", "world_id", "world_lock",
    "world_seed", "world_spec",
]
