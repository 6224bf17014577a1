"""The fused LSTM cell step (``models/lstm_cell.cpp``) against the torch operations it replaces.

The operator for this CPU is built once before the tests (``conftest.py``); where it cannot be built
(no compiler), the tests that call it are skipped with the reason, and the LSTM runs the torch
operations. Tolerances come from a float64 reference, never from one CPU's rounding: float32 gates
give c and h within 1e-6 of the float64 step (Sleef's exp to 1 ulp and three divisions, a few float32
ulps of values below 4: the budget holds on AVX2, AVX-512 and the generic build alike), on values from 0
to far past where exp overflows, with and without clipping, at column counts that fill whole vectors
and that leave a remainder, read contiguous or among the columns of a wider product. bf16/fp16 gates
with the bias added while widening: c within 1e-5, and h (rounded to bf16/fp16) within one unit of its
last place. In the LSTM, the fused inference path is no further from a float64 run than the torch
operations are. ``SPACY_CONTEXTUAL_FUSED_CELL`` takes the usual switch words and refuses others.
"""

from __future__ import annotations

import pytest
import torch

from spacy_contextual.errors import ContextualError
from spacy_contextual.models import fused_cell
from spacy_contextual.models.fused_cell import SWITCH, cell_operator
from spacy_contextual.models.lstm import ProjectedLSTM

D = 40
UNIT = {torch.bfloat16: 2**-8, torch.float16: 2**-11}  # the spacing of values in [1, 2), relative


@pytest.fixture
def operator():
    """The cell operator of this CPU, or a skip naming why it cannot be built here."""
    built = cell_operator()
    if built is None:
        state = fused_cell.cell_state()
        pytest.skip(f"the fused LSTM cell cannot be built here: {state.state} ({state.detail})")
    return built


def torch_step(z: torch.Tensor, c: torch.Tensor, clip: float | None):
    """The step as torch operations: the module docstring of ``models/lstm.py``, in float64."""
    i, j, f, o = z.double().chunk(4)
    c = torch.sigmoid(f) * c.double() + torch.sigmoid(i) * torch.tanh(j)
    if clip is not None:
        c = c.clamp(-clip, clip)
    return torch.sigmoid(o) * torch.tanh(c), c


def gates(columns: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """z (4D, columns) from 0 and tiny values to +-200 (exp(200) overflows float32), and c (D, columns)."""
    generator = torch.Generator().manual_seed(seed)
    scale = torch.tensor([0.0, 1e-6, 0.1, 1.0, 4.0, 30.0, 200.0])
    z = (
        torch.randn(4 * D, columns, generator=generator)
        * scale[torch.randint(len(scale), (4 * D, columns), generator=generator)]
    )
    c = torch.randn(D, columns, generator=generator) * 3
    return z, c


@pytest.mark.parametrize("columns", [1, 3, 16, 37, 64])
@pytest.mark.parametrize("clip", [None, 2.0])
def test_float32_gates_match_the_torch_operations(operator, columns, clip):
    z, c = gates(columns)
    h = torch.empty(D, columns)
    fused_c = c.clone()
    operator(z, None, fused_c, clip, h)
    want_h, want_c = torch_step(z, c, clip)
    torch.testing.assert_close(fused_c.double(), want_c, atol=1e-6, rtol=0)
    torch.testing.assert_close(h.double(), want_h, atol=1e-6, rtol=0)
    if clip is not None:
        assert fused_c.abs().max() <= clip and (fused_c.abs() == clip).any()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("columns", [5, 32])
def test_low_precision_gates_are_widened_and_biased_in_the_step(operator, dtype, columns):
    z, c = gates(columns, seed=1)
    z = z.clamp(-60000, 60000).to(dtype)  # fp16's range
    bias = torch.randn(4 * D)
    h = torch.empty(D, columns, dtype=dtype)
    fused_c = c.clone()
    operator(z, bias, fused_c, 3.0, h)
    want_h, want_c = torch_step(z.float() + bias[:, None], c, 3.0)
    torch.testing.assert_close(fused_c.double(), want_c, atol=1e-5, rtol=0)
    torch.testing.assert_close(h.double(), want_h, atol=UNIT[dtype], rtol=UNIT[dtype])
    assert h.dtype == dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gates_read_in_place_among_the_columns_of_a_wider_product(operator, dtype):
    """A step's gates are a column slice of a block's product (rows further apart than the step's columns):
    the same bits as the same gates made contiguous."""
    wide, c = gates(50, seed=2)
    wide = wide.to(dtype)
    step = wide[:, 13:30]  # 17 columns of 50: a whole vector and a remainder
    bias = torch.randn(4 * D) if dtype != torch.float32 else None
    results = []
    for z in (step, step.contiguous()):
        h, state = torch.empty(D, 17, dtype=dtype), c[:, :17].contiguous()
        operator(z, bias, state, 2.0, h)
        results.append((h, state))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_operands_of_the_wrong_shape_or_layout_are_refused(operator):
    z, c = gates(8)
    h = torch.empty(D, 8)
    for bad in (
        (z[:, ::2], None, c[:, :4].contiguous(), None, h[:, :4].contiguous()),  # rows of gates not contiguous
        (z, None, c.t().contiguous().t(), None, h),  # c not contiguous
        (z[: 3 * D], None, c, None, h),  # not 4 gates
        (z, torch.zeros(D), c, None, h),  # bias of the wrong size
        (z.bfloat16(), None, c, None, h),  # gates and h of different dtypes
    ):
        with pytest.raises(RuntimeError):
            operator(*bad)


def lstm_and_inputs(dtype: torch.dtype):
    torch.manual_seed(0)
    lstm = ProjectedLSTM(12, 48, 16, cell_clip=3.0, proj_clip=3.0)
    with torch.no_grad():
        for parameter in lstm.parameters():
            parameter.mul_(4.0)
    lengths = torch.tensor([30, 7, 1, 0, 30, 18, 29, 2, 11, 30, 5, 16, 17, 23, 9, 4, 26, 13])
    inputs = torch.randn(len(lengths), 30, 12) * (torch.arange(30)[None, :] < lengths[:, None])[..., None]
    state = (torch.randn(len(lengths), 16), torch.randn(len(lengths), 48))
    return lstm.to(dtype), inputs, lengths, state


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_lstm_runs_the_fused_step_in_inference_as_accurately_as_torch_operations(operator, monkeypatch, dtype):
    """Against the same LSTM in float64: the fused float32 inference path is no further off than the
    autograd path's torch operations (these weights amplify any rounding over 30 steps), in float32 and
    with bf16 weights alike."""
    lstm, inputs, lengths, state = lstm_and_inputs(dtype)
    calls = []
    monkeypatch.setattr(fused_cell, "cell_operator", lambda: lambda *args: calls.append(1) or operator(*args))
    with torch.no_grad():
        fused = lstm(inputs, lengths, state)
    assert len(calls) == 30  # one call per step
    with torch.enable_grad():
        autograd = [lstm(inputs, lengths, state)]
    exact_lstm = lstm_and_inputs(torch.float64)[0]
    with torch.no_grad():
        exact = exact_lstm(inputs.double(), lengths, tuple(s.double() for s in state))
    autograd = (autograd[0][0].detach(), tuple(s.detach() for s in autograd[0][1]))
    for got, torch_ops, want in zip(flat(fused), flat(autograd), flat(exact), strict=True):
        assert got.dtype == torch_ops.dtype
        error, torch_error = (got.double() - want).abs().max(), (torch_ops.double() - want).abs().max()
        assert error <= 2 * torch_error + 1e-6, (error, torch_error)


def flat(result):
    out, (h, c) = result
    return out, h, c


def test_switched_off_or_unbuildable_the_lstm_runs_torch_operations(monkeypatch):
    lstm, inputs, lengths, state = lstm_and_inputs(torch.float32)
    with torch.enable_grad():
        reference = lstm(inputs, lengths, state)[0].detach()
    for off in ("0", "false", "OFF", " no "):
        monkeypatch.setenv(SWITCH, off)
        assert fused_cell.cell_state().state == "off"
        with torch.no_grad():
            assert torch.equal(lstm(inputs, lengths, state)[0], reference)  # torch operations in place: same bits
    monkeypatch.delenv(SWITCH)
    monkeypatch.setattr(fused_cell, "cell_operator", lambda: None)  # where it cannot be built
    with torch.no_grad():
        assert torch.equal(lstm(inputs, lengths, state)[0], reference)


@pytest.mark.parametrize("value", ["1", "true", "On", "yes", ""])
def test_the_switch_turns_the_cell_on(monkeypatch, value):
    monkeypatch.setenv(SWITCH, value)
    assert fused_cell.fused_cell_enabled()


@pytest.mark.parametrize("value", ["2", "enable", "disabled", "0.0"])
def test_a_switch_value_that_is_neither_on_nor_off_is_one_line_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(SWITCH, value)
    with pytest.raises(ContextualError, match=rf"^{SWITCH}=.* is not a switch: set it to one of 1/true/on/yes"):
        fused_cell.fused_cell_enabled()


def test_each_variant_is_chosen_by_torchs_capability(monkeypatch):
    """The build follows torch's CPU capability (which ATEN_CPU_CAPABILITY lowers), not the CPU's best."""
    for capability, variant in (("AVX512", "AVX512"), ("AVX2", "AVX2"), ("DEFAULT", "DEFAULT"), ("SVE256", None)):
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda capability=capability: capability)
        assert fused_cell.this_cpu_variant() == variant
    assert "-mf16c" in fused_cell.VARIANTS["AVX2"]  # torch's AVX2 kernels' flags: its vec headers convert halves
    builds = {fused_cell.cell_build(name).namespace for name in fused_cell.VARIANTS}
    assert len(builds) == len(fused_cell.VARIANTS)  # each registers its own operators: they load side by side
