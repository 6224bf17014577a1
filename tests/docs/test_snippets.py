"""The documentation runs: every ```python and ```bash block of README.md, CONTRIBUTING.md,
benchmarks/README.md and docs/*.md, and every `python -m spacy project run ...` written in them or in project.yml,
is read from those files when the tests run (never copied here) and run as written.

Each runs in a temporary working directory laid out like a checkout: configs/, app/, project.yml and
a copy of benchmarks/ (`python -m benchmarks.NAME` runs the copy: the working directory comes first on
sys.path), with a ../shared beside it holding a few lines of each data file of the real ../shared. A
file that a snippet names and that cannot exist offline (the published options.json and weights.hdf5,
a user's corpus, wmtlstm-8f474287.pth, ...) is a stand-in of the same name, made from the tiny random
models of util.py. Commands that train run with smoke settings: SMOKE_ARGS, appended to
the command, cap them at a step or two.
`spacy project run` commands run with --dry: spaCy parses the line as written and finds the workflow
and the vars; tests/test_project.py runs the workflows themselves in smoke form.

The Python blocks and the cheap shell blocks run by default; blocks that train or serve are slow. A
command that cannot run here (it needs the network, a GPU or two machines, or it is the test suite
itself) is listed in NOT_HERE with the reason; any other command runs, so a new snippet is tested as
soon as it is written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from browser import served
from model_server import ModelServer, bilm_entry, bilm_tf_files, cove_pth_bytes, glove_zip, manylangs_zip, write_catalog
from typer.testing import CliRunner
from util import DATA, REPO, free_port, tiny_bilm, tiny_elmo_dir, tiny_listener_pipeline, torch_threads

from spacy_contextual.hub.cache import HOME_ENV, OFFLINE_ENV
from spacy_contextual.hub.catalog import CATALOG_ENV, load_catalog

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

DOCS = [
    "README.md",
    "CONTRIBUTING.md",
    "benchmarks/README.md",
    *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
]
PROJECT_RUN = re.compile(r"`(python -m spacy project run [^`]*)`")

# (pattern, why): commands that cannot run in the test suite
NOT_HERE = [
    (r"^pip install", "installs packages (tests/test_readme.py checks the install line)"),
    (r"^python -m pytest", "the test suite itself"),
    (r"--nnodes 2", "needs two machines"),
    (r"make_data --deps", "downloads packages from the registry"),
]
# (pattern, why): commands that need a CUDA device; they run where there is one
NEEDS_GPU = [
    (r"--device cuda|--training\.device cuda|--nproc_per_node [48]\b", "runs on GPUs"),
    (r"gpu/run\.sh --out|gpu\.report gpu_results", "the GPU check and its report"),
]
# commands that train, embed a corpus with several processes, benchmark or serve: their blocks are slow
SLOW = re.compile(
    r"spacy train|spacy evaluate|pretrain-elmo|finetune-elmo|train-cove|train-glove|export-cove|evaluate-lm|"
    r"export-elmo|sense-probe|convert-sentiment|torchrun|--processes|bleu|translate|benchmarks[./]|spacy-contextual app"
)
# appended to a command that trains: a step or two (the options are the commands' own)
SMOKE_ARGS = {
    "pretrain-elmo": "--training.max_steps 2 --training.warmup_steps 1 --data.min_count 1 --softmax.cutoffs [50,100]",
    "finetune-elmo": "--training.max_steps 2 --training.warmup_steps 1",
    "train-cove": "--training.max_steps 2 --training.max_epochs 1",
    "train-glove": "--epochs 1",
    "spacy train": "--training.max_steps 2 --training.eval_frequency 1",
}
# commands about the checkout itself (lint): they run in the repository, and only read it
IN_REPOSITORY = re.compile(r"ruff ")


@dataclass
class Snippet:
    path: str
    line: int
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


def snippets(path: str) -> list[Snippet]:
    """The fenced ```python and ```bash blocks of a Markdown file (an indented block dedented), with the
    line each starts on."""
    text = (REPO / path).read_text(encoding="utf-8")
    return [
        Snippet(path, text.count("\n", 0, match.start()) + 1, match.group(2), textwrap.dedent(match.group(3)))
        for match in re.finditer(r"^( *)```(python|bash)\n(.*?)^\1```", text, re.M | re.S)
    ]


def commands(script: str) -> list[str]:
    """A shell block's commands: continuation lines joined, comment-only lines dropped, a for loop whole."""
    logical = re.sub(r"\\\n\s*", "", script).splitlines()
    result: list[str] = []
    loop: list[str] = []
    for line in logical:
        if not shlex.split(line, comments=True) and not loop:
            continue
        if loop or line.lstrip().startswith("for "):
            loop.append(line.strip())
            if line.strip() == "done":
                result.append("\n".join(loop))
                loop = []
            continue
        result.append(line.strip())
    return result


def why_not(command: str, rules: list[tuple[str, str]]) -> str | None:
    return next((why for pattern, why in rules if re.search(pattern, command)), None)


def shell_snippets() -> list[Snippet]:
    return [snippet for path in DOCS for snippet in snippets(path) if snippet.language == "bash"]


def python_snippets() -> list[Snippet]:
    return [snippet for path in DOCS for snippet in snippets(path) if snippet.language == "python"]


def inline_project_runs() -> list[tuple[str, str]]:
    """(where, command) for every `python -m spacy project run ...` written inline in the docs and project.yml
    (those inside shell blocks run with their block)."""
    found = []
    for path in [*DOCS, "project.yml"]:
        text = (REPO / path).read_text(encoding="utf-8")
        found += [(f"{path}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)) for m in PROJECT_RUN.finditer(text)]
    return found


def slow_if_heavy(snippet: Snippet):
    heavy = any(SLOW.search(command) for command in commands(snippet.code))
    return pytest.param(snippet, id=snippet.name, marks=[pytest.mark.slow] if heavy else [])


# -- the working directory: a checkout with a tiny ../shared, and stand-ins for the files snippets name


def head_gz(source: Path, target: Path, lines: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        text = "".join(line for line, _ in zip(handle, range(lines), strict=False))
    with gzip.open(target, "wt", encoding="utf-8") as out:
        out.write(text)


@pytest.fixture(scope="session")
def tiny_shared(tmp_path_factory) -> Path:
    """../shared with a few lines of each file: EWT (8 sentences per split), reviews, Multi30k (40 lines), the
    LM corpus (20,000 training lines, 200 of the others), senses (60 lines)."""
    root = tmp_path_factory.mktemp("shared") / "shared"
    data = root / "data"
    with gzip.open(DATA / "ud_english_ewt" / "dev.conllu.gz", "rt", encoding="utf-8") as handle:
        sentences = handle.read().split("\n\n")[:24]
    for i, split in enumerate(("train", "dev", "test")):
        (data / "ud_english_ewt").mkdir(parents=True, exist_ok=True)
        with gzip.open(data / "ud_english_ewt" / f"{split}.conllu.gz", "wt", encoding="utf-8") as out:
            out.write("\n\n".join(sentences[8 * i : 8 * i + 8]) + "\n\n")
    (data / "sentiment").mkdir(parents=True)
    with gzip.open(data / "sentiment" / "movie_reviews.jsonl.gz", "wt", encoding="utf-8") as out:
        for split in ("train", "dev", "test"):
            for i, (text, label) in enumerate([("a fine , moving film .", "pos"), ("dull and far too long .", "neg")]):
                out.write(json.dumps({"id": f"{split}{i}", "text": text, "label": label, "split": split}) + "\n")
    for name in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de"):
            head_gz(DATA / "multi30k" / f"{name}.{lang}.gz", data / "multi30k" / f"{name}.{lang}.gz", 40)
    for name, lines in (("train", 20_000), ("valid", 200), ("test", 200)):  # mixed_precision_training reads 20,000
        head_gz(DATA / "lm_corpus" / f"{name}.txt.gz", data / "lm_corpus" / f"{name}.txt.gz", lines)
    for name in ("hard", "serve"):
        head_gz(DATA / "senses" / f"{name}.jsonl.gz", data / "senses" / f"{name}.jsonl.gz", 60)
    (root / "elmo_fixtures").symlink_to(DATA.parent / "elmo_fixtures")
    return root


def lm_lines(count: int = 60) -> str:
    with gzip.open(DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        return "".join(line for line, _ in zip(handle, range(count), strict=False))


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def bilm_tf_pair(options: Path, weights: Path) -> None:
    from spacy_contextual.formats.bilm_tf import export_bilm_tf

    written_options, written_weights = export_bilm_tf(tiny_bilm(), options.parent / "bilm_tf_standin")
    shutil.copy(written_options, options)
    shutil.copy(written_weights, weights)


def spacy_corpus(path: Path) -> None:
    """A .spacy file of 8 UD English EWT sentences (tags, morphology, heads: every shipped config trains on it)."""
    from spacy.tokens import DocBin
    from spacy.training.converters import conllu_to_docs

    with gzip.open(DATA / "ud_english_ewt" / "dev.conllu.gz", "rt", encoding="utf-8") as handle:
        sentences = handle.read().split("\n\n")[:8]
    DocBin(docs=conllu_to_docs("\n\n".join(sentences) + "\n\n", n_sents=4)).to_disk(path)


def published_cove(pth: Path, glove: Path) -> None:
    from spacy_contextual.formats.cove_pth import expected_shapes
    from spacy_contextual.formats.word_vectors import write_glove

    torch.save({key: torch.randn(shape) * 0.1 for key, shape in expected_shapes().items()}, pth)
    words = ["a", "man", "plays", "the", "guitar", "."]
    write_glove(glove, words, np.random.default_rng(0).normal(size=(len(words), 300)).astype(np.float32))


def finetune_config(path: Path) -> None:
    config = json.loads((REPO / "configs" / "finetune_elmo_task.json").read_text(encoding="utf-8"))
    config["data"].update(train=["my_corpus.txt.gz"], valid="my_valid.txt", min_count=1)
    config["softmax"]["cutoffs"] = [50, 200]  # a new softmax (bilm-tf weights) over the stand-in corpus's words
    config["training"]["output_dir"] = "runs/my_domain"
    path.write_text(json.dumps(config), encoding="utf-8")


def sense_lines(path: Path) -> None:
    with gzip.open(DATA / "senses" / "serve.jsonl.gz", "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    senses = sorted({r["sense"] for r in records})[:2]
    chosen = [r for sense in senses for r in [r for r in records if r["sense"] == sense][:10]]
    write_text(path, "".join(json.dumps(r) + "\n" for r in chosen))


def pipeline_standin(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tiny_listener_pipeline(tiny_elmo_dir(path.parent / "tiny_elmo"), path)


# a file name a snippet mentions -> how its stand-in is made
STANDINS = {
    "sentences.txt": lambda p: write_text(p, lm_lines(4)),
    "sentences.txt.gz": lambda p: write_text(p, lm_lines(4)),
    "corpus.txt.gz": lambda p: write_text(p, lm_lines()),
    "my_corpus.txt.gz": lambda p: write_text(p, lm_lines()),
    "my_valid.txt": lambda p: write_text(p, lm_lines(10)),
    "my_domain_heldout.txt": lambda p: write_text(p, lm_lines(10)),
    "test.txt.gz": lambda p: write_text(p, lm_lines(10)),
    "input.en.txt": lambda p: write_text(p, "A man plays the guitar .\nTwo dogs run on the beach .\n"),
    "my_domain.json": finetune_config,
    "senses.jsonl.gz": sense_lines,
    "train.spacy": spacy_corpus,
    "dev.spacy": spacy_corpus,
    "my_elmo": tiny_elmo_dir,
    "path/to/our_model_dir": tiny_elmo_dir,
    "options.json": lambda p: bilm_tf_pair(p, p.parent / "weights.hdf5"),
    "elmo_2x4096_512_2048cnn_2xhighway_options.json": lambda p: bilm_tf_pair(
        p, p.parent / "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5"
    ),
    "elmo_2x1024_128_2048cnn_1xhighway_options.json": lambda p: bilm_tf_pair(
        p, p.parent / "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5"
    ),
    "wmtlstm-8f474287.pth": lambda p: published_cove(p, p.parent / "glove.840B.300d.txt"),
    "training/elmo_tagger/model-best": pipeline_standin,
    "training/elmo_textcat/model-best": pipeline_standin,
    "input.txt": lambda p: write_text(p, lm_lines(4)),
    "de.model": lambda p: shutil.copytree(DATA / "elmoformanylangs" / "model", p),
}


def published_standin(server: ModelServer, name: str, file_format: str) -> dict:
    """A catalog entry of ``name``'s format whose files the loopback server serves: tiny random weights."""
    if file_format == "bilm_tf":
        return bilm_entry(server, bilm_tf_files(Path(server.base_dir) / name), prefix=name)
    if file_format == "manylangs":
        files = {f"{name}.zip": {"url": server.add(f"{name}/model.zip", manylangs_zip()), "unpack": True}}
        return {"encoder": "elmo", "format": "manylangs", "files": files}
    pth = cove_pth_bytes()
    files = {
        f"wmtlstm-{hashlib.sha256(pth).hexdigest()[:8]}.pth": {"url": server.add(f"{name}/cove.pth", pth)},
        "glove.zip": {"url": server.add(f"{name}/glove.zip", glove_zip()), "unpack": True},
    }
    return {"encoder": "cove", "format": "cove_pth", "files": files}


@pytest.fixture
def published(tmp_path, monkeypatch):
    """Catalog names in the docs resolve to stand-ins served on 127.0.0.1 (a user catalog overriding
    the shipped entries), cached in the test's own folder: no snippet reaches the network."""
    with ModelServer() as server:
        server.base_dir = tmp_path / "served"
        server.base_dir.mkdir()
        monkeypatch.setenv(CATALOG_ENV, str(tmp_path / "catalog.json"))
        monkeypatch.setenv(HOME_ENV, str(tmp_path / "model_cache"))
        monkeypatch.delenv(OFFLINE_ENV, raising=False)
        write_catalog(tmp_path / "catalog.json", {})
        yield server


@pytest.fixture
def checkout(tmp_path, tiny_shared, monkeypatch, published) -> Path:
    """A working directory like a checkout, with ../shared beside it; the current directory in the test."""
    work = tmp_path / "checkout"
    work.mkdir()
    (tmp_path / "shared").symlink_to(tiny_shared)
    for name in ("configs", "app", "scripts"):
        (work / name).symlink_to(REPO / name)
    shutil.copy(REPO / "project.yml", work / "project.yml")
    shutil.copytree(REPO / "benchmarks", work / "benchmarks", ignore=shutil.ignore_patterns("data", "__pycache__"))
    mt_config = Path("spacy_contextual", "assets", "cove", "mt.cfg")  # a copy: nothing run here writes into the package
    (work / mt_config).parent.mkdir(parents=True)
    shutil.copy(REPO / mt_config, work / mt_config)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return work


def make_standins(code: str, work: Path, server: ModelServer) -> list[str]:
    """Makes the stand-ins the code names; returns their names (files and catalog models)."""
    made = []
    for name, make in STANDINS.items():
        if re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", code):
            if not (work / name).exists():
                make(work / name)
            made.append(name)
    catalog = Path(os.environ[CATALOG_ENV])
    entries = json.loads(catalog.read_text(encoding="utf-8"))["models"]
    for name, entry in load_catalog(None).items():
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", code):
            made.append(name)
            if name not in entries:
                entries[name] = published_standin(server, name, entry.format)
    write_catalog(catalog, entries)
    return made


# -- running a command ---------------------------------------------------------------------------------


def with_smoke_args(command: str) -> str:
    for name, args in SMOKE_ARGS.items():
        if re.search(rf"\b{name}\b", command):
            return f"{command} {args}"
    return command


def run_command(command: str, work: Path) -> None:
    """Through bash; a plain `spacy-contextual ...` or `python -m spacy ...` line in this process (the same
    typer apps, one interpreter start fewer)."""
    words = shlex.split(with_smoke_args(command), comments=True)
    plain = not re.search(r"[|;&<>$]|^\w+=", command) and "\n" not in command
    if words[:4] == ["python", "-m", "spacy", "project"]:
        spacy_cli(words[3:] + ["--dry"], command)
    elif words[:2] == ["spacy-contextual", "app"]:
        serve_dashboard(words[1:], command)
    elif plain and words[:3] == ["python", "-m", "spacy"]:
        spacy_cli(words[3:], command)
    elif plain and words[0] == "spacy-contextual":
        contextual_cli(words[1:], command)
    else:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", with_smoke_args(command)],
            cwd=REPO if IN_REPOSITORY.match(command) else work,
            capture_output=True,
            text=True,
            timeout=3000,  # the --slow benchmarks run for minutes; the test's own timeout is the bound
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def spacy_cli(arguments: list[str], command: str) -> None:
    """spaCy's own CLI app in this process (one interpreter start fewer), as `python -m spacy` runs it."""
    from spacy.cli import app as spacy_app

    result = CliRunner().invoke(spacy_app, arguments)
    assert result.exit_code == 0, f"{command}\n{result.output[-3000:]}"


def contextual_cli(arguments: list[str], command: str) -> None:
    from spacy_contextual.cli import app

    with torch_threads(torch.get_num_threads()):  # a command may set this process's threads: put them back
        result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, f"{command}\n{result.output[-3000:]}"


def serve_dashboard(arguments: list[str], command: str) -> None:
    """`spacy-contextual app ...` as written, up to the server it execs; the server then starts on a free
    port (tests run side by side) and must accept connections."""
    from spacy_contextual.cli import app

    started = []
    original_execve = os.execve
    os.execve = lambda path, argv, env: started.append((argv, env))
    try:
        result = CliRunner().invoke(app, arguments)
    finally:
        os.execve = original_execve
    assert result.exit_code == 0 and started, f"{command}\n{result.output[-3000:]}"
    argv, env = started[0]
    port = free_port()
    argv[argv.index("--server.port") + 1] = str(port)
    with served(argv, port, env, startup_timeout=120):
        pass


# -- the tests -------------------------------------------------------------------------------------------


def test_the_extractor_finds_the_documented_snippets():
    names = {snippet.path for snippet in [*python_snippets(), *shell_snippets()]}
    assert (
        {"README.md", "CONTRIBUTING.md", "benchmarks/README.md", "docs/models.md", "docs/cli.md"} <= names <= set(DOCS)
    )
    readme = [s for s in snippets("README.md") if s.language == "python"]
    assert len(readme) >= 3 and any("load_encoder" in s.code for s in readme)
    assert commands("a \\\n  b  # note\n# only a comment\nfor x in 1; do\n  echo $x\ndone\n") == [
        "a b  # note",
        "for x in 1; do\necho $x\ndone",
    ]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("snippet", [pytest.param(s, id=s.name) for s in python_snippets()])
def test_python_snippet_runs(snippet, checkout, published, capsys):
    """It runs; where it runs on the real (bundled) models, each ``print(...)  # VALUE: words`` line prints the
    value its comment promises (a number within 0.002 of it), when each print prints one line."""
    code = snippet.code
    standins = make_standins(code, checkout, published)
    exec(compile(code, snippet.name, "exec"), {"__name__": "__snippet__"})
    printed = capsys.readouterr().out.splitlines()
    prints = re.findall(r"^print\(.*?\)(?:  # (.*))?$", code, re.M)
    if standins or len(prints) != len(printed):  # stand-in models print other values; a print in a loop, more lines
        return
    for line, comment in zip(printed, prints, strict=True):
        assert not comment or promise_kept(line, comment), f"{snippet.name}: printed {line!r}, comment {comment!r}"


def promise_kept(printed: str, comment: str) -> bool:
    """The comment starts with what was printed, or with a number within 0.002 of it."""
    if comment.startswith(printed):
        return True
    value = comment.split(":")[0].strip()
    try:
        return abs(float(value) - float(printed)) <= 0.002
    except ValueError:
        return False


@pytest.mark.timeout(3600)  # benchmarks/README.md's speed benchmarks, as written: 20 minutes on 2 shared cores
@pytest.mark.parametrize("snippet", [slow_if_heavy(s) for s in shell_snippets()])
def test_shell_snippet_runs(snippet, checkout, published):
    code = snippet.code
    make_standins(code, checkout, published)
    ran = 0
    for command in commands(code):
        if why_not(command, NOT_HERE):
            continue
        if why_not(command, NEEDS_GPU) and not torch.cuda.is_available():
            continue
        run_command(command, checkout)
        ran += 1
    if not ran:
        pytest.skip("every command of this block needs the network, a GPU, two machines or is the test suite")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where, command", inline_project_runs())
def test_project_run_command_parses_as_written(where, command, checkout):
    run_command(command, checkout)


def test_every_dotted_name_the_docs_write_inline_exists():
    """`spacy_contextual.layers.layer_weights(...)` and the like, in running text: each module and name imports."""
    import importlib

    names = {m for path in DOCS for m in re.findall(r"`(spacy_contextual(?:\.\w+)+)", (REPO / path).read_text())}
    assert names
    for name in sorted(names):
        parts = name.split(".")
        found = next(i for i in range(len(parts), 0, -1) if importlib.util.find_spec(".".join(parts[:i])))
        value = importlib.import_module(".".join(parts[:found]))
        for attribute in parts[found:]:
            assert hasattr(value, attribute), f"{name}: {value.__name__} has no {attribute}"
            value = getattr(value, attribute)
