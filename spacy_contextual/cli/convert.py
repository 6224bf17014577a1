"""``spacy-contextual convert-sentiment``: the movie-review JSONL into spaCy's binary training format.

Each record ``{"id", "text", "label", "split"}`` becomes a Doc (tokenised by ``spacy.blank(lang)``)
with exclusive categories ``cats = {label: 1.0, other: 0.0}``, written to ``OUT_DIR/<split>.spacy``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Optional

import spacy
import typer
from spacy.tokens import DocBin
from tqdm import tqdm

from ._app import app


@app.command("convert-sentiment")
def convert_sentiment(
    input_path: Path = typer.Argument(..., help="movie_reviews.jsonl(.gz): id, text, label, split per line"),
    output_dir: Path = typer.Argument(..., help="writes train.spacy, dev.spacy, test.spacy here"),
    lang: str = typer.Option("en", help="language of the tokenizer"),
    limit: Optional[int] = typer.Option(None, help="at most this many records per split (for smoke tests)"),
) -> None:
    """Convert sentiment JSONL to .spacy files with exclusive text categories."""
    records = list(_read_jsonl(input_path))
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
        doc_bin.to_disk(output_dir / f"{split}.spacy")
        typer.echo(f"{output_dir / f'{split}.spacy'}: {counts[split]} docs, labels {labels}")


def _read_jsonl(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            missing = {"text", "label", "split"} - set(record)
            if missing:
                raise typer.BadParameter(f"{path}:{number}: record lacks {sorted(missing)}")
            yield record
