"""The pieces of a file whose analysis results the unit cache keeps: blocks, and methods of classes.

A top-level block is the unit of parsing (:mod:`graphlife.analysis.blocks`), but
a class of thirty methods is one block: if the cache tracked only blocks, an
edit in one method would re-run the analysis of all thirty. So a class block is
cut further into regions: one per method (its decorators and lines), and the
rest of the class (its header, attributes and which methods it has), which
other code reads when it instantiates the class or looks a method up. A region
keeps its identity across versions while its text is the same: an unchanged
block keeps its regions, and the methods of an edited class are matched by
class name and text. Other blocks are one region each.

Lines inside a block region or a method region move together, so a finding
recorded in one can be moved to the region's new place; the rest of a class is
not one stretch of lines, so nothing is moved through it (the cache then runs
the unit again).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from graphlife.analysis.blocks import Block

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Region:
    """A block, a method of a class, or the rest of a class."""

    __slots__ = ("_functions", "block", "end", "key", "mappable", "node", "seen", "start")

    def __init__(self, key: tuple, node: Block | ast.stmt, block: Block, mappable: bool) -> None:
        self.key = key
        self.block = block
        self.mappable = mappable
        self.seen = -1
        self.start = self.end = 0
        self.node = node
        self._functions: dict[tuple[int, int], ast.AST] | None = None

    def attach(self, node: Block | ast.stmt, block: Block) -> None:
        """Point the region at this version's node (an edited class is parsed anew)."""
        if node is not self.node:
            self.node = node
            self._functions = None
        self.block = block

    def refresh(self) -> None:
        """Where the region is now (its block may have moved)."""
        if isinstance(self.node, Block):
            self.start, self.end = self.node.start, self.node.end
        elif self.mappable:
            self.start, self.end = first_line(self.node), self.node.end_lineno or self.node.lineno
        else:
            self.start, self.end = self.block.start, self.block.end

    def functions(self) -> dict[tuple[int, int], ast.AST]:
        """The functions inside the region by (line from the region's start, column)."""
        if self._functions is None:
            roots = self.node.statements if isinstance(self.node, Block) else [self.node]
            self._functions = {
                (node.lineno - self.start, node.col_offset): node
                for root in roots for node in ast.walk(root) if isinstance(node, _FUNCTIONS)
            }
        return self._functions

    def locate(self, node: ast.stmt) -> tuple[Region, int, int]:
        """A version-independent name for a function inside this region."""
        return self, node.lineno - self.start, node.col_offset


def first_line(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


class RegionMap:
    """The regions of one document's current version, matched with the previous version's."""

    def __init__(self) -> None:
        self._pool: dict[tuple, list[Region]] = {}
        self._by_node: dict[int, Region] = {}
        self._parents: dict[int, ast.AST] = {}
        self._tree: ast.AST | None = None
        self._kept: set[int] = set()

    def update(self, blocks: Iterable[Block], parents: dict[int, ast.AST], tree: ast.AST, version: int) -> None:
        blocks = list(blocks)
        # Regions of blocks that are still here stay theirs, even if an edited class has a
        # method of the same name and text (two classes of one name).
        self._kept = {id(block) for block in blocks if block.regions is not None}
        pool: dict[tuple, list[Region]] = {}
        by_node: dict[int, Region] = {}
        for block in blocks:
            regions = block.regions
            if regions is None:
                regions = block.regions = self._regions_of(block)
            for region in regions:
                region.seen = version
                region.refresh()
                pool.setdefault(region.key, []).append(region)
                if isinstance(region.node, Block):
                    for stmt in block.statements:
                        by_node[id(stmt)] = region
                else:
                    by_node[id(region.node)] = region
        self._pool, self._by_node, self._parents, self._tree = pool, by_node, parents, tree

    def _regions_of(self, block: Block) -> list[Region]:
        statements = block.statements
        if len(statements) != 1 or not isinstance(statements[0], ast.ClassDef):
            return [Region(("block", id(block)), block, block, mappable=True)]
        cls = statements[0]
        lines = block.lines
        regions: list[Region] = []
        rest = list(lines)
        for method in cls.body:
            if not isinstance(method, _FUNCTIONS):
                continue
            first, last = first_line(method) - block.start, (method.end_lineno or method.lineno) - block.start
            text = "".join(lines[first:last + 1])
            regions.append(self._reuse(("method", cls.name, text), method, block, mappable=True))
            rest[first] = f"<{method.name}>\n"
            for index in range(first + 1, last + 1):
                rest[index] = ""
        regions.append(self._reuse(("class", "".join(rest)), cls, block, mappable=False))
        return regions

    def _reuse(self, key: tuple, node: ast.stmt, block: Block, mappable: bool) -> Region:
        candidates = [region for region in self._pool.get(key, ()) if id(region.block) not in self._kept]
        region = candidates[0] if candidates else Region(key, node, block, mappable)
        if candidates:
            self._pool[key].remove(region)
        region.attach(node, block)
        return region

    def methods_named(self, class_name: str, method_name: str) -> list[Region]:
        """This version's regions of the methods ``method_name`` of the classes ``class_name``
        (where an edited method went: :mod:`graphlife.analysis.self_print`)."""
        return [region for key, regions in self._pool.items() if key[0] == "method" and key[1] == class_name
                for region in regions if getattr(region.node, "name", None) == method_name]

    def region_of(self, node: ast.AST) -> Region | None:
        """The region that holds ``node``: its method's, its class's (a class itself), or its block's."""
        current: ast.AST | None = node
        while current is not None:
            region = self._by_node.get(id(current))
            if region is not None:
                return region
            current = self._parents.get(id(current))
            if current is self._tree:
                return None
        return None
