"""The on-disk cache of check results: a re-check of an unchanged project reuses them, and
any change that could change a finding makes them stale.

Why it matters to a user: a stale hit shows findings for code that is no longer there (or
hides new ones), which is worse than no cache; and a cache problem (a read-only checkout, a
full disk, a half-written file) must never make the check itself fail. Each test builds a
small project in a temporary folder: ``train.py`` checked, importing ``losses.py``.
"""

from __future__ import annotations

import ast
import marshal
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import graphlife
from graphlife.analysis.tree_index import TreeIndex
from graphlife.config import Config
from graphlife.findings import Severity
from graphlife.project import resolver, result_cache, sources
from graphlife.project.provider import ProjectModules
from graphlife.project.result_cache import ResultCache, default_cache_folder, settings_key, text_hash

LOSSES = "def l1(x):\n    return x.abs().sum()\n"
PAYLOAD = {"findings": [{"code": "GL101", "line": 3, "message": "in-place op on a saved tensor"}]}
AN_HOUR_AGO_NS = time.time_ns() - 3600 * 10**9


def write_settled(path: Path, text: str, mtime_ns: int = AN_HOUR_AGO_NS) -> None:
    """Write a file as one saved a while ago (a stat this old is trusted by the cache)."""
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    write_settled(tmp_path / "train.py", "import torch\nimport helpers\nfrom losses import l1\n")
    write_settled(tmp_path / "losses.py", LOSSES)
    os.utime(tmp_path, ns=(AN_HOUR_AGO_NS, AN_HOUR_AGO_NS))
    return tmp_path


def analysed(project: Path) -> ProjectModules:
    """The project layer after the analysis of train.py: ``losses`` read, ``torch`` and
    ``helpers`` searched for in the project's folders and not found there."""
    provider = ProjectModules(str(project / "train.py"))
    source = (project / "train.py").read_text()
    tree = ast.parse(source)
    entry = provider.entry(str(project / "train.py"), tree, source, source.splitlines(), TreeIndex.of_module(tree))
    for name in ("torch", "helpers", "losses"):
        provider.find(entry, name, 0)
    return provider


def store_train(cache: ResultCache, project: Path, payload: object = PAYLOAD, settings: str | None = None) -> None:
    """Store as the checker does after analysing train.py, when losses.py had the text LOSSES."""
    cache.store(str(project / "train.py"), text_hash((project / "train.py").read_text()),
                settings or settings_key(Config()), {str(project / "losses.py"): text_hash(LOSSES)}, payload,
                folders=analysed(project).folders_searched())


def lookup_train(project: Path, settings: str | None = None) -> result_cache.CachedResult | None:
    """A lookup as a later run of the checker makes it: a new process, a new cache object."""
    cache = ResultCache(default_cache_folder(project / "train.py"))
    return cache.lookup(str(project / "train.py"), text_hash((project / "train.py").read_text()),
                        settings or settings_key(Config()))


def test_an_unchanged_file_and_its_imports_give_back_what_was_stored(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    cached = lookup_train(project)
    assert cached is not None
    assert cached.payload == PAYLOAD
    assert cached.dependencies == {str(project / "losses.py"): text_hash(LOSSES)}


def test_a_relative_spelling_of_the_entry_finds_the_same_record(project, monkeypatch):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    monkeypatch.chdir(project)
    cache = ResultCache(Path(".graphlife_cache"))
    cached = cache.lookup("train.py", text_hash((project / "train.py").read_text()), settings_key(Config()))
    assert cached is not None and cached.payload == PAYLOAD


def test_an_edited_entry_file_is_a_miss(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    write_settled(project / "train.py", "import torch\nfrom losses import l1 as loss\n")
    assert lookup_train(project) is None


def test_an_import_whose_content_changed_is_a_miss(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    write_settled(project / "losses.py", LOSSES.replace("abs", "exp"), AN_HOUR_AGO_NS + 10**9)  # same size
    assert lookup_train(project) is None


def test_an_import_touched_but_unchanged_is_still_a_hit(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    os.utime(project / "losses.py", ns=(AN_HOUR_AGO_NS + 10**9,) * 2)  # a `touch`, a `git checkout`
    cached = lookup_train(project)
    assert cached is not None and cached.payload == PAYLOAD


def test_an_unchanged_import_is_not_read_again(project, monkeypatch):
    """What makes a hit cheap: an import or a folder whose stat is the one recorded is
    trusted; after a touch, it is read once and its new stat is recorded for the next runs."""
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    os.utime(project / "losses.py", ns=(AN_HOUR_AGO_NS + 10**9,) * 2)
    os.utime(project, ns=(AN_HOUR_AGO_NS, AN_HOUR_AGO_NS))  # the cache folder was created in it
    assert lookup_train(project) is not None  # reads losses.py and lists the folder once

    def no_reading(what: object) -> str:
        raise AssertionError(f"{what} was read again")

    monkeypatch.setattr(sources, "file_digest", no_reading)  # where the cache takes them from
    monkeypatch.setattr(resolver, "listing_digest", no_reading)
    assert lookup_train(project) is not None


def test_an_import_edited_within_the_same_clock_tick_is_a_miss(project):
    """A file written just now may be written again with the same mtime and size: its stat
    proves nothing, so the cache reads it again."""
    mtime_ns = time.time_ns()
    write_settled(project / "losses.py", LOSSES, mtime_ns)
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    write_settled(project / "losses.py", LOSSES.replace("abs", "exp"), mtime_ns)  # same stat
    assert lookup_train(project) is None


def test_a_deleted_import_is_a_miss(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    (project / "losses.py").unlink()
    assert lookup_train(project) is None


def test_a_module_created_where_an_import_found_nothing_is_a_miss(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    write_settled(project / "helpers.py", "def f(x):\n    return x\n")
    assert lookup_train(project) is None


def test_a_module_created_ahead_of_the_one_found_is_a_miss(project):
    """``python experiments/train.py`` searches the script's folder first: a new
    ``experiments/losses.py`` is what ``from losses import l1`` now imports."""
    (project / "experiments").mkdir()
    (project / "train.py").rename(project / "experiments/train.py")
    cache = ResultCache(default_cache_folder(project / "experiments/train.py"))
    entry = project / "experiments/train.py"
    provider = ProjectModules(str(entry))
    source = entry.read_text()
    tree = ast.parse(source)
    provider.find(provider.entry(str(entry), tree, source, source.splitlines(), TreeIndex.of_module(tree)),
                  "losses", 0)
    assert provider.dependencies() == {str(project / "losses.py"): text_hash(LOSSES)}
    cache.store(str(entry), text_hash(source), settings_key(Config()), provider.dependencies(), PAYLOAD,
                folders=provider.folders_searched())
    assert cache.lookup(str(entry), text_hash(source), settings_key(Config())) is not None
    write_settled(project / "experiments/losses.py", LOSSES)  # the same text, but another file
    assert cache.lookup(str(entry), text_hash(source), settings_key(Config())) is None


def test_files_that_python_cannot_import_saved_beside_the_modules_keep_the_hit(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    for name in (".train.py.swp", "train.py~", "notes.txt", "my-script.py", "__pycache__/losses.cpython-311.pyc"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text("")
    cached = lookup_train(project)
    assert cached is not None and cached.payload == PAYLOAD


def test_a_result_computed_from_an_import_edited_during_the_check_is_not_kept(project):
    write_settled(project / "losses.py", LOSSES.replace("abs", "exp"))  # saved after the analysis read it
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    assert lookup_train(project) is None


def test_other_settings_are_a_miss(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    assert lookup_train(project, settings_key(Config(select=("GL1",)))) is None
    assert lookup_train(project) is not None


def test_another_graphlife_version_is_a_miss(project, monkeypatch):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    monkeypatch.setattr(graphlife, "__version__", "99.0.0")
    assert lookup_train(project) is None


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # a write cut short
    lambda data: b"",
    lambda data: b"\x00\xff garbage",
    lambda data: marshal.dumps([]),  # readable, not a record
    lambda data: b"{" + data[1:],  # the layout of format 1 (JSON) where marshal expects its own
    lambda data: marshal.dumps({**marshal.loads(data), "format": 1}),  # another format
    lambda data: marshal.dumps({**marshal.loads(data), "python": "cpython-0"}),  # another Python
    lambda data: marshal.dumps({**marshal.loads(data),  # a record with a field of the wrong type
                                "folders": {path: {**known, "stat": ["x", 1]}
                                            for path, known in marshal.loads(data)["folders"].items()}}),
])
def test_a_damaged_record_is_a_miss_and_is_replaced(project, damage):
    cache = ResultCache(default_cache_folder(project / "train.py"))
    store_train(cache, project)
    (record,) = default_cache_folder(project).glob("*.rec")
    record.write_bytes(damage(record.read_bytes()))
    assert lookup_train(project) is None
    store_train(cache, project)
    assert lookup_train(project) is not None


def test_a_cache_folder_that_cannot_be_created_leaves_the_check_uncached_with_one_warning(project):
    (project / "not-a-folder").write_text("")
    cache = ResultCache(project / "not-a-folder" / ".graphlife_cache")
    store_train(cache, project)
    store_train(cache, project)
    (warning,) = cache.warnings()
    assert "not-a-folder" in warning and "not cached" in warning
    assert cache.lookup(str(project / "train.py"), text_hash((project / "train.py").read_text()),
                        settings_key(Config())) is None


def test_a_full_disk_leaves_no_temporary_file_and_one_warning(project, monkeypatch):
    def disk_full(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(result_cache.os, "replace", disk_full)
    cache = ResultCache(default_cache_folder(project / "train.py"))
    store_train(cache, project)
    assert cache.warnings() == [
        f"graphlife: cannot write its cache in {cache.folder} (No space left on device); results are not cached"]
    assert list(cache.folder.iterdir()) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes in read-only folders")
def test_a_read_only_cache_folder_still_gives_hits(project):
    cache = ResultCache(default_cache_folder(project / "train.py"))
    store_train(cache, project)
    cache.folder.chmod(0o555)
    try:
        os.utime(project / "losses.py", ns=(AN_HOUR_AGO_NS + 10**9,) * 2)  # the hit wants to refresh the record
        reader = ResultCache(cache.folder)
        assert reader.lookup(str(project / "train.py"), text_hash((project / "train.py").read_text()),
                             settings_key(Config())) is not None
        store_train(reader, project, {"findings": []})
        assert len(reader.warnings()) == 1
    finally:
        cache.folder.chmod(0o755)


def test_the_cache_folder_is_ignored_by_git_and_by_backup_tools(project):
    store_train(ResultCache(default_cache_folder(project / "train.py")), project)
    folder = project / ".graphlife_cache"
    assert "*" in (folder / ".gitignore").read_text().splitlines()
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    if shutil.which("git") is not None:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=project,
                                capture_output=True, text=True, check=True).stdout
        assert "train.py" in status and ".graphlife_cache" not in status


def test_two_processes_writing_the_same_record_leave_a_whole_one_and_readers_never_see_a_part(project):
    folder = default_cache_folder(project / "train.py")
    writer = textwrap.dedent(f"""
        import sys
        from graphlife.config import Config
        from graphlife.project.result_cache import ResultCache, settings_key, text_hash
        cache = ResultCache({str(folder)!r})
        for round in range(150):
            cache.store({str(project / "train.py")!r}, text_hash({(project / "train.py").read_text()!r}),
                        settings_key(Config()),
                        {{{str(project / "losses.py")!r}: text_hash({LOSSES!r})}},
                        {{"writer": sys.argv[1], "round": round, "padding": "x" * 20000}})
        assert not cache.warnings(), cache.warnings()
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(graphlife.__file__).parent.parent)}
    writers = [subprocess.Popen([sys.executable, "-c", writer, name], env=env, stderr=subprocess.PIPE, text=True)
               for name in ("a", "b")]
    seen_whole = misses_after = 0
    while any(process.poll() is None for process in writers):  # a reader meanwhile sees whole records
        if lookup_train(project) is not None:
            seen_whole += 1
        elif seen_whole:
            misses_after += 1
    assert misses_after == 0
    for process in writers:
        _, errors = process.communicate(timeout=120)
        assert process.returncode == 0, errors
    cached = lookup_train(project)
    assert cached is not None
    assert cached.payload["writer"] in ("a", "b") and cached.payload["round"] == 149
    assert sorted(path.name for path in folder.iterdir() if path.name.startswith(".tmp-")) == []


def test_the_default_folder_is_at_the_project_root_else_in_the_checked_folder(tmp_path):
    (tmp_path / "repo/experiments/gan").mkdir(parents=True)
    (tmp_path / "repo/pyproject.toml").write_text("")
    (tmp_path / "repo/experiments/gan/train.py").write_text("")
    assert default_cache_folder(tmp_path / "repo/experiments/gan/train.py") == tmp_path / "repo/.graphlife_cache"
    assert default_cache_folder(tmp_path / "repo/experiments") == tmp_path / "repo/.graphlife_cache"
    if result_cache.find_project_root(str(tmp_path)) is None:  # nothing above the temporary folder
        (tmp_path / "loose").mkdir()
        (tmp_path / "loose/train.py").write_text("")
        assert default_cache_folder(tmp_path / "loose") == tmp_path / "loose/.graphlife_cache"
        assert default_cache_folder(tmp_path / "loose/train.py") == tmp_path / "loose/.graphlife_cache"


def test_text_hash_is_the_hash_the_project_layer_records_for_an_import(project):
    provider = ProjectModules(str(project / "train.py"))
    source = (project / "train.py").read_text()
    tree = ast.parse(source)
    entry = provider.entry(str(project / "train.py"), tree, source, source.splitlines(), TreeIndex.of_module(tree))
    provider.find(entry, "losses", 0)
    assert provider.dependencies() == {str(project / "losses.py"): text_hash(LOSSES)}


def test_settings_that_do_not_change_findings_keep_the_key():
    base = Config(select=("GL1",), severity={"GL101": Severity.WARNING, "GL2": None})
    assert settings_key(base) == settings_key(Config(select=("GL1",), severity={"GL2": None, "GL101": Severity.WARNING},
                                                     lint_on_change=False, problems=("a setting was ignored",)))


@pytest.mark.parametrize("changed", [
    Config(enable=False), Config(select=("GL1",)), Config(ignore=("GL105",)),
    Config(severity={"GL101": Severity.HINT}), Config(severity={"GL101": None}), Config(src=("lib",)),
])
def test_settings_that_change_findings_change_the_key(changed):
    assert settings_key(changed) != settings_key(Config())


def test_a_relative_src_folder_means_another_folder_from_elsewhere(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    from_a = settings_key(Config(src=("lib",)))
    monkeypatch.chdir(tmp_path / "b")
    assert settings_key(Config(src=("lib",))) != from_a


def test_the_settings_key_is_the_same_in_another_process():
    """Workers of the process pool and later runs must agree (no salted ``hash()``)."""
    script = ("from graphlife.config import Config; from graphlife.findings import Severity; "
              "from graphlife.project.result_cache import settings_key; "
              "print(settings_key(Config(select=('GL1',), severity={'GL101': Severity.HINT}, src=('/lib',))))")
    env = {**os.environ, "PYTHONPATH": str(Path(graphlife.__file__).parent.parent), "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert other.stdout.strip() == settings_key(Config(select=("GL1",), severity={"GL101": Severity.HINT},
                                                       src=("/lib",)))
