"""What the CPU offers: the flags come from torch's cpuinfo, and bf16 counts as fast only with native
bf16 instructions (AVX-512 BF16 or AMX-BF16). ``info`` also reports the fused LSTM cell's state, and
``build`` builds it or says why it cannot (with no compiler: one line of state, exit code 1)."""

import torch
from typer.testing import CliRunner

from spacy_contextual import hardware
from spacy_contextual.cli import app


def fake_cpu(monkeypatch, **flags):
    """A CPU with these flags, and no setting that makes this machine play a smaller one (CI's AVX2 pass)."""
    capabilities = {"cpu_name": "Test CPU", "num_physical_cores": 4, **flags}
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities)
    for name in hardware.ISA_LIMITS:
        monkeypatch.delenv(name, raising=False)


def test_bf16_is_fast_only_with_native_bf16_instructions(monkeypatch):
    fake_cpu(monkeypatch, avx2=True, avx512_vnni=True)
    assert not hardware.bf16_is_fast()
    assert "matrix extensions: avx512_vnni; bf16 emulated (slower than fp32 here)" in hardware.describe_cpu()
    fake_cpu(monkeypatch, amx_bf16=True, amx_int8=True, avx512_bf16=True)
    assert hardware.bf16_is_fast()
    assert hardware.describe_cpu().startswith("Test CPU, 4 cores, torch ISA ")
    assert "matrix extensions: avx512_bf16, amx_bf16, amx_int8; bf16 fast (native)" in hardware.describe_cpu()


def test_a_machine_playing_a_smaller_cpu_says_so(monkeypatch):
    fake_cpu(monkeypatch, amx_bf16=True, avx512_bf16=True)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert not hardware.bf16_is_fast()  # oneDNN may not use its bf16 instructions
    assert hardware.describe_cpu().endswith(
        "bf16 emulated (slower than fp32 here) (limited by ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2)"
    )


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
    assert lines[3].startswith("fused LSTM cell: ")


def test_info_and_build_say_where_the_cell_stands(monkeypatch, tmp_path):
    from spacy_contextual.models import cpp_build

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # an empty cache, as a new machine has
    monkeypatch.setattr(cpp_build, "_loaded", {})  # and a process that has loaded nothing
    monkeypatch.setenv("SPACY_CONTEXTUAL_FUSED_CELL", "off")
    assert CliRunner().invoke(app, ["info"]).output.splitlines()[3] == (
        "fused LSTM cell: off (SPACY_CONTEXTUAL_FUSED_CELL is off): the LSTM runs as torch operations"
    )
    monkeypatch.delenv("SPACY_CONTEXTUAL_FUSED_CELL")
    assert "not built yet: the first ELMo run builds it" in CliRunner().invoke(app, ["info"]).output
    monkeypatch.setenv("CXX", "no-such-compiler")
    result = CliRunner().invoke(app, ["build"])
    assert result.exit_code == 1
    assert "fused LSTM cell: failed (no C++ compiler found (no-such-compiler is not on the PATH))" in result.output
    assert "failed (no C++ compiler found" in CliRunner().invoke(app, ["info"]).output  # remembered
