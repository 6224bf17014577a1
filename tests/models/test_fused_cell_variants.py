"""Every entry of the fused cell's flag table compiles on this x86-64 machine, whatever its CPU (a
compiler targets any instruction set), and runs where the CPU has the instructions.

The builds go into torch's extension cache, where the variant of this CPU (or of a lowered
``ATEN_CPU_CAPABILITY``) is then already built for the rest of the tests. Each variant's step is
compared with the float64 step within the budget of ``test_fused_cell.py`` (1e-6; Sleef's exp and
three divisions, a few float32 ulps), and the variants with each other within twice that: fp32 kernels
round differently on AVX2 and AVX-512, so nothing here is compared bit for bit across variants.
"""

from __future__ import annotations

import platform

import pytest
import torch
from test_fused_cell import D, gates, torch_step

from spacy_contextual.models.cpp_build import build_library, compiler, load_operators
from spacy_contextual.models.fused_cell import VARIANTS, cell_build, runs_here

pytestmark = [
    pytest.mark.integration,  # runs the compiler
    pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the flag table is x86-64's"),
    pytest.mark.skipif(compiler() is None, reason="needs a C++ compiler ($CXX, or c++ on the PATH)"),
]
BUDGET = 1e-6


@pytest.fixture(scope="module")
def built():
    """Each variant's build: compiled (or found in the cache) and, where this CPU runs it, loaded."""
    states = {}
    for variant in VARIANTS:
        build = cell_build(variant)
        states[variant] = load_operators(build) if runs_here(variant) else build_library(build)  # compiled only
    return states


@pytest.mark.timeout(900)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_compiles(built, variant):
    state = built[variant]
    assert state.state in ("loaded", "built"), f"{variant}: {state.state}: {state.detail}"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_runs_the_step_within_budget_where_this_cpu_can(built, variant):
    if not runs_here(variant):
        pytest.skip(f"this CPU lacks the instructions of {variant}")
    operator = getattr(torch.ops, cell_build(variant).namespace).lstm_cell_
    for columns, clip in ((1, None), (37, 2.0), (64, None)):
        z, c = gates(columns, seed=columns)
        h = torch.empty(D, columns)
        operator(z, None, c_out := c.clone(), clip, h)
        want_h, want_c = torch_step(z, c, clip)
        torch.testing.assert_close(c_out.double(), want_c, atol=BUDGET, rtol=0)
        torch.testing.assert_close(h.double(), want_h, atol=BUDGET, rtol=0)
