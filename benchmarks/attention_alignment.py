"""How often the CoVe MT model's most-attended English word is the word being translated.

A small English→German list of unambiguous caption nouns and colours (``LEXICON``; each German entry
a stem with its inflected endings) is run over the Multi30k validation captions translated by the
model (greedy). For every German token of the translation that is in the list, and whose English word
occurs exactly once in the source, the row's argmax source position is compared with that word's:
a hit when they are the same, "neighbour" when it is the token just before or after (mostly the
article or the adjective), else a miss. Also reported: the mean of each row's largest weight (how
peaked attention is).

    [OMP_NUM_THREADS=1] python -m benchmarks.attention_alignment [--model DIR] [--limit N]
        [--output benchmarks/history/cove.md]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import platform
import re
import time
from pathlib import Path

import numpy as np

from spacy_contextual.analysis.model_loading import load_model
from spacy_contextual.mt_text import UNK, tokenize

from .record import publish

MULTI30K = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
ENDINGS = "(?:e|en|er|es|em|n|s)?"
LEXICON = {  # English: German stem (inflected endings allowed); nouns and colours that captions use often
    "man": "mann", "men": "männer", "woman": "frau", "women": "frauen", "boy": "junge", "girl": "mädchen",
    "dog": "hund", "dogs": "hunde", "child": "kind", "children": "kinder", "street": "straße", "water": "wasser",
    "ball": "ball", "hat": "hut", "beach": "strand", "snow": "schnee", "grass": "gras", "guitar": "gitarre",
    "camera": "kamera", "table": "tisch", "tree": "baum", "horse": "pferd", "building": "gebäude",
    "stage": "bühne", "city": "stadt", "hair": "haar", "jacket": "jacke", "mountain": "berg", "river": "fluss",
    "bicycle": "fahrrad", "bike": "fahrrad", "car": "auto", "shirt": "hemd", "sand": "sand", "baby": "baby",
    "window": "fenster", "sidewalk": "gehweg", "wall": "wand", "food": "essen", "face": "gesicht",
    "blue": "blau", "red": "rot", "green": "grün", "black": "schwarz", "white": "weiß", "yellow": "gelb",
    "orange": "orange", "brown": "braun", "pink": "rosa",
}  # fmt: skip
PATTERNS = [(english, re.compile(f"^{german}{ENDINGS}$")) for english, german in LEXICON.items()]


def english_for(german: str) -> set[str]:
    return {english for english, pattern in PATTERNS if pattern.match(german.lower())}


def audit(sources: list[list[str]], translations) -> dict:
    counts = {"hit": 0, "neighbour": 0, "miss": 0}
    peaks = []
    for source, result in zip(sources, translations, strict=True):
        alpha = np.asarray(result.attention)
        if not len(result.tokens):
            continue
        peaks += alpha.max(axis=1).tolist()
        for t, token in enumerate(result.tokens):
            if token == UNK:
                continue
            positions = [j for j, word in enumerate(source) if word in english_for(token)]
            if len(positions) != 1:
                continue
            attended, j = int(alpha[t].argmax()), positions[0]
            counts["hit" if attended == j else "neighbour" if abs(attended - j) == 1 else "miss"] += 1
    total = sum(counts.values())
    return {"pairs": total, **{k: v / total for k, v in counts.items()}, "mean_row_peak": float(np.mean(peaks))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default", help="a CoVe MT model directory ('default': the bundled one)")
    parser.add_argument("--limit", type=int, default=None, help="the first N captions only")
    parser.add_argument("--output", type=Path, help="record the run in this history file")
    args = parser.parse_args()
    with gzip.open(MULTI30K / "val.en.gz", "rt", encoding="utf-8") as lines:
        captions = [line.strip() for line in lines if line.strip()][: args.limit]
    encoder = load_model("cove", args.model)
    start = time.perf_counter()
    translations = encoder.translate(captions, beam=1, replace_unk=False)
    seconds = time.perf_counter() - start
    result = audit([tokenize(c) for c in captions], translations)
    peak = result["mean_row_peak"]  # of each row's largest weight
    entry = f"""## {datetime.date.today()}: attention of the most-attended source word (model {args.model})

{platform.machine()}, {platform.processor() or "cpu"}; `python -m benchmarks.attention_alignment --model {args.model}`;
{len(captions):,} Multi30k validation captions translated greedily in {seconds:.1f} s; {len(LEXICON)} English words.

| German words from the list | most-attended = the English word | the word next to it | elsewhere | mean max α |
| ---: | ---: | ---: | ---: | ---: |
| {result["pairs"]:,} | {result["hit"]:.1%} | {result["neighbour"]:.1%} | {result["miss"]:.1%} | {peak:.3f} |
"""
    publish(entry, args.output)


if __name__ == "__main__":
    main()
