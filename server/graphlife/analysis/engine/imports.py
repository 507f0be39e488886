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

from graphlife.analysis.engine.core import EngineCore, handles_statements
from graphlife.analysis.engine_api import Flow
from graphlife.analysis.modules import SourceModule, is_namespace_key, namespace_key, relative_base
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, ClassRef, FunctionRef, HeapRef, Number, QualName, Value

#: Modules imported inside modules nest at most this deep; a deeper import stays unknown.
MAX_IMPORT_DEPTH = 12

def _shared_by_every_state(value: Value) -> bool:
    """A value that means the same in every state (no heap object): it may live in a table of
    names bound once, rather than in each state."""
    return isinstance(value, (FunctionRef, ClassRef, QualName, Number)) and not (
        isinstance(value, FunctionRef) and value.bound_self is not None
    )


class Imports(EngineCore):
    """Import statements, and the modules of the project they run."""

    @handles_statements(ast.Import, ast.ImportFrom)
    def exec_import(self, stmt: ast.Import | ast.ImportFrom, state: State) -> Flow:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self.import_module(alias.name, state)
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
        package = self.import_module(base, state) if base else None
        for alias in stmt.names:
            if alias.name == "*":
                if package is not None:
                    for name, value in self.public_names(package, state).items():
                        self.bind_definition(stmt, name, value, state)
                continue
            self.bind_definition(stmt, alias.asname or alias.name, self.imported_name(base, package, alias.name, state),
                                 state)
        return Flow(normal=state)

    def imported_name(self, base: str, package: SourceModule | None, name: str, state: State) -> Value:
        """What ``from base import name`` binds: a name of a project module, a submodule of the
        project, or (a library's name) the qualified name, as without the project."""
        qualified = f"{base}.{name}" if base else name
        if package is not None and package.name == base:
            return self.module_attribute(base, name, state)
        self.import_module(qualified, state)  # a submodule: Python imports it (its body runs)
        return QualName(qualified)

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
        if level == 0:
            return module
        base = relative_base(self.module, level)
        if base is None:
            return None
        return f"{base}.{module}" if base and module else (base or module)

    def project_module(self, name: str) -> SourceModule | None:
        """The project's module of that dotted name (found once; ``None``: not the project's)."""
        if self.modules is None or not name:
            return None
        if name in self.imported:
            return self.imported[name]
        found = self.modules.find(self.module, name, 0)
        if found is not None and (found is self.entry or found.path == self.entry.path):
            found = None  # the file being checked, imported by a module it imports: a cycle back
        self.imported[name] = found
        return found

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

    # -- running a module's body ---------------------------------------------------------------------------
    def run_module_body(self, module: SourceModule, state: State) -> None:
        """Run ``module``'s body on ``state`` (its effects on heap, graph and versions stay) in a
        namespace of its own, kept on an object that stands for the module. Once per path: an
        import cycle, or a second import of the same module, finds the namespace already there
        (partly filled, for a cycle, as Python's half-initialized module is)."""
        key = namespace_key(module.name)
        if key in state.env:
            return
        run = self.run_state
        if len(run.import_stack) >= MAX_IMPORT_DEPTH:
            return
        namespace = self.new_object(state, "object", module.tree, cls=f"module {module.name}")
        state.env[key] = namespace
        caller_env = state.env
        body_state = state.copy()
        body_state.env = {name: value for name, value in caller_env.items() if is_namespace_key(name)}
        run.import_stack.append(module.name)
        try:
            with self.in_module(module):
                flow = self.exec_block(module.tree.body, body_state)
        finally:
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
        obj = state.heap_write(namespace.oid)
        obj.attrs.update({name: value for name, value in module_env.items() if not is_namespace_key(name)})

    # -- a module's names ------------------------------------------------------------------------------------
    def namespace_names(self, module_name: str, state: State) -> Mapping[str, Value]:
        """What the module's body computed, on this path (empty when it did not run here)."""
        ref = state.env.get(namespace_key(module_name))
        if isinstance(ref, HeapRef) and ref.oid in state.heap:
            return state.heap[ref.oid].attrs
        return {}

    def module_attribute(self, module_name: str, attr: str, state: State) -> Value:
        """``module.attr`` for a module of the project: a name its body bound, else a submodule
        (``from pkg import losses``), else unknown (never a library name: it is the project's)."""
        table = self.module_tables.get(module_name, {})
        value = table.get(attr)
        if value is not None:
            return value
        value = self.namespace_names(module_name, state).get(attr)
        if value is not None:
            return value
        submodule = self.import_module(f"{module_name}.{attr}", state)
        if submodule is not None and submodule.name == f"{module_name}.{attr}":
            return QualName(submodule.name)
        return UNKNOWN

    def public_names(self, module: SourceModule, state: State) -> dict[str, Value]:
        """What ``from module import *`` binds: its ``__all__`` when it lists names, else every
        name not starting with an underscore."""
        names = dict(self.module_tables.get(module.name, {}))
        names.update(self.namespace_names(module.name, state))
        listed = _dunder_all(module.tree)
        if listed is not None:
            return {name: names.get(name, UNKNOWN) for name in listed}
        return {name: value for name, value in names.items() if not name.startswith("_")}

    def is_project_module(self, name: str) -> bool:
        """Does ``name`` name a module of the project that the run imported?"""
        return self.imported.get(name) is not None

    def foreign_globals(self, module: SourceModule, state: State) -> dict[str, Value]:
        """The names a function of ``module`` sees when called from another module: the modules
        imported on this path, and what the module's body computed on it (its table of globals
        is the run's while its code runs: :meth:`EngineCore.in_module`)."""
        env = {name: value for name, value in state.env.items() if is_namespace_key(name)}
        env.update(self.namespace_names(module.name, state))
        return env


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
