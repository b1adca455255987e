"""The build directory: written whole or not at all, with a manifest of sha256 sums.

A run writes into a fresh sibling directory and swaps it into place, so a
failed run leaves the previous build untouched. A directory that holds files
but no gpudash manifest is not gpudash's, and is never replaced.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .errors import OutputError
from .serialize import to_json

MANIFEST = "manifest.json"


def with_manifest(files: dict[str, bytes], made_with: dict[str, str] | None = None) -> dict[str, bytes]:
    """The files plus manifest.json: their sha256 sums, and the settings the build was made with
    (`made_with`, from `settings_record`), which `lint --from` needs to judge the build."""
    manifest: dict[str, object] = {"generator": f"gpudash {__version__}"}
    if made_with:
        manifest["settings"] = made_with
    manifest["files"] = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    return {**files, MANIFEST: to_json(manifest)}


def settings_record(settings) -> dict[str, object]:
    """A sha256 of the build's settings (defaults filled in), and whether they were the bundled defaults.

    The path the settings were read from is left out on purpose: the same file named another way
    (`--config ./gpudash.yaml`, an absolute path, another working directory) must give the same build."""
    import json

    from .settings import BUNDLED_SOURCE

    content = json.dumps(settings.raw, sort_keys=True, default=str).encode()
    return {"bundled": settings.source == BUNDLED_SOURCE, "sha256": hashlib.sha256(content).hexdigest()}


def _owned(out: Path) -> bool:
    return not out.exists() or (out.is_dir() and (not any(out.iterdir()) or (out / MANIFEST).is_file()))


def _fill(folder: Path, everything: dict[str, bytes]) -> None:
    for relative, data in everything.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def write(out: Path, files: dict[str, bytes], made_with: dict[str, str] | None = None) -> None:
    """Replace `out` with exactly `files` (plus the manifest), atomically.

    A symlink stays a symlink: its target is written. A mount point cannot be renamed, so the new
    build is staged inside it and moved into place entry by entry. No failure leaves a half-written
    build or a stray staging folder behind."""
    out = out.absolute()
    if out.is_symlink():
        out = out.resolve()  # write where the link points; the link itself is left alone
    if out.exists() and not out.is_dir():
        raise OutputError("the output path is a file, not a directory", where=str(out),
                          hint="pass --out with a directory")
    try:
        owned = _owned(out)
    except OSError as exc:
        raise OutputError(f"cannot read the output directory ({exc.strerror})", where=str(out),
                          hint="check its permissions") from None
    if not owned:
        raise OutputError("the output directory holds files gpudash did not write (no manifest.json)",
                          where=str(out), hint="choose another --out, or empty the directory")
    everything = with_manifest(files, made_with)
    if out.is_dir() and os.path.ismount(out):
        _write_inside(out, everything)
    else:
        _swap_in(out, everything)


def _failed(exc: OSError, out: Path) -> OutputError:
    return OutputError(f"cannot write the build ({exc.strerror or exc})", where=str(exc.filename or out),
                       hint="check free space and permissions; the previous build is unchanged")


def _swap_in(out: Path, everything: dict[str, bytes]) -> None:
    """Write a sibling folder, then swap it for `out` with two renames (rolled back on failure)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    except OSError as exc:
        raise OutputError(f"cannot create the output directory ({exc.strerror})", where=str(out.parent),
                          hint="check the path and its permissions") from None
    retired = None
    try:
        _fill(staging, everything)
        os.chmod(staging, 0o755)
        if not out.exists():
            os.replace(staging, out)
            return
        retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        try:
            os.replace(out, retired / "build")
        except OSError as exc:
            if exc.errno in (errno.EBUSY, errno.EXDEV):  # a bind mount that ismount() did not see
                shutil.rmtree(staging, ignore_errors=True)
                os.rmdir(retired)
                retired = None
                _write_inside(out, everything)
                return
            raise
        try:
            os.replace(staging, out)
        except OSError:
            os.replace(retired / "build", out)  # put the previous build back
            raise
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if retired is not None and not (retired / "build").exists():
            shutil.rmtree(retired, ignore_errors=True)
        raise _failed(exc, out) from None
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def _write_inside(out: Path, everything: dict[str, bytes]) -> None:
    """For a folder that cannot be renamed (a mount point): stage inside it, then move entries."""
    staging = retired = None
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        staging = Path(tempfile.mkdtemp(prefix=".gpudash.new-", dir=out))
        _fill(staging, everything)
        retired = Path(tempfile.mkdtemp(prefix=".gpudash.old-", dir=out))
        keep = {staging.name, retired.name}
        for name in sorted(os.listdir(out)):
            if name not in keep:
                os.replace(out / name, retired / name)
                moved_out.append(name)
        for name in sorted(os.listdir(staging)):
            os.replace(staging / name, out / name)
            moved_in.append(name)
    except OSError as exc:
        for name in moved_in:  # undo: the previous build goes back as it was
            shutil.rmtree(out / name, ignore_errors=True)
        for name in moved_out:
            os.replace(retired / name, out / name)
        for folder in (staging, retired):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        raise _failed(exc, out) from None
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(retired, ignore_errors=True)


@dataclass(frozen=True)
class Difference:
    path: str
    change: str  # "missing", "changed", "extra"


def compare(out: Path, files: dict[str, bytes], made_with: dict[str, str] | None = None) -> list[Difference]:
    """What differs between `out` on disk and what would be generated."""
    expected = with_manifest(files, made_with)
    present = {str(p.relative_to(out)): p for p in out.rglob("*") if p.is_file()} if out.is_dir() else {}
    differences = []
    for path in sorted(set(expected) | set(present)):
        if path not in present:
            differences.append(Difference(path, "missing"))
        elif path not in expected:
            differences.append(Difference(path, "extra"))
        elif present[path].read_bytes() != expected[path]:
            differences.append(Difference(path, "changed"))
    return differences

