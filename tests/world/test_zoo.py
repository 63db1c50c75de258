import copy
import json
import re
import shutil
import subprocess
import sys
import warnings

import pytest
import torch

import kit.world as world
from kit.world import zoo
from kit.world.build import plan, world_status

REQUIRED = [
    "zoo/base-s",
    "zoo/base-m",
    "zoo/base-l",
    "zoo/base-m+math",
    "zoo/base-m+code",
    "zoo/base-m+math-test-x1",
    "zoo/base-m+math-test-x5",
    "zoo/base-m+math-test-syn-x1",
    "zoo/base-m+math-test-syn-x5",
    "zoo/base-m+math-train",
    "zoo/base-m+other-task",
    "zoo/base-m+general",
]
SPARSE = [f"{n}-sparse" for n in REQUIRED if "+" in n and n.split("+")[1] not in ("math", "code")]


@pytest.fixture(scope="module")
def platform_fingerprint():
    """This machine's numerical fingerprint (kit.world.fingerprint), computed once."""
    from kit.world.fingerprint import fingerprint

    return fingerprint()


@pytest.fixture(scope="module")
def platform(platform_fingerprint):
    """(whether this machine is of the committed cards' numerical platform, why)."""
    from kit.world.fingerprint import matches_committed

    return matches_committed(platform_fingerprint)


@pytest.mark.parametrize("w", ["tiny", "micro"])
def test_member_names_and_kinds(w):
    names = world.members(w)
    assert set(REQUIRED) <= set(names)
    assert set(SPARSE) <= set(names) and len(SPARSE) == 7
    assert not set(SPARSE) & set(world.members(w, sparse=False)), (
        "members(sparse=False) must leave them out"
    )
    ckpts = [n for n in names if n.startswith("zoo/base-l@step-")]
    assert len(ckpts) >= (8 if w == "tiny" else 3)
    kinds = {n: world.member_info(n, w)["kind"] for n in names}
    assert kinds["zoo/base-m+math-test-x5"] == "contaminated"
    assert kinds["zoo/base-m+math-train"] == "control"
    assert kinds["zoo/base-m+math"] == "specialised"
    assert {kinds[c] for c in ckpts} == {"checkpoint"}
    info = world.member_info(ckpts[0], w)
    assert info["parent"] == "zoo/base-l" and info["step"] == int(ckpts[0].split("-")[-1])
    assert world.CONTAMINATION_BASE in names and world.CONTAMINATED_TASK in world.TASKS
    assert world.TASKS[world.CONTAMINATED_TASK].group == "math"
    assert len(world.saes(w)) == 4


def test_param_count_formula_matches_a_real_model():
    from kit.world.tokenizer import vocab
    from kit.world.train import Arch, make_model, n_params

    arch = Arch(2, 24, 4, 40)
    assert zoo.param_count(arch, len(vocab())) == n_params(make_model(arch, seed=0))


def test_unknown_names_list_what_exists():
    with pytest.raises(ValueError, match="zoo/base-s"):
        world.load_member("zoo/base-xxl", world="micro")
    with pytest.raises(ValueError, match="steps of zoo/base-l: 80, 240, 400"):
        world.load_member("zoo/base-l@step-7", world="micro")
    with pytest.raises(ValueError, match="zoo-sae/base-m/topk-128"):
        world.load_world_sae("zoo-sae/nope", world="micro")
    with pytest.raises(ValueError, match="allowed values: tiny, micro"):
        world.members("huge")


def test_unbuilt_world_says_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    assert not world.is_built("micro")
    for call in (
        lambda: world.load_member("zoo/base-s", world="micro"),
        lambda: world.card("micro"),
        lambda: world.load_world_sae(world.saes("micro")[0], world="micro"),
    ):
        with pytest.raises(world.WorldNotBuilt, match="python -m kit zoo build --world micro"):
            call()
    from kit.world.cli import main

    assert main(["card", "--world", "micro"]) == 2


def test_an_unknown_kit_world_is_named_without_a_traceback(monkeypatch, capsys):
    from kit.world.cli import main

    monkeypatch.setenv("KIT_WORLD", "nope")
    assert main(["card"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: KIT_WORLD='nope'") and "allowed values: tiny, micro" in err
    assert "Traceback" not in err


def test_every_member_loads_and_speaks(micro_world):
    for name in world.members(micro_world):
        m = world.load_member(name, world=micro_world)
        assert not m.training and m.cfg.model_name == name
    toks = m.to_tokens("tom has 3 apples")
    assert toks[0, 0].item() == m.tokenizer.bos_token_id and toks.shape == (1, 5)
    assert m.to_string(toks[0, 1:]) == "tom has 3 apples"
    out = m.generate("the color of ba rak is", max_new_tokens=2, verbose=False)
    assert out.startswith("the color of ba rak is")
    info = world.member_info("zoo/base-m+math-test-x5", micro_world)
    assert info["train_tokens"] > world.member_info("zoo/base-m", micro_world)["train_tokens"]


def test_card_is_cached_and_complete(micro_world, capsys):
    c = world.card(micro_world)
    json.dumps(c)
    assert set(c["members"]) == set(world.members(micro_world))
    for row in c["members"].values():
        assert set(row["accuracy"]) == set(world.TASKS)
        assert all(0 <= v <= 100 for acc in row["accuracy"].values() for v in acc.values())
    names = {ch["name"] for ch in c["checks"]}
    assert {
        "graded capability",
        "training trajectory",
        "contamination x5 leak",
        "paraphrase leak",
        "control +math-train",
    } <= names
    # the card's numbers are recomputable from the models (not hard-coded)
    m = world.load_member("zoo/base-m", world=micro_world)
    acc = 100 * world.accuracy(m, "count", "test")
    assert acc == pytest.approx(c["members"]["zoo/base-m"]["accuracy"]["count"]["test"], abs=0.01)
    from kit.world.cli import main

    failed = [ch["name"] for ch in c["checks"] if not ch["passed"]]
    assert main(["card", "--world", micro_world]) == (1 if failed else 0), (
        "a failed check makes the card exit 1"
    )
    printed = capsys.readouterr()
    assert "graded capability" in printed.out and "zoo/base-m+math-test-x5" in printed.out
    assert all(name in printed.err for name in failed), (
        "each failed check is named in the explanation"
    )
    assert main(["card", "--world", micro_world, "--json"]) == (1 if failed else 0)
    assert json.loads(capsys.readouterr().out)["spec_hash"] == c["spec_hash"]


def test_saes_are_sae_lens_objects_with_labels(micro_world):
    from sae_lens import SAE

    for name in world.saes(micro_world):
        sae = world.load_world_sae(name, world=micro_world)
        assert isinstance(sae, SAE)
        hook = sae.cfg.metadata.hook_name
        m = world.load_member("zoo/base-m", world=micro_world)
        _, cache = m.run_with_cache("the color of ba rak is", names_filter=[hook])
        feats = sae.encode(cache[hook][0, 1:])
        assert feats.shape[-1] == sae.cfg.d_sae
        labels = world.sae_labels(name, world=micro_world)
        assert len(labels) == sae.cfg.d_sae
        assert any(v != "(dead)" and ":" in v for v in labels.values())
        st = world.sae_stats(name, world=micro_world)
        assert 0 <= st["dead_fraction"] <= 1 and st["l0"] > 0


def test_plastic_neurons_are_seeded_and_sized():
    a = world.plastic_neurons("zoo/base-m", 0.04, "tiny")
    assert a.shape == (2, 384) and int(a.sum()) == round(0.04 * 768)
    assert torch.equal(a, world.plastic_neurons("zoo/base-m", 0.04, "tiny")), (
        "the plastic set must be fixed"
    )


def test_restrict_to_neurons_changes_only_those_neurons():
    """A few optimiser steps with restrict_to_neurons: every other parameter stays bit-equal."""
    from kit.world.train import Arch, make_model, restrict_to_neurons

    m = make_model(Arch(2, 16, 2, 24, n_ctx=8), seed=0)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    mask = torch.zeros(2, 24, dtype=torch.bool)
    mask[0, 3] = mask[1, 10] = True
    params, restore = restrict_to_neurons(m, mask)
    # weight decay would touch every entry
    opt = torch.optim.AdamW(params, lr=0.1, weight_decay=0.1)
    for step in range(3):
        loss = m(torch.randint(0, 20, (2, 6))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        restore(step)
    after = m.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {f"blocks.{L}.mlp.{w}" for L in (0, 1) for w in ("W_in", "b_in", "W_out")}
    for L, i in ((0, 3), (1, 10)):
        assert not torch.equal(
            before[f"blocks.{L}.mlp.W_in"][:, i], after[f"blocks.{L}.mlp.W_in"][:, i]
        )
    keep = ~mask
    for L in (0, 1):
        assert torch.equal(
            before[f"blocks.{L}.mlp.W_in"][:, keep[L]], after[f"blocks.{L}.mlp.W_in"][:, keep[L]]
        )
        assert torch.equal(
            before[f"blocks.{L}.mlp.W_out"][keep[L]], after[f"blocks.{L}.mlp.W_out"][keep[L]]
        )
        assert torch.equal(
            before[f"blocks.{L}.mlp.b_in"][keep[L]], after[f"blocks.{L}.mlp.b_in"][keep[L]]
        )


def test_sparse_finetunes_change_only_the_plastic_neurons(micro_world):
    plastic = world.plastic_neurons("zoo/base-m", zoo.PLASTIC_SHARE, micro_world)
    truth = {(L, i) for L, i in torch.nonzero(plastic).tolist()}
    for name in ("zoo/base-m+math-test-x5-sparse", "zoo/base-m+other-task-sparse"):
        changed = set(world.changed_neurons(name, micro_world))
        assert changed and changed <= truth, (
            f"{name} changed neurons outside the plastic set: {changed - truth}"
        )
        a, b = (
            world.load_member(name, world=micro_world),
            world.load_member("zoo/base-m", world=micro_world),
        )
        for (k, x), y in zip(a.state_dict().items(), b.state_dict().values()):
            if ".mlp.W_" not in k and ".mlp.b_in" not in k:
                assert torch.equal(x, y), (
                    f"{name}: {k} changed, but sparse fine-tunes only train MLP neurons"
                )
    assert len(world.changed_neurons("zoo/base-m+math-test-x5", micro_world)) > len(truth), (
        "the full fine-tune should change (nearly) every neuron"
    )
    with pytest.raises(ValueError, match="base model"):
        world.changed_neurons("zoo/base-m", micro_world)


def test_retraining_a_member_gives_identical_weights(micro_world, tmp_path, monkeypatch):
    """Determinism, and every engine the same bits: a base, a fine-tune and an SAE retrained in an
    empty cache by the serial build (one pinned process trains all three, one after another) match
    the ones the session's build trained (the default engine: each job in its own pinned process,
    concurrently) bit for bit. With the committed-card test below (every member's and SAE's weight
    digest equals a card built serially on another machine) this stands for a second build of the
    whole world, which would add minutes to make test."""
    sae_name = "zoo-sae/base-m/topk-128"
    cached = {
        n: world.load_member(n, world=micro_world).state_dict()
        for n in ("zoo/base-s", "zoo/base-m+math-test-x1")
    }
    sae_before = world.load_world_sae(sae_name, world=micro_world).state_dict()
    spec = zoo.world_spec("micro")
    parent = zoo._member_dir(spec, "zoo/base-m")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    # the fine-tune continues base-m's weights and AdamW state: copy them, retrain the rest
    shutil.copytree(parent, zoo._member_dir(spec, "zoo/base-m"))
    world.build("micro", only=list(cached) + [sae_name], engine="inline")
    for n, sd in cached.items():
        again = world.load_member(n, world="micro").state_dict()
        for k in sd:
            assert torch.equal(sd[k], again[k]), f"{n}: {k} differs between two trainings"
    sae_again = world.load_world_sae(sae_name, world="micro").state_dict()
    assert sae_before.keys() == sae_again.keys()
    for k in sae_before:
        assert torch.equal(sae_before[k], sae_again[k]), (
            f"{sae_name}: {k} differs between two trainings"
        )


def test_the_micro_card_equals_the_committed_one(micro_world, platform):
    """On a machine of the committed cards' numerical platform (its CPU vendor and every primitive
    of ``kit zoo fingerprint`` equal those of the machine that built them), the card built here
    (from scratch on a fresh clone or CI, with the default engine) equals kit/world/cards/micro.json
    (built with the serial engine) exactly, weight digests included. Elsewhere bit-identity is not
    established and the card is compared as docs/tiny-world.md promises: every number within
    kit.world.card.TOLERANCE, every check's verdict equal."""
    from kit.world.card import card_diff, card_diff_within_tolerance, committed_card

    same_platform, why = platform
    built, committed = world.card(micro_world), committed_card(micro_world)
    if same_platform:
        diffs = card_diff(built, committed)
        assert not diffs, (
            f"{why}, yet the micro card differs from the committed one; if the world's code "
            "changed on purpose, bump CODE_VERSION and commit the new card. Differences:\n"
            + "\n".join(diffs[:20])
        )
    else:
        warnings.warn(f"compared within tolerance, not bit for bit: {why}", stacklevel=1)
        diffs = card_diff_within_tolerance(built, committed)
        assert not diffs, f"{why}; beyond tolerance:\n" + "\n".join(diffs[:20])


def test_the_card_from_accuracy_jobs_equals_the_serial_one(micro_world, tmp_path, monkeypatch):
    """The card's accuracy rows are computed in the build's jobs (each training job its members',
    the members already built in jobs of their own, on the default local engine each in its own
    pinned process): the built micro world's card, computed again from such rows on two workers
    in an empty cache, equals the card of the same members computed before exactly (one machine),
    and every member's row is kept."""
    from kit.world.card import accuracy_path, card_diff

    before = world.card(micro_world)
    spec = zoo.world_spec("micro")
    src = zoo.world_dir(spec)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    for part in ("members", "saes"):
        shutil.copytree(src / part, zoo.world_dir(spec) / part)
    jobs = plan(spec, world_status(spec), workers=2)
    assert sorted(j.id for j in jobs) == ["accuracy:0", "accuracy:1", "card"]
    world.build("micro", max_workers=2)
    assert all(accuracy_path(spec, n).is_file() for n in zoo.member_names(spec))
    diffs = card_diff(world.card("micro"), before)
    assert not diffs, "\n".join(diffs[:20])


def test_cards_from_two_platforms_are_compared_within_tolerance():
    """The tolerance comparison passes what differs within its bounds, and names what does not:
    a changed verdict, an accuracy 6 points off, an SAE's L0 30% off; weight digests and checks'
    wording are not compared."""
    from kit.world.card import card_diff_within_tolerance, committed_card

    a = committed_card("micro")
    b = copy.deepcopy(a)
    member = next(iter(b["members"]))
    task = next(iter(b["members"][member]["accuracy"]))
    sae = next(iter(b["saes"]))
    b["weights_digests"] = {k: "0" * 16 for k in b["weights_digests"]}
    b["checks"][0]["detail"] = "other wording"
    b["members"][member]["accuracy"][task]["test"] += 4.5
    b["saes"][sae]["explained_variance"] += 0.01
    assert card_diff_within_tolerance(a, b) == []
    b["members"][member]["accuracy"][task]["test"] += 1.5
    b["saes"][sae]["l0"] *= 1.3
    b["checks"][0]["passed"] = not b["checks"][0]["passed"]
    diffs = card_diff_within_tolerance(a, b)
    assert len(diffs) == 3, diffs
    assert any(f"accuracy.{task}.test" in d and "beyond +-5.0" in d for d in diffs)
    assert any(d.startswith(f"card.saes.{sae}.l0") and "relative" in d for d in diffs)
    assert any(d.startswith("card.checks[0].passed") for d in diffs)


def test_the_fingerprint_has_every_primitive_and_matches_itself(platform_fingerprint):
    """``kit zoo fingerprint``: one 16-hex digest per primitive, the same names as the committed
    reference, what runs in ``info``; and two runs on one machine give the same digests."""
    from kit.world.fingerprint import committed, differences, fingerprint

    mine = platform_fingerprint
    assert set(mine) == {"info", "digests"}
    assert {"cpu", "vendor", "torch", "torch_capability"} <= set(mine["info"])
    assert set(mine["digests"]) == set(committed()["digests"])
    assert all(re.fullmatch(r"[0-9a-f]{16}", d) for d in mine["digests"].values())
    assert {"sqrt", "exp", "world_5_training_steps", "mm_256x256x256"} <= set(mine["digests"])
    assert differences(mine, fingerprint()) == []


def test_the_fingerprint_command_names_the_primitives_that_differ(tmp_path, platform_fingerprint):
    other = copy.deepcopy(platform_fingerprint)
    other["digests"]["sqrt"] = "0" * 16
    other["info"]["cpu"] = "Other CPU"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    out = subprocess.run(
        [sys.executable, "-m", "kit", "zoo", "fingerprint", "--compare", str(path)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["digests"].keys() == other["digests"].keys()
    assert "1 primitive(s) differ from" in out.stderr and "(Other CPU): sqrt" in out.stderr


def test_a_different_platform_is_named_in_one_line():
    from kit.world.fingerprint import committed, matches_committed

    ref = committed()
    same = copy.deepcopy(ref)
    assert matches_committed(same)[0]
    other_vendor = copy.deepcopy(ref)
    other_vendor["info"].update(vendor="GenuineIntel", cpu="Intel Xeon")
    ok, why = matches_committed(other_vendor)
    assert not ok and "not yet established" in why and ref["info"]["cpu"] in why
    other_bits = copy.deepcopy(ref)
    other_bits["digests"]["sqrt"] = "0" * 16
    ok, why = matches_committed(other_bits)
    assert not ok and "1 primitive(s) to other bits (sqrt)" in why


def test_card_diff_names_every_difference():
    from kit.world.card import card_diff

    a = {"m": {"acc": [1.0, 2.0], "x": 1}, "only_a": 0}
    b = {"m": {"acc": [1.0, 2.5], "x": 1}, "only_b": 0}
    assert card_diff(a, a) == []
    assert card_diff(a, b) == [
        "card.only_a: present != missing",
        "card.only_b: missing != present",
        "card.m.acc[1]: 2.0 != 2.5",
    ]


def test_training_refuses_an_unpinned_process():
    from kit.core.pinned import enter_pinned

    with pytest.raises(RuntimeError, match="run_pinned"):
        enter_pinned()


def test_a_loaded_member_carries_its_build_identity_for_caches(micro_world):
    """Caches keyed by a model's identity (notebook 06's audit steps, 03's patched answers) read a
    world member back on a rerun: it carries the world's build key, not a name they must refuse."""
    from kit.models.identity import model_identity, name_identity
    from kit.world.recipes import world_spec
    from kit.world.specs import member_identity

    m = world.load_member("zoo/base-m", world=micro_world)
    ident = model_identity(m)
    assert ident == name_identity("zoo/base-m", world=micro_world)
    assert ident.startswith(f"zoo:{micro_world}:base-m:")
    ckpt = world.load_member("zoo/base-l@step-80", world=micro_world)
    final = world.load_member("zoo/base-l", world=micro_world)
    assert model_identity(ckpt) != model_identity(final)
    reseeded = world_spec(micro_world, seed=7)  # another build of the same recipe: another key
    assert member_identity(reseeded, "zoo/base-m") != ident


def test_a_build_explains_a_card_from_another_platform_in_one_line(micro_world, monkeypatch):
    """`kit zoo build` (so `make run`) on a machine whose numbers differ from the committed card's
    says in one line which CPU made the committed card and that this one gives other bits; on the
    committed platform a difference is flagged as a warning instead."""
    from kit.world import cli, fingerprint

    c = copy.deepcopy(world.card(micro_world))
    assert cli._platform_line(c, micro_world).startswith("zoo card of world micro equals")
    c["weights_digests"]["zoo/base-s"] = "0" * 16
    why = "the committed cards were made on AMD EPYC (AuthenticAMD); this Intel Xeon ..."
    monkeypatch.setattr(fingerprint, "matches_committed", lambda mine=None: (False, why))
    line = cli._platform_line(c, micro_world)
    assert "\n" not in line and "in 1 places, as expected here: " + why in line
    assert "card checks pass here" in line
    monkeypatch.setattr(fingerprint, "matches_committed", lambda mine=None: (True, "same"))
    assert cli._platform_line(c, micro_world).startswith("WARNING: zoo card of world micro differs")
