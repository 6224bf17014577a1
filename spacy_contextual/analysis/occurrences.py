"""Corpora for the sense explorer and the occurrences of one word in them.

A corpus is a list of records ``{"tokens": [...], "target": int | None, "sense": str | None}``: the
bundled demo sentences, pasted or uploaded text (tokenised and split into sentences by spaCy's
English tokenizer and sentencizer), or a sense-labelled JSONL (one ``{"tokens", "target", "sense",
"word"}`` object a line, gzip or plain, as in the Senseval data). An occurrence is one (record,
token position) whose token is the word; for labelled records the labelled target counts, so
"hard" also finds the labelled "harder".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..errors import ContextualError, quoted
from ..text_files import InputFileError, bounded_lines, is_file, loads
from .demo_corpus import DEMO_SENTENCES
from .lemmas import matching_forms
from .sense_records import check_record

MAX_TEXT_CHARS = 200_000
MAX_RECORDS = 50_000  # lines of a sense-labelled JSONL, blank ones included
MAX_EXPANDED_BYTES = 200_000_000  # what an upload or file may expand to (gzip)
MAX_LINE_BYTES = 2_000_000  # one record: a sentence far longer than any corpus has
MAX_TOKENS = 2_000_000  # in all records: 10 times Senseval's "serve", about 150 MB as Python strings
MAX_GZIP_MEMBERS = 10_000  # a bgzip file of MAX_EXPANDED_BYTES has about 3,000
MIN_OCCURRENCES = 3
OCCURRENCE_COLUMNS = ["record", "position", "token", "sense", "sentence"]


class InputError(ContextualError):
    """Bad user input; the message says what is wrong and what to do, and is shown as is."""


@lru_cache(maxsize=1)
def english_tokenizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def demo_corpus() -> list[dict]:
    """The bundled sentences, tokenised, each with its labelled word and sense."""
    nlp = english_tokenizer()
    records = []
    for word, sense, text in DEMO_SENTENCES:
        tokens = [t.text for t in nlp.make_doc(text)]
        target = next(i for i, token in enumerate(tokens) if token.lower() == word)
        records.append({"tokens": tokens, "target": target, "sense": sense, "word": word})
    return records


def text_corpus(text: str, max_chars: int = MAX_TEXT_CHARS) -> list[dict]:
    """Plain text → one unlabelled record per sentence."""
    if not text or not text.strip():
        raise InputError("The text is empty: paste or upload some English text that uses the word.")
    if len(text) > max_chars:
        raise InputError(
            f"The text has {len(text):,} characters; the limit is {max_chars:,}. "
            "Cut it down, or use a sense-labelled JSONL file for larger corpora."
        )
    doc = english_tokenizer()(text)
    records = []
    for sentence in doc.sents:
        tokens = [t.text for t in sentence if not t.is_space]
        if tokens:
            records.append({"tokens": tokens, "target": None, "sense": None})
    return records


def read_sense_jsonl(source: str | Path | bytes, max_records: int = MAX_RECORDS) -> list[dict]:
    """A sense-labelled JSONL (plain or gzip) from a path or the bytes of an uploaded file, read line by
    line: the line past ``max_records`` (blank ones count), a line longer than ``MAX_LINE_BYTES``, the
    byte past ``MAX_EXPANDED_BYTES``, the token past ``MAX_TOKENS`` and the gzip member past
    ``MAX_GZIP_MEMBERS`` are each refused before more is read, so memory stays near the records kept."""
    if isinstance(source, (str, Path)) and not is_file(source):
        raise InputError(f"{quoted(source)} is not a file: give the path of a sense-labelled .jsonl or .jsonl.gz file.")
    what = "The file" if isinstance(source, bytes) else str(source)
    records, tokens = [], 0
    lines = bounded_lines(source, what, max_records, MAX_EXPANDED_BYTES, MAX_LINE_BYTES, MAX_GZIP_MEMBERS)
    try:
        for line_number, raw in lines:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                item = check_record(loads(line), f"line {line_number}", labelled=False)
            except ValueError as error:  # not JSON, a number too long, or a record of the wrong types
                raise InputError(
                    f"Line {line_number} is not a sense-labelled record ({error}); each line must be a JSON object "
                    'like {"tokens": [...], "target": 3, "sense": "...", "word": "..."}.'
                ) from None
            tokens += len(item["tokens"])
            if tokens > MAX_TOKENS:
                raise InputError(f"The file has more than {MAX_TOKENS:,} tokens (the limit): split it.")
            records.append({key: item.get(key) for key in ("tokens", "target", "sense", "word")})
    except InputFileError as error:
        raise InputError(str(error)) from None
    if not records:
        raise InputError("The file holds no records: expected one JSON object per line.")
    return records


def text_corpus_from_bytes(data: bytes, max_chars: int = MAX_TEXT_CHARS) -> list[dict]:
    """``text_corpus`` of an uploaded UTF-8 file, refused before it is decoded when it has more bytes than
    ``max_chars`` characters can take (4 each)."""
    if len(data) > 4 * max_chars:
        raise InputError(
            f"The file has {len(data):,} bytes, more than a text of {max_chars:,} characters (the limit) can have. "
            "Cut it down, or use a sense-labelled JSONL file for larger corpora."
        )
    return text_corpus(data.decode("utf-8", errors="replace"), max_chars)


def corpus_words(records: Iterable[dict]) -> list[str]:
    """The labelled words of a corpus, most frequent first."""
    counts = pd.Series([r.get("word") or r["tokens"][r["target"]] for r in records if r.get("target") is not None])
    return [str(w).lower() for w in counts.str.lower().value_counts().index]


def find_occurrences(
    records: list[dict], word: str, max_occurrences: int | None = None, lemmas: bool = True
) -> pd.DataFrame:
    """Every occurrence of ``word`` (case-insensitive; several forms may be given, comma-separated), in
    corpus order, with its sentence. With ``lemmas`` and a lemmatizer (``analysis.lemmas``), every form
    of the same lemma matches too ("run" finds "runs" and "ran")."""
    query = [w.strip().lower() for w in (word or "").split(",") if w.strip()]
    if not query:
        raise InputError("Enter a word to explore.")
    spaced = [w for w in query if " " in w]
    if spaced:
        raise InputError(f"{quoted(spaced[0])} has a space in it: the explorer looks at one token at a time.")
    forms = set(query)
    if lemmas:
        forms = matching_forms(query, {token.lower() for record in records for token in record["tokens"]})
    rows = []
    for index, record in enumerate(records):
        tokens, target = record["tokens"], record.get("target")
        labelled_word = (record.get("word") or "").lower()
        if target is not None and (labelled_word in forms or tokens[target].lower() in forms):
            positions = [target]
        else:
            positions = [i for i, token in enumerate(tokens) if token.lower() in forms]
        sense = record.get("sense") if target is not None else None
        for position in positions:
            rows.append((index, position, tokens[position], sense if position == target else None, " ".join(tokens)))
    word = ", ".join(query)
    if not rows:
        raise InputError(f"{quoted(word)} does not occur in this corpus: check the spelling or choose another word.")
    if len(rows) < MIN_OCCURRENCES:
        raise InputError(
            f"{quoted(word)} occurs only {len(rows)} time{'s' if len(rows) > 1 else ''}: the explorer needs at least "
            f"{MIN_OCCURRENCES} occurrences to compare contexts. Add more text that uses it."
        )
    frame = pd.DataFrame(rows, columns=OCCURRENCE_COLUMNS)
    return frame.iloc[:max_occurrences].reset_index(drop=True) if max_occurrences else frame


def suggest_words(records: list[dict], limit: int = 12) -> list[str]:
    """Words worth exploring in an unlabelled corpus: the most frequent alphabetic tokens (lowercased)
    that are not stop words and occur at least ``MIN_OCCURRENCES`` times."""
    from spacy.lang.en.stop_words import STOP_WORDS

    counts = Counter(
        token.lower()
        for record in records
        for token in record["tokens"]
        if token.isalpha() and len(token) > 2 and token.lower() not in STOP_WORDS
    )
    return [word for word, count in counts.most_common(limit) if count >= MIN_OCCURRENCES]
