"""The fused LSTM cell step (``models/lstm_cell.cpp``) against the torch operations it replaces.

The operator is built once before the tests (``conftest.py``). float32 gates: c and h within 1e-6 of
the torch step, on values from 0 to far past where exp overflows, with and without clipping, at column
counts that fill whole vectors and that leave a remainder, read contiguous or among the columns of a
wider product. bf16/fp16 gates with the bias added while
widening: c within 1e-5, and h (rounded to bf16/fp16) within one unit of its last place. In the LSTM, the
fused inference path is no further from a float64 run than the torch operations are; where the operator cannot
be built, the LSTM warns once and runs the torch operations.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from spacy_contextual.models import fused_cell
from spacy_contextual.models.fused_cell import SWITCH, cell_operator
from spacy_contextual.models.lstm import ProjectedLSTM

D = 40
UNIT = {torch.bfloat16: 2**-8, torch.float16: 2**-11}  # the spacing of values in [1, 2), relative


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
def test_float32_gates_match_the_torch_operations(columns, clip):
    z, c = gates(columns)
    h = torch.empty(D, columns)
    fused_c = c.clone()
    cell_operator()(z, None, fused_c, clip, h)
    want_h, want_c = torch_step(z, c, clip)
    torch.testing.assert_close(fused_c.double(), want_c, atol=1e-6, rtol=0)
    torch.testing.assert_close(h.double(), want_h, atol=1e-6, rtol=0)
    if clip is not None:
        assert fused_c.abs().max() <= clip and (fused_c.abs() == clip).any()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("columns", [5, 32])
def test_low_precision_gates_are_widened_and_biased_in_the_step(dtype, columns):
    z, c = gates(columns, seed=1)
    z = z.clamp(-60000, 60000).to(dtype)  # fp16's range
    bias = torch.randn(4 * D)
    h = torch.empty(D, columns, dtype=dtype)
    fused_c = c.clone()
    cell_operator()(z, bias, fused_c, 3.0, h)
    want_h, want_c = torch_step(z.float() + bias[:, None], c, 3.0)
    torch.testing.assert_close(fused_c.double(), want_c, atol=1e-5, rtol=0)
    torch.testing.assert_close(h.double(), want_h, atol=UNIT[dtype], rtol=UNIT[dtype])
    assert h.dtype == dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gates_read_in_place_among_the_columns_of_a_wider_product(dtype):
    """A step's gates are a column slice of a block's product (rows further apart than the step's columns):
    the same bits as the same gates made contiguous."""
    wide, c = gates(50, seed=2)
    wide = wide.to(dtype)
    step = wide[:, 13:30]  # 17 columns of 50: a whole vector and a remainder
    bias = torch.randn(4 * D) if dtype != torch.float32 else None
    results = []
    for z in (step, step.contiguous()):
        h, state = torch.empty(D, 17, dtype=dtype), c[:, :17].contiguous()
        cell_operator()(z, bias, state, 2.0, h)
        results.append((h, state))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_operands_of_the_wrong_shape_or_layout_are_refused():
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
            cell_operator()(*bad)


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
def test_the_lstm_runs_the_fused_step_in_inference_as_accurately_as_torch_operations(monkeypatch, dtype):
    """Against the same LSTM in float64: the fused float32 inference path is no further off than the
    autograd path's torch operations (these weights amplify any rounding over 30 steps), in float32 and
    with bf16 weights alike."""
    lstm, inputs, lengths, state = lstm_and_inputs(dtype)
    calls = []
    real = fused_cell.cell_operator()
    monkeypatch.setattr(fused_cell, "cell_operator", lambda: lambda *args: calls.append(1) or real(*args))
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


def test_switched_off_or_unbuildable_the_lstm_runs_torch_operations(monkeypatch, tmp_path):
    lstm, inputs, lengths, state = lstm_and_inputs(torch.float32)
    with torch.enable_grad():
        reference = lstm(inputs, lengths, state)[0].detach()
    monkeypatch.setenv(SWITCH, "0")
    with torch.no_grad():
        assert torch.equal(lstm(inputs, lengths, state)[0], reference)  # the torch operations in place: same bits
    monkeypatch.delenv(SWITCH)

    from torch.utils import cpp_extension

    def no_compiler(**_):
        raise RuntimeError("Error building extension 'spacy_contextual_lstm_cell': c++: not found")

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # nothing built yet
    monkeypatch.setattr(cpp_extension, "load", no_compiler)
    with pytest.warns(UserWarning, match=r"could not be built \(Error building extension.*c\+\+: not found\)"):
        assert cell_operator.__wrapped__() is None
    monkeypatch.setattr(fused_cell, "cell_operator", lambda: None)
    with torch.no_grad():
        assert torch.equal(lstm(inputs, lengths, state)[0], reference)


def test_a_built_operator_is_loaded_without_the_build_tool_and_a_broken_one_is_built_again(monkeypatch, tmp_path):
    """The library built before the tests (``conftest.py``) loads without calling the build; a library
    that cannot be loaded (a build cut short) in a new cache is built again."""
    from torch.utils import cpp_extension

    builds = []

    def build(**kwargs):
        builds.append(Path(kwargs["build_directory"]))
        raise RuntimeError("no build in this test")

    monkeypatch.setattr(cpp_extension, "load", build)
    assert cell_operator.__wrapped__() is not None and builds == []

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    with pytest.warns(UserWarning, match="no build in this test"):
        assert cell_operator.__wrapped__() is None
    (library_folder,) = builds
    assert library_folder.parent == tmp_path
    (library_folder / "spacy_contextual_lstm_cell.so").write_bytes(b"half a library")
    with pytest.warns(UserWarning, match="no build in this test"):
        assert cell_operator.__wrapped__() is None
    assert builds == [library_folder, library_folder]


@pytest.mark.timeout(60)
def test_a_lock_left_by_a_killed_build_is_removed_instead_of_waited_for(monkeypatch, tmp_path):
    """torch's build waits while its lock file exists; a build killed with SIGKILL leaves one behind. A lock
    older than any build is removed, so the next process builds instead of hanging; a fresh one is kept."""
    from torch.utils import cpp_extension

    builds = []

    def build(**kwargs):
        builds.append(Path(kwargs["build_directory"]))
        raise RuntimeError("no build in this test")

    monkeypatch.setattr(cpp_extension, "load", build)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    with pytest.warns(UserWarning, match="no build in this test"):
        cell_operator.__wrapped__()
    lock = builds[0] / "lock"
    lock.touch()
    with pytest.warns(UserWarning, match="no build in this test"):
        cell_operator.__wrapped__()
    assert lock.exists()  # a build may be under way
    old = time.time() - fused_cell.STALE_LOCK_SECONDS - 60
    os.utime(lock, (old, old))
    with pytest.warns(UserWarning, match="no build in this test"):
        cell_operator.__wrapped__()
    assert not lock.exists() and len(builds) == 3
