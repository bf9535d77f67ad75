"""Small fsspec helpers: URL joins, deterministic globbing, atomic writes.

Every path in datapipe is an fsspec URL or a local path; local paths stay plain strings so that error messages show
what the user typed.
"""

from __future__ import annotations

import os
import posixpath
import tempfile

import fsspec
from fsspec.core import url_to_fs

from datapipe.errors import DatapipeError


def has_protocol(path: str) -> bool:
    return "://" in path


def is_local(path: str) -> bool:
    return not has_protocol(path) or path.startswith("file://")


def local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def join(base: str, *parts: str) -> str:
    """Join URL or path parts with '/', keeping the protocol of ``base``."""
    if is_local(base):
        return os.path.join(local_path(base), *parts)
    return posixpath.join(base, *parts)


def parent(url: str) -> str:
    """The folder a path or URL is in (``.`` for a bare name)."""
    url = url.rstrip("/")
    return url.rsplit("/", 1)[0] if "/" in url else "."


def resolve(path: str, base_dir: str) -> str:
    """An absolute path or URL stays; a relative one is taken from ``base_dir``."""
    if has_protocol(path):
        return path
    if os.path.isabs(path):
        return path
    if has_protocol(base_dir) and not base_dir.startswith("file://"):
        return posixpath.normpath(posixpath.join(base_dir, path)).replace(":/", "://", 1)
    return os.path.normpath(os.path.join(local_path(base_dir), path))


def glob(pattern: str) -> list[str]:
    """Files matching ``pattern``, sorted, as URLs of the same form as the pattern (plain paths stay plain)."""
    return glob_split(pattern)[0]


def glob_split(pattern: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(readable files matching ``pattern``, every other match with why it is not one: ``a folder``, ``a symlink
    to nothing``, ``not readable``), sorted, as URLs of the same form as the pattern."""
    fs, fs_path = url_to_fs(pattern)
    if any(c in fs_path for c in "*?["):
        matches = sorted(fs.glob(fs_path))
    else:
        matches = [fs_path] if fs.exists(fs_path) or (is_local(pattern) and os.path.islink(fs_path)) else []
    files: list[str] = []
    others: list[tuple[str, str]] = []
    local = is_local(pattern)
    for m in matches:
        url = m if local else fs.unstrip_protocol(m)
        if local and os.path.islink(m) and not os.path.exists(m):
            others.append((url, "a symlink to nothing"))
        elif fs.isfile(m):  # one call for the common case
            if local and not os.access(m, os.R_OK):
                others.append((url, "not readable"))
            else:
                files.append(url)
        else:
            others.append((url, "a folder" if fs.isdir(m) else "not a file"))
    return files, others


def exists(url: str) -> bool:
    fs, path = url_to_fs(url)
    return fs.exists(path)


def size(url: str) -> int:
    fs, path = url_to_fs(url)
    return int(fs.size(path))


def isdir(url: str) -> bool:
    fs, path = url_to_fs(url)
    return bool(fs.isdir(path))


def tree_sizes(url: str) -> dict[str, int]:
    """Every file under a folder, by its path relative to the folder, and its size."""
    fs, path = url_to_fs(url)
    root = path.rstrip("/") + "/"
    return {
        name[len(root) :]: int(info["size"])
        for name, info in fs.find(path, detail=True).items()
        if info.get("type") == "file"
    }


def makedirs(url: str) -> None:
    fs, path = url_to_fs(url)
    fs.makedirs(path, exist_ok=True)


def check_writable(url: str, what: str, create: bool = True) -> None:
    """Raise :class:`DatapipeError` naming ``url`` when a folder there cannot be written: before any work, one
    line instead of a ``PermissionError`` traceback mid-build. With ``create`` the folder is made and a probe file
    written and removed (the only proof on every file system); without (a dry run, which writes nothing), a local
    path's nearest existing parent must be a folder this process may write to."""
    try:
        if is_local(url) and os.path.exists(local_path(url)) and not os.path.isdir(local_path(url)):
            raise NotADirectoryError(f"{url} is a file")
        if create:
            makedirs(url)
            probe = join(url, f".datapipe-write-check-{os.getpid()}")
            write_bytes_atomic(probe, b"")
            remove(probe)
        elif is_local(url):
            parent = os.path.abspath(local_path(url))
            while not os.path.exists(parent):
                parent = os.path.dirname(parent)
            if not os.path.isdir(parent):
                raise NotADirectoryError(f"{parent} is a file")
            if not os.access(parent, os.W_OK):
                raise PermissionError(f"{parent} is not writable")
    except OSError as e:
        raise DatapipeError(f"{url}: cannot write the {what} there ({e.strerror or e})") from None


def remove(url: str) -> None:
    """Remove a file or a folder tree; a missing path is fine."""
    fs, path = url_to_fs(url)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def fsspec_open(url: str, mode: str = "rb"):
    """An fsspec file object (a context manager)."""
    return fsspec.open(url, mode)


def read_bytes(url: str) -> bytes:
    with fsspec.open(url, "rb") as f:
        return f.read()


def read_text(url: str) -> str:
    return read_bytes(url).decode("utf-8")


def write_bytes_atomic(url: str, data: bytes) -> None:
    """Write a file so that readers see either nothing or all of it.

    Locally: a temporary file in the same folder, fsynced, then ``os.replace``. On object stores (gs, s3) a single
    object upload is already atomic.
    """
    if is_local(url):
        path = local_path(url)
        folder = os.path.dirname(path) or "."
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-" + os.path.basename(path) + ".")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are meant to be read by others
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    fs, path = url_to_fs(url)
    fs.pipe_file(path, data)


def write_text_atomic(url: str, text: str) -> None:
    write_bytes_atomic(url, text.encode("utf-8"))


def local_copy(url: str) -> str:
    """A local path for ``url``: itself when local, else a copy made once in the temp folder (for libraries that
    load only local files, such as fastText)."""
    if is_local(url):
        return local_path(url)
    dest = os.path.join(tempfile.gettempdir(), "datapipe-models", os.path.basename(url))
    if not os.path.exists(dest):
        write_bytes_atomic(dest, read_bytes(url))
    return dest
