"""Imports: binding imported names, and running the user's other modules as Python would.

Why here: training code is split across modules (the model in ``models.py``, the
losses in ``losses.py``, a trainer class in ``trainer.py``), and its bugs cross them.
When the engine has a :class:`~graphlife.analysis.modules.ModuleProvider`, an
import of a module of the user's project runs that module's body on the importer's
state, once per path of the run (as ``sys.modules`` makes it run once), in that
module's own namespace. Its functions and classes are then values like the file's
own: calls inline them with the caller's values, and their code runs with the names
of the module that defines them. Findings in their code land in their file
(:meth:`EngineCore.span` names it).

Where the module's names live: its imports, functions and classes in a table of its
own, bound once (like the file's ``globals``); what its body computed (a model, an
optimizer, a list of losses) on a heap object that stands for the module, kept in
the state under a name no Python code can spell (``<module pkg.nets>``), so that it
follows the paths of the run like any other object. Modules outside the project
(torch, libraries) stay names (:class:`~graphlife.analysis.values.QualName`), as
before; so does an import the provider cannot resolve or read.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from graphlife.analysis import torch_api
from graphlife.analysis.engine.core import EngineCore, handles_statements
from graphlife.analysis.engine_api import Flow
from graphlife.analysis.modules import SourceModule, is_namespace_key, namespace_key, relative_base
from graphlife.analysis.state import State
from graphlife.analysis.values import (
    UNKNOWN,
    ClassRef,
    ContextVal,
    FunctionRef,
    HeapRef,
    ImportedName,
    NoneValue,
    Number,
    QualName,
    TensorVal,
    TupleVal,
    Unknown,
    Value,
)

#: Modules imported inside modules nest at most this deep; a deeper import stays unknown.
MAX_IMPORT_DEPTH = 12

#: Statements of the project's other modules the module body may run; past it, calls of their
#: functions and the bodies of modules not yet imported are unknown (what is unknown never
#: makes an error). Why: a test file of a large library imports half of it, and a model's
#: ``__init__`` may run thousands of its statements; the file's own code must still be analyzed
#: within the time box. Counted in statements, not seconds, so that the findings do not depend
#: on the machine; a function analyzed alone (or the build of its ``self``) gets a share of
#: :data:`FILE_FOREIGN_BUDGET` (a file of 140 test functions gets less each than a script of 5),
#: fixed by the number of functions in the file, so a unit replayed by the language server's
#: cache leaves the others' budgets as they were.
FOREIGN_BUDGET = 8_000
FILE_FOREIGN_BUDGET = 60_000
MIN_FOREIGN_BUDGET = 300


def function_foreign_budget(functions: int) -> int:
    """Each function's budget of foreign statements in a file of ``functions`` functions."""
    return max(MIN_FOREIGN_BUDGET, min(FOREIGN_BUDGET, FILE_FOREIGN_BUDGET // max(1, functions)))

def _shared_by_every_state(value: Value) -> bool:
    """A value that means the same in every state (no heap object): it may live in a table of
    names bound once, rather than in each state."""
    return isinstance(value, (FunctionRef, ClassRef, QualName, Number, ImportedName)) and not (
        isinstance(value, FunctionRef) and value.bound_self is not None
    )


class Imports(EngineCore):
    """Import statements, and the modules of the project they run."""

    @handles_statements(ast.Import, ast.ImportFrom)
    def exec_import(self, stmt: ast.Import | ast.ImportFrom, state: State) -> Flow:
        if any(self.missing_project_module(name) for name in _modules_named(stmt, self.module)):
            return Flow(normal=state.dead_copy())  # ModuleNotFoundError: a `try` goes to its handler
        if isinstance(stmt, ast.Import):  # a module is a name: its body runs when one of its names is used
            for alias in stmt.names:
                if alias.asname:
                    self.bind_definition(stmt, alias.asname, QualName(alias.name), state)
                else:
                    top = alias.name.split(".")[0]
                    self.bind_definition(stmt, top, QualName(top), state)
            return Flow(normal=state)
        if self.modules is None:  # the file alone: every imported name stays a name
            for alias in stmt.names:
                if alias.name != "*":
                    module = stmt.module or ""
                    qualified = f"{module}.{alias.name}" if module else alias.name
                    self.bind_definition(stmt, alias.asname or alias.name, QualName(qualified), state)
            return Flow(normal=state)
        base = self.absolute_module(stmt.module or "", stmt.level)
        if base is None:  # a relative import above the top package: Python raises, names stay unknown
            for alias in stmt.names:
                if alias.name != "*":
                    self.bind_definition(stmt, alias.asname or alias.name, UNKNOWN, state)
            return Flow(normal=state)
        ours = bool(base) and self.is_project_module(base)
        for alias in stmt.names:
            if alias.name == "*":
                if ours:  # its names are looked up when a name is not found (:meth:`star_lookup`)
                    sources = self.star_sources.setdefault(self.module.name, [])
                    if base not in sources:
                        sources.append(base)
                continue
            value: Value = ImportedName(base, alias.name)
            if not ours:  # a library's name, as without the project
                value = QualName(f"{base}.{alias.name}" if base else alias.name)
            self.bind_definition(stmt, alias.asname or alias.name, value, state)
        return Flow(normal=state)

    def star_name(self, name: str, state: State) -> Value | None:
        """A name the running module's code uses that nothing bound but maybe one of its star
        imports (``None``: a builtin, or bound by none of them; builtins are not looked for in
        the imported modules, which would read them all for every ``len``)."""
        if self.module.name not in self.star_sources or torch_api.is_builtin(name):
            return None
        value = self.star_lookup(self.module.name, name)
        return None if value is None else self.resolve_imported(value, state)

    def star_lookup(self, module_name: str, name: str) -> Value | None:
        """``name`` as a ``from X import *`` of the module gives it (the last such import that
        binds it wins, as in Python), or ``None``. Read from the imported modules' code when a
        name is looked up, not at the import: a package's ``__init__`` star-imports many modules."""
        for source in reversed(self.star_sources.get(module_name, ())):
            found = self.project_module(source)
            if found is not None and name in self.star_names(found):
                return ImportedName(source, name)
        return None

    def bind_definition(self, stmt: ast.stmt, name: str, value: Value, state: State) -> None:
        """Top-level imports, functions and classes live in one shared table, not in every state:
        copying and joining states then costs nothing for them (large files have hundreds).
        An imported object (a model another module built) is the state's: it stays there."""
        if (
            self.parents.get(id(stmt)) is self.tree and not self.rebound.get(name)
            and _shared_by_every_state(value)
        ):
            self.run_state.globals[name] = value
            state.env.pop(name, None)
        else:
            state.env[name] = value

    # -- resolving ---------------------------------------------------------------------------------------
    def absolute_module(self, module: str, level: int) -> str | None:
        """The absolute dotted name ``from <level dots><module> import ...`` names in the
        running module; ``None`` above the top package."""
        return _absolute_in(self.module, module, level)

    def project_module(self, name: str) -> SourceModule | None:
        """The project's module of that dotted name (found once; ``None``: not the project's).
        A dotted name is the project's only when its top package is (``torch.nn`` asks nothing)."""
        if self.modules is None or not name:
            return None
        if name in self.imported:
            return self.imported[name]
        top, dot, _ = name.partition(".")
        found = None
        if not dot or self.project_module(top) is not None:
            found = self.modules.find(self.module, name, 0)
            if found is not None and (found is self.entry or found.path == self.entry.path):
                found = None  # the file being checked, imported by a module it imports: a cycle back
        self.imported[name] = found
        return found

    def missing_project_module(self, name: str) -> bool:
        """Does importing ``name`` raise for sure: its top package is the project's, and the
        project has no such module (``from lib.fused import f`` with no ``lib/fused.py``)?
        Then a ``try: ... except ImportError:`` runs its fallback, as it does under Python."""
        top, dot, _ = name.partition(".")
        return bool(dot) and self.modules is not None and self.is_project_module(top) \
            and not self.is_project_module(name)

    def is_project_module(self, name: str) -> bool:
        """Does ``name`` name a module of the user's project? (Without reading it.)"""
        if self.modules is None or not name:
            return False
        known = self._exists.get(name)
        if known is None:
            if name in self.imported:
                known = self.imported[name] is not None
            else:
                top, dot, _ = name.partition(".")
                known = (not dot or self.is_project_module(top)) and self.modules.exists(name)
            self._exists[name] = known
        return known

    def import_module(self, name: str, state: State) -> SourceModule | None:
        """Import ``name`` as Python does: each package on the way first, then the module; each
        project module's body runs on ``state`` unless this path of the run already ran it.
        The last module found (``None`` when ``name`` is not a module of the project)."""
        if self.modules is None:
            return None
        found: SourceModule | None = None
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            module = self.project_module(".".join(parts[:end]))
            if module is None:
                return None if end == len(parts) else found
            self.run_module_body(module, state)
            found = module
        return found

    def resolve_imported(self, value: Value, state: State) -> Value:
        """What an imported name is, at its first use on this path: its module's body runs
        (:meth:`import_module`), and the name is what the body bound; a re-export
        (``from .nets import MLP`` in a package's ``__init__``) is followed to its module.
        A name whose resolution needs itself (a cycle of re-exports) is unknown."""
        resolving = self.run_state.resolving
        seen: list[tuple[str, str]] = []
        try:
            while isinstance(value, ImportedName):
                key = (value.module, value.name)
                if key in resolving:
                    return UNKNOWN
                resolving.add(key)
                seen.append(key)
                value = self.module_attribute(value.module, value.name, state)
        finally:
            for key in seen:
                resolving.discard(key)
        return value

    def preload_imports(self, state: State) -> None:
        """Run, on ``state``, the bodies of the project's modules the file's top level imports,
        and of those their top levels import, breadth first, within one budget of statements.
        Why: every function analyzed alone starts from a copy of ``state``; a module imported
        there is imported in all of them, where each would otherwise run its body again (a
        test file of 140 test functions over a library ran its modules 140 times)."""
        run = self.run_state
        saved_steps, run.foreign_steps = run.foreign_steps, 0
        try:
            names = [*run.globals.values(), *state.env.values()]
            pending = [value for value in names if isinstance(value, ImportedName)]
            seen: set[str] = set()
            while pending and run.foreign_steps <= self.foreign_budget:
                value = pending.pop(0)
                if value.module in seen:
                    continue
                seen.add(value.module)
                module = self.import_module(value.module, state)
                if module is not None and module.name == value.module:
                    table = self.module_tables.get(module.name, {})
                    pending.extend(v for v in table.values() if isinstance(v, ImportedName) and v.module not in seen)
        finally:
            run.foreign_steps = saved_steps

    # -- running a module's body ---------------------------------------------------------------------------
    def run_module_body(self, module: SourceModule, state: State) -> None:
        """Run ``module``'s body on ``state`` (its effects on heap, graph and versions stay) in a
        namespace of its own, kept on an object that stands for the module. Once per path: an
        import cycle, or a second import of the same module, finds the namespace already there
        (partly filled, for a cycle, as Python's half-initialized module is)."""
        key = namespace_key(module.name)
        if key in state.env or module.name in self.plain_namespaces:
            return
        run = self.run_state
        if len(run.import_stack) >= MAX_IMPORT_DEPTH or run.foreign_steps > self.foreign_budget:
            return
        namespace = self.new_object(state, "object", module.tree, cls=f"module {module.name}")
        state.env[key] = namespace
        caller_env = state.env
        body_state = state.copy()
        body_state.env = {name: value for name, value in caller_env.items() if is_namespace_key(name)}
        run.import_stack.append(module.name)
        run.caller_envs.append(caller_env)
        try:
            with self.in_module(module):
                flow = self.exec_block(module.tree.body, body_state)
        finally:
            run.caller_envs.pop()
            run.import_stack.pop()
        if not flow.normal.reachable:  # the module raises at import: so does the import; names unknown
            return
        after = flow.normal
        caller_grad, caller_inference, caller_assumed = state.grad_enabled, state.inference_mode, state.grad_assumed
        module_env = after.env
        state.adopt(after)
        state.env = dict(caller_env)
        state.grad_enabled, state.inference_mode, state.grad_assumed = caller_grad, caller_inference, caller_assumed
        for name, value in module_env.items():
            if is_namespace_key(name):
                state.env.setdefault(name, value)  # modules the body imported: imported for all
        names = {name: value for name, value in module_env.items() if not is_namespace_key(name)}
        plain = _plain_namespace(names, after)
        if plain is not None:  # the same on every path: kept once, the body never runs again
            self.plain_namespaces[module.name] = plain
            state.env.pop(key, None)
            return
        obj = state.heap_write(namespace.oid)
        obj.attrs.update(names)

    # -- a module's names ------------------------------------------------------------------------------------
    def namespace_names(self, module_name: str, state: State) -> Mapping[str, Value]:
        """What the module's body computed, on this path (empty when it did not run here)."""
        plain = self.plain_namespaces.get(module_name)
        if plain is not None:
            return plain
        ref = state.env.get(namespace_key(module_name))
        if isinstance(ref, HeapRef) and ref.oid in state.heap:
            return state.heap[ref.oid].attrs
        return {}

    def module_attribute(self, module_name: str, attr: str, state: State) -> Value:
        """``module.attr`` for a module of the project (its body runs first, unless it ran on this
        path): a name its body bound (maybe an :class:`ImportedName` it re-exports), else a
        submodule (``from pkg import losses``), else unknown (never a library name)."""
        self.import_module(module_name, state)
        value = self.module_tables.get(module_name, {}).get(attr)
        if value is not None:
            return value
        value = self.namespace_names(module_name, state).get(attr)
        if value is not None:
            return value
        value = self.star_lookup(module_name, attr)
        if value is not None:
            return value
        submodule = f"{module_name}.{attr}"
        if self.is_project_module(submodule):
            self.import_module(submodule, state)
            return QualName(submodule)
        return UNKNOWN

    def star_names(self, module: SourceModule) -> list[str]:
        """The names ``from module import *`` binds, read from its code without running it: its
        ``__all__`` when it lists names, else every public name its top level binds (through its
        own star imports of the project too)."""
        cached = self._star_names.get(module.name)
        if cached is not None:
            return cached
        self._star_names[module.name] = []  # a cycle of star imports adds nothing more
        listed = _dunder_all(module.tree)
        if listed is None:
            names: dict[str, None] = {}
            for stmt in _top_level(module.tree.body):
                for name in self._bound_at_top(stmt, module):
                    if not name.startswith("_"):
                        names[name] = None
            listed = list(names)
        self._star_names[module.name] = listed
        return listed

    def _bound_at_top(self, stmt: ast.stmt, module: SourceModule) -> list[str]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [stmt.name]
        if isinstance(stmt, ast.Assign):
            return [target.id for target in stmt.targets if isinstance(target, ast.Name)]
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            return [stmt.target.id]
        if isinstance(stmt, ast.Import):
            return [alias.asname or alias.name.split(".")[0] for alias in stmt.names]
        if isinstance(stmt, ast.ImportFrom):
            names = [alias.asname or alias.name for alias in stmt.names if alias.name != "*"]
            if any(alias.name == "*" for alias in stmt.names):
                base = _absolute_in(module, stmt.module or "", stmt.level)
                source = self.project_module(base) if base else None
                if source is not None:
                    names.extend(self.star_names(source))
            return names
        return []

    def foreign_globals(self, module: SourceModule, state: State) -> dict[str, Value]:
        """The names a function of ``module`` sees when called from another module: the modules
        imported on this path, and what the module's body computed on it (its table of globals
        is the run's while its code runs: :meth:`EngineCore.in_module`)."""
        env = {name: value for name, value in state.env.items() if is_namespace_key(name)}
        env.update(self.namespace_names(module.name, state))
        return env


#: Values that mean the same in every state (no heap object, no tensor).
_STATE_FREE = (Number, QualName, ClassRef, ImportedName, NoneValue, Unknown, ContextVal)
#: Heap objects whose contents matter to graph bugs wherever they are (they hold parameters or tensors).
_GRAPH_KINDS = frozenset({"module", "optimizer", "params", "scaler"})


def _plain_namespace(names: Mapping[str, Value], state: State) -> dict[str, Value] | None:
    """A module's names as the same values on every path, when its body made nothing a graph
    bug depends on: definitions, constants, and objects without tensors, modules or
    optimizers (a registry, a logger, a config), which become unknown (what is unknown never
    makes an error). ``None`` when it made such a thing (a model, an optimizer, a tensor, a
    list a training loop may fill): then its namespace lives on each path."""
    plain: dict[str, Value] = {}
    for name, value in names.items():
        kept = _state_free(value, state, 0)
        if kept is None:
            return None
        plain[name] = kept
    return plain


def _state_free(value: Value, state: State, depth: int) -> Value | None:
    if isinstance(value, _STATE_FREE) or (isinstance(value, FunctionRef) and value.bound_self is None):
        return value
    if isinstance(value, TupleVal) and depth < 4:
        items = [_state_free(item, state, depth + 1) for item in value.items]
        return None if any(item is None for item in items) else TupleVal(tuple(i for i in items if i is not None))
    if isinstance(value, HeapRef):
        return UNKNOWN if not _holds_graph_things(value, state, 0) else None
    return None


def _holds_graph_things(ref: HeapRef, state: State, depth: int) -> bool:
    """Does a heap object (or anything it holds) hold a tensor, a module or an optimizer, or a
    list or dict that may come to (a container: a training loop may append losses to it)?"""
    obj = state.heap.get(ref.oid)
    if obj is None:
        return False
    if obj.kind in _GRAPH_KINDS or obj.kind in ("list", "dict") or depth > 3:
        return True
    for held in obj.referents():
        if isinstance(held, TensorVal):
            return True
        if isinstance(held, HeapRef) and _holds_graph_things(held, state, depth + 1):
            return True
        if isinstance(held, TupleVal) and any(isinstance(item, (TensorVal, HeapRef)) for item in held.items):
            return True
    return False


def _modules_named(stmt: ast.Import | ast.ImportFrom, importer: SourceModule) -> list[str]:
    """The modules an import statement imports (absolute names; the package of a ``from``)."""
    if isinstance(stmt, ast.Import):
        return [alias.name for alias in stmt.names]
    base = _absolute_in(importer, stmt.module or "", stmt.level)
    return [base] if base else []


def _absolute_in(importer: SourceModule, module: str, level: int) -> str | None:
    """The absolute name ``from <level dots><module> import`` names in ``importer``."""
    if level == 0:
        return module
    base = relative_base(importer, level)
    if base is None:
        return None
    return f"{base}.{module}" if base and module else (base or module)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's top-level statements, with those of its top-level ``if`` and ``try`` blocks
    (``try: from .fast import *`` binds names at the top level too)."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, ast.If):
            found.extend(_top_level(stmt.body + stmt.orelse))
        elif isinstance(stmt, ast.Try):
            found.extend(_top_level(stmt.body + stmt.orelse + stmt.finalbody))
    return found


def _dunder_all(tree: ast.Module) -> list[str] | None:
    """The names a module's top-level ``__all__ = [...]`` lists (``None``: none, or not literal)."""
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "__all__" and isinstance(stmt.value, (ast.List, ast.Tuple))
        ):
            names = [elt.value for elt in stmt.value.elts
                     if isinstance(elt, ast.Constant) and isinstance(elt.value, str)]
            return names if len(names) == len(stmt.value.elts) else None
    return None
