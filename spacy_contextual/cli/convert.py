"""Corpus conversion commands.

``convert-sentiment``: the movie-review JSONL into spaCy's binary training format. Each record
``{"id", "text", "label", "split"}`` becomes a Doc (tokenised by ``spacy.blank(lang)``) with exclusive
categories ``cats = {label: 1.0, other: 0.0}``, written to ``OUT_DIR/<split>.spacy``.

``convert-text``: the tokens of a ``.spacy`` corpus as biLM training text (one tokenised sentence per
line), so ``finetune-elmo`` can adapt a biLM to a task's own text (domain transfer) before the task
is trained on it.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ..schema import TEXT, validate_section
from ..text_files import InputFileError, read_jsonl
from ..writer import atomic_file, child
from ._app import app
from .params import InputFile, OutputDir, OutputFile


@app.command("convert-sentiment")
def convert_sentiment(
    input_path: Annotated[
        Path, typer.Argument(parser=InputFile(), help="movie_reviews.jsonl(.gz): id, text, label, split per line")
    ],
    output_dir: Annotated[
        Path, typer.Argument(parser=OutputDir(), help="writes <split>.spacy here (train, dev, test)")
    ],
    lang: Annotated[str, typer.Option(help="language of the tokenizer")] = "en",
    limit: Annotated[int | None, typer.Option(help="at most this many records per split (for smoke tests)")] = None,
) -> None:
    """Convert sentiment JSONL to .spacy files with exclusive text categories."""
    import spacy
    from spacy.tokens import DocBin
    from tqdm import tqdm

    records = list(_read_jsonl(input_path))
    targets = {record["split"]: child(output_dir, f"{record['split']}.spacy", "a split name") for record in records}
    labels = sorted({record["label"] for record in records})
    if len(labels) < 2:
        raise typer.BadParameter(f"{input_path} has only the label(s) {labels}; exclusive classes need two or more")
    nlp = spacy.blank(lang)
    splits: dict[str, DocBin] = {}
    counts: dict[str, int] = {}
    for record in tqdm(records, desc="convert", unit="doc"):
        split = record["split"]
        if limit is not None and counts.get(split, 0) >= limit:
            continue
        doc = nlp.make_doc(record["text"])
        doc.cats = {label: float(label == record["label"]) for label in labels}
        splits.setdefault(split, DocBin()).add(doc)
        counts[split] = counts.get(split, 0) + 1
    output_dir.mkdir(parents=True, exist_ok=True)
    for split, doc_bin in splits.items():
        with atomic_file(targets[split]) as temporary:
            doc_bin.to_disk(temporary)
        typer.echo(f"{targets[split]}: {counts[split]} docs, labels {labels}")


@app.command("convert-text")
def convert_text(
    input_path: Annotated[
        Path, typer.Argument(parser=InputFile(), help="a .spacy file (DocBin), e.g. a task's training corpus")
    ],
    output_path: Annotated[
        Path, typer.Argument(parser=OutputFile(), help="text file, one tokenised sentence per line (.gz is compressed)")
    ],
    lang: Annotated[str, typer.Option(help="language of the vocabulary the docs are read with")] = "en",
) -> None:
    """Write a .spacy corpus as LM text for finetune-elmo: one line per sentence (per doc when the docs
    have no sentence boundaries), tokens separated by spaces, whitespace tokens left out."""
    import spacy
    from tqdm import tqdm

    docs = _docbin_docs(input_path, spacy.blank(lang).vocab)
    opener = gzip.open if output_path.suffix == ".gz" else open
    sentences = tokens = 0
    output_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(output_path) as temporary, opener(temporary, "wt", encoding="utf-8") as out:
        for doc in tqdm(docs, desc="convert", unit="doc"):
            for span in doc.sents if doc.has_annotation("SENT_START") else [doc[:]]:
                words = [token.text for token in span if not token.is_space]
                if words:
                    out.write(" ".join(words) + "\n")
                    sentences += 1
                    tokens += len(words)
        if not sentences:  # inside the block: nothing is written, the output is left as it was
            raise typer.BadParameter(f"{input_path} holds no tokens; is it the right corpus?")
    typer.echo(f"{output_path}: {sentences} sentences, {tokens} tokens")


SENTIMENT_RECORD = {"text": TEXT, "label": TEXT, "split": TEXT}


def _read_jsonl(path: Path):
    for number, record in read_jsonl(path):
        missing = {"text", "label", "split"} - set(record)
        if missing:
            raise InputFileError(f"{path}:{number}: the record lacks {sorted(missing)}; each needs text, label, split")
        yield validate_section(record, SENTIMENT_RECORD, f"{path}:{number}", other_keys=True, error=InputFileError)


DOCBIN_FIX = "give a .spacy file written by DocBin (spacy convert, or a spaCy training corpus)"


def _docbin_docs(path: Path, vocab) -> Iterator:
    """The Docs of the DocBin file ``path``: the file is parsed now, its Docs made one at a time. A file
    that is not one (text, zero bytes, cut short) is one line naming it, not spaCy's E1014 traceback."""
    from spacy.tokens import DocBin

    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file; {DOCBIN_FIX}")
    with _not_a_docbin(path):
        doc_bin = DocBin().from_disk(path)
    return _checked(doc_bin.get_docs(vocab), path)


def _checked(docs: Iterator, path: Path) -> Iterator:
    with _not_a_docbin(path):
        yield from docs


@contextmanager
def _not_a_docbin(path: Path) -> Iterator[None]:
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, zlib.error) as error:  # spaCy's E1014, msgpack's errors
        raise InputFileError(
            f"{path} is not a DocBin corpus, or it is cut short or damaged ({type(error).__name__}); {DOCBIN_FIX}"
        ) from None
