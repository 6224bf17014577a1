import pytest
import torch

from spacy_contextual.models.char_cnn import CharCNN
from spacy_contextual.models.chars import batch_to_ids


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_trimmed_convolution_equals_all_50_positions(activation):
    """forward() convolves only the positions each token needs, as one product over the windows of the
    widest filter where each token's last window is padding (a 44- and a 60-character word are not); the
    result equals the seven convolutions over all 50 positions."""
    torch.manual_seed(0)
    cnn = CharCNN(4, [[1, 4], [3, 8], [7, 16]], n_highway=1, output_dim=8, activation=activation)
    words = ["a", "hello", "x" * 60, "y" * 44, "</S>", "naïve", "東京", ""]
    ids = batch_to_ids([words])[0]
    one_product = [padding_at_the_end for _, _, padding_at_the_end in cnn._spans(ids)]
    assert any(one_product) and not all(one_product)  # both ways run
    full = cnn._max_pooled_features(ids, padding_at_the_end=False)  # all 50 positions, convolutions one by one
    for highway in cnn.highways:
        full = highway(full)
    full = cnn.projection(full)
    torch.testing.assert_close(cnn(ids), full, atol=1e-6, rtol=1e-6)
    assert cnn(ids.view(2, 4, 50)).shape == (2, 4, 8)


def test_gradients_flow_through_the_trimmed_path():
    cnn = CharCNN(4, [[1, 4], [2, 4]], n_highway=0, output_dim=8)
    cnn(batch_to_ids([["ab", "cde" * 10]])[0]).sum().backward()
    assert cnn.char_embedding.weight.grad.abs().sum() > 0
    assert all(conv.weight.grad is not None for conv in cnn.convolutions)


def test_bad_activation():
    with pytest.raises(ValueError, match="'relu' or 'tanh'"):
        CharCNN(4, [[1, 4]], 0, 4, activation="gelu")
