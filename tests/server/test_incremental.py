"""The language server's incremental checker gives what a full check gives, after every edit.

`graphlife.incremental.IncrementalChecker` keeps parsed blocks and the reports of
units of analysis between versions of a document. These tests edit real files
(every fixture, the examples, the benchmark's generated files) the way typing
does (a new line, a changed line, a deleted line, a duplicated statement, a
moved function, a syntax error and its repair) and compare every version's
findings, syntax errors and notes with :func:`graphlife.checker.check_source` on
the same text: message, severity, span, related places and fixes included.
They also check the promise of the cache: an edit inside one function analyzes
that function again, not the file.
"""

from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

import pytest

from graphlife.analysis.blocks import BlockParser, block_starts
from graphlife.checker import check_source
from graphlife.config import Config
from graphlife.incremental import IncrementalChecker
from graphlife.text_lines import source_lines_keepends
from tests.fixturelib import FIXTURES_DIR, fixture_dirs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from generate import generate, generate_fanout  # noqa: E402
from lsp_latency import training_module  # noqa: E402


def _outcome(result) -> tuple:
    findings = [(f.code, f.severity, f.span, f.message, f.related, f.fixes) for f in result.findings]
    errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    return findings, errors, list(result.notes)


def _assert_same(checker: IncrementalChecker, source: str, what: str) -> None:
    incremental = _outcome(checker.check(source))
    full = _outcome(check_source(source))
    assert incremental == full, f"{what}: the incremental checker disagrees with a full check"


def _edits(source: str, seed: int) -> list[str]:
    """Successive versions of ``source``, as typing makes them."""
    rng = random.Random(seed)
    lines = source.split("\n")
    versions = []

    def pick(predicate=lambda text: True) -> int | None:
        candidates = [i for i, text in enumerate(lines) if predicate(text)]
        return rng.choice(candidates) if candidates else None

    for step in range(8):
        kind = step % 8
        if kind == 0:  # a new empty line somewhere: everything below moves
            lines.insert(rng.randrange(len(lines) + 1), "")
        elif kind == 1:  # a comment typed at the end of a line
            index = pick()
            if index is not None:
                lines[index] += "  # note"
        elif kind == 2:  # a statement duplicated (a second backward, a second step, ...)
            index = pick(
                lambda text: text.startswith("    ")
                and text.strip()
                and not text.rstrip().endswith((":", ",", "(", "[", "\\"))
            )
            if index is not None:
                lines.insert(index + 1, lines[index])
        elif kind == 3:  # half-typed code: a syntax error
            index = pick(lambda text: text.startswith("    ") and text.strip())
            if index is not None:
                lines[index] += " ("
                versions.append("\n".join(lines))
                lines[index] = lines[index][: -len(" (")]  # ... and its repair
        elif kind == 4:  # a line deleted
            index = pick(lambda text: text.strip().startswith(("x", "y", "loss", "out", "optimizer", "h", "model")))
            if index is not None:
                del lines[index]
        elif kind == 5:  # an expression changed
            index = pick(
                lambda text: text.startswith("    ")
                and " = " in text
                and not text.rstrip().endswith(("(", "[", ",", ":", "\\"))
            )
            if index is not None:
                lines[index] += " + 0" if not lines[index].rstrip().endswith(")") else ".detach()"
        elif kind == 6:  # the last top-level block moved to the top (after the imports)
            text = "\n".join(lines)
            starts = block_starts(source_lines_keepends(text))
            if len(starts) > 3:
                first_code = starts[1]
                last = starts[-1]
                lines = lines[:first_code] + lines[last:] + [""] + lines[first_code:last]
        else:  # a new top-level function: the definitions table changes
            lines.append("")
            lines.append("def added_helper(value):")
            lines.append("    return value * 2")
        versions.append("\n".join(lines))
    return versions


def _fixture_groups() -> list[str]:
    return [path.name for path in fixture_dirs()]  # the GLnnn folders (not projects/)


@pytest.mark.parametrize("group", _fixture_groups())
def test_every_fixture_under_edits(group: str) -> None:
    for number, path in enumerate(sorted((FIXTURES_DIR / group).glob("*.py"))):
        source = path.read_text()
        checker = IncrementalChecker()
        _assert_same(checker, source, f"{path.name} as written")
        for step, version in enumerate(_edits(source, seed=number)):
            _assert_same(checker, version, f"{path.name} after edit {step + 1}")


def test_examples_under_edits() -> None:
    for number, path in enumerate(sorted((ROOT / "examples").glob("*.py"))):
        checker = IncrementalChecker()
        source = path.read_text()
        _assert_same(checker, source, path.name)
        for step, version in enumerate(_edits(source, seed=100 + number)):
            _assert_same(checker, version, f"{path.name} after edit {step + 1}")


@pytest.mark.parametrize("make", [training_module, generate, lambda lines: generate_fanout(lines // 60)],
                         ids=["functions", "one-call-tree", "getters-fanning-out"])
def test_generated_files_under_edits(make) -> None:
    source = make(600)
    checker = IncrementalChecker()
    _assert_same(checker, source, "generated file")
    for step, version in enumerate(_edits(source, seed=7)):
        _assert_same(checker, version, f"generated file after edit {step + 1}")


def test_an_edit_in_one_function_analyzes_only_that_function() -> None:
    source = training_module(1000)
    checker = IncrementalChecker()
    first = checker.check(source)
    units = checker.statistics["ran"]
    assert units > 50 and checker.statistics["replayed"] == 0
    lines = source.split("\n")
    target = next(i for i, text in enumerate(lines) if text.startswith("    out = batch * w + 30"))
    lines[target] += " + 0"
    lines.insert(target, "    # a new line: every function below moves by one")
    second = checker.check("\n".join(lines))
    assert checker.statistics == {"replayed": units - 1, "ran": 1, "calls_replayed": 0, "calls_ran": 0}
    assert [f.span.line + (f.span.line > target) for f in first.findings] == [f.span.line for f in second.findings]
    assert _outcome(second) == _outcome(check_source("\n".join(lines)))


def test_an_edit_in_a_called_function_runs_its_callers_again() -> None:
    source = (
        "import torch\n\n"
        "def backward_twice(loss):\n"
        "    loss.backward()\n"
        "\n"
        "def train(x):\n"
        "    w = torch.randn(3, requires_grad=True)\n"
        "    loss = (x * w).sum()\n"
        "    backward_twice(loss)\n"
        "\n"
        "def unrelated(y):\n"
        "    return y + 1\n"
    )
    checker = IncrementalChecker()
    assert [f.code for f in checker.check(source).findings] == []
    edited = source.replace("    loss.backward()\n", "    loss.backward()\n    loss.backward()\n")
    result = checker.check(edited)
    assert [(f.code, f.span.line) for f in result.findings] == [("GL101", 10)]  # blamed on the call
    # train, which inlines the helper (callers go first: the helper is not analyzed alone again);
    # the module body and `unrelated` are replayed
    assert checker.statistics["ran"] == 1 and checker.statistics["replayed"] == 2
    assert _outcome(result) == _outcome(check_source(edited))


EXPERIMENTS = (Path(__file__).parent / "data" / "experiments.py").read_text()


def test_experiments_run_apart_under_edits() -> None:
    checker = IncrementalChecker()
    _assert_same(checker, EXPERIMENTS, "experiments as written")
    for seed in (3, 4):
        for step, version in enumerate(_edits(EXPERIMENTS, seed=seed)):
            _assert_same(checker, version, f"experiments after edit {step + 1} (seed {seed})")


def test_an_edit_in_one_experiment_runs_only_that_call() -> None:
    checker = IncrementalChecker()
    first = checker.check(EXPERIMENTS)
    assert [f.code for f in first.findings] == ["GL205", "GL202", "GL201", "GL101"]
    assert checker.statistics["calls_ran"] == 5
    lines = EXPERIMENTS.split("\n")
    target = next(i for i, text in enumerate(lines) if "loss.backward(retain_graph=True)" in text)
    lines.insert(target, "    loss = loss * 1.0  # a new line: everything below moves by one")
    edited = "\n".join(lines)
    second = checker.check(edited)
    # the module body's own code did not change: it is replayed, and of the five calls it made
    # only the edited experiment runs again (alone, with the values it was given)
    assert checker.statistics == {"replayed": 1, "ran": 0, "calls_replayed": 4, "calls_ran": 1}
    assert [f.span.line for f in second.findings] == [
        f.span.line + (f.span.line > target) for f in first.findings
    ]
    moved = second.findings[-1].message  # GL101's message names the backward that freed the graph
    forward = next(i for i, text in enumerate(lines) if "return self.fc(x)" in text) + 1  # above the edit
    assert f"line {first.findings[-1].span.line}" in moved and f"line {forward}" in moved
    assert _outcome(second) == _outcome(check_source(edited))


def test_an_experiment_given_other_values_runs_again() -> None:
    checker = IncrementalChecker()
    checker.check(EXPERIMENTS)
    edited = EXPERIMENTS.replace("EPOCHS = 2", "EPOCHS = 1")
    result = checker.check(edited)
    assert checker.statistics["calls_ran"] == 5  # the module's names changed: every call sees them
    assert _outcome(result) == _outcome(check_source(edited))
    again = edited.replace("    return 0\n", "    return 1\n")  # in keep_retained
    result = checker.check(again)
    assert checker.statistics["calls_replayed"] == 4 and checker.statistics["calls_ran"] == 1
    assert _outcome(result) == _outcome(check_source(again))
    # the module body's own code is one block: a call in it edited makes every call there new
    last = again.replace("    store_losses(3)\n", "    store_losses(1)\n")
    result = checker.check(last)
    assert checker.statistics["calls_ran"] == 5
    assert _outcome(result) == _outcome(check_source(last))


#: The experiments run from one ``main()``: calls run apart inside a call run apart.
EXPERIMENTS_IN_MAIN = EXPERIMENTS.replace('if __name__ == "__main__":\n', "def main():\n") + (
    '\n\nif __name__ == "__main__":\n    main()\n'
)


def test_an_edit_in_an_experiment_called_from_main_runs_only_that_experiment() -> None:
    checker = IncrementalChecker()
    first = checker.check(EXPERIMENTS_IN_MAIN)
    assert [f.code for f in first.findings] == ["GL205", "GL202", "GL201", "GL101"]
    edited = EXPERIMENTS_IN_MAIN.replace("    return 0\n", "    return 0.5\n")  # in keep_retained
    result = checker.check(edited)
    # neither the module body nor main() read keep_retained's code: both are replayed, and
    # keep_retained runs again alone with the values main() gave it
    assert checker.statistics == {"replayed": 1, "ran": 0, "calls_replayed": 5, "calls_ran": 1}
    assert _outcome(result) == _outcome(check_source(edited))


@pytest.mark.parametrize("change", [
    ("    loss.backward(retain_graph=True)\n", "    loss.backward(create_graph=True)\n"),  # a create-graph backward now
    ("    return 0\n", "    raise SystemExit(0)\n"),  # never returns now
    ("    return 0\n", "    yield 0\n"),  # a generator now: not run apart
    ("def keep_retained():", "def keep_retained(scale=1.0):"),
    ("def keep_retained():", "def keep_retained_renamed():"),  # main() now calls an unknown name
], ids=["create-graph", "raises", "generator", "new-parameter", "renamed"])
def test_an_experiment_that_hands_back_something_else_runs_its_callers_again(change) -> None:
    checker = IncrementalChecker()
    checker.check(EXPERIMENTS_IN_MAIN)
    edited = EXPERIMENTS_IN_MAIN.replace(*change)
    assert edited != EXPERIMENTS_IN_MAIN
    assert _outcome(checker.check(edited)) == _outcome(check_source(edited))
    assert _outcome(checker.check(EXPERIMENTS_IN_MAIN)) == _outcome(check_source(EXPERIMENTS_IN_MAIN))  # and back


def test_experiments_in_main_under_edits() -> None:
    checker = IncrementalChecker()
    _assert_same(checker, EXPERIMENTS_IN_MAIN, "experiments in main() as written")
    for seed in (5, 6, 7):
        for step, version in enumerate(_edits(EXPERIMENTS_IN_MAIN, seed=seed)):
            _assert_same(checker, version, f"experiments in main() after edit {step + 1} (seed {seed})")


def test_a_call_that_returned_a_model_is_not_run_apart_again() -> None:
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def build():\n"
        "    return nn.Linear(3, 1)\n\n"
        "def unrelated():\n"
        "    return 1\n\n"
        "model = build()\n"
        "loss = model(torch.randn(2, 3)).sum()\n"
        "loss.backward()\n"
        "loss.backward()\n"
    )
    checker = IncrementalChecker()
    checker.check(source)
    assert checker.statistics["calls_ran"] == 1  # tried apart, undone (the model is used after it)
    edited = source.replace("    return 1\n", "    return 2\n")
    result = checker.check(edited)
    # the module body runs again; what the try apart found is remembered: build is inlined at once
    assert checker.statistics["calls_replayed"] == 1 and checker.statistics["calls_ran"] == 0
    assert [(f.code, f.span.line) for f in result.findings] == [("GL101", 13)]
    assert _outcome(result) == _outcome(check_source(edited))
    rebuilt = edited.replace("nn.Linear(3, 1)", "nn.Linear(3, 2)")
    assert _outcome(checker.check(rebuilt)) == _outcome(check_source(rebuilt))
    assert checker.statistics["calls_ran"] == 1  # build's code changed: tried again


def test_changed_settings_are_followed() -> None:
    source = (FIXTURES_DIR / "GL101" / sorted(p.name for p in (FIXTURES_DIR / "GL101").glob("bad_*.py"))[0]).read_text()
    checker = IncrementalChecker()
    assert checker.check(source).findings
    quiet = Config(ignore=("GL101",))
    assert _outcome(checker.check(source, quiet)) == _outcome(check_source(source, None, quiet))
    assert _outcome(checker.check(source)) == _outcome(check_source(source))


def test_an_interrupted_check_leaves_nothing_half_done(monkeypatch) -> None:
    source = training_module(300)
    checker = IncrementalChecker()
    checker.check(source)

    class Interrupt(BaseException):
        pass

    from graphlife.analysis import unit_cache

    original = unit_cache.UnitCache._record
    calls = {"n": 0}

    def interrupt_third(self, *args):
        calls["n"] += 1
        if calls["n"] == 3:
            raise Interrupt  # what the language server's cancellation does inside a check
        return original(self, *args)

    monkeypatch.setattr(unit_cache.UnitCache, "_record", interrupt_third)
    edited = source.replace("    out = batch * w + 1\n", "    out = batch * w + 1\n    loss = out.sum()\n", 1)
    edited = "\n\n" + edited.replace("w + 7\n", "w + 7 + 0\n").replace("w + 9\n", "w + 9 + 0\n")
    with pytest.raises(Interrupt):
        checker.check(edited)
    monkeypatch.setattr(unit_cache.UnitCache, "_record", original)
    assert _outcome(checker.check(edited)) == _outcome(check_source(edited))


BLOCK_CASES = {
    "docstring lines in column 0": '"""Train.\n\nUsage: python train.py\n"""\nimport torch\n\nx = 1\n',
    "decorators": "import torch\n\n@torch.no_grad()\n@other\ndef f():\n    pass\n\n@dataclass\nclass A:\n    x: int\n",
    "if / else at top level": "if a:\n    x = 1\nelse:\n    x = 2\ntry:\n    y\nexcept E:\n    pass\nfinally:\n    z\n",
    "backslash continuation": "x = 1 + \\\n2\ny = 3\n",
    "two statements on a line": "import os; import sys\nx = 1; y = 2\n",
    "CRLF line endings": "import torch\r\n\r\ndef f():\r\n    return 1\r\nx = f()\r\n",
    "form feed and line separator in strings": "x = 'a\x0cb'\ny = 'c\u2028d'\ndef f():\n    return x\n",
    "bracket closed in column 0": "x = f(\n    1,\n)\ny = [\n1, 2]\n",
    "comments before the first statement": "# header\n\n# more\nimport torch\n",
    "triple quotes inside a comment": "x = 1  # '''\ny = 2\n",
}


@pytest.mark.parametrize("name", sorted(BLOCK_CASES))
def test_blocks_make_the_tree_ast_parse_makes(name: str) -> None:
    source = BLOCK_CASES[name]
    parsed = BlockParser().parse(source)
    assert parsed.errors == []
    assert ast.dump(parsed.tree, include_attributes=True) == ast.dump(ast.parse(source), include_attributes=True)


def test_moved_blocks_get_their_new_lines() -> None:
    parser = BlockParser()
    source = "import torch\n\ndef f(x):\n    return x * 2\n"
    first = parser.parse(source)
    function = first.tree.body[1]
    moved = parser.parse("# a comment\n\n" + source)
    assert moved.tree.body[1] is function  # reused, not parsed again
    assert function.lineno == 5 and function.body[0].lineno == 6
    expected = ast.parse("# a comment\n\n" + source)
    assert ast.dump(moved.tree, include_attributes=True) == ast.dump(expected, include_attributes=True)


def test_a_block_with_a_syntax_error_is_left_out_and_reported() -> None:
    source = "import torch\n\ndef broken(:\n    pass\n\ndef fine(x):\n    return x\n"
    parsed = BlockParser().parse(source)
    assert [line for line, _, _ in parsed.errors] == [3]
    assert [type(stmt).__name__ for stmt in parsed.tree.body] == ["Import", "FunctionDef"]
    assert parsed.tree.body[1].name == "fine" and parsed.tree.body[1].lineno == 6


def _trainer_class(methods: int) -> str:
    """One class holding a model and many training-step methods (a Lightning-style module)."""
    parts = [
        "import torch\nimport torch.nn as nn\n\n\nclass Trainer:\n"
        "    def __init__(self):\n"
        "        self.model = nn.Linear(4, 4)\n"
        "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
    ]
    for index in range(methods):
        bug = "        loss.backward()\n" if index % 5 == 0 else ""
        parts.append(
            f"\n    def step_{index}(self, x):\n"
            f"        self.optimizer.zero_grad()\n"
            f"        loss = self.model(x * {index}).sum()\n"
            f"        loss.backward()\n"
            f"{bug}"
            f"        self.optimizer.step()\n"
            f"        return loss.item()\n"
        )
    return "".join(parts)


def test_an_edit_in_one_method_analyzes_that_method_and_its_neighbour() -> None:
    source = _trainer_class(30)
    checker = IncrementalChecker()
    first = checker.check(source)
    assert [f.code for f in first.findings] == ["GL101"] * 6
    units = checker.statistics["ran"]
    lines = source.split("\n")
    target = next(i for i, text in enumerate(lines) if "self.model(x * 12)" in text)
    lines.insert(target + 1, "        loss.backward()")  # a new bug in one method; the methods below move
    edited = "\n".join(lines)
    second = checker.check(edited)
    # The method edited, and the one after it: GL302 on a method that steps asks whether another
    # method of the class resets the gradients, and its nearest such method is the one edited.
    assert checker.statistics == {"replayed": units - 2, "ran": 2, "calls_replayed": 0, "calls_ran": 0}
    assert len(second.findings) == 7
    assert _outcome(second) == _outcome(check_source(edited))


def test_an_edit_in_init_analyzes_every_method_again() -> None:
    source = _trainer_class(10)
    checker = IncrementalChecker()
    checker.check(source)
    units = checker.statistics["ran"]
    edited = source.replace("nn.Linear(4, 4)", "nn.Linear(4, 4, bias=False)")
    result = checker.check(edited)
    # every method reads __init__ through `self`; only the module body (which does not) is replayed
    assert checker.statistics == {"replayed": 1, "ran": units - 1, "calls_replayed": 0, "calls_ran": 0}
    assert _outcome(result) == _outcome(check_source(edited))


def test_classes_under_edits() -> None:
    source = _trainer_class(12)
    checker = IncrementalChecker()
    _assert_same(checker, source, "trainer class")
    for step, version in enumerate(_edits(source, seed=3)):
        _assert_same(checker, version, f"trainer class after edit {step + 1}")


@pytest.mark.parametrize("late", [
    ("def late(model):\n    return model\n",
     "def late(model):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"),
    ("class Late:\n    def clip(self, model):\n        return model\n",
     "class Late:\n    def clip(self, model):\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"),
], ids=["function", "method"])
def test_a_proof_that_reads_the_whole_file_sees_edits_anywhere(late) -> None:
    """GL204's fix is offered only if nothing in the file reads gradients behind the engine's
    back: an edit in code the unit never ran must still withdraw it."""
    before, after = late
    for path in sorted((FIXTURES_DIR / "GL204").glob("bad_*.py")):
        source = path.read_text() + "\n\n"
        checker = IncrementalChecker()
        checker.check(source + before)
        _assert_same(checker, source + after, f"{path.name} with a gradient clip added")


_LIBRARY_FUNCTION = '''import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.x = x
        return x * w

    @staticmethod
    def backward(ctx, g):
        return g * 2, g * ctx.x
'''


def test_an_edit_in_backward_is_seen_by_the_findings_on_forward() -> None:
    """A Function nothing applies: whether forward's `x` is a tensor depends on backward returning a
    gradient for it, and the line GL401 points to in backward moves with backward's code."""
    checker = IncrementalChecker()
    assert [(f.code, f.span.line) for f in checker.check(_LIBRARY_FUNCTION).findings] == [("GL401", 7)]
    no_gradient = _LIBRARY_FUNCTION.replace("return g * 2, g * ctx.x", "return None, g * ctx.x")
    assert _outcome(checker.check(no_gradient)) == _outcome(check_source(no_gradient))
    assert [f.code for f in check_source(no_gradient).findings] == []
    moved = _LIBRARY_FUNCTION.replace("    def backward(ctx, g):\n", "    def backward(ctx, g):\n        g = g\n")
    assert _outcome(checker.check(moved)) == _outcome(check_source(moved))


# -- a class cut into its methods -------------------------------------------------------------------

_CLASS_SOURCE = '''import torch
import torch.nn as nn


@some_decorator(option=True)
class Trainer(nn.Module):
    """A trainer."""

    steps = 0

    def __init__(self):
        super().__init__()
        self.model = nn.Linear(4, 4)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    @property
    def size(self):
        return 4

    def first(self, x):
        self.optimizer.zero_grad()
        loss = self.model(x).sum()
        loss.backward()
        self.optimizer.step()
        # a comment after the method

    def second(self, x):
        out = self.model(x)
        out.sum().backward()
        return out

    x = 1; y = 2


def after(model):
    return model
'''

#: Edits of the class (old text -> new text, applied one after the other): inside a method, in
#: `__init__`, a method added and removed, a decorator added, indentation changed (a syntax error
#: and its repair, a method pulled out of the class), the class header, a docstring opened.
_CLASS_EDITS = [
    ("        out.sum().backward()\n", "        out.sum().backward()\n        out.sum().backward()\n"),
    ("        self.model = nn.Linear(4, 4)\n", "        self.model = nn.Linear(4, 4, bias=False)\n"),
    ("    def second(self, x):\n", "    def added(self, x):\n        return x * 2\n\n    def second(self, x):\n"),
    ("    def added(self, x):\n        return x * 2\n\n", ""),
    ("    def second(self, x):\n", "    @torch.no_grad()\n    def second(self, x):\n"),
    ("        loss.backward()\n", "      loss.backward()\n"),
    ("      loss.backward()\n", "        loss.backward()\n"),
    ("    def second(self, x):\n        out", "def second(self, x):\n        out"),
    ("def second(self, x):\n        out", "    def second(self, x):\n        out"),
    ("class Trainer(nn.Module):\n", "class Trainer(nn.Module, object):\n"),
    ("        return 4\n", '        """open\n        return 4\n'),
    ('        """open\n        return 4\n', "        return 4\n"),
    ("    x = 1; y = 2\n", "    x = 1; y = 2\n    z = (\n        3)\n"),
    ("    steps = 0\n", ""),
    ("    @property\n", "    @property\n    # between\n"),
    ('    """A trainer."""\n', ""),
]


def test_class_segments_make_the_tree_ast_parse_makes() -> None:
    parser = BlockParser()
    source = _CLASS_SOURCE
    parser.parse(source)
    for old, new in _CLASS_EDITS:
        assert old in source
        source = source.replace(old, new, 1)
        parsed = parser.parse(source)
        try:
            expected = ast.parse(source)
        except SyntaxError:
            assert parsed.errors
            continue
        assert parsed.errors == []
        assert ast.dump(parsed.tree, include_attributes=True) == ast.dump(expected, include_attributes=True), new
        for node in ast.walk(parsed.tree):  # the merged index knows every parent
            for child in ast.iter_child_nodes(node):
                if hasattr(child, "lineno"):
                    assert parsed.index.parents[id(child)] is node


def test_an_edit_in_one_method_parses_only_that_method() -> None:
    parser = BlockParser()
    first = parser.parse(_CLASS_SOURCE).tree.body[2]
    edited = _CLASS_SOURCE.replace("        out = self.model(x)\n",
                                   "        out = self.model(x)\n\n        out = out * 2\n")
    second = parser.parse("# moved\n" + edited).tree.body[2]
    assert isinstance(first, ast.ClassDef) and isinstance(second, ast.ClassDef)
    kept = [new is old for new, old in zip(second.body, first.body)]
    assert kept == [True, True, True, True, True, False, True, True]  # all but `second`, moved one line down
    assert second.body[4].lineno == first.body[4].lineno == 21
    assert ast.dump(second, include_attributes=True) == ast.dump(
        ast.parse("# moved\n" + edited).body[2], include_attributes=True)


def test_class_edits_check_as_a_full_check_does() -> None:
    checker = IncrementalChecker()
    source = _CLASS_SOURCE
    _assert_same(checker, source, "the class as written")
    for old, new in _CLASS_EDITS:
        source = source.replace(old, new, 1)
        _assert_same(checker, source, f"after {new!r}")


def test_a_reset_added_in_another_method_withdraws_gl302() -> None:
    """GL302 on a method reads the other methods of its class (a reset there may run between two
    calls): an edit in one of them must reach the method's finding."""
    source = _CLASS_SOURCE.replace("        self.optimizer.zero_grad()\n", "")
    checker = IncrementalChecker()
    assert [f.code for f in checker.check(source).findings if f.code == "GL302"] == ["GL302"]
    reset = source.replace("        return out\n", "        self.optimizer.zero_grad()\n        return out\n")
    _assert_same(checker, reset, "a reset added in another method")
    _assert_same(checker, source, "the reset taken away again")


def test_an_edit_in_a_method_of_a_class_of_attribute_writers_runs_no_other_method_for_them() -> None:
    """Every method assigns an attribute (`self.steps += 1`), which the `self` of each method
    analyzed alone is weakened for: an edit that writes no new name does not run every method."""
    source = _trainer_class(20).replace("        return loss.item()\n",
                                        "        self.steps += 1\n        return loss.item()\n")
    checker = IncrementalChecker()
    checker.check(source)
    units = checker.statistics["ran"]
    edited = source.replace("self.model(x * 7)", "self.model(x * 7 + 1)")
    result = checker.check(edited)
    # The method edited, and the one after it: GL302 on a method that steps asks whether another
    # method of the class resets the gradients, and its nearest such method is the one edited.
    assert checker.statistics == {"replayed": units - 2, "ran": 2, "calls_replayed": 0, "calls_ran": 0}
    assert _outcome(result) == _outcome(check_source(edited))
