"""The fast LSTM path (sorted rows, transposed gates, blocked input products) equals a per-step reference.

The reference is the module docstring's equations, one step at a time over the whole batch, a row
keeping its state once its sentence has ended. Random weights large enough that both clips engage;
ragged lengths; a carried initial state. Forward values and gradients in float64 at 1e-10, which tells
a different computation from float32 rounding (gradients of size ~50 differ by ~4e-4 between any two
float32 orders of summation, the old loop's included). In float32 the fast path is held to the float64
reference: no further from it than 5 times the float32 reference's own distance, plus 1e-6. These
weights amplify rounding over the steps, so two float32 orders of summation land up to a few times
apart, by amounts that differ between the AVX2, AVX-512 and generic kernels (a fixed 1e-5 held on one
CPU and not on another); a wrong step is off by orders of magnitude more.
"""

from __future__ import annotations

import copy

import pytest
import torch
from util import tiny_config

from spacy_contextual.models import lstm_steps
from spacy_contextual.models.bilm import BiLM, reverse_padded
from spacy_contextual.models.fused_cell import SWITCH
from spacy_contextual.models.lstm import ProjectedLSTM

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-10, rtol=1e-10)}


def reference_lstm(lstm: ProjectedLSTM, inputs: torch.Tensor, lengths: torch.Tensor, state=None):
    """Outputs (B, T, P), final (h, c), and how many cell / projection values were clipped."""
    batch, steps, _ = inputs.shape
    h, c = state if state is not None else lstm.zero_state(batch, inputs)
    clipped = {"cell": 0, "projection": 0}
    outputs = []
    for t in range(steps):
        z = inputs[:, t] @ lstm.input_linearity.weight.T + h @ lstm.state_linearity.weight.T
        i, j, f, o = (z + lstm.state_linearity.bias).chunk(4, dim=-1)
        new_c = torch.sigmoid(f + lstm.forget_bias) * c + torch.sigmoid(i) * torch.tanh(j)
        valid = (t < lengths)[:, None]
        if lstm.cell_clip is not None:
            clipped["cell"] += int((new_c.abs() > lstm.cell_clip)[valid.expand_as(new_c)].sum())
            new_c = new_c.clamp(-lstm.cell_clip, lstm.cell_clip)
        new_h = torch.sigmoid(o) * torch.tanh(new_c)
        if lstm.state_projection is not None:
            new_h = new_h @ lstm.state_projection.weight.T
        if lstm.proj_clip is not None:
            clipped["projection"] += int((new_h.abs() > lstm.proj_clip)[valid.expand_as(new_h)].sum())
            new_h = new_h.clamp(-lstm.proj_clip, lstm.proj_clip)
        h, c = torch.where(valid, new_h, h), torch.where(valid, new_c, c)
        outputs.append(torch.where(valid, new_h, torch.zeros_like(new_h)))
    return torch.stack(outputs, dim=1), (h, c), clipped


def flat(outputs, final):
    return outputs.detach(), final[0].detach(), final[1].detach()


def random_lstm(input_dim: int, cell_dim: int, projection_dim: int, clip: float | None, seed: int = 0):
    torch.manual_seed(seed)
    lstm = ProjectedLSTM(input_dim, cell_dim, projection_dim, cell_clip=clip, proj_clip=clip)
    with torch.no_grad():  # weights large enough that cells and projections pass the clips
        for parameter in lstm.parameters():
            parameter.mul_(6.0)
    return lstm


def gradients(outputs, final, tensors, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    loss = sum((t * torch.randn(t.shape, generator=generator, dtype=t.dtype)).sum() for t in (outputs, *final))
    return torch.autograd.grad(loss, tensors)


@pytest.mark.parametrize(
    "input_dim, cell_dim, projection_dim, clip",
    [(12, 24, 8, 3.0), (12, 16, 16, 0.5), (8, 24, 8, None)],
    ids=["projection+clips", "no-projection+clips", "projection-no-clip"],
)
@pytest.mark.parametrize("block_steps", [None, 1, 3], ids=["default-blocks", "1-step-blocks", "3-step-blocks"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_projected_lstm_equals_the_per_step_reference(
    monkeypatch, input_dim, cell_dim, projection_dim, clip, block_steps, dtype
):
    lengths = torch.tensor([5, 9, 1, 0, 9, 3, 7])  # ragged, unsorted, a full row and an empty one
    if block_steps is not None:  # 3: rows finish in the middle of a block of input products
        block_bytes = block_steps * 4 * cell_dim * torch.empty((), dtype=dtype).element_size() * len(lengths)
        monkeypatch.setattr(lstm_steps, "BLOCK_BYTES", block_bytes)
    lstm = random_lstm(input_dim, cell_dim, projection_dim, clip).to(dtype)
    torch.manual_seed(2)
    inputs = torch.randn(7, 11, input_dim) * (torch.arange(11)[None, :] < lengths[:, None])[..., None]
    state = (torch.randn(7, projection_dim), torch.randn(7, cell_dim) * 2)
    inputs, state = inputs.to(dtype), tuple(s.to(dtype) for s in state)
    leaves = [inputs.requires_grad_(), *(s.requires_grad_() for s in state), *lstm.parameters()]

    outputs, final = lstm(inputs, lengths, state)
    expected, expected_final, clipped = reference_lstm(lstm, inputs, lengths, state)

    if clip is not None:
        assert clipped["cell"] > 0 and (projection_dim == cell_dim or clipped["projection"] > 0), clipped
    if dtype == torch.float32:
        exact = reference_lstm(copy.deepcopy(lstm).double(), inputs.double(), lengths, tuple(s.double() for s in state))
        compared = zip(flat(outputs, final), flat(expected, expected_final), flat(*exact[:2]), strict=True)
        for got, float32_reference, want in compared:
            error, reference_error = (got.double() - want).abs().max(), (float32_reference.double() - want).abs().max()
            assert error <= 5 * reference_error + 1e-6, (float(error), float(reference_error))
    else:
        torch.testing.assert_close(outputs, expected, **TOL[dtype])
        torch.testing.assert_close(final[0], expected_final[0], **TOL[dtype])
        torch.testing.assert_close(final[1], expected_final[1], **TOL[dtype])
    assert torch.equal(final[0][3], state[0][3]) and torch.equal(final[1][3], state[1][3])  # empty row: as given
    if dtype == torch.float64:
        got, want = gradients(outputs, final, leaves), gradients(expected, expected_final, leaves)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, **TOL[dtype])


@pytest.mark.parametrize("block_steps", [None, 3, 0], ids=["default-blocks", "3-step-blocks", "1-step-blocks"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("projection_dim, clip", [(8, 3.0), (24, None)], ids=["projection+clips", "plain"])
def test_the_inference_engine_equals_the_reference(monkeypatch, block_steps, dtype, projection_dim, clip):
    """Without autograd, and with the fused cell switched off (``test_fused_cell.py`` tests it), the engine
    (``lstm_inference.py``) runs the step as torch operations in place in reused buffers (or, with a
    product of its own per step, in that product): the reference's bits, in float32 and float64. (With
    bf16 weights the two round differently: ``test_bf16_weights_...`` holds each to float64.) The caller's
    state is left as it was."""
    monkeypatch.setenv(SWITCH, "0")
    lengths = torch.tensor([5, 9, 1, 0, 9, 3, 7])
    if block_steps is not None:  # 0: every step's W_x x is a product of its own
        monkeypatch.setattr(lstm_steps, "BLOCK_BYTES", block_steps * 4 * 24 * 4 * len(lengths))
    lstm = random_lstm(12, 24, projection_dim, clip).to(dtype)
    torch.manual_seed(2)
    inputs = torch.randn(7, 11, 12) * (torch.arange(11)[None, :] < lengths[:, None])[..., None]
    state = (torch.randn(7, projection_dim), torch.randn(7, 24) * 2)
    given = tuple(s.clone() for s in state)

    with torch.enable_grad():
        outputs, final = lstm(inputs, lengths, state)
    with torch.no_grad():
        in_place, in_place_final = lstm(inputs, lengths, state)

    assert torch.equal(outputs, in_place)
    assert torch.equal(final[0], in_place_final[0]) and torch.equal(final[1], in_place_final[1])
    assert torch.equal(state[0], given[0]) and torch.equal(state[1], given[1])


def clipping_bilm(stateful: bool, dtype: torch.dtype = torch.float32) -> BiLM:
    torch.manual_seed(3)
    bilm = BiLM(tiny_config(), stateful=stateful)
    with torch.no_grad():
        for lstm in [*bilm.forward_layers, *bilm.backward_layers]:
            for parameter in lstm.parameters():
                parameter.mul_(4.0)
    return bilm.to(dtype).eval()


def reference_encode(bilm: BiLM, tokens: torch.Tensor, mask: torch.Tensor, states=None):
    """BiLM.encode's activations with every LSTM replaced by the per-step reference."""
    tokens = tokens * mask.unsqueeze(-1)
    lengths = mask.sum(-1)
    P, D = bilm.config.projection_dim, bilm.config.lstm_dim
    activations = [torch.cat([tokens, tokens], -1)]
    inputs = {"forward": tokens, "backward": reverse_padded(tokens, lengths)}
    for index in range(bilm.config.n_layers):
        outs = {}
        for direction, layers, half in (("forward", bilm.forward_layers, 0), ("backward", bilm.backward_layers, 1)):
            state = None
            if states is not None:
                h, c = states[0][index], states[1][index]
                state = (h[:, half * P : (half + 1) * P], c[:, half * D : (half + 1) * D])
            out, _, _ = reference_lstm(layers[index], inputs[direction], lengths, state)
            outs[direction] = out + inputs[direction] if index > 0 else out
        activations.append(torch.cat([outs["forward"], reverse_padded(outs["backward"], lengths)], -1))
        inputs = outs
    return activations


def ragged_tokens(lengths: list[int], width: int, seed: int, dtype: torch.dtype = torch.float32):
    torch.manual_seed(seed)
    lengths = torch.tensor(lengths)
    mask = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
    return torch.randn(len(lengths), int(lengths.max()), width, dtype=dtype), mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bilm_both_directions_with_carried_state_equal_the_reference(dtype):
    bilm = clipping_bilm(stateful=True, dtype=dtype)
    P = bilm.config.projection_dim
    with torch.no_grad():
        for k, lengths in enumerate([[4, 9, 2], [6, 3, 8, 5]]):  # the second batch grows the carried rows
            tokens, mask = ragged_tokens(lengths, P, seed=k, dtype=dtype)
            carried = None if bilm.states is None else tuple(s[:, : len(lengths)] for s in bilm.states)
            if carried is not None and carried[0].shape[1] < len(lengths):
                grow = len(lengths) - carried[0].shape[1]
                carried = tuple(torch.cat([s, s.new_zeros(s.shape[0], grow, s.shape[2])], 1) for s in carried)
            activations, _ = bilm.encode(tokens, mask)
            for got, want in zip(activations, reference_encode(bilm, tokens, mask, carried), strict=True):
                torch.testing.assert_close(got, want, **TOL[dtype])


def test_bilm_gradients_equal_the_reference():
    bilm = clipping_bilm(stateful=False, dtype=torch.float64)
    tokens, mask = ragged_tokens([7, 3, 5, 1], bilm.config.projection_dim, seed=5, dtype=torch.float64)
    tokens.requires_grad_()
    leaves = [tokens, *bilm.forward_layers.parameters(), *bilm.backward_layers.parameters()]
    got_acts = bilm.encode(tokens, mask).activations
    want_acts = reference_encode(bilm, tokens, mask)
    generator = torch.Generator().manual_seed(6)
    probes = [torch.randn(a.shape, generator=generator, dtype=torch.float64) for a in want_acts]
    got = torch.autograd.grad(sum((a * p).sum() for a, p in zip(got_acts, probes, strict=True)), leaves)
    want = torch.autograd.grad(sum((a * p).sum() for a, p in zip(want_acts, probes, strict=True)), leaves)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, **TOL[torch.float64])


def test_bf16_weights_keep_the_cell_in_float32_and_are_never_converted():
    """Weights cast to bf16 once: the products run on them as they are (no weight-sized conversion
    in the loop), the cell state and the final c stay float32, and the outputs of the engine and of the
    reference (autograd) path follow the float64 equations on the same (bf16-rounded) weights to bf16
    accuracy."""
    lstm = random_lstm(6, 32, 12, clip=3.0).to(torch.bfloat16)  # no state of 16 columns shaped like a weight
    with torch.no_grad():  # weights in the range of a trained biLM's (the x6 of random_lstm is chaotic in bf16)
        for parameter in lstm.parameters():
            parameter.div_(6.0)
    exact = copy.deepcopy(lstm).double()
    torch.manual_seed(2)
    inputs, lengths = torch.randn(5, 9, 6), torch.tensor([9, 4, 7, 1, 9])
    weight_shapes = {
        shape for p in lstm.parameters() if p.dim() == 2 for shape in (tuple(p.shape), tuple(p.shape)[::-1])
    }
    with torch.no_grad(), torch.profiler.profile(record_shapes=True) as profile:
        outputs, (h, c) = lstm(inputs, lengths)
    conversions = [e for e in profile.events() if e.name in ("aten::_to_copy", "aten::copy_")]
    assert conversions and not [e for e in conversions if e.input_shapes and tuple(e.input_shapes[0]) in weight_shapes]
    assert outputs.dtype == h.dtype == torch.bfloat16 and c.dtype == torch.float32
    with torch.no_grad():
        expected, (_, expected_c), _ = reference_lstm(exact, inputs.double(), lengths)
    with torch.enable_grad():  # the reference (autograd) path with the same bf16 weights
        reference_outputs, _, reference_c = flat(*lstm(inputs, lengths))
    for got, got_c in ((outputs, c), (reference_outputs, reference_c)):
        assert got_c.dtype == torch.float32
        torch.testing.assert_close(got.double(), expected, atol=0.01 * float(expected.abs().max()), rtol=0.02)
        torch.testing.assert_close(got_c.double(), expected_c, atol=0.01 * float(expected_c.abs().max()), rtol=0.02)


def test_padded_columns_of_rows_past_their_end_never_reach_an_output():
    """More rows than ``ROW_MULTIPLE``: steps compute whole blocks of 16 columns, so rows that have ended
    are computed on with garbage in them; their outputs stay zero and their final state is the one at
    their last step, in the outputs, the final state and the gradients (float64 at 1e-10: over 40 steps
    of these chaotic weights, float32 rounding alone grows past 1e-5)."""
    dtype = torch.float64
    lengths = torch.tensor([1, 2, 17, 40, 3, 0, 33, 16, 5, 40, 18, 2, 31, 1, 9, 12, 20, 7, 39, 4, 6, 38, 15, 10, 1])
    assert len(lengths) > lstm_steps.ROW_MULTIPLE
    lstm = random_lstm(6, 16, 8, 3.0).to(dtype)
    torch.manual_seed(4)
    batch, steps = len(lengths), int(lengths.max())
    inputs = torch.randn(batch, steps, 6, dtype=dtype) * 5  # past each length: not zero
    state = (torch.randn(batch, 8, dtype=dtype), torch.randn(batch, 16, dtype=dtype))
    leaves = [inputs.requires_grad_(), *lstm.parameters()]

    outputs, final = lstm(inputs, lengths, state)
    expected, expected_final, _ = reference_lstm(lstm, inputs, lengths, state)

    torch.testing.assert_close(outputs, expected, **TOL[dtype])
    torch.testing.assert_close(final[0], expected_final[0], **TOL[dtype])
    torch.testing.assert_close(final[1], expected_final[1], **TOL[dtype])
    with torch.no_grad():
        in_place, in_place_final = lstm(inputs, lengths, state)
    assert torch.equal(in_place, outputs.detach()) and torch.equal(in_place_final[1], final[1].detach())
    if dtype == torch.float64:
        for got, want in zip(
            gradients(outputs, final, leaves), gradients(expected, expected_final, leaves), strict=True
        ):
            torch.testing.assert_close(got, want, **TOL[dtype])


def test_padded_rows_are_whole_blocks_within_the_batch():
    assert [lstm_steps.padded_rows(rows, 40, True) for rows in (1, 2, 16, 17, 33, 39, 40)] == [
        1,
        16,
        16,
        32,
        40,
        40,
        40,
    ]
    assert lstm_steps.padded_rows(1, 40, False) == 16  # a low-precision single row: a block, not a vector product
    assert lstm_steps.padded_rows(3, 2, False) == 2


def test_the_joined_low_precision_weight_follows_every_change_of_the_weights():
    """The bf16 step's [W_x | W_h] is kept between calls: changing a weight in place, replacing it, or
    casting the module gives the results of a module built afresh with those weights."""
    lstm = random_lstm(6, 16, 8, 3.0).to(torch.bfloat16)
    with torch.no_grad():
        for parameter in lstm.parameters():
            parameter.div_(6.0)
    torch.manual_seed(5)
    inputs, lengths = torch.randn(4, 7, 6), torch.tensor([7, 3, 5, 1])

    def agrees_with_a_fresh_copy():
        with torch.no_grad():
            fresh = copy.deepcopy(lstm)
            fresh._joined = None
            return torch.equal(lstm(inputs, lengths)[0], fresh(inputs, lengths)[0])

    assert agrees_with_a_fresh_copy()
    with torch.no_grad():
        lstm.state_linearity.weight.mul_(-1.0)  # in place: its version counter moves
    assert agrees_with_a_fresh_copy()
    lstm.input_linearity.weight = torch.nn.Parameter(lstm.input_linearity.weight.detach() * 0.5)  # replaced
    assert agrees_with_a_fresh_copy()
    lstm.half()  # cast: the dtype changes
    with torch.no_grad():
        assert lstm(inputs, lengths)[0].dtype == torch.float16
    assert agrees_with_a_fresh_copy()
    with torch.enable_grad():  # gradients reach both weights through the joined product
        outputs, _ = lstm(inputs, lengths)
        outputs.float().sum().backward()
    assert lstm.input_linearity.weight.grad is not None and lstm.state_linearity.weight.grad is not None


@pytest.mark.parametrize("lengths", [[9, 9, 7, 5, 3, 1, 0], [6]], ids=["longest-first", "one-row"])
def test_rows_that_come_longest_first_run_where_they_are_and_the_callers_state_is_kept(lengths):
    """Rows already in order of decreasing length (the embedders' batches) are not permuted; the cell
    state the step updates in place is still the layer's own copy, also for a single row (whose
    transpose needs no copy)."""
    lengths = torch.tensor(lengths)
    lstm = random_lstm(12, 24, 8, 3.0)
    torch.manual_seed(5)
    inputs = torch.randn(len(lengths), 9, 12)
    state = (torch.randn(len(lengths), 8), torch.randn(len(lengths), 24))
    given = tuple(s.clone() for s in state)
    with torch.no_grad():
        outputs, final = lstm(inputs, lengths, state)
    expected, expected_final, _ = reference_lstm(lstm, inputs, lengths, state)
    torch.testing.assert_close(outputs, expected, **TOL[torch.float32])
    torch.testing.assert_close(final[1], expected_final[1], **TOL[torch.float32])
    assert torch.equal(state[0], given[0]) and torch.equal(state[1], given[1])


def test_a_small_low_precision_batch_runs_as_a_block_of_row_multiple_rows(monkeypatch):
    """bf16 inference on fewer than ``ROW_MULTIPLE`` rows computes a block of that many columns (rows of
    length 0 added), since a product of one column is slower; only the real rows come back, an empty row
    keeps its state, and the results agree with the autograd path within bf16 rounding."""
    lstm = random_lstm(12, 24, 8, 3.0).to(torch.bfloat16)
    with torch.no_grad():  # weights in a trained biLM's range (the x6 of random_lstm is chaotic in bf16)
        for parameter in lstm.parameters():
            parameter.div_(6.0)
    lengths = torch.tensor([9, 4, 0])
    torch.manual_seed(6)
    inputs = torch.randn(3, 11, 12, dtype=torch.bfloat16)
    state = (torch.randn(3, 8).bfloat16(), torch.randn(3, 24))
    given = tuple(s.clone() for s in state)
    batches = []
    real = lstm_steps.padded_rows
    monkeypatch.setattr(lstm_steps, "padded_rows", lambda *args: batches.append(args[1]) or real(*args))
    with torch.no_grad():
        outputs, final = lstm(inputs, lengths, state)
    assert set(batches) == {lstm_steps.ROW_MULTIPLE}
    with torch.enable_grad():
        expected, expected_final = lstm(inputs, lengths, state)
    assert set(batches) == {lstm_steps.ROW_MULTIPLE, 3}
    assert outputs.shape == (3, 11, 8) and final[0].shape == (3, 8) and final[1].shape == (3, 24)
    torch.testing.assert_close(outputs.float(), expected.detach().float(), atol=0.05, rtol=0.02)
    torch.testing.assert_close(final[1], expected_final[1].detach(), atol=0.05, rtol=0.02)
    assert torch.equal(final[0][2], state[0][2]) and torch.equal(final[1][2], state[1][2])
    assert not outputs[2].any() and not outputs[1, 4:].any()
    assert torch.equal(state[0], given[0]) and torch.equal(state[1], given[1])


@pytest.mark.parametrize("trailing", [(), (5,), (2, 3)], ids=["(B,T)", "(B,T,P)", "(B,T,2,3)"])
def test_reverse_padded_reverses_each_row_within_its_length(trailing):
    torch.manual_seed(8)
    lengths = torch.tensor([4, 0, 6, 1])
    tensor = torch.randn(4, 6, *trailing)
    expected = tensor.clone()
    for row, length in enumerate(lengths.tolist()):
        expected[row, :length] = tensor[row, :length].flip(0)
    assert torch.equal(reverse_padded(tensor, lengths), expected)
    assert reverse_padded(tensor[:0], lengths[:0]).shape == (0, 6, *trailing)
    assert reverse_padded(tensor[:, :0], torch.zeros(4, dtype=torch.long)).shape == (4, 0, *trailing)
