"""The catalog of published models: name -> encoder, file format, language, size, source, licence, files.

``catalog.json`` (shipped with the package) lists the published ELMo and CoVe weights with the URLs
their authors give; a SHA-256 appears only where one is published, ``sha256_prefix`` where the
publisher encodes the start of it in the file name (CoVe's ``wmtlstm-8f474287.pth``), ``bytes`` where the
size is published, with ``bytes_source`` saying where (the download then stops at exactly that size; a
file whose size is not published is shown as such and bounded by the download limit). A user catalog
(``SPACY_CONTEXTUAL_CATALOG=FILE`` or ``--catalog FILE``) in the same JSON layout adds entries or
replaces entries of the same name: an organisation's mirror, private models, a ``file://`` URL.

Each file of an entry is saved under its key in the model's cache directory; ``unpack`` archives
(zip) are unpacked there instead. Formats: ``bilm_tf`` (options.json + weights.hdf5), ``manylangs``
(an ELMoForManyLangs directory), ``cove_pth`` (the MT-LSTM .pth + the GloVe text file) and
``model_dir`` (our own safetensors directory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .. import environment
from ..errors import ContextualError, quoted
from ..schema import BOOLEAN, TEXT, Rule, integer, list_of, one_of, optional, validate_section
from ..text_files import read_json
from ..types import PathLike
from ..user_paths import expand_user
from ..writer import MARK
from .stream import SCHEMES

CATALOG_PATH = Path(__file__).resolve().parent / "catalog.json"
CATALOG_ENV = environment.CATALOG.name
FORMATS = {"bilm_tf": "elmo", "manylangs": "elmo", "cove_pth": "cove", "model_dir": None}
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")  # always fullmatch: "$" would let a final newline through
RECORD_NAME = "download.json"  # each cached model's record (cache.py)
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
HEX = re.compile(r"[0-9a-f]+")
MAX_FILE_BYTES = 2**62
WORKING_ENDINGS = (".tmp", ".old", ".new", ".lock", ".owner")  # never a model: the cache's or a user's own files


class CatalogError(ContextualError):
    """A catalog file that cannot be read or has an invalid entry."""


@dataclass(frozen=True)
class CatalogFile:
    name: str  # the file's name in the model's cache directory (or the archive's, when unpacked)
    urls: tuple[str, ...]  # the URL first, then its mirrors
    sha256: str | None = None  # only a published one
    sha256_prefix: str | None = None
    bytes: int | None = None
    unpack: bool = False
    bytes_source: str | None = None  # where ``bytes`` is published


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    encoder: str
    format: str
    language: str
    size: str | None
    source: str
    licence: str
    notes: str | None
    files: tuple[CatalogFile, ...]
    origin: str  # the catalog file the entry comes from

    @property
    def hash_published(self) -> bool:
        return all(file.sha256 for file in self.files)

    @property
    def download_bytes(self) -> int | None:
        """The published size of the download, None unless the catalog gives every file's ``bytes``."""
        sizes = [file.bytes for file in self.files]
        return None if None in sizes else sum(sizes)


URL = Rule(
    "an http://, https:// or file:/// URL",
    lambda v: isinstance(v, str) and "://" in v and v.split("://", 1)[0] in SCHEMES,
)
FILE_SCHEMA = {
    "url": URL,
    "mirrors": list_of(URL, "http://, https:// or file:/// URLs"),
    "sha256": Rule("64 lowercase hex digits", lambda v: isinstance(v, str) and len(v) == 64 and HEX.fullmatch(v)),
    "sha256_prefix": Rule(
        "1 to 64 lowercase hex digits", lambda v: isinstance(v, str) and 0 < len(v) <= 64 and HEX.fullmatch(v)
    ),
    "bytes": Rule("a positive whole number of bytes", integer(1, MAX_FILE_BYTES).test),
    "bytes_source": Rule("the text saying where 'bytes' is published", lambda v: isinstance(v, str) and v.strip()),
    "unpack": BOOLEAN,
}
ENTRY_SCHEMA = {
    "encoder": one_of("elmo", "cove"),
    "format": one_of(*FORMATS),
    **{key: optional(TEXT) for key in ("language", "size", "source", "licence", "notes")},
    "files": Rule("an object {file name: {'url': ...}} with at least one file", lambda v: isinstance(v, dict) and v),
}


def _file(origin: str, model: str, name: str, spec: object) -> CatalogFile:
    where = f"{origin}: model {model!r}, file {quoted(name, 60)}"
    if not FILE_NAME.fullmatch(name):
        raise CatalogError(f"{where}: give a plain file name (letters, digits, . _ -) mapped to {{'url': ...}}")
    if name == RECORD_NAME:
        raise CatalogError(f"{where}: {RECORD_NAME} is the name of the cache's own record; give the file another name")
    validate_section(spec, FILE_SCHEMA, where, required=("url",), error=CatalogError)
    unpack = spec.get("unpack", False)
    if unpack and not name.endswith(".zip"):
        raise CatalogError(f"{where}: 'unpack' applies to .zip archives only")
    if "bytes_source" in spec and "bytes" not in spec:
        raise CatalogError(f"{where}: 'bytes_source' says where 'bytes' is published; give both")
    urls = (spec["url"], *spec.get("mirrors", []))
    sha256, prefix, size = spec.get("sha256"), spec.get("sha256_prefix"), spec.get("bytes")
    return CatalogFile(name, urls, sha256, prefix, size, unpack, spec.get("bytes_source"))


def _entry(origin: str, name: str, spec: object) -> CatalogEntry:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise CatalogError(
            f"{origin}: model name {quoted(name, 60)} must be lowercase letters, digits, . _ - (at most 100)"
        )
    if name.endswith(WORKING_ENDINGS) or MARK in name:
        raise CatalogError(
            f"{origin}: model name {name!r} ends like a working name of the cache ({', '.join(WORKING_ENDINGS)}); "
            "choose another name"
        )
    where = f"{origin}: model {name!r}"
    validate_section(spec, ENTRY_SCHEMA, where, required=("encoder", "format", "files"), error=CatalogError)
    encoder, file_format = spec["encoder"], spec["format"]
    if FORMATS[file_format] not in (None, encoder):
        raise CatalogError(
            f"{where} has encoder {encoder!r} and format {file_format!r}; the encoder is elmo or cove "
            "and the format one of bilm_tf, manylangs (elmo), cove_pth (cove), model_dir (either)"
        )
    return CatalogEntry(
        name=name,
        encoder=encoder,
        format=file_format,
        language=spec.get("language") or "",
        size=spec.get("size"),
        source=spec.get("source") or "",
        licence=spec.get("licence") or "not stated",
        notes=spec.get("notes"),
        files=tuple(_file(origin, name, file_name, file_spec) for file_name, file_spec in spec["files"].items()),
        origin=origin,
    )


def read_catalog(path: PathLike) -> dict[str, CatalogEntry]:
    """The entries of one catalog file, validated."""
    path = expand_user(path, "the model catalog")
    if not path.is_file():
        raise CatalogError(f"the model catalog {path} does not exist; give the path of a catalog JSON file")
    document = read_json(path, "give a model catalog JSON file", CatalogError)
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, dict):
        raise CatalogError(f'the model catalog {path} has no "models" object: {{"models": {{name: entry}}}}')
    return {name: _entry(str(path), name, spec) for name, spec in models.items()}


def load_catalog(user_catalog: PathLike | None = None) -> dict[str, CatalogEntry]:
    """The shipped catalog, with the user catalog's entries (``user_catalog`` or $SPACY_CONTEXTUAL_CATALOG)
    added or put in place of the shipped ones of the same name."""
    entries = dict(read_catalog(CATALOG_PATH))
    user = user_catalog or environment.CATALOG.get()
    if user:
        entries.update(read_catalog(user))
    return entries


def find_entry(name: str, user_catalog: PathLike | None = None) -> CatalogEntry | None:
    return load_catalog(user_catalog).get(str(name).strip())


def get_entry(name: str, user_catalog: PathLike | None = None) -> CatalogEntry:
    entry = find_entry(name, user_catalog)
    if entry is None:
        raise CatalogError(f"{quoted(name)} is not in the model catalog; `spacy-contextual models` lists the names")
    return entry


def human_bytes(size: int) -> str:
    return f"{size / 2**30:,.2f} GiB" if size >= 2**30 else f"{size / 2**20:,.1f} MiB"


def download_size(entry: CatalogEntry) -> str:
    """The download's published size in words: "357.1 MiB", "size not published", or "2.03 GiB + 1 file
    of unpublished size" when only some of its files publish theirs."""
    known = [file.bytes for file in entry.files if file.bytes is not None]
    missing = len(entry.files) - len(known)
    if not known:
        return "size not published"
    if not missing:
        return human_bytes(sum(known))
    return f"{human_bytes(sum(known))} + {missing} file{'s' if missing > 1 else ''} of unpublished size"


def catalog_label(origin: str) -> str:
    """ "shipped" for the package's catalog, else the user catalog's file."""
    return "shipped" if origin == str(CATALOG_PATH) else origin


def markdown_table(entries) -> str:
    """The tables of models in docs/models.md: one row per entry, with its download size and the line
    that loads it; then one row per file whose size is published, saying where."""
    entries = list(entries)
    lines = [
        "| Name | Language | Size | Download | About | Source | Licence | Use |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in entries:
        source = entry.source.split("://", 1)[-1].rstrip("/")
        use = f'`load_encoder("{entry.encoder}", "{entry.name}")`'
        cells = [f"`{entry.name}`", entry.language, entry.size or "-", download_size(entry), entry.notes or "-"]
        lines.append("| " + " | ".join([*cells, f"[{source}]({entry.source})", entry.licence, use]) + " |")
    lines += ["", "| Name | File | Bytes | Where the size is published |", "|---|---|---|---|"]
    for entry in entries:
        for file in entry.files:
            if file.bytes is not None:
                lines.append(f"| `{entry.name}` | {file.name} | {file.bytes:,} | {file.bytes_source or '-'} |")
    return "\n".join(lines)


def use_catalog(catalog: PathLike | None) -> None:
    """``--catalog FILE`` reaches every loader (and worker process) through the environment variable."""
    if catalog is not None:
        read_catalog(catalog)  # a bad file fails here, with its name
        os.environ[CATALOG_ENV] = str(expand_user(catalog, "--catalog").resolve())
