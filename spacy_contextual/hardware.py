"""What this CPU offers the encoders: torch's vector instruction set, the bf16/int8 matrix units, and
whether bfloat16 matrix products are fast here.

bf16 products run on native instructions only where the CPU has AVX-512 BF16 or AMX-BF16 (oneDNN then
multiplies bf16 with float32 accumulation, several times the float32 rate); elsewhere torch emulates
bf16 through float32 and a bf16 run is slower than float32. ``describe_cpu`` is what
``spacy-contextual info`` prints and what every benchmark records beside its numbers. Any machine can
play a smaller CPU: ``ATEN_CPU_CAPABILITY=avx2`` lowers torch's own kernels, ``MKL_ENABLE_INSTRUCTIONS``
and ``ONEDNN_MAX_CPU_ISA`` the matrix libraries'; the line then names those settings, and bf16 counts
as fast only where oneDNN may still use its bf16 instructions.
"""

from __future__ import annotations

import os

import torch

MATRIX_FLAGS = ("avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni")
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
ONEDNN_WITHOUT_BF16 = {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"}


def cpu_flags() -> dict[str, bool]:
    """The instruction-set extensions that decide bf16/int8 speed, as torch's cpuinfo reports them."""
    capabilities = torch.cpu.get_capabilities()
    return {flag: bool(capabilities.get(flag, False)) for flag in MATRIX_FLAGS}


def bf16_is_fast() -> bool:
    """True where bf16 matrix products run on native instructions (AVX-512 BF16 or AMX-BF16)."""
    flags = cpu_flags()
    limited = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper() in ONEDNN_WITHOUT_BF16
    return (flags["avx512_bf16"] or flags["amx_bf16"]) and not limited


def describe_cpu() -> str:
    """One line: CPU name, cores, torch's vector ISA, the matrix extensions present, bf16 verdict."""
    capabilities = torch.cpu.get_capabilities()
    present = [flag for flag, has in cpu_flags().items() if has]
    bf16 = "bf16 fast (native)" if bf16_is_fast() else "bf16 emulated (slower than fp32 here)"
    limits = [f"{name}={os.environ[name]}" for name in ISA_LIMITS if os.environ.get(name)]
    return (
        f"{capabilities.get('cpu_name', 'unknown CPU')}, {capabilities.get('num_physical_cores', '?')} cores, "
        f"torch ISA {torch.backends.cpu.get_cpu_capability()}, "
        f"matrix extensions: {', '.join(present) or 'none'}; {bf16}"
        + (f" (limited by {', '.join(limits)})" if limits else "")
    )
