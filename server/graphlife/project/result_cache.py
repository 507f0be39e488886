"""Results of checked files kept on disk, so that re-checking an unchanged project is fast.

Why a record is keyed as it is: a file's findings depend on its own text, on the text of
every module of the project the analysis followed an import into, on which modules the
folders searched for imports offer (a module created where an import found nothing, or
ahead of the one it found, changes what the import means), on the settings that decide
which rules run and how loud, and on graphlife itself. A record keeps all five and is used
only while all five still match; anything else is a miss, and a miss only costs the
analysis that would have run anyway.

Why a file or folder keeps its ``(mtime_ns, size)`` next to its digest: checking a record
must be much cheaper than the analysis, so a file is re-read (a folder re-listed) only when
its stat changed (a ``touch`` or a ``git checkout`` of the same content is still a hit; so is
an editor's save beside it, which changes the folder's mtime but not its modules). A stat taken
within :data:`_RACY_WINDOW_NS` of its mtime is not kept: a file written again in the same
clock tick would keep its stat, so such a file is re-hashed every time (as git does with
"racily clean" entries).

Why a cache problem never stops a check: the cache is only a shortcut. A record that cannot
be read or makes no sense is absent (and replaced by the next store); a folder that cannot
be written (read-only, full disk) leaves the check uncached, with one warning for the user
(:meth:`ResultCache.warnings`). Writes go through a temporary file and ``os.replace``, so a
reader, or another process writing the same entry (the command line checks files in a
process pool), sees a whole record, the last one written.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import os
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import graphlife
from graphlife.config import Config
from graphlife.project.digests import sha256, text_digest
from graphlife.project.roots import find_project_root

#: The cache folder's name, at the project root.
CACHE_FOLDER_NAME = ".graphlife_cache"

#: Bumped when the layout of a record changes: older records are then misses.
_FORMAT = 1

#: A stat whose mtime is this close to the moment it was taken is not trusted (2 s covers
#: file systems with coarse timestamps: FAT, some network mounts).
_RACY_WINDOW_NS = 2_000_000_000

#: Config fields that do not change findings; every other field is part of the settings key,
#: so that a setting added later makes records stale rather than wrong.
#: ``per_file_ignores`` changes findings through the rule layer it adds for the file, which is
#: fingerprinted; the patterns themselves and what a folder walk skips do not.
_NOT_AFFECTING_FINDINGS = frozenset(
    {"lint_on_change", "problems", "exclude", "extend_exclude", "per_file_ignores", "respect_gitignore"}
)

#: Makes git (and tools that read .gitignore) leave the folder alone, as ruff's cache does.
_GITIGNORE = "# Created by graphlife: its cache, never to be committed.\n*\n"

#: The Cache Directory Tagging Specification's signature: backup tools skip the folder.
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by graphlife.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)

_StatKey = tuple[int, int]  # (mtime_ns, size)

#: The two kinds of inputs a record keeps besides the entry's text: files read (by content
#: digest) and folders searched (by the digest of their importable names).
_FILES, _FOLDERS = "dependencies", "folders"
_KINDS = (_FILES, _FOLDERS)


@dataclass(frozen=True)
class CachedResult:
    """What was stored for an entry file, and the files (absolute path -> hash) it depended on."""

    payload: Any
    dependencies: dict[str, str]


def default_cache_folder(path: str | os.PathLike[str]) -> Path:
    """``<project root>/.graphlife_cache`` for a checked file or folder; without a project
    root (no ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git`` above it), the
    checked folder's (the file's own folder for a file)."""
    start = os.path.abspath(path)
    if not os.path.isdir(start):
        start = os.path.dirname(start)
    return Path(find_project_root(start) or start) / CACHE_FOLDER_NAME


def text_hash(text: str) -> str:
    """The hash of a file's text, the same as :meth:`ProjectModules.dependencies` records."""
    return text_digest(text)


def settings_key(config: Config) -> str:
    """A fingerprint of the settings that change findings, the same in every process.

    ``src`` folders are made absolute: a relative one is taken from the current folder, so
    the same spelling run from another folder means other modules."""
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        if field.name in _NOT_AFFECTING_FINDINGS:
            continue
        value = getattr(config, field.name)
        if field.name == "src":
            value = tuple(os.path.abspath(folder) for folder in value)
        fields[field.name] = _canonical(value)
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: object) -> Any:
    """``value`` as plain JSON data with one spelling (mappings sorted by key)."""
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return sorted([str(key), _canonical(item)] for key, item in value.items())
    if isinstance(value, (tuple, list)):
        return [_canonical(item) for item in value]
    raise TypeError(f"settings_key cannot fingerprint a {type(value).__name__}; teach _canonical")


def graphlife_identity() -> str:
    """graphlife's version, and a fingerprint of its own files: a record made by other code
    is stale even when the version was not bumped (a development tree, a git install)."""
    return f"{graphlife.__version__}+{_package_fingerprint()}"


@functools.cache
def _package_fingerprint() -> str:
    """The names, sizes and mtimes of graphlife's modules and data (about a hundred stats)."""
    digest = sha256()
    # Depth first, names sorted (as ``os.walk`` with sorted folders would go), with the stat
    # each folder entry carries: this runs at every start, a check answered from the cache
    # included, where ``os.walk`` and ``relpath`` were a tenth of the whole process.
    pending = [(os.path.dirname(graphlife.__file__), "")]
    while pending:
        folder, prefix = pending.pop()
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        subfolders = []
        for entry in entries:
            if entry.is_dir():
                if entry.name != "__pycache__":
                    subfolders.append((entry.path, f"{prefix}{entry.name}{os.sep}"))
            elif entry.name.endswith((".py", ".json")):
                stat = entry.stat()
                digest.update(f"{prefix}{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        pending.extend(reversed(subfolders))
    return digest.hexdigest()[:16]


class ResultCache:
    """One record per checked file in ``folder``, named by a hash of its absolute path."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._prepared = False
        self._warnings: list[str] = []
        #: What this process read: (kind, path) -> (stat, digest); many entries share imports.
        self._digests: dict[tuple[str, str], tuple[_StatKey, str]] = {}

    def lookup(self, entry_path: str, entry_text_hash: str, settings_key: str) -> CachedResult | None:
        """The stored result for ``entry_path`` if its text, the settings and graphlife are
        the same, every file it read still has the content it had, and every folder its
        imports were searched in still offers the same modules; else ``None``."""
        entry = os.path.abspath(entry_path)
        record = _read_record(self._record_path(entry))
        if record is None or record.get("entry") != entry or record.get("entry_hash") != entry_text_hash \
                or record.get("settings") != settings_key or record.get("graphlife") != graphlife_identity():
            return None
        refreshed = False
        for kind in _KINDS:
            for path, known in record[kind].items():
                before = known["stat"]
                if not self._unchanged(kind, path, known):
                    return None
                refreshed = refreshed or known["stat"] != before
        if refreshed:  # the next lookup need not re-read what was only touched
            self._write(self._record_path(entry), record)
        return CachedResult(record["payload"], {path: known["hash"] for path, known in record[_FILES].items()})

    def store(self, entry_path: str, entry_text_hash: str, settings_key: str, dependencies: Mapping[str, str],
              payload: Any, *, folders: Mapping[str, str] | None = None) -> None:
        """Keep ``payload`` (JSON data) for ``entry_path``, computed from the files in
        ``dependencies`` (:meth:`ProjectModules.dependencies`) and, if given, with imports
        searched in ``folders`` (:meth:`ProjectModules.folders_searched`). Nothing is kept
        when one of them is gone or no longer has the digest the analysis saw (it changed
        during the check: the result is already stale). Never raises for the disk; see
        :meth:`warnings`."""
        if not self._prepare():
            return
        record: dict[str, Any] = {
            "format": _FORMAT, "graphlife": graphlife_identity(), "entry": os.path.abspath(entry_path),
            "entry_hash": entry_text_hash, "settings": settings_key, "payload": payload,
        }
        for kind, digests in ((_FILES, dependencies), (_FOLDERS, folders or {})):
            record[kind] = {}
            for path, digest in digests.items():
                stat = _stat_key(path)  # before reading: a change after it gives another stat next time
                if (stat is None and kind == _FILES) or self._digest_now(kind, path, stat) != digest:
                    return
                record[kind][path] = {"hash": digest, "stat": _trusted(stat)}
        self._write(self._record_path(record["entry"]), record)

    def warnings(self) -> list[str]:
        """One line per distinct problem writing the cache, for the user to read once."""
        return list(self._warnings)

    def _record_path(self, entry: str) -> Path:
        return self.folder / (sha256(entry.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".json")

    def _unchanged(self, kind: str, path: str, known: dict[str, Any]) -> bool:
        """Whether ``path`` still has its recorded digest: trusted when its stat is the one
        recorded, else read again (and its new stat kept in ``known`` when the digest is
        the same). A file gone is changed; a folder gone offers no module, like an empty one."""
        stat = _stat_key(path)
        if stat is None and kind == _FILES:
            return False
        if stat is not None and known["stat"] == list(stat):
            return True
        if self._digest_now(kind, path, stat) != known["hash"]:
            return False
        known["stat"] = _trusted(stat)
        return True

    def _digest_now(self, kind: str, path: str, stat: _StatKey | None) -> str:
        memo = self._digests.get((kind, path))
        if memo is not None and stat is not None and memo[0] == stat:
            return memo[1]
        # Imported here: a run whose files all kept their stat (every hit but the first) never reads them.
        from graphlife.project.resolver import FolderListing, listing_digest  # noqa: PLC0415
        from graphlife.project.sources import file_digest  # noqa: PLC0415

        digest = file_digest(path) if kind == _FILES else listing_digest(FolderListing().entries(path))
        if stat is not None and _trusted(stat) is not None:  # a stat too recent proves nothing here either
            self._digests[(kind, path)] = (stat, digest)
        return digest

    def _prepare(self) -> bool:
        """Create the folder, ignored by git and by backup tools, once per process."""
        if self._prepared:
            return True
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for name, content in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _CACHEDIR_TAG)):
                if not (self.folder / name).is_file():
                    _write_atomically(self.folder / name, content)
        except OSError as exc:
            self._warn(exc)
            return False
        self._prepared = True
        return True

    def _write(self, target: Path, record: Mapping[str, Any]) -> None:
        try:
            _write_atomically(target, json.dumps(record, separators=(",", ":")))
        except OSError as exc:
            self._warn(exc)

    def _warn(self, exc: OSError) -> None:
        message = (f"graphlife: cannot write its cache in {self.folder} ({exc.strerror or exc}); "
                   "results are not cached")
        if message not in self._warnings:
            self._warnings.append(message)


def _write_atomically(target: Path, text: str) -> None:
    """Write a temporary file beside ``target`` and move it in place: readers and other
    writers see the old file or the new one, never a part. No fsync: after a crash a record
    may be truncated, which reads as absent."""
    import tempfile  # noqa: PLC0415 -- here, not at the top: a run of hits writes nothing and need not load it

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


def _read_record(path: Path) -> dict[str, Any] | None:
    """A record as stored, or ``None`` when it is missing, unreadable or not a whole record."""
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("format") != _FORMAT or "payload" not in record:
        return None
    for kind in _KINDS:
        inputs = record.get(kind)
        if not isinstance(inputs, dict) or not all(_is_input(known) for known in inputs.values()):
            return None
    return record


def _is_input(known: object) -> bool:
    if not isinstance(known, dict) or not isinstance(known.get("hash"), str):
        return False
    stat = known.get("stat")
    return stat is None or (isinstance(stat, list) and len(stat) == 2 and all(type(n) is int for n in stat))


def _stat_key(path: str) -> _StatKey | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _trusted(stat: _StatKey | None) -> list[int] | None:
    """The stat as stored, or ``None`` when there is none or it is too recent to tell two
    writes apart."""
    return None if stat is None or time.time_ns() - stat[0] < _RACY_WINDOW_NS else list(stat)
