"""Edits in ``__init__``: the methods whose rebuilt ``self`` prints the same in what they read of
it are replayed, and the incremental checker still gives what a full check gives.

Every method analyzed alone starts from the ``self`` its class's ``__init__`` builds. The unit
cache keeps what that build read apart from what the method read, with a print of the built
``self`` (:mod:`graphlife.analysis.self_print`): after an edit of ``__init__`` (or of code it
calls) the ``self`` is built again once, and each method is replayed when its print is the
same, run again when not. These tests make both kinds of edit (a comment, a log string, a line
added above the statements the methods' values come from; an unrelated attribute, another
layer, a frozen model) and compare every version with :func:`graphlife.checker.check_source`.
A method's record depends on the attributes of ``self`` it read (:mod:`graphlife.analysis.self_reads`):
an attribute added, removed or changed that a method did not read leaves it replayed.
"""

from __future__ import annotations

import ast
import random

import pytest

from graphlife.analysis import self_cache
from graphlife.checker import check_source
from graphlife.incremental import IncrementalChecker
from tests.fixturelib import FIXTURES_DIR, fixture_dirs


def _outcome(result) -> tuple:
    findings = [(f.code, f.severity, f.span, f.message, f.related, f.fixes) for f in result.findings]
    errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    return findings, errors, list(result.notes)


def _assert_same(checker: IncrementalChecker, source: str, what: str) -> None:
    assert _outcome(checker.check(source)) == _outcome(check_source(source)), what


def _trainer(methods: int) -> str:
    parts = [
        "import logging\nimport torch\nimport torch.nn as nn\n\nlog = logging.getLogger(__name__)\n\n\n"
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        log.info('setting up the trainer')\n"
        "        self.model = nn.Linear(4, 4)  # the model\n"
        "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
        "        self.w = torch.zeros(4, requires_grad=True)\n"
        "        self._setup()\n"
        "\n"
        "    def _setup(self):\n"
        "        self.scale = 2.0\n"
    ]
    for index in range(methods):
        bug = "        loss.backward()\n" if index % 3 == 0 else ""
        leaf = "        self.w.add_(1)\n" if index % 4 == 1 else ""
        parts.append(
            f"\n    def step_{index}(self, x):\n"
            f"        self.optimizer.zero_grad()\n"
            f"        loss = (self.model(x * {index}) * self.w).sum() * self.scale\n"
            f"        loss.backward()\n"
            f"{bug}{leaf}"
            f"        self.optimizer.step()\n"
            f"        return loss.item()\n"
        )
    return "".join(parts)


#: Edits of ``__init__`` (and of ``_setup``, which it calls) that change nothing a method starts from.
_SAME_SELF = [
    ("  # the model\n", "  # the model, a linear layer\n"),
    ("    def __init__(self):\n", "    def __init__(self):\n        # a comment line\n"),
    ("'setting up the trainer'", "'setting up the trainer now'"),
    ("        log.info(", "        log.debug('x')\n        log.info("),
    ("        self.scale = 2.0\n", "        # the loss scale\n        self.scale = 2.0\n"),
]

#: Edits that change what the methods start from (the last ones change their findings); the first
#: changes an attribute no method reads.
_OTHER_SELF = [
    ("        self._setup()\n", "        self._setup()\n        self.name = 'trainer'\n"),
    ("nn.Linear(4, 4)", "nn.Linear(4, 4, bias=False)"),
    ("torch.zeros(4, requires_grad=True)", "torch.zeros(4)"),
    ("        self.scale = 2.0\n", "        self.scale = torch.ones(1, requires_grad=True)\n"),
    ("        self._setup()\n", "        self._setup()\n        self.model.requires_grad_(False)\n"),
]


def test_an_edit_in_init_that_keeps_self_runs_only_init() -> None:
    source = _trainer(9)
    checker = IncrementalChecker()
    checker.check(source)
    units = checker.statistics["ran"]
    for old, new in _SAME_SELF:
        assert old in source
        source = source.replace(old, new, 1)
        result = checker.check(source)
        assert _outcome(result) == _outcome(check_source(source)), new
        # the method edited (`__init__`, or `_setup`, which it calls) runs; the others replay
        assert checker.statistics["ran"] == 1, new
        assert checker.statistics["replayed"] == units - 1, new
        assert checker.units.selves_matched >= 9, new  # each step, with the `self` built again


def test_lines_added_in_a_helper_of_init_keep_the_methods_replayed() -> None:
    """The functions a build of ``self`` ran stand in its print by name and first line: a line
    added in ``_setup`` (which ``__init__`` calls) makes it longer than ``_tune``, and that
    must not reorder them and make every method run again."""
    source = _trainer(6).replace("        self._setup()\n", "        self._setup()\n        self._tune()\n").replace(
        "    def _setup(self):\n",
        "    def _tune(self):\n        self.beta = 0.5\n        self.gamma = 0.1\n\n    def _setup(self):\n")
    checker = IncrementalChecker()
    checker.check(source)
    units = checker.statistics["ran"]
    for number in range(3):
        added = f"        unused_{number} = {number}\n"
        source = source.replace("        self.scale = 2.0\n", added + "        self.scale = 2.0\n")
        _assert_same(checker, source, f"line {number}")
        # `self` is built again and found the same: every unit replays, `__init__`'s too
        assert checker.statistics["ran"] == 0, number
        assert checker.statistics["replayed"] == units, number


@pytest.mark.parametrize("step", range(len(_OTHER_SELF)))
def test_an_edit_in_init_that_changes_self_runs_the_methods_again(step: int) -> None:
    source = _trainer(9)
    checker = IncrementalChecker()
    before = checker.check(source)
    old, new = _OTHER_SELF[step]
    edited = source.replace(old, new, 1)
    result = checker.check(edited)
    assert _outcome(result) == _outcome(check_source(edited))
    if step == 0:  # `self.name`, which no method reads: the steps replayed, those whose GL101
        # finding's fix looks for the tensors `self` holds too (steps 0, 3 and 6: not a tensor)
        assert checker.units.selves_matched >= 9
        assert checker.statistics["ran"] == 1
    else:  # every step reads the model, the leaf and the scale
        assert checker.statistics["ran"] >= 10  # __init__ and the nine methods
    if step in (2, 4):  # a leaf no longer requiring grad, a frozen model: other findings
        assert _outcome(result) != _outcome(before)


def test_init_edits_one_after_the_other_check_as_a_full_check_does() -> None:
    source = _trainer(9)
    checker = IncrementalChecker()
    _assert_same(checker, source, "as written")
    for old, new in [*_SAME_SELF, *_OTHER_SELF, *[(b, a) for a, b in reversed(_OTHER_SELF)]]:
        source = source.replace(old, new, 1)
        _assert_same(checker, source, f"after {new!r}")


def test_the_print_decides_nothing_a_full_check_would_not(monkeypatch) -> None:
    """With the ``self`` built for every method (no sharing, so no print), the same findings."""
    source = _trainer(6)
    checker = IncrementalChecker()
    checker.check(source)
    edited = source.replace("    def __init__(self):\n", "    def __init__(self):\n        # note\n")
    incremental = _outcome(checker.check(edited))
    monkeypatch.setattr(self_cache, "ENABLED", False)
    assert incremental == _outcome(check_source(edited))


_READ_APART = '''import torch
import torch.nn as nn


class Engine(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.w = torch.zeros(4, requires_grad=True)
        self.scale = 2.0
        self.steps = [1, 2]
        self.frozen = False
        self.helper_w = torch.zeros(4, requires_grad=True)

    def uses_net(self, x):
        loss = self.net(x).sum()
        loss.backward()
        return loss.item()

    def uses_w(self, x):
        loss = (self.w * x).sum() * self.scale
        loss.backward()
        loss.backward()
        return loss.item()

    def uses_steps(self, x):
        for step in self.steps:
            x = x * step
        return x

    def uses_name(self, name, x):
        return getattr(self, name)

    def reads_maybe(self, x):
        if hasattr(self, "extra"):
            return self.extra * x
        return x

    def reads_through_helper(self, x):
        loss = (self._weight() * x).sum()
        loss.backward()
        return loss.item()

    def _weight(self):
        return self.helper_w
'''

#: Edits of ``__init__`` above (one after the other), how many methods (of six) each leaves
#: replayed at least, and the methods that read what it changed (they run), each version
#: compared with a full check.
_READ_APART_EDITS = [
    ("        self.frozen = False\n", "        self.frozen = False\n        self.unread = 3\n", 4, ()),
    ("        self.scale = 2.0\n", "        self.scale = 3.0\n", 4, ()),
    ("requires_grad=True)\n        self.scale", "requires_grad=False)\n        self.scale", 4, ()),
    ("        self.steps = [1, 2]\n", "        self.steps = [1, 2, 3]\n", 4, ("uses_steps",)),
    ("        self.unread = 3\n", "", 5, ()),  # removed
    ("        self.frozen = False\n", "        self.frozen = False\n        self.extra = torch.ones(4)\n", 4,
     ("reads_maybe",)),
    ("        self.net = nn.Linear(4, 4)\n", "        self.net = nn.Linear(4, 4, bias=False)\n", 4, ("uses_net",)),
    ("        self.frozen = False\n", "        self.frozen = True\n", 5, ()),
    # read by a method it inlines
    ("torch.zeros(4, requires_grad=True)\n\n", "torch.zeros(4)\n\n", 4, ("reads_through_helper",)),
]


#: The steps whose GL101 finding has a fix: its proof looks for the tensors the trainer keeps
#: on ``self`` (``fixes/proofs/shared_graph.py``), which reads which attributes hold a tensor.
_STEPS_WITH_A_FIX = {"step_0", "step_3", "step_6"}


@pytest.mark.parametrize(("added", "ran"), [
    ("self.name = 'trainer'", set()),  # no tensor: every step replayed
    ("self.table = {'lr': 0.1}", set()),
    ("self.buffer = torch.zeros(4)", _STEPS_WITH_A_FIX),  # a tensor more: the fix's proof sees it
    ("self.w2 = self.w * 2", _STEPS_WITH_A_FIX),  # one with a graph
])
def test_an_attribute_added_runs_the_steps_whose_fix_looks_for_tensors_only_when_it_is_one(
        added: str, ran: set[str]) -> None:
    """A step whose GL101 fix's proof scanned ``self`` for tensors read ``self`` whole, and ran
    again after any attribute was added in ``__init__``. It reads which attributes hold a tensor
    (``self_reads.items_of_class``): an attribute that holds none leaves it replayed; one that holds
    a tensor runs it again, and the fix it offers is the full check's."""
    source = _trainer(9)
    checker = IncrementalChecker()
    _assert_same(checker, source, "as written")
    before = _method_entries(checker)
    assert {name for name, entry in before.items() if entry.self_kinds} == _STEPS_WITH_A_FIX
    assert all(entry.self_keys is not None for name, entry in before.items() if name.startswith("step_"))
    edited = source.replace("        self._setup()\n", f"        self._setup()\n        {added}\n", 1)
    _assert_same(checker, edited, added)
    after = _method_entries(checker)
    reran = {name for name, entry in after.items() if name.startswith("step_") and entry is not before.get(name)}
    replayed_again = {name for name in after if name.startswith("step_")} - reran
    # a replayed entry is written again in place (the same object); one that ran is a new one
    assert reran == ran, (added, reran)
    assert checker.statistics["ran"] == 1 + len(ran), (added, checker.statistics)
    assert len(replayed_again) == 9 - len(ran)


def test_methods_that_did_not_read_what_changed_are_replayed() -> None:
    """Attributes added, removed and changed: each method runs again only when it read the
    attribute (``uses_w``'s GL101 finding's fix looks for the tensors ``self`` holds, until an
    edit makes its leaf need no gradient: a tensor added runs it again; ``uses_name``'s ``getattr`` of a name the
    engine does not know gives a value it does not know, whatever ``self`` holds; ``reads_maybe``
    reads an attribute absent until an edit adds it)."""
    source = _READ_APART
    checker = IncrementalChecker()
    _assert_same(checker, source, "as written")
    for old, new, at_least, ran in _READ_APART_EDITS:
        assert old in source, old
        before = {name: entry for name, entry in _method_entries(checker).items() if name in ran}
        source = source.replace(old, new, 1)
        _assert_same(checker, source, f"after {new!r}")
        assert checker.units.selves_matched >= at_least, (new, checker.statistics, checker.units.selves_matched)
        for name, entry in _method_entries(checker).items():
            if name in ran:  # read what changed: ran again (a new record)
                assert entry is not before[name] or entry.self_keys is None, (new, name)


def _method_entries(checker: IncrementalChecker) -> dict[str, object]:
    return {getattr(key[0].node, "name", ""): entry for key, entry in checker.units.entries.items()
            if not isinstance(key, str)}


def _init_edits(source: str, seed: int) -> list[str]:
    """Successive versions of ``source``, each edited inside the ``__init__`` of a class: a comment
    line, a comment at a line's end, an unrelated attribute, a statement duplicated or deleted, an
    attribute the methods read set to another value (``None``, or a number changed), an attribute
    assigned that some method reads but ``__init__`` did not set."""
    rng = random.Random(seed)
    versions = []
    lines = source.split("\n")
    for step in range(9):
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            break
        inits = [node for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
                 for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
        if not inits:
            break
        init = rng.choice(inits)
        simple = [stmt for stmt in init.body if stmt.lineno == stmt.end_lineno
                  and isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr))]
        if not simple:
            break
        stmt = rng.choice(simple)
        index = stmt.lineno - 1
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        kind = step % 8
        if kind == 0:
            lines.insert(index, indent + "# a note")
        elif kind == 1:
            lines[index] += "  # why"
        elif kind == 2:
            lines.insert(index + 1, indent + f"self.unrelated_{step} = {step}")
        elif kind == 3:
            lines.insert(index + 1, lines[index])
        elif kind == 4 and len(simple) > 1:
            del lines[index]
        elif kind == 5:
            written = [target.attr for node in simple if isinstance(node, ast.Assign)
                       for target in node.targets if _on_self(target)]
            if written:
                lines.insert(index + 1, indent + f"self.{rng.choice(sorted(written))} = None")
        elif kind == 6:
            numbers = [node for node in ast.walk(stmt) if isinstance(node, ast.Constant)
                       and type(node.value) in (int, float) and node.lineno == stmt.lineno]
            if numbers:
                number = rng.choice(numbers)
                line = lines[index]
                lines[index] = line[:number.col_offset] + repr(number.value + 1) + line[number.end_col_offset:]
        else:
            read = sorted({node.attr for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) and init in cls.body
                           for method in cls.body if isinstance(method, ast.FunctionDef) and method is not init
                           for node in ast.walk(method) if _on_self(node) and isinstance(node.ctx, ast.Load)})
            if read:
                lines.insert(index + 1, indent + f"self.{rng.choice(read)} = {step}")
        versions.append("\n".join(lines))
    return versions


def _on_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _with_init(group: str) -> list[str]:
    return [path.read_text() for path in sorted((FIXTURES_DIR / group).glob("*.py"))
            if "def __init__(" in path.read_text()]


@pytest.mark.parametrize("group", [path.name for path in fixture_dirs() if _with_init(path.name)])
def test_fixtures_under_init_edits(group: str) -> None:
    for number, source in enumerate(_with_init(group)):
        checker = IncrementalChecker()
        _assert_same(checker, source, f"{group} #{number} as written")
        for step, version in enumerate(_init_edits(source, seed=number)):
            _assert_same(checker, version, f"{group} #{number} after __init__ edit {step + 1}")


_HOOK_ON_SELF = '''import torch


class Model:
    def __init__(self):
        self.w = torch.randn(3, requires_grad=True)

        def scale(x):
            return x * 2

        self.scale = scale

    def step(self, x):
        y = self.scale(self.w * x).sum()
        y.backward()
        y.backward()
        return y.item()
'''


def test_an_edit_in_a_function_init_keeps_on_self_is_seen_by_the_methods() -> None:
    """A function defined in ``__init__`` and kept on ``self`` stands for its code in the print:
    an edit of its body is another ``self`` (and another finding in the method calling it)."""
    checker = IncrementalChecker()
    _assert_same(checker, _HOOK_ON_SELF, "as written")
    source = _HOOK_ON_SELF
    for old, new in [("            return x * 2\n", "            return (x * 2).detach()\n"),
                     ("            return (x * 2).detach()\n", "            # twice\n            return x * 2\n"),
                     ("        self.w = torch.randn(3, requires_grad=True)\n",
                      "        # the weights\n        self.w = torch.randn(3, requires_grad=True)\n")]:
        assert old in source
        source = source.replace(old, new, 1)
        _assert_same(checker, source, f"after {new!r}")
