"""What the CPU offers: the flags come from torch's cpuinfo, and bf16 counts as fast only with native
bf16 instructions (AVX-512 BF16 or AMX-BF16)."""

import torch
from typer.testing import CliRunner

from spacy_contextual import hardware
from spacy_contextual.cli import app


def fake_cpu(monkeypatch, **flags):
    capabilities = {"cpu_name": "Test CPU", "num_physical_cores": 4, **flags}
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities)


def test_bf16_is_fast_only_with_native_bf16_instructions(monkeypatch):
    fake_cpu(monkeypatch, avx2=True, avx512_vnni=True)
    assert not hardware.bf16_is_fast()
    assert "matrix extensions: avx512_vnni; bf16 emulated (slower than fp32 here)" in hardware.describe_cpu()
    fake_cpu(monkeypatch, amx_bf16=True, amx_int8=True, avx512_bf16=True)
    assert hardware.bf16_is_fast()
    assert hardware.describe_cpu().startswith("Test CPU, 4 cores, torch ISA ")
    assert "matrix extensions: avx512_bf16, amx_bf16, amx_int8; bf16 fast (native)" in hardware.describe_cpu()


def test_flags_of_this_machine_are_torch_cpuinfo():
    assert hardware.cpu_flags() == {
        flag: bool(torch.cpu.get_capabilities().get(flag)) for flag in hardware.MATRIX_FLAGS
    }


def test_info_command_prints_versions_cpu_and_cuda():
    result = CliRunner().invoke(app, ["info"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("spacy-contextual ") and f"torch {torch.__version__}" in lines[0]
    assert lines[1] == f"CPU: {hardware.describe_cpu()}; torch threads {torch.get_num_threads()}"
    assert lines[2].startswith("CUDA: ")
