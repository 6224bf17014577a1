import torch

from spacy_contextual.models.chars import (
    BOS_IDS,
    EOS_IDS,
    add_sentence_boundaries,
    batch_to_ids,
    remove_sentence_boundaries,
    token_to_char_ids,
)


def test_batch_to_ids_matches_allennlp(tiny_anchor):
    _, meta, ref = tiny_anchor
    for k, batch in enumerate(meta["batches"]):
        assert torch.equal(batch_to_ids(batch), torch.from_numpy(ref[f"b{k}/char_ids"]))


def test_token_ids_scheme():
    ids = token_to_char_ids("ab")
    assert ids[:4] == (259, 98, 99, 260) and set(ids[4:]) == {261} and len(ids) == 50
    # a 60-character token is cut to 48 bytes and has no padding char at all
    long = token_to_char_ids("x" * 60)
    assert long[0] == 259 and long[-1] == 260 and 261 not in long
    # multi-byte characters are UTF-8 bytes (2 bytes for "é")
    assert token_to_char_ids("é")[1:3] == (0xC3 + 1, 0xA9 + 1)
    # a literal boundary token maps to the boundary ids
    assert token_to_char_ids("<S>") == BOS_IDS and token_to_char_ids("</S>") == EOS_IDS


def test_boundaries_round_trip():
    ids = batch_to_ids([["a", "b", "c"], [], ["d"]])
    with_bounds, mask = add_sentence_boundaries(ids)
    assert mask.sum(-1).tolist() == [5, 2, 3]
    assert with_bounds[1, 1].tolist() == list(EOS_IDS)  # empty sentence: <S> </S>
    assert with_bounds[2, 2].tolist() == list(EOS_IDS)
    values = torch.randn(3, 5, 7)
    stripped, new_mask = remove_sentence_boundaries(values, mask)
    assert new_mask.sum(-1).tolist() == [3, 0, 1]
    assert torch.equal(stripped[0], values[0, 1:4])
    assert stripped[1].abs().sum() == 0 and stripped[2, 1:].abs().sum() == 0
