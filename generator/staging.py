"""Staging folders a build is written into (beside the build folder, `.<out>.new-<12 hex digits>`, or inside a mount
point, `.gpudash.new-<...>`, with the folder the previous build is moved into named `.<out>.old-` or `.gpudash.old-`
and the same digits), and what a writer that died while writing one left.

Each writer holds a lock on a file beside its staging folder, named for it (`<folder>.lock`), from just after the
folder is made until the folder is swapped in (and the folder the swap moved the previous build into, `.<out>.old-`
with the same digits, removed) or removed: the file is made inside the folder (new, the writer's
alone), locked there, then renamed beside it, so it never shows unlocked under its name. The kernel lets go of the
lock when the writer ends, however it ends (SIGKILL, a crash; power loss ends every lock). A later build removes a
staging folder of its own name form only when its lock file is there, is the writer's own user's, was written on this
machine's kernel (KERNEL: a lock is known to that kernel alone) or, on a file system this machine holds alone, before
this boot began (LOCAL_FILE_SYSTEMS: an earlier boot's), and can be locked: its writer is gone. A folder
without its lock file (one made by a gpudash before the lock, or in the instant between the folder and its lock) is
left alone, and so is everything else beside the build. A dead writer's `.old-` folder
is removed only when its staging folder is gone (swapped in) and the build folder holds a build; while the staging
folder is there, the writer ended between the swap's two renames and the `.old-` folder holds the previous build.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # (no flock on Windows: nothing is claimed, and nothing is removed)
    fcntl = None  # type: ignore[assignment]

LOCK = ".lock"
_HEX = "[0-9a-f]{12}"  # the random part of a staging folder's name (output._made_new)


# (thread, folder) of each turn this process holds (taking_turns), with how many hold it: a thread that holds a turn
# holds it again at once; another thread locks the folder on a descriptor of its own, which waits as another process'
_TURNS: dict[tuple[int, str], int] = {}


@contextlib.contextmanager
def taking_turns(parent: Path, waiting: Callable[[str, str], None] | None = None,
                 shared: bool = False) -> Iterator[None]:
    """This process's turn to read and replace a build in `parent` (the folder holding it): writers into one folder
    take turns, so that none reads a build another is swapping (a file moved away mid-read is not an edit) nor swaps
    one in under another's. A lock on the folder itself (flock of its descriptor: nothing is made beside the build),
    let go when the block ends, or by the kernel when the process ends however it ends. `waiting(holders, doing)` is
    called once when another process (or thread) holds the turn, before waiting for it, with the processes holding it
    named (`_named`: one stopped or stuck can be found; "" where they cannot be told) and what they do (`_doing`).
    Held again by the same thread (generate, then its write), it is the one turn. `shared`: a reader's turn, which
    other readers share (a writer waits for them all, and they for it). Where the folder cannot be opened or locked
    (no flock, a file system without locks), or only processes this one runs under hold its lock (`_lock_holders`:
    they wait for it), nothing is held: the build is written (or read) as before."""
    folder = os.path.abspath(parent)
    key = (threading.get_ident(), folder)
    if key in _TURNS or fcntl is None:
        _TURNS[key] = _TURNS.get(key, 0) + 1
        try:
            yield
        finally:
            _TURNS[key] -= 1
            if not _TURNS[key]:
                del _TURNS[key]
        return
    fd, kind = _opened_folder(folder), fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    if fd is not None:
        _OPENED.add(fd)
        try:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
            except BlockingIOError:  # another's turn
                holders = _lock_holders(fd)
                if holders and holders.keys() <= _ancestors() or _held_through_inherited(fd):
                    raise OSError("held by a process that waits for this one") from None
                if waiting is not None:
                    waiting(_named(set(holders or ())), _doing(holders))
                fcntl.flock(fd, kind)
        except OSError:  # no locks on this file system
            _closed(fd)
            fd = None
        except BaseException:  # interrupted while waiting (SIGINT): nothing held
            _closed(fd)
            raise
    _TURNS[key] = 1
    try:
        yield
    finally:
        del _TURNS[key]
        if fd is not None:
            _closed(fd)


# The descriptors `taking_turns` opened (a thread's turn, held or waited for), which `_held_through_inherited` leaves
# out: another thread's turn is waited for as another process'
_OPENED: set[int] = set()


def _closed(fd: int) -> None:
    _OPENED.discard(fd)
    os.close(fd)


def _lock_holders(fd: int) -> dict[int, str] | None:
    """The processes holding a lock on the file open as `fd` (Linux's /proc/locks), each with its lock's kind (READ: a
    reader's shared turn; WRITE: a writer's), or None where that cannot be told. Where all run this process (a wrapper
    that locks the folder and then runs gpudash: `flock . gpudash generate`, a CI step made to take turns itself), they
    let go only once it ends: `taking_turns` takes its turn as held."""
    try:
        key = _lock_key(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            return {int(words[4]): words[3] for words in map(str.split, table)
                    if len(words) > 5 and words[1] == "FLOCK" and words[5] == key}
    except (OSError, ValueError):
        return None


def _lock_key(fd: int) -> str:
    """How Linux's lock tables name the file open as `fd` (device major:minor:inode, as /proc/locks writes it)."""
    info = os.fstat(fd)
    return f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"


def _held_through_inherited(fd: int) -> bool:
    """Whether a descriptor this process inherited (one `taking_turns` did not open) holds the flock of the folder
    open as `fd` (Linux's /proc/self/fdinfo lists each descriptor's locks): the turn of a process this one runs under
    that took it with flock(1) on a descriptor and kept the descriptor, flock(1) itself ended (flock(1)'s own idiom,
    `( flock 9; gpudash generate ) 9<.`). /proc/locks names the ended flock(1) process, no ancestor: gpudash waited
    forever for a lock only its own ending lets go."""
    try:
        key = _lock_key(fd)
        descriptors = [int(name) for name in os.listdir("/proc/self/fdinfo")]
    except (OSError, ValueError):
        return False
    for other in descriptors:
        if other == fd or other in _OPENED:
            continue
        try:
            with open(f"/proc/self/fdinfo/{other}", encoding="ascii", errors="replace") as info:
                if any(words[:1] == ["lock:"] and len(words) > 6 and words[2] == "FLOCK" and words[6] == key
                       for words in map(str.split, info)):
                    return True
        except OSError:  # closed meanwhile (the listing's own descriptor, another thread's)
            continue
    return False


def _doing(holders: dict[int, str] | None) -> str:
    """What the holders of a turn do with the build: "reading" (readers' shared turns alone), "writing" (a writer's
    turn), "" where that cannot be told."""
    kinds = set((holders or {}).values())
    return "writing" if "WRITE" in kinds else "reading" if kinds == {"READ"} else ""


def _ancestors() -> set[int]:
    """The processes this one runs under (its parent, theirs, up to the first), as far as /proc tells."""
    ancestors, pid = set(), os.getppid()
    with contextlib.suppress(OSError, ValueError, IndexError):
        while pid > 0 and pid not in ancestors:
            ancestors.add(pid)
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat_file:
                pid = int(stat_file.read().rpartition(")")[2].split()[1])
    return ancestors


def _named(pids: set[int]) -> str:
    """The processes `pids` as a message names them (`process 4242: gpudash generate --out build`, its command line
    cut at 100 characters, a control character escaped), so that one stopped or stuck can be found; "" for none.
    Linux's lock table names the process that took a lock, which may have ended since, the lock held on through a
    descriptor it passed on (flock(1) on a shell's descriptor), and 0 for one this process cannot see (another PID
    namespace's: a container's) or that ended so: said as such, not as a process to be found."""
    from . import printed

    def named(pid: int) -> str:
        if pid == 0:
            return "a process of another container (PID namespace), or one that ended passing its lock on"
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read(4096).rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        except FileNotFoundError:
            return f"process {pid}, which has ended: a process it passed its descriptor to holds the lock"
        except OSError:
            words = ""
        words = words if len(words) <= 100 else words[:97] + "..."
        return f"process {pid}: {printed.path(words)}" if words else f"process {pid}"
    return ", ".join(named(pid) for pid in sorted(pids)[:3])


def _opened_folder(path: str) -> int | None:
    """A descriptor of the folder `path`, or of its nearest ancestor that exists (a build's first write makes the
    folders it is put in: two first writes that start before it does lock the same ancestor; one that starts after
    locks the folder itself, and does not wait for the first); None where it cannot be opened."""
    while True:
        try:
            return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            if os.path.dirname(path) == path:
                return None
            path = os.path.dirname(path)
        except OSError:
            return None


def _kernel() -> bytes:
    """Which kernel this process runs on: its boot id (Linux: every boot of every machine has its own; containers on
    one machine share it, as they share its locks), else the host's name."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as stream:
            found = stream.read(64).strip()
    except OSError:
        found = b""
    if not found:
        import socket  # (here alone: at the top of the module, every gpudash start, --help too, imported it for this)

        found = socket.gethostname().encode("utf-8", "replace")
    return b"kernel " + found


# What a writer writes into its lock file: a lock is known to the kernel that holds it alone where a file system shares
# files but not locks between machines (NFS mounted with local locks: another machine's live writer's lock can be
# taken here), so a lock file written on another kernel is never taken to show its writer gone. One left empty (by a
# gpudash before this) is judged by its lock, as it was.
KERNEL = _kernel()


# File systems a machine holds alone (no other kernel writes one while it is mounted here): a lock file on one that
# another kernel recorded is this machine's, of an earlier boot (a power loss, a restart: a boot id of its own), once it
# was made before this boot began. One made since may be an NFS client's writing into a folder this machine exports
# (its lock, taken over NFS, does not show in a flock here), and is left. On any other file system (nfs, cifs, fuse,
# 9p, virtiofs, a cluster file system) another machine may be writing it: a lock file recording another kernel is left.
LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs",
                                "bcachefs", "jfs", "reiserfs", "vfat", "exfat", "ntfs3"})


def _of_an_earlier_boot(fd: int) -> bool:
    """Whether the lock file open as `fd` lies on a file system of LOCAL_FILE_SYSTEMS (Linux's /proc/self/mountinfo:
    the mounts of its device) and was made (its change time: its rename beside the folder) before this boot began;
    False where either cannot be told."""
    try:
        info = os.fstat(fd)
        kinds = file_system_kinds(info.st_dev)
        return bool(kinds) and kinds <= LOCAL_FILE_SYSTEMS and info.st_ctime < _booted_at()
    except (OSError, ValueError, IndexError, StopIteration):
        return False


def file_system_kinds(device: int) -> set[str]:
    """The kinds of file system (ext4, nfs, ...) Linux's /proc/self/mountinfo gives the mounts of `device` (a file's
    st_dev): empty where none is told. Raises OSError where the table cannot be read, ValueError or IndexError where a
    line of it is not as Linux writes them."""
    key = f"{os.major(device)}:{os.minor(device)}"
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
        return {line.partition(" - ")[2].split()[0] for line in table if line.split()[2:3] == [key] and " - " in line}


def _booted_at() -> float:
    """When this boot began (seconds since the epoch: Linux's /proc/stat btime)."""
    with open("/proc/stat", encoding="ascii", errors="replace") as table:
        return float(next(line.split()[1] for line in table if line.startswith("btime ")))


def lock_of(folder: Path) -> Path:
    return folder.with_name(folder.name + LOCK)


def claim(folder: Path) -> int | None:
    """Lock `folder` (just made, empty) as being written by this process: the descriptor holding the lock. None where
    it cannot be locked (no flock on the system, a file system without locks: NFS without its lock service answers
    ENOLCK): the build is written as before, and a folder its writer leaves is never removed."""
    if fcntl is None:
        return None
    inside = folder / ("writer" + LOCK)
    try:
        fd = os.open(inside, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, KERNEL)
        os.rename(inside, lock_of(folder))
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(inside)
        return None
    return fd


def let_go(folder: Path, fd: int | None) -> None:
    """After `folder` was swapped in or removed: its lock file removed, then the lock let go."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        os.unlink(lock_of(folder))
    os.close(fd)


def remove_dead(parent: Path, prefix: str, retired: str | None = None, swapped: bool = False) -> list[str]:
    """Remove from `parent` the staging folders named `prefix` + 12 hex digits whose writer is gone (their lock file
    can be locked), and lock files of that form left without their folder (a writer that ended between its swap and
    removing its lock file). With `retired` (the prefix of the folder a swap moves the previous build into, named with
    the staging folder's digits) and `swapped` (the build folder holds a build): a dead writer's retired folder whose
    staging folder is gone is removed too, since its staging folder was swapped in and the writer was removing what it
    retired; one whose staging folder is still there is left (the writer ended between the swap's two renames: it
    holds the previous build). Returns the staging names removed. Nothing that cannot be read or locked is touched; a
    failure to remove leaves what is left."""
    if fcntl is None:
        return []
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    form = re.compile(re.escape(prefix) + f"({_HEX})" + re.escape(LOCK))
    removed = []
    for name in sorted(names):
        match = form.fullmatch(name)
        if match is None:
            continue
        old = parent / (retired + match.group(1)) if retired is not None and swapped else None
        if _remove_if_dead(parent / name[: -len(LOCK)], old):
            removed.append(name[: -len(LOCK)])
    return removed


def _remove_if_dead(folder: Path, retired: Path | None) -> bool:
    lock = lock_of(folder)
    try:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its writer is writing
            return False
        held, named = os.fstat(fd), os.lstat(lock)
        if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino) or held.st_uid != os.geteuid():
            return False  # removed (its writer done) and made again meanwhile, or another user's
        if os.pread(fd, 256, 0) not in (b"", KERNEL) and not _of_an_earlier_boot(fd):
            return False  # another machine's writer: its lock shows nothing here (see KERNEL)
        found = _own_folder(folder)
        if found is False:
            return False
        for gone in (folder,) if found else (retired,) if retired is not None else ():
            if _own_folder(gone):
                remove_folder(gone)
                if os.path.lexists(gone):
                    return False
        os.unlink(lock)
        return bool(found)
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_tree(path: Path | str) -> None:
    """shutil.rmtree(path, ignore_errors=True). shutil is imported here, when something is to be removed: importing it
    imports zlib, bz2 and lzma too (7 of the 770 million instructions of one small dashboard's build), which a build
    that removes nothing does not need."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def remove_folder(folder: Path) -> None:
    """Remove `folder` (one gpudash made beside or inside the build folder: a staging folder, or the previous build
    moved aside) and what it holds. A folder in it that a person made read-only (chmod 555 build/k8s) keeps its
    files: those folders (not links: a link's target is not gpudash's) are made writable by their owner, and it is
    removed again. What still cannot be removed is left."""
    remove_tree(folder)
    if not os.path.lexists(folder) or not _own_folder(folder):
        return
    for root, folders, _ in os.walk(folder):  # (a link to a folder is listed, never followed: lstat tells it)
        for name in folders:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.chmod(path, stat.S_IRWXU)
    with contextlib.suppress(OSError):
        os.chmod(folder, stat.S_IRWXU)
    remove_tree(folder)


def _own_folder(path: Path) -> bool | None:
    """True for a folder (not a link) of this user's, None when nothing is there, False for anything else."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid()
