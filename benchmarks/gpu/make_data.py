"""Prepare what ``benchmarks/gpu/run.sh`` needs and a bare GPU machine lacks, inside the repository.

A GPU machine gets a copy of the repository only (not ``../shared``), and its Python has torch but
not spaCy. This writes, into ``benchmarks/gpu/data/`` (git-ignored; ``--out`` for another folder):

    valid.txt        the first --lines lines of ../shared/data/lm_corpus/valid.txt.gz (inference input)
    train.txt        the first --train-lines lines of lm_corpus/train.txt.gz (the training check)
    tiny_anchor/     options.json + weights.hdf5 of the AllenNLP tiny anchor (the exactness check)
    tiny_elmo/       with --tiny: a random tiny biLM (our model directory), the dry run's model
    site-py312.tar.gz  with --deps: spaCy and the packages it needs, installed for that machine's
                     Python (--python-version, Linux x86_64) at the versions installed here, debug
                     symbols stripped; run.sh unpacks it where ``import spacy`` fails

    python -m benchmarks.gpu.make_data --deps           # for a GPU machine without internet
    python -m benchmarks.gpu.make_data --tiny --out DIR # the CPU dry run's inputs
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from ..common import copy_lines, random_bilm

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"

# spaCy's dependency closure minus what a CUDA image with torch already has (numpy, typer, requests, ...)
PACKAGES = [
    "spacy", "thinc", "srsly", "cymem", "preshed", "murmurhash", "wasabi", "catalogue", "confection", "weasel",
    "spacy-legacy", "spacy-loggers", "blis", "cloudpathlib", "smart-open", "pydantic", "pydantic-core",
    "annotated-types", "typing-inspection",
]  # fmt: skip
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64"]
PLATFORMS += ["manylinux2014_x86_64", "manylinux1_x86_64"]


def save_tiny_elmo(path: Path) -> None:
    from spacy_contextual.formats.bilm_dir import save_bilm

    save_bilm(random_bilm("tiny"), path)


def pack_dependencies(target: Path, python_version: str) -> None:
    """pip-install PACKAGES (this machine's versions) for ``python_version`` into a folder, strip it, tar it."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in PACKAGES]
    platforms = [f"--platform={platform}" for platform in PLATFORMS]
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            "--only-binary=:all:",
        ]
        command += ["--implementation=cp", f"--python-version={python_version}", *platforms, f"--target={site}"]
        subprocess.run([*command, *pins], check=True)
        libraries = [str(path) for path in site.rglob("*.so")]
        subprocess.run(["strip", "--strip-unneeded", *libraries], check=True)  # debug info is most of their size
        with tarfile.open(target, "w:gz") as archive:
            archive.add(site, arcname="site")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "gpu" / "data")
    parser.add_argument("--lines", type=int, default=2000, help="inference input lines")
    parser.add_argument("--train-lines", type=int, default=5000, help="training input lines")
    parser.add_argument("--tiny", action="store_true", help="40 / 300 lines and a tiny biLM: the CPU dry run")
    parser.add_argument("--deps", action="store_true", help="also pack spaCy for a machine without it")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (for --deps)")
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} is missing: run this in a checkout that has ../shared beside it")
    lines, train_lines = (40, 300) if args.tiny else (args.lines, args.train_lines)
    args.out.mkdir(parents=True, exist_ok=True)
    copy_lines(SHARED / "data" / "lm_corpus" / "valid.txt.gz", args.out / "valid.txt", lines)
    copy_lines(SHARED / "data" / "lm_corpus" / "train.txt.gz", args.out / "train.txt", train_lines)
    anchor = args.out / "tiny_anchor"
    anchor.mkdir(exist_ok=True)
    for name in ("options.json", "weights.hdf5"):
        shutil.copy(SHARED / "elmo_fixtures" / "tiny_anchor" / name, anchor / name)
    if args.tiny:
        save_tiny_elmo(args.out / "tiny_elmo")
    if args.deps:
        pack_dependencies(args.out / f"site-py{args.python_version.replace('.', '')}.tar.gz", args.python_version)
    for path in sorted(args.out.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size / 1e6:8.2f} MB  {path.relative_to(args.out)}")


if __name__ == "__main__":
    main()
