import pytest

from kit.world.tasks import TASKS
from kit.world.tokenizer import BOS_ID, EOS_ID, PAD_ID, answer_id, build_tokenizer, encode, vocab


def test_every_generated_word_is_one_token():
    for task in TASKS.values():
        for split in ("test", "test-syn", "train", "fresh", "fresh-syn"):
            for it in task.items(split, n=60):
                encode(it.prompt)  # raises on an unknown word
                answer_id(it.target)


def test_hf_tokenizer_matches_fast_path_and_prepends_bos():
    tok = build_tokenizer()
    it = TASKS["code"].items("test", n=1)[0]
    ids = tok(it.prompt)["input_ids"]
    assert ids[0] == BOS_ID, "the world's convention: the HF tokenizer prepends <bos>"
    assert ids[1:] == encode(it.prompt)
    assert tok.decode(ids, skip_special_tokens=True) == it.prompt


def test_specials_and_numbers_are_whole_tokens():
    v = vocab()
    assert (v["<pad>"], v["<bos>"], v["<eos>"]) == (PAD_ID, BOS_ID, EOS_ID)
    assert all(str(i) in v for i in range(64))
    assert len(v) < 400


def test_unknown_word_is_named():
    with pytest.raises(ValueError, match="wombat"):
        encode("tom has wombat")
    with pytest.raises(ValueError, match="single token"):
        answer_id("3 4")
