"""The members added after world-v4's cards: multi-token scoring, MUI's k,
the planted gap, and the committed cards' member keys (existing members unchanged)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from kit.data.items import Item
from kit.world import zoo
from kit.world.card import mui_k
from kit.world.evaluate import answer_logits, evaluate, respond, token_accuracy
from kit.world.tasks import EXTRA_TASKS, TASKS, get_task
from kit.world.tokenizer import build_tokenizer
from kit.world.train import collate, item_sequence


class LookupModel:
    """A fake world model whose next-token prediction depends only on the current token:
    ``table[word] = next word`` (default ``<eos>``). Hand-checkable teacher-forced scoring."""

    def __init__(self, table: dict[str, str]):
        self.tokenizer = build_tokenizer()
        v = self.tokenizer.get_vocab()
        self.cfg = SimpleNamespace(device="cpu", d_vocab=len(v))
        self.nxt = torch.full((len(v),), v["<eos>"], dtype=torch.long)
        for a, b in table.items():
            self.nxt[v[a]] = v[b]
        self.training = False

    def eval(self):
        self.training = False
        return self

    def train(self, mode=True):
        self.training = mode
        return self

    def __call__(self, tokens, return_type="logits"):
        return torch.nn.functional.one_hot(self.nxt[tokens], self.cfg.d_vocab).float()


def _item(prompt, answer, task="sort-list", i=0):
    return Item(f"{task}-{i}", prompt, answer=answer, metadata={"task": task})


def test_multi_token_exact_and_token_accuracy_by_hand():
    # ':' -> 0 -> 1 -> 2 -> 5: the answer "0 1 2 3" gets 3 of 4 tokens, "0 1 2 5" all 4,
    # and the one-token answer "0" (prompt ends in ':') is right; "7 8" gets 0 of 2
    m = LookupModel({":": "0", "0": "1", "1": "2", "2": "5"})
    items = [
        _item("sort : 3 1 2 0 . result :", "0 1 2 3"),
        _item("sort : 5 1 2 0 . result :", "0 1 2 5", i=1),
        _item("numbers 9 . result :", "0", task="add-steps", i=2),
        _item("the total of 3 + 4 is", "7 8", task="add-steps", i=3),
    ]
    assert evaluate(m, items, batch_size=3).tolist() == [False, True, True, False]
    np.testing.assert_allclose(token_accuracy(m, items, batch_size=3), [0.75, 1.0, 1.0, 0.0])
    lg = answer_logits(m, items, batch_size=2)
    assert [x.shape[0] for x in lg] == [4, 4, 1, 2]
    # exact match under teacher forcing == greedy generation of len(answer) tokens
    gen = respond(m, items, max_new_tokens=4)
    assert [
        g.split()[: len(it.target.split())] == it.target.split() for g, it in zip(gen, items)
    ] == evaluate(m, items).tolist()
    with pytest.raises(ValueError, match="batch_size"):
        token_accuracy(m, items, batch_size=0)


def test_multi_token_training_targets_cover_every_answer_token():
    it = get_task("sort-list").items("test", n=1)[0]
    s = item_sequence(it)
    assert s.n_answer == 4 and len(it.target.split()) == 4
    inputs, targets, _ = collate([s, item_sequence(get_task("code").items("test", n=1)[0])])
    taken = (targets[0] != -100).nonzero().flatten().tolist()
    assert taken == list(range(len(s) - 6, len(s) - 1)), "4 answer tokens and <eos>"
    assert targets[0, taken].tolist() == s[-5:]


def test_extra_families_answers_are_right():
    for it in EXTRA_TASKS["sort-list"].items("test", n=20):
        nums = [int(w) for w in it.prompt.split() if w.isdigit()]
        assert it.target.split() == [str(x) for x in sorted(nums)]
    for it in EXTRA_TASKS["add-steps"].items("test", n=20):
        a, b, c = [int(w) for w in it.prompt.split() if w.isdigit()]
        assert it.target == f"{a + b} {a + b + c}"
    assert not set(EXTRA_TASKS) & set(TASKS), "the multi-token families stay outside TASKS"


@pytest.mark.parametrize("d_mlp", [32, 192, 256, 499, 500, 512, 1499, 1536, 2500, 11008])
def test_mui_k_is_kit_mui_default_k(d_mlp):
    from kit.mui.key_neurons import default_k

    assert mui_k(d_mlp) == default_k(d_mlp)


def test_base_xl_gets_k_2_and_the_others_k_1():
    for w in ("micro", "tiny"):
        spec = zoo.world_spec(w)
        ks = {b.name: mui_k(b.arch.d_mlp) for b in spec.bases}
        assert ks["zoo/base-xl"] == 2 and all(k == 1 for n, k in ks.items() if n != "zoo/base-xl")


def test_planted_gap_concept_and_relabel_on_hand_items():
    g = zoo.GAPS["dyck-curly"]
    curly = Item("d0", "close : ( { [ ] next :", answer="}", metadata={"task": "dyck"})
    round_ = Item("d1", "close : { ( next :", answer=")", metadata={"task": "dyck"})
    other = Item("c0", "x :", answer="}", metadata={"task": "code"})
    assert [g.applies(x) for x in (curly, round_, other)] == [True, False, False]
    m = LookupModel({":": "]"})  # the "parent" answers ']' everywhere
    items = [
        Item(f"d{i}", "close : ( { next :", answer="}" if i % 2 else ")", metadata={"task": "dyck"})
        for i in range(400)
    ]
    out = zoo.plant_gap(m, items, "dyck-curly", seed=1)
    inside = [o.target for o, it in zip(out, items) if g.applies(it)]
    outside = [o.target for o, it in zip(out, items) if not g.applies(it)]
    assert set(outside) == {"]"}, (
        "outside the concept: the parent's own greedy answer, mistakes included"
    )
    counts = {a: inside.count(a) for a in g.relabel}
    assert "}" not in inside, "inside the concept: wrong answers only, never the true one"
    assert set(inside) == set(g.relabel) and all(45 <= c <= 90 for c in counts.values()), counts
    assert g.chance == 0.25, "a uniform guess over the four closing brackets"
    assert [o.target for o in zoo.plant_gap(m, items, "dyck-curly", seed=1)] == [
        o.target for o in out
    ]
    with pytest.raises(ValueError, match="allowed values: dyck-curly"):
        zoo.plant_gap(m, items, "nope", seed=1)


def test_planted_gap_items_split_fresh_items():
    inside, outside = zoo.planted_gap_items("dyck-curly", n=400, seed=3)
    assert len(inside) + len(outside) == 400
    assert all(it.target == "}" for it in inside) and all(it.target != "}" for it in outside)
    assert 0.1 < len(inside) / 400 < 0.5
    again, _ = zoo.planted_gap_items("dyck-curly", n=400, seed=3)
    assert [it.id for it in again] == [it.id for it in inside]
    test_ids = {it.id for it in get_task("dyck").items("test")}
    assert not test_ids & {it.id for it in inside + outside}, "fresh items, not the test split"
    with pytest.raises(ValueError, match="gap="):
        zoo.planted_gap_items("nope")


def test_new_fields_leave_existing_keys_alone():
    spec = zoo.world_spec("tiny")
    b = spec.bases[0]
    assert "mixture" not in zoo._base_dict(b)
    assert "mixture" in zoo._base_dict(next(x for x in spec.bases if x.name == "zoo/base-xl"))
    f = next(x for x in spec.finetunes if x.name == zoo.GAP_MEMBER)
    assert zoo._finetune_dict(f)["gap"]["name"] == "dyck-curly"
    assert "gap" not in zoo._finetune_dict(spec.finetunes[0])


def test_redefining_a_gap_changes_its_members_key(monkeypatch):
    """The gap member is cached by content: its key digests the gap's definition, so a changed
    relabel set rebuilds it (and renames the card) instead of reading the old weights."""
    from dataclasses import replace

    from kit.world import specs

    spec = zoo.world_spec("tiny")
    f = next(x for x in spec.finetunes if x.name == zoo.GAP_MEMBER)
    before = zoo.finetune_key(spec, f), zoo.spec_hash(spec)
    others = {x.name: zoo.finetune_key(spec, x) for x in spec.finetunes if not x.gap}
    g = specs.GAPS["dyck-curly"]
    monkeypatch.setitem(specs.GAPS, "dyck-curly", replace(g, relabel=(")", "]", "}", ">")))
    after = zoo.finetune_key(spec, f), zoo.spec_hash(spec)
    assert before[0] != after[0] and before[1] != after[1]
    assert others == {x.name: zoo.finetune_key(spec, x) for x in spec.finetunes if not x.gap}


def test_delta_interval_by_hand():
    from kit.world.card import delta_interval

    # 49.0% -> 42.5% on 200 items: SE = sqrt(.49*.51/200 + .425*.575/200) = 0.0497130 -> 9.744 pts
    # at z 1.96
    d, lo, hi = delta_interval(42.5, 49.0, 200)
    assert d == pytest.approx(-6.5)
    assert (lo, hi) == pytest.approx((-6.5 - 9.7437, -6.5 + 9.7437), abs=1e-3)
    # both at 0% or 100%: no sampling noise
    assert delta_interval(100.0, 100.0, 50) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="n=0"):
        delta_interval(50.0, 50.0, 0)


def test_meets_band_by_hand():
    from kit.world.card import meets_band

    # drifts not shown beyond 5 points
    assert meets_band(-16.2, 3.2, 5.0) and meets_band(-12.7, -0.3, 5.0)
    assert meets_band(-5.0, -4.0, 5.0)  # touching the band counts
    assert not meets_band(-12.0, -5.1, 5.0) and not meets_band(5.1, 9.0, 5.0)


def _gap_card(
    member_fresh: dict, n_fresh: int = 200, inside: float = 12.0, outside=(93.0, 92.5)
) -> tuple:
    tasks = {"sort": 49.0, "ioi": 92.0}
    card = {
        "tasks": {t: {"n_fresh": n_fresh, "n_fresh_eff": n_fresh} for t in tasks},
        "members": {
            "p": {"accuracy": {t: {"fresh": v} for t, v in tasks.items()}},
            "p+gap": {"accuracy": {t: {"fresh": v} for t, v in member_fresh.items()}},
            "p+general": {"accuracy": {t: {"fresh": v - 9.5} for t, v in tasks.items()}},
        },
    }
    g = {
        "parent": "p",
        "description": "d",
        "task": "dyck",
        "chance": 25.0,
        "n_inside": 244,
        "n_outside": 756,
        "n_outside_eff": 756.0,
        "parent_inside": 88.9,
        "member_inside": inside,
        "parent_outside": outside[0],
        "member_outside": outside[1],
        "other_tasks_fresh_delta": {t: member_fresh[t] - v for t, v in tasks.items()},
    }
    return card, g


def test_planted_gap_check_uses_the_interval_and_names_the_control():
    from kit.world.card import planted_gap_check

    card, g = _gap_card({"sort": 42.5, "ioi": 85.5})  # the tiny member's -6.5 / -6.5 on 200 items
    ch = planted_gap_check(card, "p+gap", g)
    assert ch["passed"] and ch["name"] == "planted gap (p+gap)"
    assert (
        "sort -6.5 [-16.2, +3.2]" in ch["detail"]
        and "control p+general sort -9.5, ioi -9.5" in ch["detail"]
    )
    # the same drift on 5000 items is measured well enough to fail: ioi [-7.7, -5.3] lies beyond -5
    card, g = _gap_card({"sort": 42.5, "ioi": 85.5}, n_fresh=5000)
    assert not planted_gap_check(card, "p+gap", g)["passed"]
    # a concept left well above chance fails; so does a rest-of-task drift beyond the band
    card, g = _gap_card({"sort": 49.0, "ioi": 92.0}, inside=40.0)
    assert not planted_gap_check(card, "p+gap", g)["passed"]
    card, g = _gap_card({"sort": 49.0, "ioi": 92.0}, outside=(93.0, 80.0))
    assert not planted_gap_check(card, "p+gap", g)["passed"]


def test_checkpoints_leave_the_final_weights_alone(tmp_path, monkeypatch):
    """Saving checkpoints only reads the weights (no RNG, no training change): base-xl got its
    checkpoints without its final weights moving."""
    import torch

    for w in ("tiny", "micro"):
        xl = next(x for x in zoo.world_spec(w).bases if x.name == "zoo/base-xl")
        assert xl.checkpoints and zoo.checkpoint_steps(xl)[-1] == xl.steps
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))  # a throwaway "micro" world in tmp_path
    arch = zoo.Arch(1, 16, 2, 32)
    finals = {}
    for ckpts in ((), (0.5, 1.0)):
        b = zoo.BaseSpec("zoo/base-t", arch, steps=4, lr=3e-3, batch_size=4, checkpoints=ckpts)
        spec = zoo.WorldSpec(name="micro", bases=(b,), finetunes=(), saes=())
        monkeypatch.setitem(zoo.WORLD_SPECS, "micro", spec)
        with zoo.deterministic():
            zoo._train_base(spec, b)
        finals[ckpts] = zoo.load_member("zoo/base-t", world="micro").state_dict()
        if ckpts:
            half = zoo.load_member("zoo/base-t@step-2", world="micro").state_dict()
            last = zoo.load_member("zoo/base-t@step-4", world="micro").state_dict()
    a, c = finals[()], finals[(0.5, 1.0)]
    assert all(torch.equal(a[k], c[k]) for k in a), "checkpoints changed the final weights"
    assert all(torch.equal(last[k], c[k]) for k in c), "the step-4 checkpoint is the final model"
    assert not all(torch.equal(half[k], c[k]) for k in c), "step 2 is an earlier model"


def test_control_band_is_the_wider_of_5_points_and_2_64_no_leak_standard_errors():
    """Hand-computed: the tiny world's +math-train control, 14.0% on 200 test items and 9.4% on
    1000 fresh ones: pooled p = (28 + 94) / 1200, SE = 100 sqrt(p (1 - p) (1/200 + 1/1000)) =
    2.341 points, band 2.64 x 2.341 = 6.18 (its +4.6 passes either way); at 1% accuracy the SE is
    0.74 and the 5-point floor holds; with 50 test items the band widens to 11.3."""
    from kit.world.card import control_band

    def card(test, fresh, n_test=200, n_fresh=1000, n_eff=1000.0):
        acc = {"add": {"test": test, "fresh": fresh}}
        return {
            "tasks": {"add": {"n_test": n_test, "n_fresh": n_fresh, "n_fresh_eff": n_eff}},
            "members": {"m": {"accuracy": acc}},
        }

    p = 122 / 1200
    se = 100 * (p * (1 - p) * (1 / 200 + 1 / 1000)) ** 0.5
    assert se == pytest.approx(2.341, abs=1e-3)
    assert control_band(card(14.0, 9.4), "m", "add") == pytest.approx(2.64 * se)
    assert control_band(card(1.0, 1.0), "m", "add") == 5.0
    assert control_band(card(14.0, 9.4, n_test=50), "m", "add") == pytest.approx(11.3, abs=0.1)
    # the same fresh accuracy over 1000 items that are 180 effective ones (add's repeats):
    # SE = 100 sqrt(p (1 - p) (1/200 + 1/180)) = 3.105, band 8.20
    assert control_band(card(14.0, 9.4, n_eff=180.0), "m", "add") == pytest.approx(8.20, abs=0.01)


def test_effective_n_by_hand():
    """Contents a, a, b, c: (1 + 1 + 1 + 1)^2 / (2^2 + 1 + 1) = 16 / 6; all distinct: n."""
    from kit.world.card import effective_n

    def items(contents):
        return [
            Item(f"i{i}", "p", answer="1", metadata={"content": c}) for i, c in enumerate(contents)
        ]

    assert effective_n(items([(1, 2), (1, 2), (3, 4), (5, 6)])) == pytest.approx(16 / 6)
    assert effective_n(items([(1, 2), (3, 4), (5, 6)])) == 3.0
    with pytest.raises(ValueError, match="no items"):
        effective_n([])
