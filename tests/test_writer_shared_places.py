"""The guarded writer in shared places: a link another user planted in a folder others can write to is
never written through (the ``fs.protected_symlinks`` rule, whatever the kernel's setting); names as long
as the file system allows work, longer ones are refused naming the user's path; one writer per output
(a second one is refused in one line, never failing on the first's working files); what a command
replaces is said, and ``--no-overwrite`` refuses it.

Ownership by another user is simulated: as root with ``os.lchown``, otherwise by reporting another
owner for the link from ``os.lstat``."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest
from util import assert_one_line_error, cli, writer_leftovers

from spacy_contextual import writer
from spacy_contextual.writer import OutputError, atomic_directory, atomic_file, output_lock

OTHER_USER = 54321


def docbin(path: Path) -> Path:
    import spacy
    from spacy.tokens import DocBin

    DocBin(docs=[spacy.blank("en")("One two three .")]).to_disk(path)
    return path


def plant_link(folder: Path, name: str, target: Path, owner: int | None, monkeypatch) -> Path:
    """A link ``folder/name`` -> ``target``, owned by ``owner`` (None: this user)."""
    link = folder / name
    link.symlink_to(target)
    if owner is None:
        return link
    if os.geteuid() == 0:
        os.lchown(link, owner, owner)
    else:
        real_lstat = os.lstat

        def lstat_as_planted(path, *args, **kwargs):
            status = real_lstat(path, *args, **kwargs)
            if Path(path) == link:
                return os.stat_result((status[0], status[1], status[2], status[3], owner, *status[5:]))
            return status

        monkeypatch.setattr(writer.os, "lstat", lstat_as_planted)
    return link


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "home" / "thesis.tex"
    path.parent.mkdir()
    path.write_text("years of work\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", [0o1777, 0o777, 0o1755], ids=["sticky+world-writable", "world-writable", "sticky"])
def test_a_link_another_user_planted_in_a_shared_folder_is_never_written_through(tmp_path, victim, mode, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    link = plant_link(shared, "corpus.txt", victim, OTHER_USER, monkeypatch)
    with pytest.raises(OutputError, match=rf"refusing to write through {link}: .*another user \(uid {OTHER_USER}"):
        writer.check_output_file(link)
    with pytest.raises(OutputError, match="refusing to write through"), atomic_file(link):
        pass
    result = cli("convert-text", docbin(tmp_path / "good.spacy"), link)
    assert_one_line_error(result, "refusing to write through", "another user", "remove the link or give another output")
    assert victim.read_text(encoding="utf-8") == "years of work\n" and link.is_symlink()
    assert writer_leftovers(tmp_path) == []


def test_a_link_on_the_way_to_the_output_is_checked_too(tmp_path, victim, monkeypatch):
    """``shared/dir`` -> the victim's folder: writing ``shared/dir/thesis.tex`` goes through the link."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    plant_link(shared, "dir", victim.parent, OTHER_USER, monkeypatch)
    with pytest.raises(OutputError, match="refusing to write through"):
        writer.output_target(shared / "dir" / "thesis.tex")
    with pytest.raises(OutputError, match="refusing to write through"):
        writer.output_target(tmp_path / "shared" / ".." / "shared" / "dir" / "sub" / ".." / "thesis.tex")


@pytest.mark.parametrize("owner", ["mine", "the folder's owner"])
def test_a_link_of_this_user_or_of_the_folders_owner_is_followed_and_kept(tmp_path, victim, owner, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    if owner == "the folder's owner":
        if os.geteuid() != 0:
            pytest.skip("giving the folder to another user needs root")
        os.chown(shared, OTHER_USER, OTHER_USER)
    link = plant_link(shared, "mine.txt", victim, OTHER_USER if owner != "mine" else None, monkeypatch)
    with atomic_file(link) as temporary:
        temporary.write_text("new\n", encoding="utf-8")
    assert link.is_symlink() and victim.read_text(encoding="utf-8") == "new\n"


def test_a_link_in_a_private_folder_is_followed_whoever_owns_it(tmp_path, victim, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o755)
    link = plant_link(private, "out.txt", victim, OTHER_USER, monkeypatch)
    assert writer.output_target(link) == victim


def test_the_kernels_own_setting_does_not_matter(tmp_path, victim, monkeypatch):
    """The rule is the writer's: it reads no sysctl (``fs.protected_symlinks`` is 0 in many containers)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    link = plant_link(shared, "x", victim, OTHER_USER, monkeypatch)
    real_open = open

    def no_proc(path, *args, **kwargs):
        assert "protected_symlinks" not in str(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_proc)
    with pytest.raises(OutputError, match="refusing to write through"):
        writer.output_target(link)


# -- names as long as the file system allows -----------------------------------------------------


def name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


@pytest.mark.parametrize("length", [240, "max"])
def test_a_long_name_that_the_file_system_allows_is_written(tmp_path, length):
    size = name_max(tmp_path) if length == "max" else length
    output = tmp_path / ("n" * (size - 4) + ".txt")
    for _ in range(2):  # the second replaces the first
        result = cli("convert-text", docbin(tmp_path / "good.spacy"), output)
        assert result.exit_code == 0, result.output[-1000:]
    assert output.read_text(encoding="utf-8") == "One two three .\n"
    assert "replaced" in result.stderr and writer_leftovers(tmp_path) == []
    with atomic_directory(tmp_path / ("d" * size)) as folder:
        (folder / "x").write_text("x")
    assert (tmp_path / ("d" * size) / "x").is_file()


def test_working_names_of_two_long_names_that_start_alike_stay_apart(tmp_path):
    first, second = tmp_path / ("a" * 250 + "1"), tmp_path / ("a" * 250 + "2")
    assert writer.working_prefix(first) != writer.working_prefix(second)
    for target in (first, second):
        name = writer.working_name(target, "old")
        assert len(os.fsencode(name.name)) <= name_max(tmp_path)
        name.mkdir()
    assert [path.name for path in writer.interrupted_versions(first)][0].startswith(writer.working_prefix(first))
    assert len(writer.interrupted_versions(first)) == 1 and len(writer.interrupted_versions(second)) == 1
    short = tmp_path / "a"  # a short name whose prefix a long one's starts with
    assert writer.interrupted_versions(short) == []


def test_a_name_longer_than_the_file_system_allows_is_refused_naming_the_users_path(tmp_path):
    output = tmp_path / ("z" * 300 + ".txt")
    result = cli("convert-text", docbin(tmp_path / "good.spacy"), output)
    line = assert_one_line_error(result, "its name has 304 bytes, more than the", "give a shorter name")
    assert "zzzz" in line and writer.MARK not in line and "Errno" not in line
    folder = tmp_path / ("f" * 300) / "out.txt"
    assert_one_line_error(cli("convert-text", tmp_path / "good.spacy", folder), "the folder name", "has 300 bytes")


def test_an_elmo_output_whose_parts_folder_would_be_too_long_is_refused_before_any_work(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("a b\n", encoding="utf-8")
    output = tmp_path / ("p" * (name_max(tmp_path) - 3))
    result = cli("elmo", text, output, "--top")
    assert_one_line_error(result, "OUTPUT.parts", f"give OUTPUT a name of at most {name_max(tmp_path) - 6} bytes")
    assert list(tmp_path.iterdir()) == [text]


# -- one writer per output ------------------------------------------------------------------------


def hold_like_another_process(path: Path) -> int:
    """Take ``path``'s output lock as another process would (its own open file, flock), pid 999999."""
    target = writer.output_target(path)
    lock = target.with_name(f"{writer.working_prefix(target)}lock{writer.MARK}lock")
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    os.write(descriptor, b"999999\n")
    return descriptor


def test_a_second_writer_of_one_output_is_refused_in_one_line_and_touches_nothing(tmp_path):
    output = tmp_path / "out.txt"
    output.write_text("the first run's\n", encoding="utf-8")
    descriptor = hold_like_another_process(output)
    try:
        result = cli("convert-text", docbin(tmp_path / "good.spacy"), output)
        assert_one_line_error(result, f"{output} is being written by another process (pid 999999)", "wait for it")
        assert output.read_text(encoding="utf-8") == "the first run's\n"
        text = tmp_path / "in.txt"
        text.write_text("a b\n", encoding="utf-8")
        assert_one_line_error(cli("elmo", text, output, "--top"), "is being written by another process")
        assert not (tmp_path / "out.txt.parts").exists()
    finally:
        os.close(descriptor)
    assert cli("convert-text", tmp_path / "good.spacy", output).exit_code == 0


def test_the_lock_is_held_while_the_command_runs_and_gone_after(tmp_path, monkeypatch):
    from spacy_contextual.cli import convert

    output = tmp_path / "out.txt"
    seen = []
    real = convert._docbin_docs

    def look(path, vocab):
        seen.append(sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(writer.MARK + "lock")))
        return real(path, vocab)

    monkeypatch.setattr(convert, "_docbin_docs", look)
    assert cli("convert-text", docbin(tmp_path / "good.spacy"), output).exit_code == 0
    assert seen == [[f".out.txt.lock{writer.MARK}lock"]]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(writer.MARK + "lock")]


def test_the_lock_is_reentrant_and_refuses_a_link_planted_under_its_name(tmp_path):
    output = tmp_path / "out.txt"
    with output_lock(output), output_lock(output):
        pass
    target = writer.output_target(output)
    lock = target.with_name(f"{writer.working_prefix(target)}lock{writer.MARK}lock")
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError, match="is a link, not this tool's lock"), output_lock(output):
        pass
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_two_elmo_runs_on_one_output_one_finishes_the_other_is_one_line(tmp_path):
    """Once the second run failed on the first's ``out.hdf5.parts`` ([Errno 2]) after the first merged."""
    import subprocess
    import sys
    import time

    import h5py

    text = tmp_path / "in.txt"
    text.write_text("".join(f"sentence {i} with some words .\n" for i in range(3000)), encoding="utf-8")
    output = tmp_path / "out.hdf5"
    command = [sys.executable, "-m", "spacy_contextual", "elmo", str(text), str(output), "--top"]  # bundled: ~30 s
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "out.hdf5.parts").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err[-2000:]
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 1 and lines[-1].startswith("error: ") and "another process" in lines[-1], lines
    assert "No such file" not in second.stderr and "Traceback" not in second.stderr
    with h5py.File(output, "r") as written:
        assert len([key for key in written if key.isdigit()]) == 3000
    assert writer_leftovers(tmp_path) == [] and not (tmp_path / "out.hdf5.parts").exists()


# -- what is replaced -------------------------------------------------------------------------------


def test_a_replaced_output_is_named_with_its_size_and_no_overwrite_refuses(tmp_path):
    corpus = docbin(tmp_path / "good.spacy")
    output = tmp_path / "text.txt"
    first = cli("convert-text", corpus, output)
    assert first.exit_code == 0 and "replaced" not in first.stderr
    output.write_text("x" * 2_000_000, encoding="utf-8")
    second = cli("convert-text", corpus, output)
    assert second.exit_code == 0 and f"replaced {output} (1.9 MiB)" in second.stderr.splitlines()
    third = cli("convert-text", corpus, output)
    assert f"replaced {output} (16 bytes)" in third.stderr.splitlines()
    before = output.stat()
    refused = cli("convert-text", corpus, output, "--no-overwrite")
    assert_one_line_error(refused, f"{output} exists (16 bytes) and --no-overwrite refuses to replace it")
    assert output.stat().st_mtime_ns == before.st_mtime_ns and writer_leftovers(tmp_path) == []
    new = cli("convert-text", corpus, tmp_path / "new.txt", "--no-overwrite")
    assert new.exit_code == 0 and "replaced" not in new.stderr


def test_a_folder_output_replaced_whole_or_file_by_file_is_named(tmp_path):
    import json

    from util import tiny_bilm

    from spacy_contextual.formats.bilm_dir import save_bilm

    model = save_bilm(tiny_bilm(), tmp_path / "model")
    exported = tmp_path / "exported"
    assert cli("export-elmo", model, exported, "--no-bilm-tf").exit_code == 0
    again = cli("export-elmo", model, exported, "--no-bilm-tf")
    assert again.exit_code == 0 and any(line.startswith(f"replaced {exported} (") for line in again.stderr.splitlines())
    records = [{"id": i, "text": f"a film {i}", "label": ["pos", "neg"][i % 2], "split": "train"} for i in range(4)]
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    folder = tmp_path / "sentiment"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert "replaced" not in cli("convert-sentiment", reviews, folder).stderr
    again = cli("convert-sentiment", reviews, folder)
    assert [line for line in again.stderr.splitlines() if line.startswith("replaced")] == [
        f"replaced {folder / 'train.spacy'} ({(folder / 'train.spacy').stat().st_size:,} bytes)"
    ]
    assert_one_line_error(cli("convert-sentiment", reviews, folder, "--no-overwrite"), "--no-overwrite refuses")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine\n"


def test_the_writer_leaves_the_mode_of_a_file_it_creates_to_the_umask(tmp_path):
    """Unchanged by the working names' new shape: 0644 under umask 0022."""
    previous = os.umask(0o022)
    try:
        with atomic_file(tmp_path / ("m" * 250)) as temporary:
            temporary.write_text("x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / ("m" * 250)).stat().st_mode) == 0o644


def test_a_second_training_into_one_output_folder_is_refused_in_one_line(tmp_path):
    """The output folder a config names (``training.output_dir``) is held like an OUTPUT argument."""
    import json

    output = tmp_path / "run"
    config = tmp_path / "pretrain.json"
    config.write_text(json.dumps({"training": {"output_dir": str(output)}}), encoding="utf-8")
    descriptor = hold_like_another_process(output)
    try:
        result = cli("pretrain-elmo", config)
        assert_one_line_error(result, f"{output} is being written by another process (pid 999999)")
        assert not output.exists()
    finally:
        os.close(descriptor)
