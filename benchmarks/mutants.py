"""Recall on injected bugs: put one classic training bug at a time into public training
scripts, check before and after, and count the bugs graphlife reports.

Usage:
    python benchmarks/mutants.py run OUT.json [--scripts benchmarks/mutant_scripts.toml] [--kinds K,...]
    python benchmarks/mutants.py report OUT.json          # the recall table, as markdown

Why: the fixtures say what the analyzer does on code written to show a rule; real scripts
say whether it sees the bug where users make it. Each mutation is found and applied on
the syntax tree (positions from ``ast``, edits of the exact source text), so the rest of
the file is byte for byte the script's own. Mutations keep line numbers where they can
(an inserted statement goes on the line of its neighbour, after a ``;``), so a no-op
control can be compared finding by finding.

A mutant counts as caught when a finding of one of its kind's codes appears that the
unmutated script did not have (more findings of that code than before). Controls
(mutations that change nothing torch does, such as renaming a local) must leave every
finding as it was (same code, severity and line).

Each check is ``python -m graphlife check --format json --no-cache`` on a copy of the
script's folder (its Python files and packages come along, so following imports works), run with
the ``PYTHONPATH`` given by ``--server`` (a copy of an older ``server/`` measures a
baseline).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
DEFAULT_SCRIPTS = HERE / "mutant_scripts.toml"
SITES_PER_KIND = 2


@dataclass(frozen=True)
class Edit:
    """Replace the source between two ``ast`` positions (1-based line, byte column)."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Mutant:
    """One injected change: its kind, the line a finding should name, and the edits."""

    kind: str
    line: int
    edits: tuple[Edit, ...]
    note: str = ""


def apply_edits(source: str, edits: tuple[Edit, ...]) -> str:
    """The source with the edits applied (ast columns are UTF-8 byte offsets)."""
    data = source.encode("utf-8")
    starts = [0]
    for index, byte in enumerate(data):
        if byte == 0x0A:
            starts.append(index + 1)

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    out = data
    for edit in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        start, end = offset(edit.line, edit.col), offset(edit.end_line, edit.end_col)
        out = out[:start] + edit.text.encode("utf-8") + out[end:]
    return out.decode("utf-8")


# ---------------------------------------------------------------- reading the tree


@dataclass
class Tree:
    """A parsed script with parents, and the source text of any node."""

    source: str
    module: ast.Module
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)

    @classmethod
    def parse(cls, source: str) -> Tree:
        module = ast.parse(source)
        tree = cls(source, module)
        for node in ast.walk(module):
            for child in ast.iter_child_nodes(node):
                tree.parents[child] = node
        return tree

    def text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ""

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def loop_of(self, node: ast.AST) -> ast.For | ast.While | None:
        """The nearest loop around the node inside its function."""
        for parent in self.ancestors(node):
            if isinstance(parent, (ast.For, ast.While)):
                return parent
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return None
        return None

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for parent in self.ancestors(node):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return parent
        return None

    def under_no_grad(self, node: ast.AST) -> bool:
        for parent in self.ancestors(node):
            if isinstance(parent, ast.With) and any(is_no_grad(item.context_expr) for item in parent.items):
                return True
        return False

    def statements(self) -> Iterator[ast.stmt]:
        for node in ast.walk(self.module):
            if isinstance(node, ast.stmt):
                yield node


def method_call(node: ast.AST, name: str) -> ast.Call | None:
    """``x.name(...)`` when the node is that call."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name:
        return node
    return None


def statement_call(stmt: ast.stmt, name: str) -> ast.Call | None:
    """The statement is an expression statement calling ``x.name(...)``."""
    return method_call(stmt.value, name) if isinstance(stmt, ast.Expr) else None


def is_no_grad(expr: ast.expr) -> bool:
    """``torch.no_grad()`` (or ``no_grad()``) as a ``with`` item."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "no_grad"


def single_line(node: ast.AST) -> bool:
    return node.lineno == node.end_lineno  # type: ignore[attr-defined]


def after(stmt: ast.stmt, text: str) -> Edit:
    """Append ``; text`` to a one-line statement (keeps every line number)."""
    return Edit(stmt.end_lineno, stmt.end_col_offset, stmt.end_lineno, stmt.end_col_offset, f"; {text}")


def before(stmt: ast.stmt, text: str) -> Edit:
    """Put ``text;`` in front of a one-line statement."""
    return Edit(stmt.lineno, stmt.col_offset, stmt.lineno, stmt.col_offset, f"{text}; ")


def replace(node: ast.AST, text: str) -> Edit:
    return Edit(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text)  # type: ignore[attr-defined]


def backward_statements(tree: Tree) -> Iterator[tuple[ast.Expr, ast.Call, ast.expr]]:
    """``<loss>.backward(...)`` statements on one line, with the receiver."""
    for stmt in tree.statements():
        call = statement_call(stmt, "backward")
        if call is not None and single_line(stmt) and isinstance(call.func, ast.Attribute):
            assert isinstance(stmt, ast.Expr)
            yield stmt, call, call.func.value


def retains_graph(call: ast.Call) -> bool:
    return any(k.arg in {"retain_graph", "create_graph", "retain_variables"} for k in call.keywords)


def simple_receiver(expr: ast.expr) -> bool:
    """A loss we can name again in another statement (a name or an attribute chain)."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name)


# ---------------------------------------------------------------- the bug kinds


def remove_zero_grad(tree: Tree) -> Iterator[Mutant]:
    """Drop a ``zero_grad()`` that runs in a loop (or a function a loop calls): gradients add up."""
    for stmt in tree.statements():
        in_loop_or_function = tree.loop_of(stmt) is not None or tree.function_of(stmt) is not None
        if (statement_call(stmt, "zero_grad") and single_line(stmt) and not tree.under_no_grad(stmt)
                and in_loop_or_function):
            yield Mutant("remove_zero_grad", stmt.lineno, (replace(stmt, "pass"),))


def zero_grad_between(tree: Tree) -> Iterator[Mutant]:
    """Move a ``zero_grad()`` from before the backward to between the backward and the step."""
    for stmt in tree.statements():
        body = getattr(stmt, "body", None)
        if not isinstance(body, list):
            continue
        for index, first in enumerate(body):
            zero = statement_call(first, "zero_grad")
            if zero is None or not single_line(first):
                continue
            owner = tree.text(zero.func.value)  # type: ignore[attr-defined]
            later = body[index + 1:]
            backward_at = next(
                (i for i, s in enumerate(later) if statement_call(s, "backward") and single_line(s)), None)
            if backward_at is None:
                continue
            steps = [s for s in later[backward_at + 1:] if (c := statement_call(s, "step")) is not None
                     and (tree.text(c.func.value) == owner or "optim" in tree.text(c.func.value)
                          or "opt" in tree.text(c.func.value).lower())]
            if steps:
                backward = later[backward_at]
                yield Mutant("zero_grad_between", first.lineno,
                             (replace(first, "pass"), after(backward, tree.text(first))))


def _accumulate(kind: str, init: str, grow: Callable[[str], str]) -> Callable[[Tree], Iterator[Mutant]]:
    def find(tree: Tree) -> Iterator[Mutant]:
        for stmt, call, receiver in backward_statements(tree):
            loop = tree.loop_of(stmt)
            if loop is None or not simple_receiver(receiver) or retains_graph(call):
                continue
            name = "_mutant_acc"
            edits = [after(stmt, grow(tree.text(receiver)).format(acc=name))]
            preceding = _statement_before(tree, loop)
            line = stmt.lineno
            if preceding is not None and single_line(preceding):
                edits.append(after(preceding, f"{name} = {init}"))
            else:
                indent = " " * loop.col_offset
                edits.append(Edit(loop.lineno, 0, loop.lineno, 0, f"{indent}{name} = {init}\n"))
                line += 1  # the line inserted above the loop moves the store down
            yield Mutant(kind, line, tuple(edits))
    find.__doc__ = f"Keep every iteration's loss in a variable that outlives the loop ({kind})."
    return find


def _statement_before(tree: Tree, stmt: ast.stmt) -> ast.stmt | None:
    parent = tree.parents.get(stmt)
    for attr in ("body", "orelse", "finalbody"):
        block = getattr(parent, attr, None)
        if isinstance(block, list) and stmt in block:
            index = block.index(stmt)
            return block[index - 1] if index > 0 else None
    return None


accumulate_plus = _accumulate("accumulate_plus", "0", lambda loss: "{acc} = {acc} + " + loss)
accumulate_augmented = _accumulate("accumulate_augmented", "0", lambda loss: "{acc} += " + loss)
accumulate_append = _accumulate("accumulate_append", "[]", lambda loss: "{acc}.append(" + loss + ")")


def drop_item(tree: Tree) -> Iterator[Mutant]:
    """``total += loss.item()`` -> ``total += loss``: a logging sum keeps every graph."""
    for stmt in tree.statements():
        if not single_line(stmt) or tree.loop_of(stmt) is None:
            continue
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.AugAssign):
            targets = [stmt.value]
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.BinOp):
            target = tree.text(stmt.targets[0])
            if target in (tree.text(stmt.value.left), tree.text(stmt.value.right)):
                targets = [stmt.value]
        elif isinstance(stmt, ast.Expr) and method_call(stmt.value, "append") is not None:
            targets = list(stmt.value.args)  # type: ignore[attr-defined]
        for value in targets:
            for node in ast.walk(value):
                item = method_call(node, "item")
                if item is not None and not item.args and not tree.under_no_grad(stmt):
                    receiver = item.func.value  # type: ignore[attr-defined]
                    yield Mutant("drop_item", stmt.lineno, (replace(item, tree.text(receiver)),))
                    break


def drop_detach(tree: Tree) -> Iterator[Mutant]:
    """Drop the ``.detach()`` of a value carried into the next iteration (a hidden state) or
    handed to a second model whose loss is backpropagated apart (the GAN discriminator)."""
    for node in ast.walk(tree.module):
        call = method_call(node, "detach")
        if call is None or call.args or tree.under_no_grad(call):
            continue
        stmt = next(p for p in tree.ancestors(call) if isinstance(p, ast.stmt))
        loop = tree.loop_of(stmt)
        receiver = call.func.value  # type: ignore[attr-defined]
        parent = tree.parents.get(call)
        carried = (isinstance(stmt, ast.Assign) and isinstance(receiver, ast.Name)
                   and any(isinstance(t, ast.Name) and t.id == receiver.id for t in ast.walk(stmt.targets[0])))
        repackaged = isinstance(stmt, ast.Return) and tree.function_of(stmt) is not None and "hidden" in (
            tree.function_of(stmt).name)  # type: ignore[union-attr]
        backwards = 0
        if loop is not None:
            backwards = sum(1 for n in ast.walk(loop) if method_call(n, "backward") is not None)
        argument = isinstance(parent, ast.Call) and call in parent.args and backwards >= 2
        if carried or repackaged or argument:
            yield Mutant("drop_detach", stmt.lineno, (replace(call, tree.text(receiver)),),
                         note="hidden state" if carried or repackaged else "second model's input")


def drop_no_grad(tree: Tree) -> Iterator[Mutant]:
    """``with torch.no_grad():`` -> ``if True:`` (an evaluation or a target builds graphs)."""
    for node in ast.walk(tree.module):
        if (isinstance(node, ast.With) and len(node.items) == 1 and is_no_grad(node.items[0].context_expr)
                and node.lineno != node.body[0].lineno):
            header_end = node.items[0].context_expr
            edit = Edit(node.lineno, node.col_offset, header_end.end_lineno, header_end.end_col_offset,  # type: ignore[arg-type]
                        "if True")
            yield Mutant("drop_no_grad", node.lineno, (edit,))


def backward_twice(tree: Tree) -> Iterator[Mutant]:
    """Call the same backward again right after the first."""
    for stmt, call, _ in backward_statements(tree):
        if not retains_graph(call):
            yield Mutant("backward_twice", stmt.lineno, (after(stmt, tree.text(stmt)),))


def inplace_saved(tree: Tree) -> Iterator[Mutant]:
    """Before the backward, pass the loss through ``sigmoid`` (which saves its result) and
    change that result in place."""
    for stmt, call, receiver in backward_statements(tree):
        if simple_receiver(receiver) and tree.loop_of(stmt) is not None and not retains_graph(call):
            loss = tree.text(receiver)
            yield Mutant("inplace_saved", stmt.lineno, (before(stmt, f"{loss} = {loss}.sigmoid(); {loss}.mul_(2)"),))


def retain_variables(tree: Tree) -> Iterator[Mutant]:
    """``backward(retain_variables=True)``: the keyword torch removed (a TypeError now)."""
    for stmt, call, _ in backward_statements(tree):
        if not call.args and not call.keywords:
            edit = Edit(call.end_lineno, call.end_col_offset - 1, call.end_lineno, call.end_col_offset - 1,  # type: ignore[arg-type]
                        "retain_variables=True")
            yield Mutant("retain_variables", stmt.lineno, (edit,))


# ---------------------------------------------------------------- controls


def rename_local(tree: Tree) -> Iterator[Mutant]:
    """Control: rename the loss of a backward everywhere in its function (same lines)."""
    for stmt, _, receiver in backward_statements(tree):
        function = tree.function_of(stmt)
        if function is None or not isinstance(receiver, ast.Name):
            continue
        name = receiver.id
        if name in {a.arg for a in function.args.args + function.args.kwonlyargs}:
            continue
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(function)):
            continue
        edits = tuple(replace(n, f"{name}_renamed") for n in ast.walk(function)
                      if isinstance(n, ast.Name) and n.id == name)
        yield Mutant("control_rename_local", stmt.lineno, edits)


def add_unused_local(tree: Tree) -> Iterator[Mutant]:
    """Control: an unused local number after the backward (same lines)."""
    for stmt, _, _ in backward_statements(tree):
        yield Mutant("control_unused_local", stmt.lineno, (after(stmt, "_mutant_unused = 0"),))


KINDS: dict[str, tuple[Callable[[Tree], Iterator[Mutant]], frozenset[str]]] = {
    "remove_zero_grad": (remove_zero_grad, frozenset({"GL302"})),
    "zero_grad_between": (zero_grad_between, frozenset({"GL301"})),
    "accumulate_plus": (accumulate_plus, frozenset({"GL201"})),
    "accumulate_augmented": (accumulate_augmented, frozenset({"GL201"})),
    "accumulate_append": (accumulate_append, frozenset({"GL201"})),
    "drop_item": (drop_item, frozenset({"GL201"})),
    "drop_detach": (drop_detach, frozenset({"GL101", "GL203", "GL201", "GL109"})),
    "drop_no_grad": (drop_no_grad, frozenset({"GL205", "GL201", "GL103", "GL101", "GL102", "GL109"})),
    "backward_twice": (backward_twice, frozenset({"GL101"})),
    "inplace_saved": (inplace_saved, frozenset({"GL102"})),
    "retain_variables": (retain_variables, frozenset({"GL108"})),
}
CONTROLS: dict[str, Callable[[Tree], Iterator[Mutant]]] = {
    "control_rename_local": rename_local,
    "control_unused_local": add_unused_local,
}


def mutants_of(source: str, kinds: list[str]) -> list[Mutant]:
    """Up to ``SITES_PER_KIND`` mutants of each kind, in source order, each on a distinct line."""
    tree = Tree.parse(source)
    found: list[Mutant] = []
    finders = {**{k: v[0] for k, v in KINDS.items()}, **CONTROLS}
    for kind in kinds:
        lines: set[int] = set()
        for mutant in sorted(finders[kind](tree), key=lambda m: m.line):
            if mutant.line in lines:
                continue
            lines.add(mutant.line)
            found.append(mutant)
            if len(lines) >= SITES_PER_KIND:
                break
    return found


# ---------------------------------------------------------------- running checks


def check(folder: Path, name: str, server: Path) -> list[dict]:
    """The findings of ``graphlife check --format json`` on one file of a folder."""
    env = {**os.environ, "PYTHONPATH": str(server)}
    done = subprocess.run([sys.executable, "-m", "graphlife", "check", "--format", "json", "--no-cache", name],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [{"code": "CRASH", "severity": "error", "line": 0, "message": done.stderr[-500:]}]
    return [{"code": f["code"], "severity": f["severity"], "line": f["line"],
             "path": f.get("path", ""), "message": f["message"]} for f in report["findings"]]


def run(scripts: list[Path], kinds: list[str], server: Path) -> dict:
    results: list[dict] = []
    for script in scripts:
        source = script.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="mutants_") as tmp:
            folder = Path(tmp)
            shutil.copytree(script.parent, folder, dirs_exist_ok=True, ignore=_not_python)
            target = folder / script.name
            before = check(folder, script.name, server)
            for mutant in mutants_of(source, kinds):
                target.write_text(apply_edits(source, mutant.edits), encoding="utf-8")
                after_ = check(folder, script.name, server)
                target.write_text(source, encoding="utf-8")
                results.append(judge(str(script), mutant, before, after_))
                print(f"{results[-1]['verdict']:>8} {mutant.kind:22} {script}:{mutant.line}", file=sys.stderr)
    return {"server": str(server), "results": results}


def _not_python(folder: str, names: list[str]) -> list[str]:
    """What ``copytree`` leaves out: everything but Python files and folders (data, images, caches)."""
    return [name for name in names if (not name.endswith(".py") and not (Path(folder) / name).is_dir())
            or name in (".git", "__pycache__", ".graphlife_cache")]


def judge(script: str, mutant: Mutant, before: list[dict], after_: list[dict]) -> dict:
    """Caught: more findings of an expected code than before. Control: any change at all."""
    def key(f: dict) -> tuple:
        return (f["code"], f["severity"], f["line"])

    added = list((Counter(map(key, after_)) - Counter(map(key, before))).elements())
    removed = list((Counter(map(key, before)) - Counter(map(key, after_))).elements())
    if mutant.kind.startswith("control_"):
        verdict = "changed" if added or removed else "same"
    else:
        expected = KINDS[mutant.kind][1]
        grew = any(Counter(f["code"] for f in after_)[code] > Counter(f["code"] for f in before)[code]
                   for code in expected)
        verdict = "caught" if grew else "missed"
    crashed = any(f["code"] == "CRASH" for f in after_)
    return {"script": script, "kind": mutant.kind, "line": mutant.line, "note": mutant.note,
            "verdict": "crash" if crashed else verdict, "added": added, "removed": removed,
            "on_line": any(line == mutant.line for _, _, line in added)}


def report(data: dict) -> str:
    rows = ["| bug kind | injected | caught | recall | caught on the mutated line |",
            "| --- | ---: | ---: | ---: | ---: |"]
    total = caught_total = 0
    for kind in KINDS:
        these = [r for r in data["results"] if r["kind"] == kind]
        if not these:
            continue
        caught = [r for r in these if r["verdict"] == "caught"]
        on_line = sum(1 for r in caught if r["on_line"])
        total += len(these)
        caught_total += len(caught)
        rows.append(f"| {kind} | {len(these)} | {len(caught)} | {100 * len(caught) / len(these):.0f}% | {on_line} |")
    if total:
        rows.append(f"| **all** | {total} | {caught_total} | {100 * caught_total / total:.0f}% | |")
    controls = [r for r in data["results"] if r["kind"].startswith("control_")]
    changed = [r for r in controls if r["verdict"] != "same"]
    rows.append("")
    rows.append(f"Controls: {len(controls)} run, {len(changed)} changed a finding.")
    for r in changed:
        rows.append(f"- {r['kind']} {r['script']}:{r['line']}: +{r['added']} -{r['removed']}")
    return "\n".join(rows)


def load_scripts(path: Path) -> list[Path]:
    with path.open("rb") as handle:
        table = tomllib.load(handle)
    return [Path(root) / rel for root, rels in table["scripts"].items() for rel in rels]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run")
    run_p.add_argument("out")
    run_p.add_argument("--scripts", default=str(DEFAULT_SCRIPTS))
    run_p.add_argument("--kinds", default=",".join([*KINDS, *CONTROLS]))
    run_p.add_argument("--server", default=str(HERE.parent / "server"))
    run_p.add_argument("--only", default="", help="run only scripts whose path contains this text")
    rep = sub.add_parser("report")
    rep.add_argument("out")
    args = parser.parse_args(argv)
    if args.command == "report":
        print(report(json.loads(Path(args.out).read_text(encoding="utf-8"))))
        return 0
    scripts = [s for s in load_scripts(Path(args.scripts)) if args.only in str(s)]
    data = run(scripts, args.kinds.split(","), Path(args.server).resolve())
    Path(args.out).write_text(json.dumps(data, indent=1), encoding="utf-8")
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
