"""Small fsspec helpers: URL joins, deterministic globbing, atomic writes.

Every path in datapipe is an fsspec URL or a local path; local paths stay plain strings so that error messages show
what the user typed.

Calls on a local path (exists, size, folders, reading a file, removing one, a glob whose last part alone is magic)
go straight to ``os``, which is what fsspec's local file system calls, and fsspec is imported the first time a URL
or another glob needs it: a build's workers import their stack before their first task
(``pipelines/local/preload.py``), and fsspec was 27-58 ms of it on this machine (2026-12-05), for a build that
reads and writes only local files.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shutil
import tempfile
from typing import IO, Any

from datapipe.errors import DatapipeError


def url_to_fs(url: str) -> tuple[Any, str]:
    """fsspec's file system for ``url`` and the path within it (fsspec imported on first use)."""
    from fsspec.core import url_to_fs as to_fs

    return to_fs(url)


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
    local = is_local(pattern)
    matches = _local_glob(local_path(pattern)) if local else None
    if matches is None:
        fs, fs_path = url_to_fs(pattern)
        if any(c in fs_path for c in "*?["):
            matches = sorted(fs.glob(fs_path))
        else:
            matches = [fs_path] if fs.exists(fs_path) or (local and os.path.islink(fs_path)) else []
        isfile, isdir = fs.isfile, fs.isdir
    else:
        isfile, isdir = os.path.isfile, os.path.isdir
    files: list[str] = []
    others: list[tuple[str, str]] = []
    for m in matches:
        url = m if local else fs.unstrip_protocol(m)
        if local and os.path.islink(m) and not os.path.exists(m):
            others.append((url, "a symlink to nothing"))
        elif isfile(m):  # one call for the common case
            if local and not os.access(m, os.R_OK):
                others.append((url, "not readable"))
            else:
                files.append(url)
        else:
            others.append((url, "a folder" if isdir(m) else "not a file"))
    return files, others


def _local_glob(path: str) -> list[str] | None:
    """What fsspec's local glob returns for ``path``, without fsspec, in the case every stage's own globs are: an
    absolute, normalized path whose last part alone holds ``*`` or ``?`` (or nothing magic); None for any other
    pattern (fsspec decides those: ``**``, character classes, magic in a folder). Names starting with a dot match,
    as in fsspec (``tests/test_fs.py`` holds the two to the same answers)."""
    folder, _, name = path.rpartition("/")
    if (
        not path.startswith("/")
        or "[" in path
        or "**" in path
        or any(c in folder for c in "*?")
        or os.path.normpath(path) != path
    ):
        return None
    if not any(c in name for c in "*?"):
        return [path] if os.path.lexists(path) else []
    try:
        names = os.listdir(folder or "/")
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(f"{folder}/{n}" for n in names if fnmatch.fnmatchcase(n, name))


def exists(url: str) -> bool:
    if is_local(url):
        return os.path.exists(local_path(url))
    fs, path = url_to_fs(url)
    return bool(fs.exists(path))


def size(url: str) -> int:
    if is_local(url):
        return os.path.getsize(local_path(url))
    fs, path = url_to_fs(url)
    return int(fs.size(path))


def isdir(url: str) -> bool:
    if is_local(url):
        return os.path.isdir(local_path(url))
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
    if is_local(url):
        os.makedirs(local_path(url), exist_ok=True)
        return
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
    if is_local(url):
        path = local_path(url)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)
        return
    fs, path = url_to_fs(url)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def fsspec_open(url: str, mode: str = "rb") -> Any:
    """An fsspec file object (a context manager)."""
    import fsspec

    return fsspec.open(url, mode)


def open_binary(url: str) -> IO[bytes]:
    """``url`` open for reading bytes (a context manager): the file itself when local, else fsspec's."""
    if is_local(url):
        return open(local_path(url), "rb")  # noqa: SIM115 - the caller closes it
    return fsspec_open(url, "rb").open()


def read_bytes(url: str) -> bytes:
    with open_binary(url) as f:
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
