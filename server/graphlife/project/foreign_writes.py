"""Attribute writes in the project's other files: what a method analyzed alone must not trust.

Why: a method that nothing in its file calls is analyzed alone, starting from the ``self``
its class's ``__init__`` makes. Another module of the project may hold an instance and
assign one of its attributes before calling the method: ``probe.captured =
probe.lin(x)`` in ``train.py`` and ``self.captured.sum().backward()`` in ``models.py``
run fine under torch, though ``__init__`` alone made ``captured`` a tensor without a
graph. An error there would be false, so the attributes other files may write are
weakened, as those the file itself writes outside ``__init__`` already are
(:mod:`graphlife.analysis.unseen_writes`).

Which files: every Python file of the project (the folder tree of the project root, or
of the checked file's folder without one), since an instance can reach a file that
never imports its class (a helper given the model as an argument). Reading them all for
each check would cost more than the check, so it is done in two steps, each cached while
a file is unchanged:

1. the *spelling* of writes (:data:`WRITE_SHAPE`, over the bytes, no parse): which
   attribute names a file may assign or change the content of, and whether it names no
   attribute (``setattr``, ``__dict__``). It over-approximates (a string or comment that
   looks like a write counts), which only means more files go to step 2;
2. for the files whose names meet the ones ``__init__`` gave the instance, the parsed
   tree decides (:func:`graphlife.analysis.unseen_writes.foreign_attribute_writes`),
   leaving out what another class's methods do to their own ``self``.

Step 1 is taken once per analysis (:class:`ProjectWrites`): a file with several classes
asks once per class, and the language server asks on every keystroke, so the folders are
walked and the files ``stat``ed once, not per question.

Those files count as read by the analysis (its dependencies), so an edit to them makes
a cached result stale. A project larger than :data:`MAX_FILES` files or
:data:`MAX_FOLDERS` folders (a dataset of images beside the script), or with more
candidates than :data:`MAX_PARSED`, is not read in full: then every attribute
``__init__`` gave is taken as written elsewhere (sound, less precise). Folders the
settings exclude or git ignores are walked all the same: code there may still run. A file that starts
to write one of the names without having written any before is seen when the checked
file is analyzed next (not at once by an open editor).
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from graphlife.analysis.unseen_writes import AttributeWrites, foreign_attribute_writes
from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.project.sources import ParsedSource, SourceCache

#: Python files walked at most per project; beyond, every name is taken as written elsewhere.
MAX_FILES = 5000
#: Folders walked at most per project (ten times Megatron-LM's); beyond, likewise.
MAX_FOLDERS = 2000
#: Files parsed at most per analysis to decide their writes.
MAX_PARSED = 64

#: Folders never walked: hidden ones (VCS, tool caches), byte code, JavaScript packages.
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages"})

#: What an attribute write may look like in the text: ``.name = ``, ``.name += ``,
#: ``.name[`` (a store or a read), ``.name.append(`` and the other mutating methods,
#: ``.name,`` and ``.name) =`` (maybe a target list: ``a.x, a.y = ...``, or just an argument). Group 1 is the
#: name; what follows it is only looked at (so the next name of a target list is matched
#: too). No shape scans the rest of the line: one pass over a 1,300-file project costs about
#: a tenth of a second.
WRITE_SHAPE = re.compile(
    rb"\.([A-Za-z_][A-Za-z0-9_]*)(?=[ \t]*(?:"
    rb"[-+*/%@&|^]?=(?!=)|\*\*=|//=|>>=|<<="
    rb"|\[|,|[)\]][ \t]*=(?!=)"
    rb"|\.(?:append|extend|insert|pop|remove|clear|update|setdefault|add|discard|popitem|sort|reverse"
    rb"|appendleft|extendleft|popleft|__setitem__|__delitem__)\b))"
)
#: Writes that name no attribute (any attribute may change).
ANY_NAME_SHAPE = re.compile(rb"\b(?:setattr|delattr|vars)[ \t]*\(|__dict__")
#: ``del x.name`` (on one line).
DELETE_SHAPE = re.compile(rb"\bdel\b[^\n]*?\.([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class WriteSpelling:
    """Step 1 for one file: the attribute names its text may write, and whether it may write any."""

    names: frozenset[str]
    any_name: bool

    @staticmethod
    def of(data: bytes) -> WriteSpelling:
        names = {match.group(1).decode("ascii") for match in WRITE_SHAPE.finditer(data)}
        names.update(match.group(1).decode("ascii") for match in DELETE_SHAPE.finditer(data))
        return WriteSpelling(frozenset(names), ANY_NAME_SHAPE.search(data) is not None)

    def may_write(self, names: frozenset[str]) -> bool:
        return self.any_name or not self.names.isdisjoint(names)


class SpellingMemo:
    """Step 1 of each file, kept while its ``(mtime_ns, size)`` is unchanged (one per process:
    the command line checks many files of one project, the language server many versions)."""

    def __init__(self, max_files: int = 20000) -> None:
        self._max_files = max_files
        self._found: dict[str, tuple[tuple[int, int], WriteSpelling]] = {}
        self._lock = threading.Lock()

    def spelling(self, path: str, stat: os.stat_result) -> WriteSpelling | None:
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            kept = self._found.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        if stat.st_size > MAX_SOURCE_BYTES:
            return None
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        found = WriteSpelling.of(data)
        with self._lock:
            if len(self._found) >= self._max_files:
                self._found.clear()
            self._found[path] = (key, found)
        return found


class BufferSpellings:
    """Step 1 of each open buffer (unsaved text), kept while its text is the same.

    Why: the language server hands every analysis the text of every open document, and
    scanning a buffer's text costs about 7 ms per 100,000 characters: with a dozen large
    documents open that was 150 ms on each keystroke's analysis of another one. An unchanged
    document's text is the very same string from one analysis to the next (compared by
    identity first, then by value)."""

    def __init__(self, max_buffers: int = 1000) -> None:
        self._max_buffers = max_buffers
        self._found: dict[str, tuple[str, WriteSpelling]] = {}
        self._lock = threading.Lock()

    def spelling(self, path: str, text: str) -> WriteSpelling:
        with self._lock:
            kept = self._found.get(path)
        if kept is not None and (kept[0] is text or kept[0] == text):
            return kept[1]
        found = WriteSpelling.of(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            if len(self._found) >= self._max_buffers:
                self._found.clear()
            self._found[path] = (text, found)
        return found


class FolderTree:
    """The Python files under one root, kept per folder and walked again only where a folder's
    modification time changed (a file added, removed or renamed in it)."""

    def __init__(self) -> None:
        self._folders: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def python_files(self, root: str, limit: int, folder_limit: int) -> list[str] | None:
        """The ``.py`` files under ``root`` (absolute paths), ``None`` past ``limit`` of them or
        past ``folder_limit`` folders."""
        found: list[str] = []
        pending = [root]
        visited = 0
        while pending:
            folder = pending.pop()
            visited += 1
            if visited > folder_limit:
                return None
            listed = self._listing(folder)
            if listed is None:
                continue
            subfolders, files = listed
            found.extend(files)
            if len(found) > limit:
                return None
            pending.extend(subfolders)
        return found

    def _listing(self, folder: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return None
        with self._lock:
            kept = self._folders.get(folder)
        if kept is not None and kept[0] == mtime:
            return kept[1], kept[2]
        subfolders: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIPPED_FOLDERS and not os.path.exists(
                                os.path.join(entry.path, "pyvenv.cfg")):
                            subfolders.append(entry.path)
                    elif entry.name.endswith(".py") and entry.is_file():
                        files.append(entry.path)
        except OSError:
            return None
        listed = (tuple(sorted(subfolders)), tuple(sorted(files)))
        with self._lock:
            self._folders[folder] = (mtime, *listed)
        return listed


#: Shared by every analysis of the process.
SPELLINGS = SpellingMemo()
BUFFER_SPELLINGS = BufferSpellings()
FOLDERS = FolderTree()


class ProjectWrites:
    """Step 1 for the whole project, taken once for one analysis: which files other than the
    checked one may write attributes, and which names. Step 2 (the parsed trees) is asked per
    question, since it depends on the checked file's classes, and remembered for the analysis.

    ``None`` of :attr:`spellings` means the project is too large to read (every name then
    counts as written elsewhere)."""

    def __init__(self, root: str, entry_path: str, buffers: Mapping[str, str]) -> None:
        self._buffers = buffers
        paths = FOLDERS.python_files(root, MAX_FILES, MAX_FOLDERS)
        self.spellings: list[tuple[str, WriteSpelling]] | None = None
        if paths is not None:
            entry = os.path.normpath(entry_path)
            self.spellings = [(path, spelling) for path in _others(paths, buffers, entry, root)
                              if (spelling := _spelling(path, buffers)) is not None]

    def writes(self, names: frozenset[str], classes: frozenset[str], sources: SourceCache,
               read: dict[str, str]) -> AttributeWrites:
        """The writes of ``names`` that the other files may make to instances of the checked
        file's ``classes``. The files parsed for it are added to ``read`` (absolute path ->
        digest)."""
        if not names:
            return AttributeWrites()
        if self.spellings is None:
            return AttributeWrites(names=names)
        candidates = [path for path, spelling in self.spellings if spelling.may_write(names)]
        if len(candidates) > MAX_PARSED:
            return AttributeWrites(names=names)
        written: set[str] = set()
        contents: set[str] = set()
        for path in candidates:
            loaded = sources.load(path, self._buffers.get(path))
            read[path] = loaded.digest
            if not isinstance(loaded, ParsedSource):
                continue  # a file Python would not run either (too big, binary, nothing parses)
            found = _writes_in(loaded, classes)
            if found.any_name:
                return AttributeWrites(names=names)
            written |= found.names & names
            contents |= found.contents & names
        return AttributeWrites(names=frozenset(written), contents=frozenset(contents))


#: The writes found in a parsed file, per set of the checked file's classes, kept with the parsed
#: file: the source cache hands back the same one while the file's text (or its open buffer's) is
#: the same. Every analysis that builds a ``self`` whose attributes another file may write asks
#: (after an edit of ``__init__``, every keystroke does): each asking walked that file's whole
#: tree again, 18 ms for a sibling the size of DeepSpeed's engine.
_FOUND: weakref.WeakKeyDictionary[ParsedSource, dict[frozenset[str], AttributeWrites]] = weakref.WeakKeyDictionary()
_FOUND_LOCK = threading.Lock()


def _writes_in(loaded: ParsedSource, classes: frozenset[str]) -> AttributeWrites:
    """``foreign_attribute_writes`` of ``loaded``'s tree for ``classes``, once per parsed file."""
    with _FOUND_LOCK:
        per_classes = _FOUND.setdefault(loaded, {})
        found = per_classes.get(classes)
    if found is None:
        found = foreign_attribute_writes(loaded.tree, classes)
        with _FOUND_LOCK:
            per_classes[classes] = found
    return found


def _others(paths: Iterable[str], buffers: Mapping[str, str], entry: str, root: str) -> list[str]:
    """The walked files and the open buffers (not saved yet) under the same root, without the
    checked file."""
    seen = dict.fromkeys(os.path.normpath(path) for path in paths)
    inside = root.rstrip(os.sep) + os.sep
    return [path for path in seen if path != entry] + [
        path for path in buffers
        if path not in seen and path != entry and path.endswith(".py") and path.startswith(inside)]


def _spelling(path: str, buffers: Mapping[str, str]) -> WriteSpelling | None:
    text = buffers.get(path)
    if text is not None:
        return BUFFER_SPELLINGS.spelling(path, text)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return SPELLINGS.spelling(path, stat)
