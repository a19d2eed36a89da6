from transformers import AutoTokenizer

from rlvr.models.tokenizer import FORMAT_TAGS, build_char_tokenizer


def test_characters_and_tags_roundtrip(tmp_path):
    tok = build_char_tokenizer()
    text = "(7*8)-5<think>7*8=56;56-5=51</think><answer>51</answer>"
    ids = tok(text, add_special_tokens=False).input_ids
    assert len(ids) == len("(7*8)-5") + len("7*8=56;56-5=51") + len("51") + 4  # each tag is one token
    assert tok.decode(ids) == text
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(str(tmp_path))
    assert loaded(text, add_special_tokens=False).input_ids == ids
    # tags survive skip_special_tokens (verifiers need them); EOS does not
    assert loaded.decode(ids + [loaded.eos_token_id], skip_special_tokens=True) == text
    assert all(len(tok(t, add_special_tokens=False).input_ids) == 1 for t in FORMAT_TAGS)


def test_unknown_characters_map_to_unk():
    tok = build_char_tokenizer()
    assert tok("é", add_special_tokens=False).input_ids == [tok.unk_token_id]
