"""The engine follows imports into the user's other modules, as Python would run them.

Each test writes a small project in ``tmp_path`` and checks its entry file the way the
CLI does (:func:`graphlife.checker.project_modules`), then asserts what a user sees:
which rule fires, in which file, on which line, and what the message names.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlife.checker import check_source, project_modules
from graphlife.config import Config
from graphlife.findings import Finding

BLOCK_WITH_INPLACE = """
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = torch.sigmoid(self.fc(x))
            h.mul_(2)
            return h.sum()
"""

TRAIN_WITH_BLOCK = """
    import torch
    {import_line}

    model = {make}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(2, 4))
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def check(root: Path, entry: str, project: bool = True) -> list[Finding]:
    path = str(root / entry)
    source = Path(path).read_text()
    modules = project_modules(path, Config()) if project else None
    return check_source(source, path, modules=modules).findings


def where(findings: list[Finding], root: Path, entry: str) -> set[tuple[str, int, str]]:
    """(file relative to the project, line, code) of each finding."""
    return {
        (str(Path(f.span.path).relative_to(root)) if f.span.path else entry, f.span.line, f.code) for f in findings
    }


def test_a_bug_in_an_imported_class_lands_in_its_file_naming_the_backward_in_the_entry(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": BLOCK_WITH_INPLACE,
        "train.py": TRAIN_WITH_BLOCK.format(import_line="from layers import Block", make="Block()"),
    })
    findings = check(tmp_path, "train.py")
    assert where(findings, tmp_path, "train.py") == {("layers.py", 12, "GL102")}
    (finding,) = findings
    assert "backward at line 9 of train.py" in finding.message
    assert finding.fixes == ()  # a fix edits the file checked, not another one
    related = {(r.span.path, r.span.line) for r in finding.related}
    assert (str(tmp_path / "layers.py"), 11) in related  # where sigmoid saved its output
    assert (None, 9) in related  # the backward, in the file checked


def test_without_the_project_the_import_stays_unknown(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": BLOCK_WITH_INPLACE,
        "train.py": TRAIN_WITH_BLOCK.format(import_line="from layers import Block", make="Block()"),
    })
    assert check(tmp_path, "train.py", project=False) == []


def test_import_module_as_alias_and_attribute_access(tmp_path: Path) -> None:
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": BLOCK_WITH_INPLACE,
        "train.py": TRAIN_WITH_BLOCK.format(import_line="import pkg.layers as L", make="L.Block()"),
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("pkg/layers.py", 12, "GL102")}


def test_plain_import_of_a_dotted_module(tmp_path: Path) -> None:
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": BLOCK_WITH_INPLACE,
        "train.py": TRAIN_WITH_BLOCK.format(import_line="import pkg.layers", make="pkg.layers.Block()"),
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("pkg/layers.py", 12, "GL102")}


def test_relative_imports_and_a_re_export_through_init(tmp_path: Path) -> None:
    write(tmp_path, {
        "pkg/__init__.py": "from .nets import Block\n__all__ = ['Block']\n",
        "pkg/nets.py": BLOCK_WITH_INPLACE,
        "pkg/train.py": TRAIN_WITH_BLOCK.format(import_line="from . import Block", make="Block()"),
    })
    assert where(check(tmp_path, "pkg/train.py"), tmp_path, "pkg/train.py") == {("pkg/nets.py", 12, "GL102")}


def test_from_package_import_submodule(tmp_path: Path) -> None:
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/nets.py": BLOCK_WITH_INPLACE,
        "pkg/train.py": TRAIN_WITH_BLOCK.format(import_line="from . import nets", make="nets.Block()"),
    })
    assert where(check(tmp_path, "pkg/train.py"), tmp_path, "pkg/train.py") == {("pkg/nets.py", 12, "GL102")}


def test_star_import_honours_dunder_all(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": textwrap.dedent(BLOCK_WITH_INPLACE) + "\n__all__ = ['Block']\n",
        "train.py": TRAIN_WITH_BLOCK.format(import_line="from layers import *", make="Block()"),
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("layers.py", 12, "GL102")}


def test_imports_inside_a_function_and_a_try_block(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": BLOCK_WITH_INPLACE,
        "train.py": """
            import torch


            def build():
                try:
                    from layers import Block
                except ImportError:
                    raise SystemExit("layers missing")
                return Block()


            model = build()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = model(torch.randn(2, 4))
            loss.backward()
        """,
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("layers.py", 12, "GL102")}


def test_module_level_objects_are_shared_by_importers(tmp_path: Path) -> None:
    """A model and optimizer built at the top of another module are the same objects in
    every importer: the missing ``zero_grad`` is seen through them."""
    write(tmp_path, {
        "setup_model.py": """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
        """,
        "train.py": """
            import torch
            from setup_model import model, opt

            for step in range(3):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                loss.backward()
                opt.step()
        """,
    })
    single = where(check(tmp_path, "train.py", project=False), tmp_path, "train.py")
    project = where(check(tmp_path, "train.py"), tmp_path, "train.py")
    assert ("train.py", 7, "GL302") in project
    assert ("train.py", 7, "GL302") not in single


def test_an_imported_modules_main_block_does_not_run(tmp_path: Path) -> None:
    """``if __name__ == "__main__":`` of an imported module is not run: its bug is not
    reached from the importer (checking that module itself finds it)."""
    write(tmp_path, {
        "helpers.py": """
            import torch

            def scale(x):
                return x * 2

            if __name__ == "__main__":
                w = torch.ones(3, requires_grad=True)
                loss = (w * 2).sum()
                loss.backward()
                loss.backward()
        """,
        "train.py": """
            from helpers import scale
            print(scale(3))
        """,
    })
    assert check(tmp_path, "train.py") == []
    assert where(check(tmp_path, "helpers.py"), tmp_path, "helpers.py") == {("helpers.py", 10, "GL101")}


def test_an_import_cycle_terminates(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.py": "import b\n\ndef f(x):\n    return b.g(x)\n",
        "b.py": "import a\n\ndef g(x):\n    return x\n",
        "train.py": """
            import torch
            import a

            w = torch.ones(3, requires_grad=True)
            loss = a.f(w * 2).sum()
            loss.backward()
            loss.backward()
        """,
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("train.py", 7, "GL101")}


def test_an_imported_function_sees_its_own_modules_names_not_the_callers(tmp_path: Path) -> None:
    """``losses.total`` reads ``SCALE`` and ``criterion`` of its own module; the caller's
    ``criterion`` (a function that detaches) must not stand in for it."""
    write(tmp_path, {
        "losses.py": """
            import torch.nn as nn

            criterion = nn.MSELoss()

            def total(pred, target):
                return criterion(pred, target)
        """,
        "train.py": """
            import torch
            import torch.nn as nn
            from losses import total

            def criterion(pred, target):
                return (pred.detach() - target).pow(2).mean()

            model = nn.Linear(4, 1)
            x, y = torch.randn(8, 4), torch.randn(8, 1)
            loss = total(model(x), y)
            loss.backward()
            loss.backward()
        """,
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("train.py", 12, "GL101")}


def test_a_library_import_is_not_taken_for_a_project_module(tmp_path: Path) -> None:
    write(tmp_path, {
        "train.py": """
            import torch
            import torch.nn.functional as F

            w = torch.ones(3, requires_grad=True)
            loss = F.relu(w * 2).sum()
            loss.backward()
            loss.backward()
        """,
    })
    assert where(check(tmp_path, "train.py"), tmp_path, "train.py") == {("train.py", 7, "GL101")}


def test_ignore_comment_in_the_other_file_is_honoured(tmp_path: Path) -> None:
    write(tmp_path, {
        "layers.py": BLOCK_WITH_INPLACE.replace("h.mul_(2)", "h.mul_(2)  # graphlife: ignore[GL102]"),
        "train.py": TRAIN_WITH_BLOCK.format(import_line="from layers import Block", make="Block()"),
    })
    assert check(tmp_path, "train.py") == []


def test_the_hover_story_names_the_other_file_of_a_line(tmp_path: Path) -> None:
    from graphlife.analysis.stories import story_at

    write(tmp_path, {
        "layers.py": BLOCK_WITH_INPLACE,
        "train.py": TRAIN_WITH_BLOCK.format(import_line="from layers import Block", make="Block()"),
    })
    path = str(tmp_path / "train.py")
    source = Path(path).read_text()
    story = story_at(source, 7, 6, modules=project_modules(path, Config()), path=path)
    assert story is not None
    assert "saves tensors for backward at line 11 of layers.py" in story
    assert "consumed (and freed) by the backward at line 9\n" in story + "\n"
