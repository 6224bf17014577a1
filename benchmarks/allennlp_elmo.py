"""AllenNLP 2.10.1's ELMo over a file of sentences into HDF5: the reference side of ``cli_speed.py``.

AllenNLP 2.x has no ``allennlp elmo`` command any more (it left with ``ElmoEmbedder`` in 1.0); this is
that command's loop (``ElmoEmbedder.embed_file`` of AllenNLP 0.9, ``--all``) over the 2.10.1 modules:
batches of ``--batch-size`` lines in file order, ``batch_to_ids`` -> ``_ElmoBiLm`` (stateful, as it was),
boundaries removed, one float32 dataset (3, n, 2P) per line keyed by its index, and
``sentence_to_index``. It imports only ``allennlp`` (and torch, numpy, h5py), so it runs in a venv that
holds AllenNLP and nothing of this project:

    /work/venvs/allennlp/bin/python -m benchmarks.allennlp_elmo OPTIONS.json WEIGHTS.hdf5 INPUT.txt OUT.hdf5
"""

from __future__ import annotations

import argparse
import json

import h5py
import torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids
from allennlp.nn.util import remove_sentence_boundaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("options_file")
    parser.add_argument("weight_file")
    parser.add_argument("input_file")
    parser.add_argument("output_file")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    bilm = _ElmoBiLm(args.options_file, args.weight_file).eval()
    with open(args.input_file, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle]
    sentence_to_index = {}
    with h5py.File(args.output_file, "w") as out, torch.no_grad():
        for start in range(0, len(lines), args.batch_size):
            batch = [line.split() for line in lines[start : start + args.batch_size]]
            output = bilm(batch_to_ids(batch))
            layers = [remove_sentence_boundaries(a, output["mask"]) for a in output["activations"]]
            activations = torch.stack([layer for layer, _ in layers], dim=1)  # (B, 3, T, 2P)
            mask = layers[0][1]
            for row, sentence in enumerate(batch):
                length = int(mask[row].sum())
                out.create_dataset(str(start + row), data=activations[row, :, :length].numpy())
                sentence_to_index[" ".join(sentence)] = str(start + row)
        dataset = out.create_dataset("sentence_to_index", (1,), dtype=h5py.special_dtype(vlen=str))
        dataset[0] = json.dumps(sentence_to_index)


if __name__ == "__main__":
    main()
