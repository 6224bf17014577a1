"""CoVe models: the MT-LSTM against nn.LSTM, the published .pth checks, the attentional decoder and search."""

import pytest
import torch
from torch import nn

from spacy_contextual.formats.cove_pth import CovePthError, expected_shapes, load_cove_pth, validate_cove_state_dict
from spacy_contextual.models.seq2seq import Seq2SeqConfig, Translator, length_penalty


def _reference_lstm(seed=0):
    torch.manual_seed(seed)
    return nn.LSTM(300, 300, num_layers=2, bidirectional=True, batch_first=True).eval()


def test_published_state_dict_matches_nn_lstm_with_padding_zeroed(tmp_path):
    reference = _reference_lstm()
    path = tmp_path / "wmtlstm-synthetic.pth"
    torch.save(reference.state_dict(), path)
    encoder = load_cove_pth(path)
    inputs = torch.randn(3, 7, 300)
    lengths = torch.tensor([7, 4, 1])
    with torch.no_grad():
        layers = encoder(inputs, lengths).layers
        for row, length in enumerate(lengths.tolist()):
            expected, _ = reference(inputs[row : row + 1, :length])
            torch.testing.assert_close(layers[1][row, :length], expected[0], atol=1e-5, rtol=1e-4)
            for layer in layers:
                assert torch.count_nonzero(layer[row, length:]) == 0
    # layer 1 (CoVe-1) is the first layer of the same stack
    first = nn.LSTM(300, 300, bidirectional=True, batch_first=True)
    first.load_state_dict({k: v for k, v in reference.state_dict().items() if "_l0" in k})
    with torch.no_grad():
        torch.testing.assert_close(layers[0][0], first(inputs[:1])[0][0], atol=1e-5, rtol=1e-4)
    assert set(encoder.published_state_dict()) == set(expected_shapes())


def test_validation_names_missing_unexpected_and_misshaped_keys():
    state = _reference_lstm().state_dict()
    with pytest.raises(CovePthError, match=r"missing keys \['bias_hh_l1_reverse'\]"):
        validate_cove_state_dict({k: v for k, v in state.items() if k != "bias_hh_l1_reverse"})
    with pytest.raises(CovePthError, match="module prefix"):
        validate_cove_state_dict({f"rnn.{k}": v for k, v in state.items()})
    bad = dict(state, weight_ih_l0=torch.zeros(1200, 100))
    with pytest.raises(CovePthError, match=r"weight_ih_l0 has shape \(1200, 100\), expected \(1200, 300\)"):
        validate_cove_state_dict(bad)
    with pytest.raises(CovePthError, match="not a state dict"):
        validate_cove_state_dict([1, 2])


def test_pth_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        load_cove_pth(tmp_path / "wmtlstm-8f474287.pth")
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CovePthError, match="junk.pth is not a readable PyTorch state dict .*damaged or truncated"):
        load_cove_pth(junk)


def tiny_translator(form="paper", seed=0):
    torch.manual_seed(seed)
    config = Seq2SeqConfig(
        30, 25, embedding_dim=8, encoder_hidden=6, target_embedding_dim=5, decoder_hidden=7, attention_form=form
    )
    model = Translator(config, torch.randn(30, 8))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.5, 0.5)
    return model.eval()


def _batch():
    source = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 0, 0, 0], [12, 13, 14, 0, 0]])
    return source, torch.tensor([5, 2, 3])


@pytest.mark.parametrize("form", ["paper", "seed"])
def test_decoder_shapes_and_attention_over_unmasked_source(form):
    model = tiny_translator(form)
    source, lengths = _batch()
    target = torch.tensor([[2, 4, 5, 6], [2, 7, 3, 0], [2, 8, 9, 3]])
    logits, attention = model(source, lengths, target)
    assert logits.shape == (3, 4, 25) and attention.shape == (3, 4, 5)
    torch.testing.assert_close(attention.sum(-1), torch.ones(3, 4))
    assert attention[1, :, 2:].abs().max() == 0 and attention[2, :, 3:].abs().max() == 0
    assert model.decoder.output.in_features == (14 if form == "seed" else 7)


def test_bad_attention_form_and_vector_shape():
    with pytest.raises(ValueError, match="attention_form"):
        Seq2SeqConfig(5, 5, attention_form="bahdanau")
    with pytest.raises(ValueError, match=r"source vectors have shape \(4, 8\)"):
        Translator(Seq2SeqConfig(30, 25, embedding_dim=8), torch.zeros(4, 8))


@pytest.mark.parametrize("form", ["paper", "seed"])
def test_beam_of_one_equals_greedy(form):
    model = tiny_translator(form, seed=3)
    source, lengths = _batch()
    greedy = model.greedy(source, lengths, max_length=12)
    for row in range(3):
        n = int(lengths[row])
        beam = model.beam_search(source[row : row + 1, :n], n, beam=1, alpha=0.6, max_length=12)
        assert beam.ids == greedy[row].ids
        assert beam.score == pytest.approx(greedy[row].score, abs=1e-5)
        torch.testing.assert_close(beam.attention, greedy[row].attention)


def test_wider_beam_finds_at_least_the_greedy_log_probability_without_penalty():
    model = tiny_translator(seed=5)
    source, lengths = _batch()
    greedy = model.greedy(source[:1], lengths[:1], max_length=12)[0]
    beam = model.beam_search(source[:1], 5, beam=8, alpha=0.0, max_length=12)
    assert beam.score >= greedy.score - 1e-5
    assert beam.attention.shape[1] == 5


def test_length_penalty_math():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert length_penalty(13, 0.0) == 1.0


def test_tied_output_layer_is_stored_once_and_reloads(tmp_path):
    from spacy_contextual.formats.cove_dir import load_translator, save_translator
    from spacy_contextual.formats.model_dir import load_tensors

    torch.manual_seed(0)
    config = Seq2SeqConfig(
        30, 25, embedding_dim=8, encoder_hidden=6, target_embedding_dim=7, decoder_hidden=7, tie_embeddings=True
    )
    model = Translator(config, torch.randn(30, 8)).eval()
    assert model.decoder.output.weight is model.decoder.embedding.weight
    save_translator(model, tmp_path / "mt", [f"s{i}" for i in range(30)], [f"t{i}" for i in range(25)])
    assert "decoder.output.weight" not in load_tensors(tmp_path / "mt")
    loaded, _, _ = load_translator(tmp_path / "mt")
    assert loaded.decoder.output.weight is loaded.decoder.embedding.weight
    source, lengths = _batch()
    assert [t.ids for t in loaded.greedy(source, lengths, 8)] == [t.ids for t in model.greedy(source, lengths, 8)]
    with pytest.raises(ValueError, match="tie_embeddings needs"):
        Seq2SeqConfig(5, 5, target_embedding_dim=4, decoder_hidden=7, tie_embeddings=True)


def test_unknown_words_take_the_most_attended_source_token():
    from spacy_contextual.mt_text import replace_unknown

    attention = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    assert replace_unknown(["Ein", "<unk>", "<unk>"], attention, ["a", "zebra"]) == ["Ein", "zebra", "a"]


def test_subword_pieces_segment_and_join_back_to_the_words():
    from spacy_contextual.mt_text import detokenize, join_subwords
    from spacy_contextual.training.mt_data import learn_subwords

    sentences = [["Ein", "Hund", "rennt", "."], ["Zwei", "Hunde", "rennen", "schnell", "."]] * 20
    segment = learn_subwords(sentences, vocab_size=30)
    pieces = segment(["Hunde", "rennen", "."])
    assert len(pieces) > 3 and any(p.startswith("##") for p in pieces)
    assert join_subwords(pieces) == ["Hunde", "rennen", "."]
    assert detokenize(pieces) == "Hunde rennen."
    assert segment([]) == []
    assert join_subwords(["#", "a", "."]) == ["#", "a", "."]  # word output passes through
