"""What this CPU offers the encoders: torch's vector instruction set, the bf16/int8 matrix units, and
whether bfloat16 matrix products are fast here.

bf16 products run on native instructions only where the CPU has AVX-512 BF16 or AMX-BF16 (oneDNN then
multiplies bf16 with float32 accumulation, several times the float32 rate); elsewhere torch emulates
bf16 through float32 and a bf16 run is slower than float32. ``describe_cpu`` is what
``spacy-contextual info`` prints and what every benchmark records beside its numbers.
"""

from __future__ import annotations

import torch

MATRIX_FLAGS = ("avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni")


def cpu_flags() -> dict[str, bool]:
    """The instruction-set extensions that decide bf16/int8 speed, as torch's cpuinfo reports them."""
    capabilities = torch.cpu.get_capabilities()
    return {flag: bool(capabilities.get(flag, False)) for flag in MATRIX_FLAGS}


def bf16_is_fast() -> bool:
    """True where bf16 matrix products run on native instructions (AVX-512 BF16 or AMX-BF16)."""
    flags = cpu_flags()
    return flags["avx512_bf16"] or flags["amx_bf16"]


def describe_cpu() -> str:
    """One line: CPU name, cores, torch's vector ISA, the matrix extensions present, bf16 verdict."""
    capabilities = torch.cpu.get_capabilities()
    present = [flag for flag, has in cpu_flags().items() if has]
    bf16 = "bf16 fast (native)" if bf16_is_fast() else "bf16 emulated (slower than fp32 here)"
    return (
        f"{capabilities.get('cpu_name', 'unknown CPU')}, {capabilities.get('num_physical_cores', '?')} cores, "
        f"torch ISA {torch.backends.cpu.get_cpu_capability()}, "
        f"matrix extensions: {', '.join(present) or 'none'}; {bf16}"
    )
