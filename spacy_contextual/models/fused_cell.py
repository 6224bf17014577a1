"""The fused LSTM cell step: the gate non-linearities, the cell update, the clipping and tanh(c) * o in
one pass over memory, where torch runs a dozen element-wise operations:

    c_t = clip(sigmoid(z_f) c_{t-1} + sigmoid(z_i) tanh(z_j), +-cell_clip),   h_t = sigmoid(z_o) tanh(c_t)

``lstm_cell.cpp`` is a CPU operator written with torch's vector types (``at::vec``), compiled for the
instruction set torch itself dispatches to on this CPU (``torch.backends.cpu.get_cpu_capability()``,
which ``ATEN_CPU_CAPABILITY`` can lower), with the flags torch compiles that capability's kernels with
(``VARIANTS``). ``cpp_build.py`` builds it once per machine and loads it as a checked file; where it
cannot be built (no compiler, a failed build: remembered, one warning), off Linux, or with
``SPACY_CONTEXTUAL_FUSED_CELL`` off, the same step runs as torch operations. ``spacy-contextual info``
says which, and ``spacy-contextual build`` builds it ahead of the first job (or tries again).
"""

from __future__ import annotations

import functools
import logging
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from ..environment import flag
from .cpp_build import BuildState, OperatorBuild, inspect, load_operators

SWITCH = "SPACY_CONTEXTUAL_FUSED_CELL"  # off: the torch operations, never the built operator
SOURCE = Path(__file__).with_name("lstm_cell.cpp")
NAME = "spacy_contextual_lstm_cell"
# torch's CPU capability -> the flags torch builds that capability's kernels with (its cmake/Codegen.cmake)
# and the at::vec implementation they select; DEFAULT is plain C++ that the compiler vectorises.
VARIANTS = {
    "DEFAULT": ("-DCPU_CAPABILITY=DEFAULT",),
    "AVX2": ("-mavx2", "-mfma", "-mf16c", "-DCPU_CAPABILITY=AVX2", "-DCPU_CAPABILITY_AVX2"),
    "AVX512": (
        "-mavx512f",
        "-mavx512bw",
        "-mavx512vl",
        "-mavx512dq",
        "-mfma",
        "-DCPU_CAPABILITY=AVX512",
        "-DCPU_CAPABILITY_AVX512",
    ),
}
# the CPU features (torch.cpu.get_capabilities()) each variant's code needs
REQUIRED_FEATURES = {
    "DEFAULT": (),
    "AVX2": ("avx2", "fma3", "f16c"),
    "AVX512": ("avx512_f", "avx512_bw", "avx512_vl", "avx512_dq"),
}
logger = logging.getLogger(__name__)


def cell_build(variant: str) -> OperatorBuild:
    """The build of ``variant`` (a key of ``VARIANTS``); its operator is ``torch.ops.<namespace>.lstm_cell_``."""
    return OperatorBuild(NAME, SOURCE, variant, VARIANTS[variant], f"spacy_contextual_{variant.lower()}")


def this_cpu_variant() -> str | None:
    """The variant for torch's capability here; None off Linux (the build is GCC's, with OpenMP) and
    where a capability has no variant (another architecture's vector extension)."""
    if not sys.platform.startswith("linux"):
        return None
    capability = torch.backends.cpu.get_cpu_capability()
    return next((name for name in VARIANTS if capability.upper() == name), None)


def runs_here(variant: str) -> bool:
    """Whether this CPU has the instructions ``variant``'s code uses."""
    features = torch.cpu.get_capabilities()
    return all(features.get(feature, False) for feature in REQUIRED_FEATURES[variant])


def fused_cell_enabled() -> bool:
    return flag(SWITCH, True)


def cell_state() -> BuildState:
    """Where the cell stands here, building nothing: what ``spacy-contextual info`` prints."""
    variant = this_cpu_variant()
    if not fused_cell_enabled():
        return BuildState("off", None, f"{SWITCH} is off")
    if variant is None:
        capability = torch.backends.cpu.get_cpu_capability()
        return BuildState("not used", None, f"no build for torch's CPU capability {capability} on {sys.platform}")
    return inspect(cell_build(variant))


def build_cell(force: bool, announce: Callable[[str], None] | None = None) -> BuildState:
    """Build (``force``: again, also after a recorded failure) and load the cell for this CPU."""
    variant = this_cpu_variant()
    if variant is None:
        return cell_state()
    return load_operators(cell_build(variant), force=force, announce=announce)


@functools.cache
def cell_operator() -> Callable | None:
    """``op(gates, bias, c, cell_clip, h)`` for this CPU, loaded (or built, the first time on a machine)
    once per process; None where it cannot be (the process that finds a build failing warns once)."""
    variant = this_cpu_variant()
    if variant is None:
        return None
    build = cell_build(variant)
    before = inspect(build)
    state = load_operators(build, announce=_announce)
    if state.usable:
        return getattr(torch.ops, build.namespace).lstm_cell_
    if state.state == "refused":  # nothing is recorded in a folder that is not the user's: say it each time
        warnings.warn(f"the fused LSTM cell is not loaded: {state.detail}", stacklevel=2)
    elif state != before:  # this process found the build failing (recorded: later ones stay quiet)
        fix = (
            "install a C++ compiler (g++)"
            if "no C++ compiler" in state.detail
            else "`spacy-contextual build` shows the compiler's output and tries again"
        )
        warnings.warn(
            f"the fused LSTM cell could not be built ({state.detail}); the LSTM runs as torch operations, "
            f"which is slower: {fix}, or set {SWITCH}=0 to silence this",
            stacklevel=2,
        )
    return None


def _announce(line: str) -> None:
    """A build's start and end: on a terminal, and in the log (never into a command's piped output)."""
    logger.info(line)
    if sys.stderr.isatty():
        print(f"spacy-contextual: {line}", file=sys.stderr)


def fused_cell_operator(device: torch.device, cell_dtype: torch.dtype, weight_dtype: torch.dtype) -> Callable | None:
    """The operator where it applies (CPU tensors, a float32 cell, float32/bf16/fp16 weights, switched on
    and built), else None: ``op(gates, bias, c, cell_clip, h)`` with gates (4D, cols, rows contiguous) in the
    weights' dtype, bias (4D,) float32 or None, c (D, cols) float32 (updated in place) and h (D, cols) in
    the weights' dtype (written)."""
    if not (
        fused_cell_enabled()
        and device.type == "cpu"
        and cell_dtype == torch.float32
        and weight_dtype in (torch.float32, torch.bfloat16, torch.float16)
    ):
        return None
    return cell_operator()
