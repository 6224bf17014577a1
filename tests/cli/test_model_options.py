"""Every model a command takes is a name, a folder or ``default``, through the one resolver, with
``--catalog FILE`` beside it: found by walking the CLI itself (the ``NAME|DIR`` marker of
``cli/model_option.py``), so a new command cannot miss it."""

from __future__ import annotations

import click
import h5py
import numpy as np
import pytest
import typer
from model_server import bilm_entry, bilm_tf_files, model_dir_entry, write_catalog
from util import assert_one_line_error, cli, tiny_cove_dir, tiny_elmo_dir

from spacy_contextual.cli import app
from spacy_contextual.cli.model_option import MODEL_METAVAR
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.errors import ContextualError
from spacy_contextual.hub.resolver import ModelName
from spacy_contextual.kinds import a_model

pytestmark = pytest.mark.timeout(120)
#: parameters that name a folder but are no model to load: each with why
NOT_MODELS = {
    ("write-manifest", "model_dir"): "writes a manifest into a folder of the user's own",
    ("export-elmo", "model_dir"): "a training run's output (or our model folder) to export",
    ("export-cove", "mt_dir"): "a translator the user trained, to truncate",
    ("package-cove", "mt_dir"): "a translator the user trained, to re-save",
}


def commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


def model_params() -> list[tuple[str, click.Command, click.Parameter]]:
    return [
        (name, command, param)
        for name, command in commands().items()
        for param in command.params
        if param.metavar == MODEL_METAVAR
    ]


def test_every_parameter_naming_a_model_is_marked():
    for name, command in commands().items():
        for param in command.params:
            looks_like_a_model = "model" in param.name or (param.name.endswith("_dir") and "out" not in param.name)
            if looks_like_a_model and (name, param.name) not in NOT_MODELS:
                assert param.metavar == MODEL_METAVAR, f"{name} {param.name}: use cli/model_option.py"
    found = {(name, param.name) for name, _, param in model_params()}
    assert {("elmo", "model"), ("cove", "model"), ("app", "elmo_model"), ("app", "cove_model")} <= found
    assert {("convert-model", "model"), ("evaluate-lm", "model_dir"), ("finetune-elmo", "model")} <= found
    assert {("translate", "model"), ("bleu", "model"), ("sense-probe", "model")} <= found


@pytest.mark.parametrize(("name", "command", "param"), model_params(), ids=lambda v: getattr(v, "name", v))
def test_every_model_parameter_says_so_and_reads_a_catalog_name_without_fetching(
    name, command, param, tmp_path, home, server
):
    assert "spacy-contextual models" in param.help and "folder" in param.help and "'default'" in param.help
    (catalog_option,) = [p for p in command.params if "--catalog" in getattr(p, "opts", ())]
    entries = {
        f"ours-{kind}": model_dir_entry(server, kind, make(tmp_path / kind), f"ours-{kind}")
        for kind, make in (("elmo", tiny_elmo_dir), ("cove", tiny_cove_dir))
    }
    catalog = write_catalog(tmp_path / "catalog.json", entries)
    read = []
    for kind in ("elmo", "cove"):  # the command's kind is read as a catalog name; the other one is refused
        ctx = click.Context(command, info_name=name)
        ctx.params["encoder"] = kind  # sense-probe's --encoder picks the kind
        catalog_option.process_value(ctx, str(catalog))
        try:
            model = param.process_value(ctx, f"ours-{kind}")
        except ContextualError as error:
            assert f"'ours-{kind}' is {a_model(kind)}; this needs a" in str(error)
            continue
        assert isinstance(model, ModelName) and model.entry.name == f"ours-{kind}" and model.visible() is None
        assert not [path for path in server.requests if path.startswith(f"ours-{kind}/")]  # read, not fetched
        assert model.resolve() == home / f"ours-{kind}"
        read.append(kind)
    assert read


def test_a_name_after_the_command_with_its_catalog(tmp_path, home, server, one_thread):
    model = tiny_elmo_dir(tmp_path / "served")
    catalog = write_catalog(tmp_path / "catalog.json", {"ours": model_dir_entry(server, "elmo", model, "ours")})
    (tmp_path / "in.txt").write_text("The bank .\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    result = cli("elmo", tmp_path / "in.txt", out, "--all", "--model", "ours", "--catalog", catalog)
    assert result.exit_code == 0, result.output
    with h5py.File(out) as written:
        expected = ElmoEmbedder.load(model).embed_sentences([["The", "bank", "."]])[0]
        np.testing.assert_allclose(written["0"][...], expected, atol=1e-6)
    converted = cli("convert-model", "ours", tmp_path / "converted", "--catalog", catalog)
    assert converted.exit_code == 0, converted.output
    assert ElmoEmbedder.load(tmp_path / "converted").embed_sentences([["The"]])[0].shape == (3, 1, 32)
    assert server.requests["ours/model.safetensors"] == 1


@pytest.mark.parametrize(
    "args",
    [
        ("evaluate-lm", "elmo-orignal", "TEXT"),
        ("convert-model", "elmo-orignal", "OUT"),
        ("app", "--elmo-model", "elmo-orignal"),
        ("elmo", "TEXT", "OUT.hdf5", "--model", "elmo-orignal"),
        ("finetune-elmo", "elmo-orignal", "TEXT"),
        ("sense-probe", "TEXT", "--model", "elmo-orignal"),
    ],
)
def test_a_misspelt_name_is_one_line_with_the_nearest_names(args, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("The bank .\n", encoding="utf-8")
    args = [str(text) if a == "TEXT" else str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    result = cli(*args)
    assert_one_line_error(
        result,
        "'elmo-orignal' is not a model name or folder; the nearest model names: elmo-original",
        "`spacy-contextual models` lists the names",
        "'default'",
    )


@pytest.mark.parametrize(
    "args",
    [
        ("convert-model", "./mine", "OUT"),
        ("elmo", "TEXT", "OUT.hdf5", "--model", "./mine"),
        ("translate", "TEXT", "--model", "~/no/such/model"),
    ],
)
def test_a_missing_path_is_one_line_without_suggestions(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = tmp_path / "text.txt"
    text.write_text("The bank .\n", encoding="utf-8")
    args = [str(text) if a == "TEXT" else str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    result = cli(*args)
    assert_one_line_error(result, "is not a model name or folder; `spacy-contextual models` lists the names")
    assert "nearest" not in result.stderr


def test_evaluate_lm_on_a_published_bilm_tf_name_says_it_has_no_softmax(tmp_path, home, server):
    catalog = write_catalog(tmp_path / "catalog.json", {"tiny": bilm_entry(server, bilm_tf_files(tmp_path / "bilm"))})
    text = tmp_path / "text.txt"
    text.write_text("The bank .\n", encoding="utf-8")
    result = cli("evaluate-lm", "tiny", text, "--catalog", catalog)
    assert result.exit_code == 1 and "Traceback" not in result.output
    error = result.stderr.strip().splitlines()[-1]  # after the download's progress lines
    assert error.startswith(f"error: {home / 'tiny'} holds bilm-tf files, which carry no LM softmax")
    assert "finetune-elmo" in error
