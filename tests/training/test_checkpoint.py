"""``--resume`` refuses a damaged, truncated or NaN checkpoint in one line naming the file, before any
training step; an intact one resumes."""

import errno
import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner
from util import assert_one_line_error, tiny_pretrain_config, writer_leftovers

from spacy_contextual import writer
from spacy_contextual.cli import app
from spacy_contextual.formats.manifest import write_manifest
from spacy_contextual.formats.model_dir import model_files
from spacy_contextual.training import checkpoint as checkpoint_module

runner = CliRunner()


@pytest.fixture
def run(corpus, tmp_path):  # noqa: F811
    """A finished 2-step run (its checkpoint/ written) and its config file."""
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2)
    config_file = tmp_path / "config.json"
    config.save(config_file)
    result = runner.invoke(app, ["pretrain-elmo", str(config_file)])
    assert result.exit_code == 0, result.stderr
    return tmp_path / "run" / "checkpoint", config_file


def resume(config_file, steps=3):
    return runner.invoke(app, ["pretrain-elmo", str(config_file), "--resume", f"training.max_steps={steps}"])


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def poison(path):
    tensors = load_file(str(path))
    name = next(name for name, tensor in tensors.items() if tensor.is_floating_point())
    tensors[name] = tensors[name].clone().fill_(float("nan"))
    save_file(tensors, str(path))


def garble_json(path):
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


def drop_step(path):
    state = json.loads(path.read_text())
    del state["step"]
    path.write_text(json.dumps(state))


DAMAGES = {
    "truncated optimizer": ("optimizer.safetensors", truncate, "not a readable safetensors file"),
    "NaN optimizer state": ("optimizer.safetensors", poison, "NaN"),
    "truncated state": ("trainer_state.json", garble_json, "not valid JSON"),
    "state without step": ("trainer_state.json", drop_step, "integer 'step'"),
    "truncated weights": ("model/model.safetensors", truncate, "truncated"),
    "NaN weights, re-signed": ("model/model.safetensors", poison, "NaN"),
}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_checkpoint_is_refused_at_resume_naming_the_file(run, damage):
    checkpoint, config_file = run
    name, change, words = DAMAGES[damage]
    change(checkpoint / name)
    if name.startswith("model/") and damage.endswith("re-signed"):
        write_manifest(checkpoint / "model", model_files(checkpoint / "model"))
    result = resume(config_file)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert str(checkpoint / name) in result.stderr and words in result.stderr
    assert "resumed from" not in result.stdout


@pytest.mark.timeout(180)
def test_an_intact_checkpoint_resumes(run):
    checkpoint, config_file = run
    result = resume(config_file)
    assert result.exit_code == 0, result.stderr
    assert f"resumed from {checkpoint} at step 2" in result.stdout
    assert torch.isfinite(load_file(str(checkpoint / "optimizer.safetensors"))["rng.0"].float()).all()


@pytest.mark.timeout(180)
def test_a_full_disk_while_checkpointing_is_one_line_and_a_rerun_works(corpus, tmp_path, monkeypatch):  # noqa: F811
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2, checkpoint_minutes=0)
    config_file = tmp_path / "config.json"
    config.save(config_file)

    def full_disk(tensors, filename, *args, **kwargs):
        Path(filename).write_bytes(b"\0" * 100)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    with monkeypatch.context() as disk:
        disk.setattr(checkpoint_module, "save_file", full_disk)
        result = runner.invoke(app, ["pretrain-elmo", str(config_file)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "the disk is full" in result.stderr
    assert writer_leftovers(tmp_path) == []
    rerun = runner.invoke(app, ["pretrain-elmo", str(config_file)])
    assert rerun.exit_code == 0, rerun.stderr


@pytest.mark.timeout(180)
def test_a_full_disk_while_writing_the_vocabulary_leaves_none_and_a_rerun_works(corpus, tmp_path, monkeypatch):  # noqa: F811
    config = tiny_pretrain_config(corpus, tmp_path / "run", max_steps=2)
    config_file = tmp_path / "config.json"
    config.save(config_file)
    write_text = Path.write_text

    def full_disk(self, text, *args, **kwargs):
        if self.name.startswith(".vocab.txt.") and self.name.endswith(writer.MARK + "new"):
            write_text(self, text[: len(text) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return write_text(self, text, *args, **kwargs)

    with monkeypatch.context() as disk:
        disk.setattr(Path, "write_text", full_disk)
        result = runner.invoke(app, ["pretrain-elmo", str(config_file)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "the disk is full" in result.stderr
    assert not (tmp_path / "run" / "vocab.txt").exists()  # never a shorter vocabulary for the rerun to use
    assert writer_leftovers(tmp_path) == []
    rerun = runner.invoke(app, ["pretrain-elmo", str(config_file)])
    assert rerun.exit_code == 0, rerun.stderr


MT_DAMAGES = {
    "truncated optimizer": ("optimizer.safetensors", truncate),
    "NaN optimizer state": ("optimizer.safetensors", poison),
    "truncated state": ("trainer_state.json", garble_json),
    "bad optimizer.json": ("optimizer.json", garble_json),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("damage", MT_DAMAGES)
def test_train_cove_refuses_a_damaged_checkpoint_at_resume(tmp_path, damage):
    last = tmp_path / "run" / "last"
    last.mkdir(parents=True)
    (last / "trainer_state.json").write_text(json.dumps({"epoch": 0, "batch": 3, "step": 3, "lr": 0.002}))
    (last / "optimizer.json").write_text(json.dumps({"param_groups": [], "state": {"0": {"step": 3}}}))
    save_file({"0.exp_avg": torch.zeros(4)}, str(last / "optimizer.safetensors"))
    name, change = MT_DAMAGES[damage]
    change(last / name)
    mt_config = Path(__file__).parents[2] / "spacy_contextual" / "assets" / "cove" / "mt.cfg"
    result = runner.invoke(app, ["train-cove", str(mt_config), str(tmp_path / "run"), "--resume"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
    assert str(last / name) in result.stderr and ("is damaged" in result.stderr or "NaN" in result.stderr)


def vocabulary_in_another_order(run_dir: Path) -> list[str]:
    """The run's vocabulary with its first two words after the specials swapped: same size, other rows."""
    words = (run_dir / "vocab.txt").read_text(encoding="utf-8").rstrip("\n").split("\n")
    words[3], words[4] = words[4], words[3]
    return words


@pytest.mark.timeout(180)
def test_resume_with_a_vocabulary_in_another_order_is_refused_before_anything_is_written(run):
    checkpoint_dir, config_file = run
    run_dir = checkpoint_dir.parent
    (run_dir / "vocab.txt").write_text("\n".join(vocabulary_in_another_order(run_dir)) + "\n", encoding="utf-8")
    saved = (run_dir / "pretrain_config.json").read_bytes()
    checkpoint = {p: p.read_bytes() for p in (run_dir / "checkpoint").rglob("*") if p.is_file()}
    assert_one_line_error(resume(config_file), "cannot resume", "the vocabulary it was trained with has", "row 3")
    assert (run_dir / "pretrain_config.json").read_bytes() == saved
    assert {p: p.read_bytes() for p in checkpoint} == checkpoint


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "override, setting",
    [("model.projection_dim=24", "model"), ("training.optimizer=adagrad", "training.optimizer")],
)
def test_resume_with_another_model_or_optimizer_is_one_line_and_keeps_the_runs_config(run, override, setting):
    checkpoint_dir, config_file = run
    run_dir = checkpoint_dir.parent
    saved = (run_dir / "pretrain_config.json").read_bytes()
    result = runner.invoke(app, ["pretrain-elmo", str(config_file), "--resume", override])
    assert_one_line_error(result, "cannot resume", f"its {setting} is", "--overwrite")
    assert (run_dir / "pretrain_config.json").read_bytes() == saved
