"""The model catalog: the shipped entries (published URLs only), user catalogs that add or replace
entries, refused invalid entries, and the README's table of models agreeing with the catalog."""

from __future__ import annotations

import json

import pytest
from util import REPO

from spacy_contextual.hub.catalog import (
    CATALOG_ENV,
    CATALOG_PATH,
    CatalogError,
    find_entry,
    get_entry,
    load_catalog,
    markdown_table,
    read_catalog,
)

ALLENNLP = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/"
ALLENNLP_NAMES = [
    "elmo-small",
    "elmo-medium",
    "elmo-original",
    "elmo-original-5.5b",
    "elmo-pubmed",
    "elmo-pt-wikipedia",
    "elmo-pt-brwac",
]


@pytest.fixture
def shipped(monkeypatch):
    monkeypatch.delenv(CATALOG_ENV, raising=False)
    return load_catalog()


def test_the_allennlp_models_are_bilm_tf_pairs_from_the_allennlp_bucket(shipped):
    for name in ALLENNLP_NAMES:
        entry = shipped[name]
        assert (entry.encoder, entry.format) == ("elmo", "bilm_tf")
        assert [file.name for file in entry.files] == ["options.json", "weights.hdf5"]
        assert all(file.urls[0].startswith(ALLENNLP) for file in entry.files)
    assert {shipped[name].language for name in ("elmo-pt-wikipedia", "elmo-pt-brwac")} == {"pt"}


def test_the_44_elmoformanylangs_languages_are_the_nlpl_archives_136_to_179(shipped):
    many = [entry for entry in shipped.values() if entry.format == "manylangs"]
    assert len(many) == 44 and len({entry.language for entry in many}) == 44
    urls = sorted(entry.files[0].urls[0] for entry in many)
    assert urls == sorted(f"http://vectors.nlpl.eu/repository/11/{n}.zip" for n in range(136, 180))
    assert all(entry.files[0].unpack and entry.name == f"elmo-manylangs-{entry.language}" for entry in many)
    assert shipped["elmo-manylangs-nb"].files[0].urls[0].endswith("/165.zip")  # the README's order swaps nb/nl
    assert shipped["elmo-manylangs-nl"].files[0].urls[0].endswith("/164.zip")


def test_cove_carries_its_hash_prefix_and_the_glove_vectors_with_a_mirror(shipped):
    pth, glove = shipped["cove-wmt"].files
    assert pth.name == "wmtlstm-8f474287.pth" and pth.sha256_prefix == "8f474287"
    assert pth.urls == ("https://s3.amazonaws.com/research.metamind.io/cove/wmtlstm-8f474287.pth",)
    assert glove.name == "glove.840B.300d.zip" and glove.unpack and len(glove.urls) == 2


def test_no_sha256_is_claimed_that_the_publishers_did_not_publish(shipped):
    assert not any(file.sha256 for entry in shipped.values() for file in entry.files)
    assert all(entry.licence and entry.source.startswith("https://") for entry in shipped.values())


def test_a_user_catalog_adds_and_replaces_entries(tmp_path, monkeypatch, shipped):
    mine = {
        "elmo-small": {"encoder": "elmo", "format": "bilm_tf", "files": {"weights.hdf5": {"url": "file:///w"}}},
        "ours": {"encoder": "cove", "format": "model_dir", "files": {"config.json": {"url": "http://127.0.0.1:9/c"}}},
    }
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"models": mine}))
    monkeypatch.setenv(CATALOG_ENV, str(path))
    entries = load_catalog()
    assert len(entries) == len(shipped) + 1
    assert entries["elmo-small"].files[0].urls == ("file:///w",) and entries["elmo-small"].origin == str(path)
    assert get_entry("ours").encoder == "cove"
    monkeypatch.delenv(CATALOG_ENV)
    assert find_entry("ours") is None and find_entry("ours", path) is not None


@pytest.mark.parametrize(
    "name, spec, message",
    [
        ("Bad/Name", {}, "model name 'Bad/Name' must be lowercase"),
        ("x", {"encoder": "elmo", "format": "cove_pth", "files": {"w": {"url": "http://h"}}}, "encoder 'elmo' and"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {}}, "files is {}; expected an object"),
        ("x", {"encoder": "elmo", "format": "bilm_tf"}, "lacks the key 'files'"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {"../w": {"url": "http://h/w"}}}, "plain file name"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "h/w"}}}, "url is 'h/w'; expected"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "http://h", "sha256": "ab"}}}, "64"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "http://h", "md5": "ab"}}}, "md5"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "http://h", "unpack": True}}}, "zip"),
        ("x", {"encoder": "elmo", "format": "bilm_tf", "lang": "en", "files": {"w": {"url": "http://h"}}}, "unknown"),
        ("evil\n", {"encoder": "elmo", "format": "bilm_tf", "files": {"w": {"url": "http://h"}}}, "must be lowercase"),
    ],
)
def test_an_invalid_entry_is_refused_with_the_file_and_the_model(tmp_path, name, spec, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"models": {name: spec}}))
    with pytest.raises(CatalogError, match=message) as caught:
        read_catalog(path)
    assert str(path) in str(caught.value)


FILE = {"url": "http://127.0.0.1:9/w"}


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"files": {"w": {**FILE, "mirrors": 5}}}, "mirrors is 5; expected a list of http://, https:// or file://"),
        ({"files": {"w": {**FILE, "mirrors": "http://h/w"}}}, "mirrors is 'http://h/w'; expected a list of"),
        ({"files": {"w": {**FILE, "mirrors": [5]}}}, "mirrors is \\[5\\]; expected a list of http"),
        ({"files": {"w": {"url": None}}}, "url is None; expected an http"),
        ({"files": {"w": {"url": "ftp://h/w"}}}, "url is 'ftp://h/w'; expected an http"),
        ({"files": {"w": {**FILE, "bytes": "1000"}}}, "bytes is '1000'; expected a positive whole number of bytes"),
        ({"files": {"w": {**FILE, "bytes": True}}}, "bytes is True; expected a positive whole number of bytes"),
        ({"files": {"w": {**FILE, "sha256": 5}}}, "sha256 is 5; expected 64 lowercase hex digits"),
        ({"files": {"w": {**FILE, "sha256_prefix": ["ab"]}}}, "sha256_prefix is \\['ab'\\]; expected 1 to 64"),
        ({"files": {"w": {**FILE, "sha256": "a" * 64 + "\n"}}}, "sha256 is '.*'; expected 64 lowercase hex digits"),
        ({"files": {"w": {**FILE, "unpack": "yes"}}}, "unpack is 'yes'; expected true or false"),
        ({"files": {"w": [FILE]}}, "file 'w' is \\[.*\\]; expected a JSON object"),
        ({"files": [FILE]}, "files is \\[.*\\]; expected an object"),
        ({"format": ["bilm_tf"]}, "format is \\['bilm_tf'\\]; expected one of"),
        ({"format": {"a": 1}, "encoder": {"b": 2}}, "encoder is {'b': 2}; expected one of 'elmo', 'cove'"),
        ({"language": 5}, "model 'x': language is 5; expected a string"),
        ({"files": {"download.json": FILE}}, "download.json is the name of the cache's own record"),
    ],
)
def test_wrong_types_in_a_catalog_are_one_line(tmp_path, spec, message):
    entry = {"encoder": "elmo", "format": "bilm_tf", "files": {"w": FILE}, **spec}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"models": {"x": entry}}))
    with pytest.raises(CatalogError, match=message) as caught:
        read_catalog(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_a_deeply_nested_catalog_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"models": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(CatalogError, match=r"deep.json is not valid JSON \(nested more than 100 levels deep\)"):
        read_catalog(path)


def test_an_unreadable_catalog_is_one_clear_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(
        CatalogError, match=r"broken.json is not valid JSON \(.* line 1 column 2\); give a model catalog"
    ):
        read_catalog(path)
    path.write_text("[]")
    with pytest.raises(CatalogError, match='has no "models" object'):
        read_catalog(path)
    with pytest.raises(CatalogError, match="does not exist"):
        read_catalog(tmp_path / "missing.json")


def test_the_docs_table_of_models_is_the_catalog():
    table = markdown_table(read_catalog(CATALOG_PATH).values())
    assert table in (REPO / "docs" / "models.md").read_text(encoding="utf-8"), (
        "docs/models.md's table of models differs from the catalog; paste the output of `spacy-contextual models "
        "--markdown` into it"
    )
