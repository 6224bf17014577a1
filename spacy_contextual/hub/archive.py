"""Unpacking a downloaded zip archive without trusting it.

Every member is checked before anything is written: an absolute name, a drive letter, a ``..``
component, a symbolic link or a name that appears twice refuses the whole archive with the member's
name; so do an encrypted member, a compression method Python cannot read, more than ``MAX_MEMBERS``
members, a member that unpacks to more than ``MAX_RATIO`` times its compressed size (a zip bomb), a
total above ``SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES`` and one that would not fit on the disk (``limits.py``).
The sizes checked are the ones the archive declares, which zipfile enforces while it reads (a member
that unpacks to more fails its CRC check). Members are written one by one below the target folder,
never following an existing link. An archive whose members all sit in one top-level folder is unpacked
without that folder, so the model files land directly in the target. Every failure is one line.
"""

from __future__ import annotations

import shutil
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from ..errors import ContextualError, quoted
from ..types import PathLike
from ..writer import storage_failure
from .limits import MAX_MEMBERS, MAX_RATIO, MAX_UNPACKED_ENV, RATIO_FLOOR, byte_limit

METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


class ArchiveError(ContextualError):
    """An archive that is damaged or would write outside its folder."""


def _member_parts(info: zipfile.ZipInfo, archive: Path) -> tuple[str, ...]:
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    refuse = None
    if name.startswith("/") or (parts and parts[0].endswith(":")):
        refuse = "an absolute path"
    elif ".." in parts:
        refuse = "a '..' component"
    elif stat.S_ISLNK(info.external_attr >> 16):
        refuse = "a symbolic link"
    elif not parts or any(part in (".", "") for part in parts):
        refuse = "an empty name"
    elif info.flag_bits & 0x1:
        refuse = "encrypted (a password-protected archive)"
    elif info.compress_type not in METHODS:
        refuse = f"compressed with method {info.compress_type}, which is not stored, deflate, bzip2 or lzma"
    elif info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        refuse = f"{info.file_size:,} bytes packed into {info.compress_size:,} (more than {MAX_RATIO}:1, a zip bomb)"
    if refuse:
        raise ArchiveError(
            f"{archive} holds the member {quoted(info.filename)}, {refuse}; refusing to unpack it (the archive is "
            "damaged or unsafe): fetch it from a source you trust"
        )
    return parts


def _common_folder(members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]]) -> int:
    """1 when every member lies inside one top-level folder (dropped when unpacking), else 0."""
    tops = {parts[0] for _, parts in members}
    inside = all(len(parts) > 1 or info.is_dir() for info, parts in members)
    return 1 if len(tops) == 1 and inside else 0


def _write_member(bundle: zipfile.ZipFile, info: zipfile.ZipInfo, destination: Path) -> None:
    if info.is_dir():
        destination.mkdir(parents=True, exist_ok=True)
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    with bundle.open(info) as source, open(destination, "xb") as out:  # "x": never through a link
        shutil.copyfileobj(source, out, 1 << 20)


def unpack_zip(archive: PathLike, target: PathLike) -> list[Path]:
    """Unpack ``archive`` into the existing folder ``target``; returns the files written."""
    archive, target = Path(archive), Path(target)
    try:
        with zipfile.ZipFile(archive) as bundle:
            if len(bundle.infolist()) > MAX_MEMBERS:
                raise ArchiveError(
                    f"{archive} holds {len(bundle.infolist()):,} members, more than the {MAX_MEMBERS:,} a model "
                    "archive may have; refusing to unpack it: fetch it from a source you trust"
                )
            members = [(info, _member_parts(info, archive)) for info in bundle.infolist()]
            names = [parts for _, parts in members]
            if len(set(names)) != len(names):
                raise ArchiveError(f"{archive} names a member twice; refusing to unpack it (a damaged archive)")
            needed, free = sum(info.file_size for info, _ in members), shutil.disk_usage(target).free
            packed = sum(info.compress_size for info, _ in members)
            if needed > RATIO_FLOOR and needed > MAX_RATIO * max(packed, 1):
                raise ArchiveError(
                    f"{archive} unpacks {packed:,} bytes into {needed:,} (more than {MAX_RATIO}:1, a zip bomb); "
                    "refusing to unpack it: fetch it from a source you trust"
                )
            ceiling = byte_limit(MAX_UNPACKED_ENV)
            if needed > ceiling:
                raise ArchiveError(
                    f"{archive} unpacks to {needed:,} bytes, more than {ceiling:,}; refusing to unpack it (set "
                    f"{MAX_UNPACKED_ENV} to a larger number of bytes if the model really is that large)"
                )
            if needed > free:
                raise ArchiveError(
                    f"{archive} unpacks to {needed / 2**30:,.2f} GiB but {target} has {free / 2**30:,.2f} GiB free; "
                    "free some space (or set SPACY_CONTEXTUAL_HOME to a larger disk)"
                )
            skip = _common_folder(members)
            written = []
            for info, parts in members:
                if len(parts) <= skip:
                    continue
                destination = target.joinpath(*parts[skip:])
                try:
                    _write_member(bundle, info, destination)
                except OSError as error:  # a full disk, a name too long or too deep for this system
                    reason = storage_failure(error)
                    raise ArchiveError(
                        f"could not write {destination}: {reason}; free some space or raise the limit"
                        if reason
                        else f"{archive}: its member {quoted(info.filename)} cannot be written here "
                        f"({error.strerror}); the archive is not a model archive this system can hold"
                    ) from None
                if not info.is_dir():
                    written.append(destination)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as error:
        cause = " ".join(str(error).split())[:160] or type(error).__name__
        raise ArchiveError(f"{archive} is not a readable zip archive ({cause}); the download is damaged") from None
    if not written:
        raise ArchiveError(f"{archive} holds no files; the download is not the model archive")
    return written
