"""Whether a path can name a folder at all, before gpudash writes a build there (generate --out, preview --out) or reads
one (--from): a path under a regular file, through a link that leads round in a loop, or longer than the system takes
is said as what it is, where it is, and what to do, never as the error the first system call met on it ("File exists"
from a mkdir under a file; a RuntimeError or an OSError from resolving it)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from . import printed
from .errors import InputError


def check_folder_path(path: Path) -> None:
    """Raise an InputError (exit 2) when `path` cannot name a folder: one of its parents is a file (or anything but a
    folder), a link on it leads round in a loop or to a place that does not exist, a folder on it (or it, a folder) is
    one this user may not enter (no search permission), or a name on it or the whole of it is longer than the system
    takes. A path that does not exist yet passes: what writes it makes it. A path with a `..` is judged as the folder
    it names (`named`)."""
    path = named(path)
    try:
        if stat.S_ISDIR(os.stat(path).st_mode):
            os.stat(os.path.join(path, "."))  # entering it: its search permission
        return
    except OSError as exc:
        failed = exc.errno
    if failed == errno.ENAMETOOLONG:
        raise _too_long(path)
    if failed == errno.ENOENT:
        _no_dangling_link(path)
    if failed not in (errno.ELOOP, errno.ENOTDIR, errno.EACCES):
        return
    for depth in range(1, len(path.parts) + 1):  # the first step of the path where it fails
        step = Path(*path.parts[:depth])
        try:
            found = os.stat(step)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                link = "a link" if step == path else f"{printed.path(step)}, on this path, is a link"
                raise InputError(f"{link} that leads round in a loop (to itself, or through other links back to it): "
                                 "no folder is there", where=str(path),
                                 hint="point the link at a folder, or pass another path") from None
            if exc.errno == errno.EACCES:
                raise _not_entered(step.parent, path) from None
            return
        if depth < len(path.parts) and not stat.S_ISDIR(found.st_mode):
            raise _under_a_file(step, path)
    if failed == errno.EACCES:  # every step is there: the folder itself may not be entered
        raise _not_entered(path, path)


def _no_dangling_link(path: Path) -> None:
    """Raise an InputError where the first step of `path` that is not there is a link (to a place that does not
    exist: mistyped, or removed since): a build was written through it, making that place, where `mkdir -p` refuses."""
    for depth in range(1, len(path.parts) + 1):
        step = Path(*path.parts[:depth])
        if os.path.exists(step):
            continue
        if os.path.islink(step):
            link = "a link" if step == path else f"{printed.path(step)}, on this path, is a link"
            raise InputError(f"{link} to {printed.path(os.readlink(step))}, which does not exist: gpudash writes or "
                             "reads nothing through it", where=str(path),
                             hint="make the folder it points to, point the link at a folder, or pass another path")
        return


def _under_a_file(step: Path, path: Path) -> InputError:
    """The error for a path with a file (or anything but a folder), `step`, where a folder must be."""
    return InputError(f"{printed.path(step)}, on this path, is a file, not a folder: no folder can be made or read "
                      "under it", where=str(path), hint="pass a path whose parents are folders")


def _not_entered(folder: Path, path: Path) -> InputError:
    """The error for a path with a folder on it (or the folder it names) this user may not enter: its mode gives them
    no search permission (x), so nothing in it can be read, made or written."""
    which = f"{printed.path(folder)}, on this path, is a folder" if folder != path else "a folder"
    return InputError(f"{which} this user may not enter (its permissions give no search, x): nothing in it can be read "
                      "or written", where=str(path),
                      hint=f"let this user enter it (chmod u+x {printed.path(folder)}, as its owner), or pass another "
                           "path")


def named(path: Path) -> Path:
    """`path`, absolute, and where it holds a `..`, the folder it names (os.path.realpath: each `..` after a folder that
    exists is read as the system reads it, through links; after one that does not, it takes that name back). The
    system reads `nowhere/..` only once `nowhere` exists: written as given, the folders before a `..` were made one by
    one (an empty `nowhere` left beside the build), and a path leading under a file past one said "File exists". A `..`
    after a file is refused, as the system refuses it (InputError), never read as the file's folder."""
    path = path.absolute()
    if ".." in path.parts:  # a `..` after a file, or after a name under one: the system refuses it (ENOTDIR), so
        last = len(path.parts) - 1 - path.parts[::-1].index("..")  # does gpudash (`afile/sub/../../site` too)
        for depth in range(2, last + 1):
            if _is_other(step := Path(*path.parts[:depth])):
                raise _under_a_file(step, path)
    return Path(os.path.realpath(path)) if ".." in path.parts else path


def as_named(path: Path) -> Path:
    """`path` as given where it holds no `..` (relative stays relative), else the folder it names (`named`)."""
    return named(path) if ".." in path.parts else path


def _too_long(path: Path) -> InputError:
    """The error for a path the system refuses as too long: a name on it longer than the file system takes (said with
    the first such name, cut), or the whole path longer than the system takes."""
    existing = next((parent for parent in path.parents if _is_folder(parent)), Path(path.anchor))
    most = os.pathconf(existing, "PC_NAME_MAX")
    name = next((part for part in path.parts[1:] if len(os.fsencode(part)) > most), None)
    if name is not None:
        return InputError(f"the name {printed.path(name[:24])}... is {len(os.fsencode(name))} bytes long, where the "
                          f"file system takes at most {most}", where=_cut(path),
                          hint="pass a path of shorter names")
    return InputError(f"the path is {len(os.fsencode(str(path)))} bytes long, more than the system takes "
                      f"(at most {os.pathconf(existing, 'PC_PATH_MAX')})", where=_cut(path),
                      hint="pass a shorter path")


def _is_other(path: Path) -> bool:
    """Whether `path` is there as anything but a folder (read through links, as the system reads a path)."""
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):  # not there, or not to be read: the steps after judge it
        return False


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:  # (one too long to name, too)
        return False


def _cut(path: Path) -> str:
    """The path as a message names it: its first 200 characters."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:200]}..."
