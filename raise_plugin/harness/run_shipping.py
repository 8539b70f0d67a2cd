"""Run directories across machines: a worker that sees the client's disk writes into ``OUT/runs``
(it finds the client's token in ``OUT/.compare-token``); one that does not trains in a scratch
folder of its own machine and ships the finished run directory back as a tar archive, which the
client unpacks under ``OUT/runs``."""
from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import uuid
from pathlib import Path

from raise_plugin.rundir.lock import LOCK_NAME  # the run directory's advisory lock file: never shipped

__all__ = ["TOKEN_FILE", "client_token", "sees_client_disk", "scratch_folder", "pack_run", "unpack_run"]

TOKEN_FILE = ".compare-token"


def client_token(out: Path) -> str:
    """The token a worker must read in ``OUT/.compare-token`` to write into ``OUT`` directly
    (created once per output folder, so a resumed compare finds its workers' scratch folders)."""
    path = Path(out) / TOKEN_FILE
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        token = ""
    if not token:
        token = uuid.uuid4().hex
        path.write_text(token + "\n")
    return token


def sees_client_disk(out: str, token: str) -> bool:
    """Whether this machine sees the client's ``OUT`` (it holds the client's token)."""
    try:
        return (Path(out) / TOKEN_FILE).read_text().strip() == token
    except OSError:
        return False


def scratch_folder(token: str) -> Path:
    """Where a worker that does not share the client's disk keeps its run directories
    (kept after shipping, so an interrupted job resumes there on the same machine)."""
    path = Path(tempfile.gettempdir()) / f"raise-compare-{token}" / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def pack_run(path: Path) -> bytes:
    """The run directory ``path`` as a tar.gz (its lock file left out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for item in sorted(Path(path).rglob("*")):
            relative = item.relative_to(path)
            if relative.parts == (LOCK_NAME,):
                continue
            tar.add(item, arcname=str(relative), recursive=False)
    return buffer.getvalue()


def unpack_run(archive: bytes, dest: Path) -> None:
    """Unpack a shipped run directory at ``dest``, replacing whatever partial copy was there."""
    dest = Path(dest)
    staging = dest.with_name(f".{dest.name}.unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(staging, filter="data")
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)
