"""What one loop iteration hands the next: the names it carries, and the next element of a container.

Why apart from running loops: the rules about graphs kept across iterations ask
which names, at the top of the running loop, held graphs that reach given nodes
(:meth:`Iterations.carried_names`, through the rule API). And a container's one
abstract element stands for all of its elements: when a loop goes on to the next
element, what a backward freed in the previous one is not freed in this one
(:meth:`Iterations.next_element`), or a loop over a list of losses, each with its
own backward, would look like one graph freed twice.
"""

from __future__ import annotations

import ast

from graphlife.analysis import torch_api
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.state import State
from graphlife.analysis.tree_index import iter_nodes
from graphlife.analysis.values import HeapRef, Value

_CONTAINERS = ("list", "dict", "enumerate", "zip", "object")


class Iterations(EngineCore):
    """Names carried into the next iteration, and moving on to a container's next element."""

    def names_assigned_in(self, loop: ast.AST) -> frozenset[str]:
        """The names (and ``name.attr`` attributes) a loop's body and target bind, kept on the loop node."""
        found: frozenset[str] | None = getattr(loop, "_graphlife_assigned", None)
        if found is None:
            roots = [getattr(loop, "target", None), *getattr(loop, "body", ()), *getattr(loop, "generators", ())]
            names: set[str] = set()
            for root in roots:
                for node in iter_nodes(root) if root is not None else ():
                    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                        names.add(node.id)
                    elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                          and isinstance(node.value, ast.Name)):
                        names.add(f"{node.value.id}.{node.attr}")  # `self.h = ...`
            found = frozenset(names)
            setattr(loop, "_graphlife_assigned", found)  # noqa: B010 - a cache hung on the node
        return found

    def carried_names(self, node_ids: set[int], state: State) -> list[tuple[str, ast.AST]]:
        """Names (or ``self.attr``) that, at the top of the current loop, held graphs reaching ``node_ids``."""
        run = self.run_state
        if not run.loop_entry_envs:
            return []
        found: list[tuple[str, ast.AST]] = []
        loop, entry = run.loop_entry_envs[-1]
        before = run.loop_pre_states[-1].env if run.loop_pre_states else {}
        candidates: list[tuple[str, Value]] = []
        assigned = self.names_assigned_in(loop)
        for name, value in sorted(entry.env.items()):
            if name not in before:
                continue  # first bound inside the loop: a leftover of the last iteration, not carried state
            if name in assigned:
                candidates.append((name, value))
            # else the loop never rebinds it: it carries nothing from one iteration to the next
            # by itself, but the attributes the loop sets on it do (`self.h = ...`).
            if isinstance(value, HeapRef) and value.oid in entry.heap:
                obj = entry.heap[value.oid]
                if obj.kind in ("module", "object"):
                    candidates.extend((f"{name}.{attr}", v) for attr, v in sorted(obj.attrs.items())
                                      if not attr.startswith("_") and f"{name}.{attr}" in assigned)
        for name, value in candidates:
            for tensor in torch_api.tensors_in(value, entry):
                _, may = run.graph.reach(tensor.grad_fn, False)
                if may & node_ids:
                    found.append((name, loop))
                    break
        return found

    def container_birth(self, iterable: Value, state: State) -> int | None:
        """How many loops ran when the container being iterated was made (``None``: not a
        container whose one abstract element stands for several runtime ones)."""
        if isinstance(iterable, HeapRef) and iterable.oid in state.heap:
            obj = state.heap[iterable.oid]
            if obj.kind in _CONTAINERS:
                return len(obj.extra.get("born", ()))
        return None

    def containers_indexed_by_target(self, loop: ast.For | ast.AsyncFor) -> tuple[str, ...]:
        """The names ``data`` of ``data[i]`` in the loop's body, ``i`` being bound by the loop
        (``for i in range(len(data))``, ``for i, x in enumerate(...)``); kept on the loop node."""
        found: tuple[str, ...] | None = getattr(loop, "_graphlife_indexed", None)
        if found is None:
            targets = {node.id for node in iter_nodes(loop.target) if isinstance(node, ast.Name)}
            found = tuple(sorted({
                node.value.id for statement in loop.body for node in iter_nodes(statement)
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and isinstance(node.slice, ast.Name) and node.slice.id in targets
            }))
            setattr(loop, "_graphlife_indexed", found)  # noqa: B010 - a cache hung on the node
        return found

    def next_element_of(self, container: Value | None, state: State) -> None:
        """:meth:`next_element` for a container indexed by the loop's variable."""
        if not isinstance(container, HeapRef):
            return
        birth = self.container_birth(container, state)
        if birth is not None and state.heap[container.oid].kind == "list":
            self.next_element(self.iter_element(container, state), birth, state)

    def next_element(self, element: Value, birth: int, state: State) -> None:
        """The loop goes on to another element of the container: what a backward through the
        previous one freed is not freed in this one. The container's one abstract element
        stands for all of them, so its graph nodes made in loops that ran after the container
        was made (one forward per element: a comprehension, ``append`` in a loop) are another
        element's now. Nodes the elements share stay freed, and a backward through them again
        raises: those made before (``h`` of ``[head(h) for ...]``), and those one iteration's
        nodes reach from another's (a hidden state carried from step to step and appended at
        each: every element's graph holds the earlier steps)."""
        graph = self.run_state.graph
        nodes: set[int] = set()
        for tensor in torch_api.tensors_in(element, state):
            if tensor.grad_fn:
                _, reach = graph.reach(tensor.grad_fn, False)
                nodes.update(n for n in reach if len(graph.nodes[n].iteration) > birth)
        shared: set[int] = set()
        for node in nodes:
            made = graph.nodes[node].iteration
            stack = list(graph.nodes[node].parents)
            seen: set[int] = set()
            while stack:
                parent = stack.pop()
                if parent in seen or parent not in nodes:
                    continue
                seen.add(parent)
                if graph.nodes[parent].iteration != made:
                    shared.add(parent)  # an earlier iteration's node, carried into this one's graph
                stack.extend(graph.nodes[parent].parents)
        nodes -= shared
        if nodes & state.freed.keys():
            freed = state.writable("freed")
            for node in nodes:
                freed.pop(node, None)
        if nodes & state.may_freed.keys():
            may_freed = state.writable("may_freed")
            for node in nodes:
                may_freed.pop(node, None)
