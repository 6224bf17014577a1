import pytest
import torch

from spacy_contextual.models.scalar_mix import ScalarMix


def test_initial_mix_is_the_average():
    layers = [torch.randn(2, 5, 8) for _ in range(3)]
    mixed = ScalarMix(3)(layers)
    torch.testing.assert_close(mixed, sum(layers) / 3)


def test_weights_and_gamma_learn():
    mix = ScalarMix(3)
    layers = [torch.zeros(4, 8), torch.ones(4, 8), torch.zeros(4, 8)]
    optimizer = torch.optim.SGD(mix.parameters(), lr=0.5)
    for _ in range(50):
        optimizer.zero_grad()
        loss = ((mix(layers) - 2.0) ** 2).mean()
        loss.backward()
        optimizer.step()
    shares = mix.normalized_weights()
    assert shares[1] > 0.6 and mix.gamma.item() > 1.5


def test_layer_dropout_only_in_training_and_never_drops_all():
    torch.manual_seed(0)
    mix = ScalarMix(3, layer_dropout=0.99)
    layers = [torch.full((2, 4), float(i + 1)) for i in range(3)]
    seen = set()
    for _ in range(20):
        value = mix(layers)[0, 0].item()
        assert value in (1.0, 2.0, 3.0)  # exactly one layer survives, never none
        seen.add(value)
    assert len(seen) >= 2
    mix.eval()
    torch.testing.assert_close(mix(layers), torch.full((2, 4), 2.0))


def test_fixed_parameters_and_errors():
    mix = ScalarMix(2, initial_weights=[0.0, 0.0], trainable=False)
    assert not any(p.requires_grad for p in mix.parameters())
    with pytest.raises(ValueError, match="built for 2 layers but got 3"):
        mix([torch.zeros(1)] * 3)
    with pytest.raises(ValueError, match="needs the mask"):
        ScalarMix(2, do_layer_norm=True)([torch.zeros(1, 2)] * 2)
