"""Attribute writes in other files of the project weaken the `self` of a method analyzed alone.

A method that nothing in its file calls starts from what `__init__` made; another file
that assigns the attribute on an instance makes that start a guess, and an error built
on it could be false (the critic fixture projects show the torch truth of the shape).
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

from graphlife.analysis.unseen_writes import foreign_attribute_writes
from graphlife.checker import check_source
from graphlife.project import foreign_writes
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import SourceCache

MODELS = textwrap.dedent("""\
    import torch
    from torch import nn


    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 1)
            self.captured = torch.zeros(1)

        def finish(self):
            self.captured.sum().backward()
    """)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _codes(root: Path, name: str, buffers: dict[str, str] | None = None) -> list[tuple[int, str, str]]:
    path = str(root / name)
    modules = ProjectModules(path, buffers=buffers, sources=SourceCache(), cwd=str(root))
    text = (buffers or {}).get(path) or (root / name).read_text()
    result = check_source(text, path, modules=modules)
    return [(f.line, f.code, f.severity.value) for f in result.findings]


def test_a_write_in_another_file_removes_the_error(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "train.py": """\
        import torch
        from models import Probe

        probe = Probe()
        probe.captured = probe.lin(torch.randn(2, 4))
        probe.finish()
        """})
    assert _codes(root, "models.py") == []


def test_without_a_write_elsewhere_the_error_stays(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "train.py": """\
        import torch
        from models import Probe

        probe = Probe()
        print(probe.captured)
        probe.finish()
        """})
    assert _codes(root, "models.py") == [(12, "GL104", "error")]


def test_another_class_writing_its_own_self_does_not_count(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "other/recorder.py": """\
        class Recorder:
            def __init__(self):
                self.captured = None

            def record(self, value):
                self.captured = value
        """})
    assert _codes(root, "models.py") == [(12, "GL104", "error")]


def test_a_subclass_writing_its_self_counts(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "hooks.py": """\
        import models

        class Capturing(models.Probe):
            def capture(self, x):
                self.captured = self.lin(x)
        """})
    assert _codes(root, "models.py") == []


def test_a_helper_given_the_instance_counts(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "utils/capture.py": """\
        def capture(module, x):
            module.captured = module.lin(x)
        """})
    assert _codes(root, "models.py") == []


def test_an_unsaved_buffer_of_another_file_counts(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "train.py": "import models\n"})
    unsaved = "import torch\nfrom models import Probe\np = Probe()\np.captured = p.lin(torch.randn(2, 4))\n"
    buffer = {str(root / "train.py"): unsaved}
    assert _codes(root, "models.py", buffers=buffer) == []


def test_an_open_buffer_is_scanned_again_only_when_its_text_changes(tmp_path: Path, monkeypatch) -> None:
    """The language server gives every analysis the text of every open document: each buffer's
    text is scanned once while it stays the same, and again when it changes (the write typed
    into it counts at once)."""
    root = _project(tmp_path, {"models.py": MODELS, "train.py": "import models\n"})
    monkeypatch.setattr(foreign_writes, "BUFFER_SPELLINGS", foreign_writes.BufferSpellings())
    scans: list[int] = []
    scan = foreign_writes.WriteSpelling.of

    def counted(data: bytes) -> foreign_writes.WriteSpelling:
        scans.append(len(data))
        return scan(data)

    monkeypatch.setattr(foreign_writes.WriteSpelling, "of", staticmethod(counted))
    train = str(root / "train.py")
    unrelated = "import torch\nfrom models import Probe\np = Probe()\n"
    for _ in range(3):
        assert _codes(root, "models.py", buffers={train: unrelated}) == [(12, "GL104", "error")]
    assert len(scans) == 1
    writes = unrelated + "p.captured = p.lin(torch.randn(2, 4))\n"
    assert _codes(root, "models.py", buffers={train: writes}) == []
    assert len(scans) == 2


def test_another_file_is_walked_for_writes_once_while_its_text_is_the_same(tmp_path: Path, monkeypatch) -> None:
    """A ``self`` built again (every edit of ``__init__`` in the language server) asks which of its
    attributes the other files write: a file whose parsed text is the one the source cache keeps
    is walked once per set of the checked file's classes, and again when its text changes."""
    root = _project(tmp_path, {"models.py": MODELS, "train.py": "import models\n"})
    walks: list[frozenset[str]] = []
    walk = foreign_writes.foreign_attribute_writes

    def counted(tree: ast.AST, classes: frozenset[str]):
        walks.append(classes)
        return walk(tree, classes)

    monkeypatch.setattr(foreign_writes, "foreign_attribute_writes", counted)
    sources = SourceCache()
    models, train = str(root / "models.py"), str(root / "train.py")

    def codes(buffers: dict[str, str]) -> list[tuple[int, str, str]]:
        modules = ProjectModules(models, buffers=buffers, sources=sources, cwd=str(root))
        result = check_source(MODELS, models, modules=modules)
        return [(f.line, f.code, f.severity.value) for f in result.findings]

    # a class of its own writing its own `captured`: read for it (its spelling may write the name)
    unrelated = "class Other:\n    def set(self):\n        self.captured = 1\n"
    for _ in range(3):
        assert codes({train: unrelated}) == [(12, "GL104", "error")]
    assert walks == [frozenset({"Probe"})]
    writes = unrelated + "import torch\nfrom models import Probe\np = Probe()\np.captured = p.lin(torch.randn(2, 4))\n"
    assert codes({train: writes}) == []
    assert codes({train: writes}) == []
    assert len(walks) == 2


def test_the_files_that_decide_are_dependencies(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODELS, "train.py": "from models import Probe\nProbe().captured = 1\n",
                               "unrelated.py": "x = 1\n"})
    path = str(root / "models.py")
    modules = ProjectModules(path, sources=SourceCache(), cwd=str(root))
    check_source(MODELS, path, modules=modules)
    assert set(modules.dependencies()) == {os.path.normpath(str(root / "train.py"))}


def test_too_many_candidates_weaken_every_name(tmp_path: Path, monkeypatch) -> None:
    files = {"models.py": MODELS}
    files.update({f"reader{i}.py": f"def f(o):\n    o.captured[{i}] = 0\n" for i in range(3)})
    root = _project(tmp_path, files)
    monkeypatch.setattr(foreign_writes, "MAX_PARSED", 2)
    assert _codes(root, "models.py") == []


def test_too_many_folders_weaken_every_name(tmp_path: Path, monkeypatch) -> None:
    """A project past the folder limit (a dataset of image folders beside the script) is not
    walked: the write that removes the error may be in a folder not listed."""
    root = _project(tmp_path, {"models.py": MODELS, "data/a/readme.txt": "", "data/b/readme.txt": ""})
    assert _codes(root, "models.py") == [(12, "GL104", "error")]
    monkeypatch.setattr(foreign_writes, "MAX_FOLDERS", 2)
    assert _codes(root, "models.py") == []


def test_the_project_is_walked_once_per_analysis(tmp_path: Path, monkeypatch) -> None:
    """A file with several classes asks once per class; the folders are listed once."""
    two_classes = MODELS + textwrap.dedent("""

        class Other(nn.Module):
            def __init__(self):
                super().__init__()
                self.kept = torch.zeros(1)

            def finish(self):
                self.kept.sum().backward()
        """)
    root = _project(tmp_path, {"models.py": two_classes, "train.py": "x = 1\n"})
    walks: list[str] = []
    walk = foreign_writes.FolderTree.python_files

    def counted(self, folder: str, limit: int, folder_limit: int):
        walks.append(folder)
        return walk(self, folder, limit, folder_limit)

    monkeypatch.setattr(foreign_writes.FolderTree, "python_files", counted)
    path = str(root / "models.py")
    modules = ProjectModules(path, sources=SourceCache(), cwd=str(root))
    found = check_source(two_classes, path, modules=modules).findings
    assert [(f.line, f.code) for f in found] == [(12, "GL104"), (21, "GL104")]
    assert len(walks) == 1


def test_the_collector_keeps_what_may_reach_the_instance() -> None:
    tree = ast.parse(textwrap.dedent("""\
        class Other:
            def set(self, v):
                self.own = v
                def hook(self, out):
                    self.hooked = out
                helper = lambda: setattr_free(self)
                self.items[0] = v
                self.buffer.append(v)

        class Derived(Base):
            def set(self, v):
                self.derived = v

        def external(model, v):
            setattr(model, "named", v)
            model.external = v
            model.queue.append(v)
            model.table[1] = v
        """))
    found = foreign_attribute_writes(tree, frozenset({"Base"}))
    assert found.names == {"hooked", "derived", "external", "named"}
    assert found.contents == {"queue", "table"}
    assert not found.any_name


def test_the_spelling_scan_over_approximates() -> None:
    spelling = foreign_writes.WriteSpelling.of(b"a.x = 1\nb.y += 2\nc.z[0] = 3\nd.w.append(4)\ne.p, f.q = g()\n"
                                               b"del h.r\nif i.s == 1: pass\n(j.t,\n k.u) = g()\n")
    assert {"x", "y", "z", "w", "p", "q", "r", "t", "u"} <= spelling.names
    assert "s" not in spelling.names
    assert not spelling.any_name
    assert foreign_writes.WriteSpelling.of(b"setattr(m, name, v)\n").any_name
