"""Which file of the user's project an import names, found as Python would find it.

Why it matters to a user: graphlife follows an import into the user's own module and
reports the bug where it is. If it picked another file than Python imports, it would
report bugs in code that never runs (or miss the ones in code that does). Each test builds
a small project in a temporary folder and asks the provider what the engine would ask.
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest

from graphlife.analysis.modules import ModuleProvider, SourceModule
from graphlife.analysis.tree_index import TreeIndex
from graphlife.config import Config, config_for_path
from graphlife.project import sources
from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.project.provider import ProjectModules
from graphlife.project.roots import find_project_root, search_roots
from graphlife.project.sources import SourceCache, text_digest


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root``; folders ending in
    ``/`` are created empty."""
    for relative, content in files.items():
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content))
    return root


def entry_of(provider: ProjectModules, path: Path) -> SourceModule:
    """The checked file as the engine gets it from the front end."""
    source = path.read_text()
    tree = ast.parse(source)
    return provider.entry(str(path), tree, source, source.splitlines(), TreeIndex.of_module(tree))


def found_path(module: SourceModule | None) -> Path | None:
    return None if module is None else Path(module.path)


def test_the_entry_files_folder_comes_first(tmp_path):
    make_tree(tmp_path, {
        "pyproject.toml": "",
        "utils.py": "WHERE = 'root'\n",
        "scripts/train.py": "import utils\n",
        "scripts/utils.py": "WHERE = 'scripts'\n",
    })
    provider = ProjectModules(str(tmp_path / "scripts/train.py"))
    train = entry_of(provider, tmp_path / "scripts/train.py")
    assert found_path(provider.find(train, "utils", 0)) == tmp_path / "scripts/utils.py"
    assert provider.roots.folders[:2] == (str(tmp_path / "scripts"), str(tmp_path))


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", "setup.cfg", ".git"])
def test_the_project_root_is_the_nearest_folder_with_a_marker(tmp_path, marker):
    project = tmp_path / "project"
    make_tree(project, {"models.py": "class Net: pass\n", "experiments/gan/train.py": "import models\n"})
    if marker == ".git":
        (project / ".git").mkdir()
    else:
        (project / marker).write_text("")
    assert find_project_root(str(project / "experiments/gan")) == str(project)
    provider = ProjectModules(str(project / "experiments/gan/train.py"))
    train = entry_of(provider, project / "experiments/gan/train.py")
    assert found_path(provider.find(train, "models", 0)) == project / "models.py"


def test_a_git_file_marks_a_root_too(tmp_path):
    """A git worktree or submodule has a `.git` file, not a folder."""
    make_tree(tmp_path, {"repo/.git": "gitdir: elsewhere\n", "repo/a/b.py": ""})
    assert find_project_root(str(tmp_path / "repo/a")) == str(tmp_path / "repo")


def test_src_layout(tmp_path):
    make_tree(tmp_path, {
        "pyproject.toml": "",
        "src/mylib/__init__.py": "",
        "src/mylib/nets.py": "class MLP: pass\n",
        "scripts/train.py": "from mylib.nets import MLP\n",
    })
    provider = ProjectModules(str(tmp_path / "scripts/train.py"))
    train = entry_of(provider, tmp_path / "scripts/train.py")
    assert provider.roots.folders == (str(tmp_path / "scripts"), str(tmp_path), str(tmp_path / "src"))
    package = provider.find(train, "mylib", 0)
    assert package is not None and package.is_package and package.name == "mylib"
    assert found_path(package) == tmp_path / "src/mylib/__init__.py"
    nets = provider.find(train, "mylib.nets", 0)
    assert found_path(nets) == tmp_path / "src/mylib/nets.py"
    assert nets is not None and not nets.is_package and nets.package == "mylib"


def test_a_namespace_package_is_an_empty_package_whose_submodules_are_found(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "from pkg import losses\n",
                         "pkg/losses.py": "def loss(x): return x\n"})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    package = provider.find(train, "pkg", 0)
    assert package is not None and package.is_package and package.tree.body == []
    assert package.name == "pkg" and found_path(package) == tmp_path / "pkg"
    assert found_path(provider.find(train, "pkg.losses", 0)) == tmp_path / "pkg/losses.py"


def test_a_namespace_package_spans_its_folders_in_every_root(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "scripts/train.py": "", "scripts/pkg/a.py": "",
                         "pkg/b.py": ""})
    provider = ProjectModules(str(tmp_path / "scripts/train.py"))
    train = entry_of(provider, tmp_path / "scripts/train.py")
    assert found_path(provider.find(train, "pkg.a", 0)) == tmp_path / "scripts/pkg/a.py"
    assert found_path(provider.find(train, "pkg.b", 0)) == tmp_path / "pkg/b.py"


def test_in_one_folder_a_package_beats_a_module_which_beats_a_namespace_folder(tmp_path):
    make_tree(tmp_path, {
        "pyproject.toml": "", "train.py": "",
        "both/__init__.py": "", "both.py": "",
        "mod.py": "", "mod/": "",
    })
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert found_path(provider.find(train, "both", 0)) == tmp_path / "both/__init__.py"
    assert found_path(provider.find(train, "mod", 0)) == tmp_path / "mod.py"


def test_a_regular_module_in_a_later_root_beats_a_namespace_folder_in_an_earlier_one(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "scripts/train.py": "", "scripts/models/": "",
                         "models.py": "class Net: pass\n"})
    provider = ProjectModules(str(tmp_path / "scripts/train.py"))
    train = entry_of(provider, tmp_path / "scripts/train.py")
    assert found_path(provider.find(train, "models", 0)) == tmp_path / "models.py"


def test_relative_imports_at_levels_one_and_two(tmp_path):
    make_tree(tmp_path, {
        "pyproject.toml": "",
        "pkg/__init__.py": "from .nets import MLP\n",
        "pkg/nets.py": "class MLP: pass\n",
        "pkg/losses.py": "",
        "pkg/training/__init__.py": "",
        "pkg/training/loop.py": "from ..nets import MLP\nfrom . import hooks\n",
        "pkg/training/hooks.py": "",
        "train.py": "import pkg.training.loop\n",
    })
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    init = provider.find(train, "pkg", 0)
    assert init is not None
    # `from .nets import MLP` in pkg/__init__.py starts from the package itself.
    assert found_path(provider.find(init, "nets", 1)) == tmp_path / "pkg/nets.py"
    loop = provider.find(train, "pkg.training.loop", 0)
    assert loop is not None and loop.name == "pkg.training.loop"
    assert found_path(provider.find(loop, "nets", 2)) == tmp_path / "pkg/nets.py"
    # `from . import hooks`: first the package (level 1, no module), then its submodule.
    assert found_path(provider.find(loop, "", 1)) == tmp_path / "pkg/training/__init__.py"
    assert found_path(provider.find(loop, "hooks", 1)) == tmp_path / "pkg/training/hooks.py"
    # `from .. import losses` from pkg.training.loop
    assert found_path(provider.find(loop, "losses", 2)) == tmp_path / "pkg/losses.py"


def test_relative_import_beyond_the_top_level_package_is_not_found(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/nets.py": "", "train.py": "",
                         "other.py": ""})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    nets = provider.find(train, "pkg.nets", 0)
    assert nets is not None
    assert provider.find(nets, "other", 2) is None  # `from ..other import x` in pkg/nets.py
    assert provider.find(nets, "", 3) is None
    # A plain script has no package: Python refuses any relative import in it.
    assert train.name == "train" and provider.find(train, "other", 1) is None


def test_import_of_a_dotted_name_finds_the_submodule_and_each_name_once(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/mod.py": "X = 1\n",
                         "train.py": "import pkg.mod as m\n"})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    mod = provider.find(train, "pkg.mod", 0)
    assert mod is not None and mod.name == "pkg.mod" and mod.source == "X = 1\n"
    assert provider.find(train, "pkg.mod", 0) is mod  # one module object per name, as sys.modules
    package = provider.find(train, "pkg", 0)
    assert provider.find(package, "mod", 1) is mod  # `from . import mod` in pkg/__init__.py


def test_a_submodule_of_a_plain_module_is_not_found(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "models.py": "", "models/": "", "train.py": ""})
    (tmp_path / "models/nets.py").write_text("")
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert provider.find(train, "models.nets", 0) is None  # models is models.py, not a package


@pytest.mark.parametrize("init", [True, False], ids=["package", "namespace package"])
def test_an_entry_inside_a_package_gets_its_dotted_name(tmp_path, init):
    files = {"pyproject.toml": "", "pkg/train.py": "from .nets import MLP\n", "pkg/nets.py": "class MLP: pass\n"}
    if init:
        files["pkg/__init__.py"] = ""
    make_tree(tmp_path, files)
    provider = ProjectModules(str(tmp_path / "pkg/train.py"))
    train = entry_of(provider, tmp_path / "pkg/train.py")
    assert (train.name, train.package, train.is_main, train.is_package) == ("pkg.train", "pkg", True, False)
    assert found_path(provider.find(train, "nets", 1)) == tmp_path / "pkg/nets.py"


def test_an_entry_in_a_src_layout_is_named_from_src(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "src/mylib/__init__.py": "", "src/mylib/cli.py": ""})
    provider = ProjectModules(str(tmp_path / "src/mylib/cli.py"))
    assert entry_of(provider, tmp_path / "src/mylib/cli.py").name == "mylib.cli"


def test_a_packages_init_as_entry_is_the_package(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "from .nets import MLP\n", "pkg/nets.py": ""})
    provider = ProjectModules(str(tmp_path / "pkg/__init__.py"))
    init = entry_of(provider, tmp_path / "pkg/__init__.py")
    assert (init.name, init.is_package, init.package) == ("pkg", True, "pkg")
    assert found_path(provider.find(init, "nets", 1)) == tmp_path / "pkg/nets.py"


def test_a_script_in_a_folder_that_is_no_module_name_gets_its_stem(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "my-experiments/train.py": ""})
    provider = ProjectModules(str(tmp_path / "my-experiments/train.py"))
    train = entry_of(provider, tmp_path / "my-experiments/train.py")
    assert (train.name, train.package, train.is_main) == ("train", "", True)


def test_libraries_outside_the_roots_are_not_found(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "import torch\nimport numpy\n"})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    for name in ("torch", "torch.nn", "numpy", "json", "collections.abc"):
        assert provider.find(train, name, 0) is None
    assert provider.dependencies() == {}


def test_a_local_module_wins_over_a_library_as_in_python(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "random.py": "", "torch/__init__.py": ""})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert found_path(provider.find(train, "random", 0)) == tmp_path / "random.py"
    assert found_path(provider.find(train, "torch", 0)) == tmp_path / "torch/__init__.py"


def test_modules_loaded_before_the_script_runs_are_never_local(tmp_path):
    """Python has `os` and `sys` in sys.modules before the script's first import."""
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "os.py": "", "sys.py": ""})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert provider.find(train, "os", 0) is None
    assert provider.find(train, "sys", 0) is None


def test_stubs_and_compiled_modules_are_not_source(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "scripts/train.py": "", "stubbed.pyi": "X: int\n",
                         "scripts/fast.cpython-311-x86_64-linux-gnu.so": b"\x7fELF", "fast.py": "X = 1\n"})
    provider = ProjectModules(str(tmp_path / "scripts/train.py"))
    train = entry_of(provider, tmp_path / "scripts/train.py")
    assert provider.find(train, "stubbed", 0) is None
    # Python imports the extension module of the first root: the later fast.py never runs.
    assert provider.find(train, "fast", 0) is None


@pytest.mark.parametrize("content", [
    b"import torch\x00\x01\x02",
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n".replace(b"latin-1", b"no-such-codec"),
    b"x = '\xff\xfe'\n",
], ids=["binary", "unknown codec", "not utf-8"])
def test_an_unusable_module_is_not_found_and_says_why(tmp_path, content):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "broken.py": content})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert provider.find(train, "broken", 0) is None
    assert list(provider.unreadable) == [str(tmp_path / "broken.py")]
    assert str(tmp_path / "broken.py") in provider.dependencies()


def test_a_huge_module_is_not_read(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": ""})
    with open(tmp_path / "huge.py", "wb") as handle:
        handle.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no 5 MB written
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert provider.find(train, "huge", 0) is None
    assert "larger than" in provider.unreadable[str(tmp_path / "huge.py")]


def test_an_unreadable_module_is_not_found(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "secret.py": "X = 1\n"})
    (tmp_path / "secret.py").chmod(0)
    try:
        provider = ProjectModules(str(tmp_path / "train.py"))
        train = entry_of(provider, tmp_path / "train.py")
        assert provider.find(train, "secret", 0) is None
        assert "cannot read" in provider.unreadable[str(tmp_path / "secret.py")]
    finally:
        (tmp_path / "secret.py").chmod(0o644)


def test_a_module_that_fails_to_read_is_not_found(tmp_path, monkeypatch):
    """The same as a file without read permission, also where the tests run as root."""
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "secret.py": "X = 1\n"})

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(sources, "open", refuse, raising=False)
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    assert provider.find(train, "secret", 0) is None
    assert provider.unreadable[str(tmp_path / "secret.py")] == "cannot read: Permission denied"


def test_a_module_with_a_syntax_error_keeps_the_blocks_that_parse(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "layers.py": """\
        import torch

        def broken(:
            pass

        class Block(torch.nn.Module):
            def forward(self, x):
                return x.clamp_(0)
        """})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    layers = provider.find(train, "layers", 0)
    assert layers is not None
    kept = [type(node).__name__ + ":" + getattr(node, "name", "") for node in layers.tree.body]
    assert kept == ["Import:", "ClassDef:Block"]
    assert layers.tree.body[1].lineno == 6  # positions are the file's


def test_the_coding_cookie_and_bom_decide_the_text(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "",
                         "latin.py": "# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n".encode("latin-1"),
                         "bom.py": b"\xef\xbb\xbfNAME = 'bom'\n"})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    latin = provider.find(train, "latin", 0)
    assert latin is not None and "café" in latin.source
    bom = provider.find(train, "bom", 0)
    assert bom is not None and bom.source == "NAME = 'bom'\n"


def test_an_open_buffer_wins_over_the_disk(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "models.py": "ON_DISK = 1\n"})
    buffers = {str(tmp_path / "models.py"): "IN_EDITOR = 1\n", str(tmp_path / "unsaved.py"): "NEW = 1\n"}
    provider = ProjectModules(str(tmp_path / "train.py"), buffers=buffers)
    train = entry_of(provider, tmp_path / "train.py")
    models = provider.find(train, "models", 0)
    assert models is not None and models.source == "IN_EDITOR = 1\n"
    assert provider.dependencies()[str(tmp_path / "models.py")] == text_digest("IN_EDITOR = 1\n")
    # A buffer of a file not saved yet is a module too.
    unsaved = provider.find(train, "unsaved", 0)
    assert unsaved is not None and unsaved.source == "NEW = 1\n"


def test_extra_roots_from_the_configuration(tmp_path):
    make_tree(tmp_path, {
        "pyproject.toml": '[tool.graphlife]\nsrc = ["lib", "vendor/third"]\n',
        "lib/helpers.py": "H = 1\n",
        "vendor/third/blocks.py": "B = 1\n",
        "experiments/train.py": "",
    })
    config = config_for_path(Config(), tmp_path / "experiments/train.py")
    assert config.src == (str(tmp_path / "lib"), str(tmp_path / "vendor/third"))
    assert config.problems == ()
    provider = ProjectModules(str(tmp_path / "experiments/train.py"), config.src)
    train = entry_of(provider, tmp_path / "experiments/train.py")
    assert found_path(provider.find(train, "helpers", 0)) == tmp_path / "lib/helpers.py"
    assert found_path(provider.find(train, "blocks", 0)) == tmp_path / "vendor/third/blocks.py"


@pytest.mark.parametrize(("value", "problem"), [
    ("3", "`src` must be a list of folders; ignored"),
    ('["lib", 3]', "`src` must be a list of folders; ignored"),
    ('["nowhere"]', "`src` has `nowhere`, which is not a folder"),
    ('[""]', "`src` has an empty folder name; ignored"),
])
def test_a_broken_src_setting_is_reported(tmp_path, value, problem):
    make_tree(tmp_path, {"pyproject.toml": f"[tool.graphlife]\nsrc = {value}\n", "lib/": "", "train.py": ""})
    config = config_for_path(Config(), tmp_path / "train.py")
    assert config.problems == (f"{tmp_path / 'pyproject.toml'}: {problem}",)


def test_src_from_the_editor_stays_relative_to_the_current_folder(tmp_path):
    config = Config().merged({"src": "lib"}, "editor settings")
    assert config.src == ("lib",) and config.problems == ()
    make_tree(tmp_path, {"pyproject.toml": "", "lib/helpers.py": "", "train.py": ""})
    provider = ProjectModules("train.py", config.src, cwd=str(tmp_path))
    train = entry_of(provider, tmp_path / "train.py")
    helpers = provider.find(train, "helpers", 0)
    assert helpers is not None and helpers.path == os.path.join("lib", "helpers.py")  # spelled like the entry


def test_dependencies_list_what_was_read_with_hashes(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "models.py": "M = 1\n",
                         "pkg/__init__.py": "P = 1\n", "pkg/losses.py": "L = 1\n", "nspkg/": ""})
    provider = ProjectModules(str(tmp_path / "train.py"))
    train = entry_of(provider, tmp_path / "train.py")
    provider.find(train, "models", 0)
    provider.find(train, "pkg", 0)  # Python runs pkg/__init__.py before pkg.losses
    provider.find(train, "pkg.losses", 0)
    provider.find(train, "nspkg", 0)  # a folder, no file read
    provider.find(train, "torch", 0)
    assert provider.dependencies() == {
        str(tmp_path / "models.py"): text_digest("M = 1\n"),
        str(tmp_path / "pkg/__init__.py"): text_digest("P = 1\n"),
        str(tmp_path / "pkg/losses.py"): text_digest("L = 1\n"),
    }


def test_parsing_is_shared_until_the_file_changes(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "train.py": "", "models.py": "M = 1\n"})
    cache = SourceCache()

    def models_tree() -> ast.Module:
        provider = ProjectModules(str(tmp_path / "train.py"), sources=cache)
        module = provider.find(entry_of(provider, tmp_path / "train.py"), "models", 0)
        assert module is not None
        return module.tree

    first = models_tree()
    assert models_tree() is first
    os.utime(tmp_path / "models.py", ns=(1, 1))  # touched, same text: the parse is kept
    assert models_tree() is first
    (tmp_path / "models.py").write_text("M = 2\n")
    changed = models_tree()
    assert changed is not first and ast.unparse(changed) == "M = 2"


def test_a_provider_is_what_the_engine_asks_for(tmp_path):
    make_tree(tmp_path, {"train.py": ""})
    provider: ModuleProvider = ProjectModules(str(tmp_path / "train.py"))
    assert provider.entry(None, ast.Module(body=[], type_ignores=[]), "", [], TreeIndex()).is_main


def test_search_roots_are_listed_once_in_order(tmp_path):
    make_tree(tmp_path, {"pyproject.toml": "", "src/": "", "train.py": ""})
    roots = search_roots(str(tmp_path / "train.py"), [str(tmp_path / "src"), "extra"], cwd=str(tmp_path))
    assert roots.folders == (str(tmp_path), str(tmp_path / "src"), str(tmp_path / "extra"))
