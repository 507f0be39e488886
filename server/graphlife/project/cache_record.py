"""The cache of results' record on disk: where it is, how it is read, and what makes it stale.

Why a module of its own, importing only what the interpreter has loaded before any of
graphlife (``os``, ``marshal``, ``time``; and :mod:`graphlife.project.digests`): a check answered
from the cache (:mod:`graphlife.fast_check`) reads a record and compares it with the
disk, and nothing else. :mod:`graphlife.project.result_cache` writes and checks records
with the same functions, so both read a record the same way and find the same things
stale.

Why ``marshal`` and not JSON: the record is read at every start of a check answered from
the cache, and ``json`` (with the ``re`` it imports) costs that start more than reading
the record. A record is plain data (dicts, lists, strings, numbers), which ``marshal``
keeps; a record that ``marshal`` cannot read back, or that is not a whole record of
:data:`FORMAT`, of this Python (its ``marshal`` and its ``ast``) and of this graphlife,
is a miss.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

import graphlife
from graphlife.project.digests import sha256

#: The cache folder's name, at the project root.
CACHE_FOLDER_NAME = ".graphlife_cache"

#: Bumped when the layout of a record changes: older records are then misses.
FORMAT = 2

#: A record's file name ends so (format 1 records were JSON files ending in ``.json``).
RECORD_SUFFIX = ".rec"

#: The Python a record was made with: ``ast`` (what the engine parses) and ``marshal``
#: (what the record is written in) change between versions.
PYTHON = f"{sys.implementation.name}-{sys.hexversion:x}"

#: A stat whose mtime is this close to the moment it was taken is not trusted (2 s covers
#: file systems with coarse timestamps: FAT, some network mounts).
RACY_WINDOW_NS = 2_000_000_000

#: A folder holding one of these is a project root.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

#: The two kinds of inputs a record keeps besides the entry's text: files read (by content
#: digest) and folders searched (by the digest of their importable names).
FILES, FOLDERS = "dependencies", "folders"
KINDS = (FILES, FOLDERS)

#: The optional part of a record that says the result holds for a check with no settings
#: from the command line: the current folder, the path as spelled, the language, and the
#: stat of each ``pyproject.toml`` a settings search would look at (``None``: none there).
DEFAULT_SETTINGS = "default_settings"


def find_project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` holding a project marker; ``None`` without one."""
    here = os.path.abspath(folder)
    while True:
        if any(os.path.exists(os.path.join(here, marker)) for marker in PROJECT_MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def cache_folder(path: str) -> str:
    """``<project root>/.graphlife_cache`` for a checked file or folder; without a project
    root (no ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git`` above it), the
    checked folder's (the file's own folder for a file)."""
    start = os.path.abspath(path)
    if not os.path.isdir(start):
        start = os.path.dirname(start)
    return os.path.join(find_project_root(start) or start, CACHE_FOLDER_NAME)


def record_path(folder: str, entry: str) -> str:
    """The record of the absolute path ``entry`` in the cache ``folder``."""
    name = sha256(entry.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(folder, name + RECORD_SUFFIX)


def graphlife_identity() -> str:
    """graphlife's version, and a fingerprint of its own files: a record made by other code
    is stale even when the version was not bumped (a development tree, a git install)."""
    return f"{graphlife.__version__}+{_package_fingerprint()}"


_FINGERPRINT: list[str] = []


def _package_fingerprint() -> str:
    """The names, sizes and mtimes of graphlife's modules and data (about a hundred stats),
    taken once per process."""
    if _FINGERPRINT:
        return _FINGERPRINT[0]
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
    _FINGERPRINT.append(digest.hexdigest()[:16])
    return _FINGERPRINT[0]


def stat_key(path: str) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``path``, ``None`` when it cannot be stat'ed."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def trusted(stat: tuple[int, int] | None) -> list[int] | None:
    """The stat as stored, or ``None`` when there is none or it is too recent to tell two
    writes apart."""
    return None if stat is None or time.time_ns() - stat[0] < RACY_WINDOW_NS else list(stat)


def dumps(record: dict) -> bytes:
    """A record as stored (``ValueError`` for a value ``marshal`` does not keep)."""
    return marshal.dumps(record)


def read_record(path: str) -> dict | None:
    """A record as stored, or ``None`` when it is missing, unreadable, not a whole record, of
    another format, another Python or another graphlife."""
    try:
        with open(path, "rb") as handle:
            record = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if type(record) is not dict or record.get("format") != FORMAT or record.get("python") != PYTHON \
            or "payload" not in record or not isinstance(record.get("entry"), str) \
            or not isinstance(record.get("entry_hash"), str) or not isinstance(record.get("settings"), str):
        return None
    for kind in KINDS:
        inputs = record.get(kind)
        if type(inputs) is not dict or not all(type(path) is str and _is_input(known)
                                                 for path, known in inputs.items()):
            return None
    if record.get("graphlife") != graphlife_identity():
        return None
    return record


def is_record_of(record: dict, entry: str, entry_hash: str) -> bool:
    """Whether ``record`` (as :func:`read_record` returned it) is of the file at the absolute
    path ``entry`` with the text whose digest is ``entry_hash``: the first test of every
    reader, the full command line's result cache and the fast path alike."""
    return record["entry"] == entry and record["entry_hash"] == entry_hash


def _is_input(known: object) -> bool:
    if type(known) is not dict or type(known.get("hash")) is not str:
        return False
    stat = known.get("stat")
    return stat is None or _is_stat(stat)


def _is_stat(stat: object) -> bool:
    return type(stat) is list and len(stat) == 2 and all(type(n) is int for n in stat)


def settings_search(path: str) -> list[list]:
    """What a settings search for ``path`` looks at, as a record keeps it: each folder from the
    file's (its real path's) up to the root, with the trusted stat of the ``pyproject.toml``
    there (``None`` when there is none) -- :func:`graphlife.config.pyproject_settings` reads the
    nearest ones. ``[]`` when a stat there is too recent to prove the file unchanged later, or
    the file cannot be read (a ``chmod`` keeps its stat's mtime and size)."""
    here = os.path.realpath(path)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    seen: list[list] = []
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        stat = stat_key(candidate)
        if stat is not None and not os.path.isfile(candidate):
            stat = None  # a folder named pyproject.toml is no settings file
        kept = trusted(stat)
        if stat is not None and (kept is None or not os.access(candidate, os.R_OK)):
            return []  # too recent to prove anything later, or a file the search cannot read (a problem)
        seen.append([candidate, kept])
        parent = os.path.dirname(here)
        if parent == here:
            return seen
        here = parent


def default_settings_hold(record: dict, path: str, cwd: str, language: str) -> bool:
    """Whether ``record`` was made with the settings a check of ``path`` (as spelled) from
    ``cwd`` in ``language`` with no settings on the command line has now: the record says so
    for this folder, spelling and language, and every ``pyproject.toml`` a settings search
    looks at is the one (or the absence) it saw."""
    witness = record.get(DEFAULT_SETTINGS)
    if type(witness) is not dict or witness.get("cwd") != cwd or witness.get("path") != path \
            or witness.get("language") != language:
        return False
    seen = witness.get("pyproject")
    return type(seen) is list and bool(seen) and seen == settings_search(path)


def inputs_unchanged(record: dict) -> bool:
    """Whether every file and folder ``record`` depends on has the stat it recorded (a
    changed stat may still be the same content; :class:`~graphlife.project.result_cache.ResultCache`
    reads it again, this cheap test does not)."""
    for kind in KINDS:
        for path, known in record[kind].items():
            stat = known["stat"]
            if stat is None or stat_key(path) != (stat[0], stat[1]):
                return False
    return True
