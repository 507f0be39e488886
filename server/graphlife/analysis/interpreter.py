"""The abstract interpreter: walks each unit (module body, function, method) in
program order over abstract values, builds graph nodes, and emits events.

Why an interpreter and not patterns: the bugs graphlife finds span loops and
functions ("built in iteration k, freed by its backward, reached again in
iteration k+1 through a carried variable"). Loops are unrolled twice (exactly,
once per item, when iterating a known tuple of modules); branches are joined
keeping must/may apart; functions and methods of the same file are inlined
with the caller's values (bounded depth); unknown calls give unknown values,
which are never the basis of an error.

The interpreter is assembled here from its parts, one concern each, in
:mod:`graphlife.analysis.engine` (units, statements, assignment, loops, the
iterations they carry, expressions, calls, the heap); its run state is one value
(:mod:`graphlife.analysis.run_state`). This module is the engine's entry point:
:func:`analyze_module` runs the rules on one parsed file.
"""

from __future__ import annotations

import ast

from graphlife.analysis.engine.assignment import Assignment
from graphlife.analysis.engine.autograd_functions import AutogradFunctionParts
from graphlife.analysis.engine.callbacks import CallbackParts
from graphlife.analysis.engine.calls import Calls
from graphlife.analysis.engine.expressions import Expressions
from graphlife.analysis.engine.heap import Heap
from graphlife.analysis.engine.imports import Imports
from graphlife.analysis.engine.iterations import Iterations
from graphlife.analysis.engine.loops import Loops
from graphlife.analysis.engine.statements import Statements
from graphlife.analysis.engine.units import Units
from graphlife.analysis.engine_api import Timeout, UnitRecorder
from graphlife.analysis.modules import ModuleProvider
from graphlife.analysis.rule_api import ModuleContext, Reporter, Rule
from graphlife.analysis.tree_index import TreeIndex
from graphlife.findings import Finding
from graphlife.text_lines import source_lines

__all__ = ["Interpreter", "Timeout", "analyze_module", "release_tree"]


class Interpreter(Units, Statements, Imports, Assignment, Loops, Iterations, Expressions, Calls, CallbackParts,
                  AutogradFunctionParts, Heap):
    """Interprets one file's units and dispatches events to rule hooks (see the parts' modules)."""


def analyze_module(
    tree: ast.Module, source: str, rules: list[Rule], *, deadline: float, index: TreeIndex | None = None,
    unit_cache: UnitRecorder | None = None, lines: list[str] | None = None,
    modules: ModuleProvider | None = None, path: str | None = None,
) -> tuple[list[Finding], list[str]]:
    """Findings of ``rules`` on one parsed file, and notes about skipped work.

    ``index`` and ``unit_cache`` are for the language server, which keeps them between
    edits (:mod:`graphlife.incremental`); the findings are the same without them.
    ``modules`` finds the other modules of the user's project that the file imports
    (:mod:`graphlife.analysis.modules`; without it they are unknown values); findings in
    their code name their file (``Span.path``). ``path`` is the file's own."""
    reporter = Reporter(checked_path=path)
    lines = lines if lines is not None else source_lines(source)
    notes: list[str] = []
    whole_file = index is None
    if whole_file:  # a full check: one walk of the file, shared with the rules that need one
        index = TreeIndex.of_module(tree)
    try:
        context = ModuleContext(tree=tree, source=source, lines=lines, reporter=reporter)
        for rule in rules:
            if rule.check_module is not None:
                try:
                    rule.check_module(context)
                except Exception as exc:  # noqa: BLE001 - a rule bug must not cost the other rules
                    notes.append(f"rule {rule.code} failed: {type(exc).__name__}: {exc}")
        hooked = [rule for rule in rules if rule.hooks]
        if hooked:
            interpreter = Interpreter(tree, source, lines, hooked, reporter, deadline, index=index,
                                      unit_cache=unit_cache, modules=modules, path=path)
            try:
                notes.extend(interpreter.run())
            except Exception as exc:  # noqa: BLE001 - an engine bug must never take the editor down
                notes.append(f"internal error in the engine ({type(exc).__name__}: {exc}); "
                             "some findings may be missing")
            finally:
                interpreter.ctx = None  # the hooks' context refers back to the interpreter
    finally:
        release_tree(tree, whole_file)
    return reporter.findings, notes


def release_tree(tree: ast.Module, whole_file: bool) -> None:
    """Take back what a check hung on the tree that refers back into it.

    Why: the GL4 rules' index of the file keeps the tree it maps, and the top-level
    functions found in a class keep the class as their owner. Left there, they put the
    tree in reference cycles: after a check of 5,000 lines, 65,000 objects that only the
    cycle collector frees, at the cost of the next file's time. The language server keeps
    the statements of unchanged blocks between edits (``whole_file`` False), and their
    caches with them: only the file-wide index goes then. A caller that checks the same
    tree again builds what it needs again; nothing else reads these after the check.
    """
    for name in ("_graphlife_located", "_graphlife_gl4_index"):
        tree.__dict__.pop(name, None)
    if whole_file:
        for stmt in tree.body:
            stmt.__dict__.pop("_graphlife_functions", None)
