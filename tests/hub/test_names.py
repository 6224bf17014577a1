"""One rule for model names, wherever a model is taken (``hub/resolver.py``): ``./NAME`` is the folder, a
bare NAME the model of the catalog or the cache (with one notice when ``./NAME`` exists too), any
other bare name a folder here, and anything else one line naming the nearest model names. A cached
model is a name: it loads offline by its record alone, whether or not its catalog is set now. The
catalogs here serve their files by ``file://`` URLs, so nothing leaves the process."""

from __future__ import annotations

import shutil
import warnings

import pytest
import spacy
from model_server import write_catalog
from typer.testing import CliRunner
from util import assert_one_line_error, cli, tiny_cove_dir, tiny_elmo_dir

from spacy_contextual.cli import app
from spacy_contextual.errors import ContextualError
from spacy_contextual.hub.cache import OFFLINE_ENV, CacheError, read_record
from spacy_contextual.hub.catalog import CATALOG_ENV
from spacy_contextual.hub.resolver import (
    BUNDLED,
    CACHED,
    CATALOG,
    FOLDER,
    ModelNotFoundError,
    ShadowWarning,
    bundled_model_dir,
    read_model_name,
    resolve_model_dir,
)
from spacy_contextual.user_paths import HomeError

pytestmark = pytest.mark.timeout(120)


def file_entry(kind: str, folder) -> dict:
    """A catalog entry of our model folder ``folder``, its files served by file:// URLs."""
    files = {path.name: {"url": path.as_uri()} for path in sorted(folder.iterdir())}
    return {"encoder": kind, "format": "model_dir", "language": "xx", "files": files}


@pytest.fixture
def online(tmp_path, monkeypatch):
    """An empty cache of the test's own, downloads allowed (file:// only here), no user catalog yet."""
    monkeypatch.setenv("SPACY_CONTEXTUAL_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    monkeypatch.delenv(CATALOG_ENV, raising=False)
    return tmp_path / "cache"


@pytest.fixture
def catalog(tmp_path, monkeypatch, online):
    """A user catalog (set in the environment) with one ELMo model "mine" and one CoVe model "our-cove"."""
    entries = {
        "mine": file_entry("elmo", tiny_elmo_dir(tmp_path / "served" / "mine")),
        "our-cove": file_entry("cove", tiny_cove_dir(tmp_path / "served" / "our-cove")),
    }
    path = write_catalog(tmp_path / "catalog.json", entries)
    monkeypatch.setenv(CATALOG_ENV, str(path))
    return path


def test_a_name_is_read_without_fetching_and_resolved_once_asked(catalog, online):
    model = read_model_name("elmo", "mine")
    assert (model.source, model.path, model.visible()) == (CATALOG, online / "mine", None)
    assert not (online / "mine").exists()  # reading a name fetches nothing
    assert model.resolve() == online / "mine" and read_record(online / "mine")["catalog"] == str(catalog)
    assert read_model_name("elmo", "mine").visible() == online / "mine"
    assert read_model_name("elmo", None).source == read_model_name("elmo", " default ").source == BUNDLED


def test_dot_slash_is_the_folder_and_a_bare_name_the_model_with_one_notice(catalog, online, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tiny_elmo_dir(tmp_path / "mine")
    with pytest.warns(ShadowWarning, match=r"'mine' is a model of the catalog, and also the folder \./mine here"):
        assert resolve_model_dir("elmo", "mine") == online / "mine"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShadowWarning)  # a path means the folder, silently
        for text in ("./mine", str(tmp_path / "mine"), "../" + tmp_path.name + "/mine"):
            assert read_model_name("elmo", text).source == FOLDER
            assert resolve_model_dir("elmo", text).resolve() == tmp_path / "mine"


def test_a_bare_name_that_is_no_model_is_the_folder_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tiny_elmo_dir(tmp_path / "my_elmo")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShadowWarning)
        assert read_model_name("elmo", "my_elmo").source == FOLDER
        assert resolve_model_dir("elmo", "my_elmo").resolve() == tmp_path / "my_elmo"


@pytest.mark.parametrize(
    ("kind", "typed", "nearest"),
    [
        ("elmo", "elmo-orignal", "elmo-original"),
        ("elmo", "ELMo-Small", "elmo-small"),
        ("elmo", "elmo-manylang-fr", "elmo-manylangs-fr"),
        ("cove", "cove-wmtt", "cove-wmt"),
    ],
)
def test_a_misspelt_name_names_the_nearest_names_of_its_encoder(kind, typed, nearest):
    with pytest.raises(ModelNotFoundError) as caught:
        read_model_name(kind, typed)
    message = str(caught.value)
    assert message.startswith(f"{typed!r} is not a model name or folder; the nearest model names: {nearest}")
    assert "`spacy-contextual models` lists the names" in message and "\n" not in message
    assert ("cove-" in message) == (kind == "cove")  # only names of the encoder asked for
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, ContextualError)


@pytest.mark.parametrize("typed", ["./nowhere", "~/no/such/model", "/no/such/model", "zzzzzz"])
def test_a_path_or_a_name_far_from_every_name_gets_no_suggestion(typed):
    with pytest.raises(ModelNotFoundError, match="is not a model name or folder; `spacy-contextual models`"):
        read_model_name("elmo", typed)


def test_tilde_of_a_user_that_does_not_exist_is_one_line():
    with pytest.raises(HomeError, match="'~nosuchuser-spacy-contextual' names no home folder"):
        read_model_name("elmo", "~nosuchuser-spacy-contextual/m")


def test_a_file_is_a_model_only_where_the_command_reads_files(tmp_path):
    weights = tmp_path / "weights.hdf5"
    weights.write_bytes(b"x")
    with pytest.raises(ModelNotFoundError, match="is a file, not a model folder"):
        read_model_name("elmo", str(weights))
    assert read_model_name("elmo", str(weights), files=True).path == weights


def test_a_name_of_the_other_encoder_is_refused_before_anything_is_fetched(catalog, online):
    with pytest.raises(ContextualError, match="'our-cove' is a CoVe model; this needs an ELMo model"):
        read_model_name("elmo", "our-cove")
    assert not (online / "our-cove").exists()


def test_a_cached_model_loads_by_name_without_its_catalog_offline(catalog, online, tmp_path, monkeypatch):
    """Fetched through a user catalog; then, as in a new shell: no catalog, offline, the served files gone."""
    fetched = resolve_model_dir("elmo", "mine")
    shutil.rmtree(tmp_path / "served")
    monkeypatch.delenv(CATALOG_ENV)
    monkeypatch.setenv(OFFLINE_ENV, "1")
    model = read_model_name("elmo", "mine")
    assert (model.source, model.resolve()) == (CACHED, fetched)
    with pytest.raises(ContextualError, match="'mine' is an ELMo model; this needs a CoVe model"):
        read_model_name("cove", "mine")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"name": "mine"}})
    nlp.initialize()
    assert nlp("The bank .")._.elmo_data.layers.shape[1] == 3
    with pytest.raises(ModelNotFoundError, match="the nearest model names: mine"):
        read_model_name("elmo", "mnie")  # the cache's names are suggested too


def test_a_cached_model_without_its_catalog_is_still_checked(catalog, online, monkeypatch):
    fetched = resolve_model_dir("elmo", "mine")
    monkeypatch.delenv(CATALOG_ENV)
    (fetched / "vocab.txt").write_text("changed\n", encoding="utf-8")
    with pytest.raises(CacheError, match="vocab.txt"):
        resolve_model_dir("elmo", "mine")


def test_models_lists_a_cached_model_marked_with_its_catalog_and_download_says_how(catalog, online, monkeypatch):
    resolve_model_dir("elmo", "mine")
    listed = CliRunner().invoke(app, ["models"])
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith("mine ")]
    assert line.split()[:3] == ["mine", "elmo", "xx"] and f"{catalog}  " in line  # set now: the catalog's file
    monkeypatch.delenv(CATALOG_ENV)
    listed = CliRunner().invoke(app, ["models"])
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith("mine ")]
    assert f"{catalog} (not set now)" in line and line.endswith(str(online / "mine"))
    assert "(1 model cached" in listed.stdout
    result = cli("download", "mine")
    assert_one_line_error(result, f"'mine' is cached, fetched through the catalog {catalog}", "--catalog")
    result = cli("download", "mien")
    assert_one_line_error(result, "'mien' is not in the model catalog; the nearest model names: mine")


def test_the_bundled_name_is_the_bundled_folder():
    assert resolve_model_dir("cove", "default") == bundled_model_dir("cove")
    with pytest.raises(ContextualError, match="unknown encoder 'bert'"):
        read_model_name("bert", "default")


def test_the_dashboard_shows_the_notice_the_commands_print(catalog, online, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from spacy_contextual.analysis.model_loading import name_notice

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    notice = "'mine' is a model of the catalog, and also the folder ./mine here: the model is used; write ./mine to use"
    assert name_notice("elmo", "mine").startswith(notice)
    assert name_notice("elmo", "./mine") is None and name_notice("elmo", "nothing-like-it") is None
    assert not (online / "mine").exists()  # reading the name fetched nothing

    def page():
        from spacy_contextual.dashboard.encoder_choice import show_name_notice

        show_name_notice("elmo", "mine")

    at = AppTest.from_function(page).run()
    assert not at.exception and [w.value for w in at.warning] == [name_notice("elmo", "mine")]
