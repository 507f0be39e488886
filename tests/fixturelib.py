"""Fixture discovery and ``# expect:`` markers, shared by the oracle and the analyzer tests.

A fixture is ``tests/fixtures/<CODE>/bad_*.py`` or ``good_*.py``. A bad fixture
marks the first line of each statement the analyzer must flag with a trailing
comment ``# expect: GL101`` (several codes: ``# expect: GL102, GL203``). Good
fixtures carry no markers. A fixture that must run in its own process (it
changes global state the runner cannot reset, or depends on a warning torch
emits only once per process) says so with a comment line ``# oracle: subprocess``.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

TESTS_DIR = Path(__file__).resolve().parent
FIXTURES_DIR = TESTS_DIR / "fixtures"

CODE_RE = re.compile(r"GL\d{3}")
_MARKER_RE = re.compile(r"#\s*expect\s*:(?P<codes>.*)$", re.I)
_ORACLE_RE = re.compile(r"#\s*oracle\s*:\s*(?P<options>[\w\s,-]+?)\s*$", re.I)
_ORACLE_OPTIONS = {"subprocess"}


class MarkerError(ValueError):
    """A malformed ``# expect:`` or ``# oracle:`` comment (a fixture bug, reported loudly)."""


def _comments(source: str) -> list[tuple[int, str, bool]]:
    """``(line, comment text, trailing)`` for every real comment (not ``#`` inside strings)."""
    result: list[tuple[int, str, bool]] = []
    code_lines: set[int] = set()
    ignorable = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                 tokenize.ENDMARKER, tokenize.ENCODING}
    comments: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments.append((tok.start[0], tok.string))
        elif tok.type not in ignorable:
            for line in range(tok.start[0], tok.end[0] + 1):
                code_lines.add(line)
    for line, text in comments:
        result.append((line, text, line in code_lines))
    return result


def parse_expect_markers(source: str) -> dict[int, tuple[str, ...]]:
    """``{line: (codes...)}`` from trailing ``# expect: GL101, GL203`` comments.

    Raises :class:`MarkerError` for a marker that names no code, names something
    that is not ``GLnnn``, or stands on a line without code (it would point at nothing).
    """
    markers: dict[int, tuple[str, ...]] = {}
    for line, text, trailing in _comments(source):
        match = _MARKER_RE.search(text)
        if not match:
            continue
        parts = [part.strip() for part in match.group("codes").split(",")]
        if not parts or parts == [""]:
            raise MarkerError(f"line {line}: `# expect:` names no code")
        bad = [part for part in parts if not CODE_RE.fullmatch(part)]
        if bad:
            raise MarkerError(f"line {line}: `# expect:` wants codes like GL101, got {bad!r}")
        if not trailing:
            raise MarkerError(f"line {line}: `# expect:` must trail the statement it marks, not stand alone")
        if len(set(parts)) != len(parts):
            raise MarkerError(f"line {line}: `# expect:` repeats a code: {parts!r}")
        markers[line] = tuple(parts)
    return markers


def parse_oracle_options(source: str) -> frozenset[str]:
    """Options from ``# oracle: subprocess`` comment lines."""
    options: set[str] = set()
    for line, text, _trailing in _comments(source):
        match = _ORACLE_RE.search(text)
        if not match:
            continue
        for option in (part.strip().lower() for part in match.group("options").split(",")):
            if option not in _ORACLE_OPTIONS:
                raise MarkerError(
                    f"line {line}: unknown `# oracle:` option {option!r} (known: {sorted(_ORACLE_OPTIONS)})"
                )
            options.add(option)
    return frozenset(options)


@dataclass(frozen=True)
class Fixture:
    """One fixture file and what its comments say."""

    path: Path
    code: str  # the directory's code, e.g. "GL103"
    kind: str  # "bad" or "good"
    source: str = field(repr=False, compare=False)
    markers: dict[int, tuple[str, ...]] = field(repr=False, compare=False, hash=False)
    options: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def id(self) -> str:
        return f"{self.code}/{self.path.name}"

    @property
    def is_bad(self) -> bool:
        return self.kind == "bad"

    @property
    def subprocess(self) -> bool:
        return "subprocess" in self.options

    def lines_marked(self, code: str) -> list[int]:
        """Lines whose marker names ``code``, in order."""
        return sorted(line for line, codes in self.markers.items() if code in codes)

    def line_text(self, line: int) -> str:
        lines = self.source.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def load_fixture(path: Path) -> Fixture:
    path = Path(path)
    kind = path.name.split("_", 1)[0]
    if kind not in ("bad", "good"):
        raise ValueError(f"{path}: a fixture is named bad_*.py or good_*.py")
    source = path.read_text(encoding="utf-8")
    return Fixture(
        path=path,
        code=path.parent.name,
        kind=kind,
        source=source,
        markers=parse_expect_markers(source),
        options=parse_oracle_options(source),
    )


def fixture_dirs(root: Path = FIXTURES_DIR) -> list[Path]:
    """``tests/fixtures/GLnnn`` directories, sorted."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and CODE_RE.fullmatch(p.name))


def fixture_paths(root: Path = FIXTURES_DIR, codes: set[str] | None = None) -> list[Path]:
    paths: list[Path] = []
    for directory in fixture_dirs(root):
        if codes is not None and directory.name not in codes:
            continue
        paths.extend(sorted(directory.glob("bad_*.py")))
        paths.extend(sorted(directory.glob("good_*.py")))
    return paths


def discover_fixtures(root: Path = FIXTURES_DIR, codes: set[str] | None = None) -> list[Fixture]:
    """Every fixture under ``root`` (optionally only some codes), bad before good per code."""
    return [load_fixture(path) for path in fixture_paths(root, codes)]


#: Bad fixtures the engine does not catch yet, with why. Strict: a fix makes the test fail
#: until the entry is removed, so this list can only shrink honestly.
KNOWN_MISSES: dict[str, str] = {
    "GL106/bad_class_weights_from_label_counts.py":
        "the inference tensor goes in through cross_entropy's weight= keyword, "
        "which the saved-tensor table does not measure",
    "GL302/bad_gan_generator_never_zeroed.py":
        "the optimizers live in a dict comprehension keyed by name; which parameters each one steps is unknown",
    "GL304/bad_multitask_sum_unscaled.py":
        "the step guard's optimizer and the backward's parameters are not matched through the dict-returning model",
}


# --------------------------------------------------------------------------- multi-file projects

PROJECTS_DIR = FIXTURES_DIR / "projects"

#: The verdicts a bad project's ``fixture.toml`` can name (see tests/fixtures/projects/README.md).
PROJECT_ORACLES = ("raises", "leaks", "wrong_grad")
_PROJECT_KEYS = {"description", "run", "module", "pythonpath", "oracle", "error", "exception", "raises_on_marker"}


@dataclass(frozen=True)
class ProjectSettings:
    """What a project's ``fixture.toml`` says: how a user runs it and, for a bad one, what torch shows."""

    description: str
    run: tuple[str, ...] = ()  # scripts, relative to the project dir: ``python train.py`` with cwd = project dir
    module: str | None = None  # ``python -m pkg.train`` with cwd = project dir
    pythonpath: tuple[str, ...] = ()  # folders (relative) on PYTHONPATH, e.g. ("src",)
    oracle: str | None = None  # bad projects: one of PROJECT_ORACLES
    error: str | None = None  # ``raises``: a substring of torch's message
    exception: str = "RuntimeError"  # ``raises``: the exception's class name
    raises_on_marker: bool = True  # ``raises``: the innermost project frame of the traceback is a marked line


class Project(NamedTuple):
    """One fixture project: unpacks as ``name, dir, settings, markers``.

    ``markers`` maps each ``.py`` file's path relative to ``dir`` (POSIX form,
    e.g. ``"src/tinyvae/model.py"``) to its ``{line: codes}``; files without
    markers are left out.
    """

    name: str
    dir: Path
    settings: ProjectSettings
    markers: dict[str, dict[int, tuple[str, ...]]]

    @property
    def is_bad(self) -> bool:
        return self.name.startswith("bad_")

    @property
    def twin(self) -> str:
        """The other project of the pair: ``bad_x`` <-> ``good_x``."""
        kind, rest = self.name.split("_", 1)
        return f"{'good' if kind == 'bad' else 'bad'}_{rest}"

    def expected(self) -> set[tuple[str, int, str]]:
        """``(relative path, line, code)`` of every marker across the project's files."""
        return {(rel, line, code) for rel, lines in self.markers.items() for line, codes in lines.items()
                for code in codes}

    def python_roots(self) -> list[Path]:
        """Where Python looks for the project's own modules, first match wins (``sys.path`` order)."""
        first = [self.dir / Path(self.settings.run[0]).parent] if self.settings.run else [self.dir]
        return first + [self.dir / extra for extra in self.settings.pythonpath]

    def entry_files(self) -> list[Path]:
        """The files a user runs: the scripts, or the module's file found as ``python -m`` would find it."""
        if self.settings.run:
            return [self.dir / script for script in self.settings.run]
        assert self.settings.module is not None
        parts = self.settings.module.split(".")
        for root in self.python_roots():
            for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__main__.py")):
                if candidate.is_file():
                    return [candidate]
        raise ValueError(f"{self.name}: module {self.settings.module!r} is not under {self.python_roots()}")

    def commands(self) -> list[list[str]]:
        """The argument lists after ``python``: ``["train.py"]`` or ``["-m", "pkg.train"]``."""
        if self.settings.module is not None:
            return [["-m", self.settings.module]]
        return [[script] for script in self.settings.run]


def _project_settings(path: Path) -> ProjectSettings:
    import tomllib

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(data) - _PROJECT_KEYS
    if unknown:
        raise MarkerError(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(_PROJECT_KEYS)})")
    if not isinstance(data.get("description"), str) or not data["description"].strip():
        raise MarkerError(f"{path}: `description` says in a sentence what the project does (and its bug)")
    run, module = data.get("run", []), data.get("module")
    if bool(run) == (module is not None):
        raise MarkerError(f"{path}: give exactly one of `run = [\"train.py\"]` and `module = \"pkg.train\"`")
    if not isinstance(run, list) or not all(isinstance(item, str) for item in run):
        raise MarkerError(f"{path}: `run` is a list of script paths")
    return ProjectSettings(
        description=data["description"],
        run=tuple(run),
        module=module,
        pythonpath=tuple(data.get("pythonpath", [])),
        oracle=data.get("oracle"),
        error=data.get("error"),
        exception=data.get("exception", "RuntimeError"),
        raises_on_marker=bool(data.get("raises_on_marker", True)),
    )


def _project_markers(directory: Path) -> dict[str, dict[int, tuple[str, ...]]]:
    markers: dict[str, dict[int, tuple[str, ...]]] = {}
    for path in sorted(directory.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        found = parse_expect_markers(path.read_text(encoding="utf-8"))
        if found:
            markers[path.relative_to(directory).as_posix()] = found
    return markers


def load_project(directory: Path) -> Project:
    """One project, checked for consistency: a bad one names its oracle and marks a line, a good one marks none."""
    directory = Path(directory)
    settings = _project_settings(directory / "fixture.toml")
    project = Project(directory.name, directory, settings, _project_markers(directory))
    where = directory / "fixture.toml"
    if project.is_bad:
        if settings.oracle not in PROJECT_ORACLES:
            raise MarkerError(f"{where}: a bad project says `oracle = ` one of {PROJECT_ORACLES}")
        if settings.oracle == "raises" and not settings.error:
            raise MarkerError(f"{where}: `oracle = \"raises\"` needs `error = \"<part of torch's message>\"`")
        if not project.markers:
            raise MarkerError(f"{directory}: a bad project marks the wrong statements with `# expect: GLnnn`")
    else:
        if settings.oracle is not None or settings.error is not None:
            raise MarkerError(f"{where}: a good project has no `oracle` or `error` (it must run clean)")
        if project.markers:
            raise MarkerError(f"{directory}: a good project carries markers: {sorted(project.markers)}")
    return project


def iter_projects(root: Path = PROJECTS_DIR) -> Iterator[Project]:
    """Every ``bad_*``/``good_*`` folder with a ``fixture.toml`` under ``root``, sorted by name."""
    if not root.is_dir():
        return
    for directory in sorted(root.iterdir()):
        if directory.is_dir() and directory.name.startswith(("bad_", "good_")):
            yield load_project(directory)
