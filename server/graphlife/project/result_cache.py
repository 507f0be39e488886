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
import json
import os
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlife.config import Config
from graphlife.project.cache_record import (
    CACHE_FOLDER_NAME,
    DEFAULT_SETTINGS,
    FILES,
    FOLDERS,
    FORMAT,
    KINDS,
    PYTHON,
    cache_folder,
    dumps,
    find_project_root,
    graphlife_identity,
    is_record_of,
    read_record,
    record_path,
    settings_search,
    stat_key,
    trusted,
)
from graphlife.project.digests import sha256, text_digest

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

__all__ = ["CACHE_FOLDER_NAME", "CachedResult", "ResultCache", "default_cache_folder", "find_project_root",
           "graphlife_identity", "settings_key", "text_hash"]


@dataclass(frozen=True)
class CachedResult:
    """What was stored for an entry file, and the files (absolute path -> hash) it depended on."""

    payload: Any
    dependencies: dict[str, str]


def default_cache_folder(path: str | os.PathLike[str]) -> Path:
    """``<project root>/.graphlife_cache`` for a checked file or folder; without a project
    root (no ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git`` above it), the
    checked folder's (the file's own folder for a file)."""
    return Path(cache_folder(os.fspath(path)))


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
        record = read_record(str(self._record_path(entry)))
        if record is None or not is_record_of(record, entry, entry_text_hash) or record["settings"] != settings_key:
            return None
        refreshed = False
        for kind in KINDS:
            for path, known in record[kind].items():
                before = known["stat"]
                if not self._unchanged(kind, path, known):
                    return None
                refreshed = refreshed or known["stat"] != before
        if refreshed:  # the next lookup need not re-read what was only touched
            self._write(self._record_path(entry), record)
        return CachedResult(record["payload"], {path: known["hash"] for path, known in record[FILES].items()})

    def store(self, entry_path: str, entry_text_hash: str, settings_key: str, dependencies: Mapping[str, str],
              payload: Any, *, folders: Mapping[str, str] | None = None,
              default_settings: tuple[str, str, str] | None = None) -> None:
        """Keep ``payload`` (JSON data) for ``entry_path``, computed from the files in
        ``dependencies`` (:meth:`ProjectModules.dependencies`) and, if given, with imports
        searched in ``folders`` (:meth:`ProjectModules.folders_searched`). ``default_settings``
        (the current folder, the path as spelled and the language) says that ``settings_key``
        is what a check of that path with no settings on the command line has, while no
        ``pyproject.toml`` around it changes (:func:`~graphlife.project.cache_record.default_settings_hold`
        tests it). Nothing is kept
        when one of them is gone or no longer has the digest the analysis saw (it changed
        during the check: the result is already stale). Never raises for the disk; see
        :meth:`warnings`."""
        if not self._prepare():
            return
        record: dict[str, Any] = {
            "format": FORMAT, "python": PYTHON, "graphlife": graphlife_identity(),
            "entry": os.path.abspath(entry_path),
            "entry_hash": entry_text_hash, "settings": settings_key, "payload": payload,
        }
        for kind, digests in ((FILES, dependencies), (FOLDERS, folders or {})):
            record[kind] = {}
            for path, digest in digests.items():
                stat = stat_key(path)  # before reading: a change after it gives another stat next time
                if (stat is None and kind == FILES) or self._digest_now(kind, path, stat) != digest:
                    return
                record[kind][path] = {"hash": digest, "stat": trusted(stat)}
        if default_settings is not None:
            cwd, spelled, language = default_settings
            record[DEFAULT_SETTINGS] = {"cwd": cwd, "path": spelled, "language": language,
                                        "pyproject": settings_search(spelled)}
        self._write(self._record_path(record["entry"]), record)

    def warnings(self) -> list[str]:
        """One line per distinct problem writing the cache, for the user to read once."""
        return list(self._warnings)

    def _record_path(self, entry: str) -> Path:
        return Path(record_path(str(self.folder), entry))

    def _unchanged(self, kind: str, path: str, known: dict[str, Any]) -> bool:
        """Whether ``path`` still has its recorded digest: trusted when its stat is the one
        recorded, else read again (and its new stat kept in ``known`` when the digest is
        the same). A file gone is changed; a folder gone offers no module, like an empty one."""
        stat = stat_key(path)
        if stat is None and kind == FILES:
            return False
        if stat is not None and known["stat"] == list(stat):
            return True
        if self._digest_now(kind, path, stat) != known["hash"]:
            return False
        known["stat"] = trusted(stat)
        return True

    def _digest_now(self, kind: str, path: str, stat: _StatKey | None) -> str:
        memo = self._digests.get((kind, path))
        if memo is not None and stat is not None and memo[0] == stat:
            return memo[1]
        # Imported here: a run whose files all kept their stat (every hit but the first) never reads them.
        from graphlife.project.resolver import FolderListing, listing_digest  # noqa: PLC0415
        from graphlife.project.sources import file_digest  # noqa: PLC0415

        digest = file_digest(path) if kind == FILES else listing_digest(FolderListing().entries(path))
        if stat is not None and trusted(stat) is not None:  # a stat too recent proves nothing here either
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
                    _write_atomically(self.folder / name, content.encode("utf-8"))
        except OSError as exc:
            self._warn(exc)
            return False
        self._prepared = True
        return True

    def _write(self, target: Path, record: Mapping[str, Any]) -> None:
        try:
            _write_atomically(target, _as_stored(record))
        except OSError as exc:
            self._warn(exc)

    def _warn(self, exc: OSError) -> None:
        message = (f"graphlife: cannot write its cache in {self.folder} ({exc.strerror or exc}); "
                   "results are not cached")
        if message not in self._warnings:
            self._warnings.append(message)


def _as_stored(record: Mapping[str, Any]) -> bytes:
    """The record in ``marshal``'s bytes, after a trip through JSON: a payload of JSON data
    holds ``str`` subclasses (a finding's :class:`~graphlife.findings.Message`), which
    ``marshal`` does not keep, and tuples, which it would keep as tuples; read back, the
    payload is the plain JSON data that a record of format 1 gave."""
    return dumps(json.loads(json.dumps(record)))


def _write_atomically(target: Path, data: bytes) -> None:
    """Write a temporary file beside ``target`` and move it in place: readers and other
    writers see the old file or the new one, never a part. No fsync: after a crash a record
    may be truncated, which reads as absent."""
    import tempfile  # noqa: PLC0415 -- here, not at the top: a run of hits writes nothing and need not load it

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
