"""The fused LSTM cell step: the gate non-linearities, the cell update, the clipping and tanh(c) * o in
one pass over memory, where torch runs a dozen element-wise operations:

    c_t = clip(sigmoid(z_f) c_{t-1} + sigmoid(z_i) tanh(z_j), +-cell_clip),   h_t = sigmoid(z_o) tanh(c_t)

``lstm_cell.cpp`` is a CPU operator, ``torch.ops.spacy_contextual.lstm_cell_``. ``cell_operator`` builds it
on first use with ``torch.utils.cpp_extension`` (a C++ compiler and ninja; a few seconds, once), for the
vector instructions torch itself dispatches to on this CPU, and keeps it in torch's extension cache
(``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``), in a folder named after the torch
version, that instruction set and a digest of the source and flags (torch's build takes a lock there, so
parallel processes build it once). Later processes load the library from that folder directly, without
running the build tool (whose answer depends on which ninja is first on the PATH).
Its sigmoid is torch's to the bit and its tanh within 2.5e-7 of torch's; it reads the low-precision
product as it is and adds the gate bias while widening it.

``models/lstm.py`` calls it where a step runs in place (inference, no autograd) on the CPU. Where it cannot
be built (no compiler: one warning), off Linux, or with ``SPACY_CONTEXTUAL_FUSED_CELL=0``, the same step
runs as torch operations.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

SWITCH = "SPACY_CONTEXTUAL_FUSED_CELL"  # "0": the torch operations, never the built operator
SOURCE = Path(__file__).with_name("lstm_cell.cpp")
STALE_LOCK_SECONDS = 600  # a build takes seconds; a lock this old belongs to a killed one
VECTOR_FLAGS = {  # torch's CPU capability -> the compiler flags and the at::vec implementation it selects
    "AVX512": [
        "-mavx512f",
        "-mavx512bw",
        "-mavx512vl",
        "-mavx512dq",
        "-mfma",
        "-DCPU_CAPABILITY=AVX512",
        "-DCPU_CAPABILITY_AVX512",
    ],
    "AVX2": ["-mavx2", "-mfma", "-DCPU_CAPABILITY=AVX2", "-DCPU_CAPABILITY_AVX2"],
}


def extensions_root() -> Path:
    """torch's cache of built C++ extensions."""
    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions")


def fused_cell_enabled() -> bool:
    return os.environ.get(SWITCH, "1").strip() != "0"


@functools.cache
def cell_operator() -> Callable | None:
    """``torch.ops.spacy_contextual.lstm_cell_(gates, bias, c, cell_clip, h)``, built or loaded once per
    process; None where it cannot be built (one warning naming why)."""
    if not sys.platform.startswith("linux"):  # the build below is GCC's (OpenMP from torch's libgomp)
        return None
    capability = torch.backends.cpu.get_cpu_capability()
    vector_flags = next((flags for name, flags in VECTOR_FLAGS.items() if capability.startswith(name)), [])
    cflags, ldflags = ["-O3", "-fopenmp", *vector_flags], ["-lgomp"]
    name = "spacy_contextual_lstm_cell"
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(cflags + ldflags).encode()).hexdigest()[:12]
    build_directory = (
        extensions_root() / f"{name}-torch{torch.__version__}-{capability if vector_flags else 'generic'}-{digest}"
    )
    library, lock = build_directory / f"{name}.so", build_directory / "lock"
    if _stale(lock):  # left by a build that was killed: torch's build would wait for it forever
        lock.unlink(missing_ok=True)
    if library.exists() and not lock.exists():  # built, and no build under way
        try:
            torch.ops.load_library(str(library))
            return torch.ops.spacy_contextual.lstm_cell_
        except (OSError, RuntimeError):  # not a loadable library (a build that was cut short): build it again
            pass
    print(f"spacy-contextual: building the fused LSTM cell for this CPU, once, in {build_directory}", file=sys.stderr)
    from torch.utils import cpp_extension  # imports setuptools: 0.08 s, only to build

    try:
        build_directory.mkdir(parents=True, exist_ok=True)
        cpp_extension.load(
            name=name,
            sources=[str(SOURCE)],
            extra_cflags=cflags,
            extra_ldflags=ldflags,
            build_directory=str(build_directory),
            is_python_module=False,
        )
    except (OSError, RuntimeError, ImportError) as error:  # no compiler or ninja, or the build failed
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        warnings.warn(
            f"The fused LSTM cell could not be built ({reason[:200]}); the LSTM runs as torch operations, "
            f"which is slower. Install a C++ compiler (g++) to use it, or set {SWITCH}=0 to silence this.",
            stacklevel=2,
        )
        return None
    return torch.ops.spacy_contextual.lstm_cell_


def _stale(lock: Path) -> bool:
    """A build lock older than any build takes (seconds on an idle machine)."""
    try:
        return time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS
    except OSError:  # no lock
        return False


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
