"""The leak watch: count the live autograd graphs as the program runs; report once when they grow.

When to count: after each optimizer step (torch's global step post-hook), and,
with ``every``, every so many seconds (a ``SIGALRM`` timer: the handler runs in
the main thread between two bytecodes, never inside a backward). A count costs a
scan of the collector's objects (tens of milliseconds in a program that imported
torch), so counts are spaced to keep their share of the run time under
``budget`` (2% by default; 0 counts at every chance).

What is counted: the tensors among the collector's objects that carry a
``grad_fn``, every graph node reachable from them (``AccumulateGrad`` of leaves
aside), and the saved tensors those nodes still hold. Graph nodes take no weak
references; their sequence numbers (increasing as nodes are made) tell their age.

When it is a leak: nodes *older than the count before last* that are still alive
grow count after count. A loop that keeps nothing has no such nodes, however
its live count goes up and down inside a step; a loop that appends its losses to
a list, or carries an undetached state, adds some every step. After
``GROWTH_COUNTS`` increases the watch reports, once:

- the growth (nodes and saved tensors per count);
- where the oldest live nodes were built: the site recorder
  (:mod:`graphlife.runtime.sites`) stamps the nodes made from the start of the
  program to the second count, so the oldest nodes of a leak that starts with
  the loop carry their line; when growth is suspected (two increases) and the old
  nodes carry none, the recorder is on again until the next count, and when it is
  confirmed without them the report waits two more counts;
- what keeps them alive: the tensors holding the old nodes, named through their
  gc referrers (:mod:`graphlife.runtime.holders`).
"""

from __future__ import annotations

import gc
import itertools
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphlife.runtime.holders import HolderPath, find_holders, user_frames_now
from graphlife.runtime.sites import Site, SiteRecorder, next_sequence_number, node_site

#: Increases of the old live nodes (or saved tensors) before the watch reports.
GROWTH_COUNTS = 3
#: Graph nodes read per count (a program with larger live graphs gets a partial count).
MAX_NODES = 500_000
#: Sites and holders listed in the report.
MAX_SITES = 3
MAX_HOLDERS = 3


@dataclass
class Count:
    """One count of the live graphs."""

    index: int
    label: str  # "step 4", "after 2.0 s"
    nodes: int
    saved: int
    old_nodes: int  # alive, and older than the count before last
    mark: int  # the sequence number the next node gets: nodes below existed at this count
    cost: float  # seconds the count took
    truncated: bool = False


@dataclass
class _Scan:
    """What one count read (kept only while the report is made)."""

    tensors: list[Any]
    nodes: dict[int, Any]
    old: list[Any] = field(default_factory=list)


class GraphWatch:
    """Counts live graphs at optimizer steps and on a timer; reports growth once (see module doc)."""

    def __init__(self, torch: Any, *, every: float | None = None, budget: float = 0.02,
                 recorder: SiteRecorder | None = None, report: Callable[[str], None] | None = None) -> None:
        self.torch = torch
        self.every = every
        self.budget = budget
        self.permanent_recorder = recorder is not None and recorder.on
        self.recorder = recorder or SiteRecorder(torch)
        self.report_to = report or _print_report
        self.counts: list[Count] = []
        self.reported: str | None = None
        self.steps = 0
        self._handles: list[Any] = []
        self._next_allowed = 0.0
        # The count that ends the site recorder's window. At the start: the second count, so that
        # what the first step builds and what is kept after it (a log appended after `step()`)
        # carry their lines.
        self._window_end = 1
        self._report_by = -1  # growth seen, oldest nodes without sites: the count that reports anyway
        self._old_timer: Any = None
        self._busy = False
        self._started = time.perf_counter()
        self.floor = 0  # nodes numbered below were made before the watch started: never "old"

    # -- installing ---------------------------------------------------------------------------
    def install(self) -> None:
        self.floor = next_sequence_number(self.torch)
        hooks = sys.modules.get("torch.optim.optimizer")  # torch imports it; its name is not an attribute
        if hooks is not None:
            self._handles.append(hooks.register_optimizer_step_post_hook(self._after_step))
        self.recorder.start()  # the window that stamps the oldest nodes: until the second count
        main_thread = threading.current_thread() is threading.main_thread()
        if self.every and hasattr(signal, "setitimer") and main_thread and (
                signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)):  # the program's own timer wins
            self._old_timer = signal.signal(signal.SIGALRM, self._on_timer)
            signal.setitimer(signal.ITIMER_REAL, self.every, self.every)

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._old_timer is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old_timer)
            self._old_timer = None
        if not self.permanent_recorder:
            self.recorder.stop()

    # -- triggers -----------------------------------------------------------------------------
    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += 1
        self.maybe_count(f"step {self.steps}")

    def _on_timer(self, signum: int, frame: Any) -> None:
        self.maybe_count(f"after {time.perf_counter() - self._started:.1f} s")

    def maybe_count(self, label: str) -> None:
        """Count now, unless counting now would take more than the budget's share of the run."""
        if self._busy or self.reported is not None:
            return
        now = time.perf_counter()
        if now < self._next_allowed:
            return
        self._busy = True
        try:
            self.count(label)
        except Exception as exc:  # noqa: BLE001 - a bug of the watch must not stop the program it watches
            self.reported = f"graphlife watch: stopped after an internal error: {type(exc).__name__}: {exc}"
            self.report_to(self.reported)
        finally:
            self._busy = False

    # -- counting -----------------------------------------------------------------------------
    def count(self, label: str) -> Count:
        start = time.perf_counter()
        scan = self._scan()
        mark = next_sequence_number(self.torch)
        old_mark = self.counts[-2].mark if len(self.counts) >= 2 else -1
        scan.old = [node for node in scan.nodes.values() if self.floor <= _seq(node) < old_mark]
        saved = sum(_saved_count(node) for node in scan.nodes.values())
        cost = time.perf_counter() - start
        entry = Count(len(self.counts), label, len(scan.nodes), saved, len(scan.old), mark, cost,
                      truncated=len(scan.nodes) >= MAX_NODES)
        self.counts.append(entry)
        if not self.permanent_recorder and self.recorder.on and entry.index >= self._window_end:
            self.recorder.stop()
        if self.budget > 0:
            self._next_allowed = time.perf_counter() + cost / self.budget
        self._judge(scan)
        return entry

    def _scan(self) -> _Scan:
        # The tensor classes (Tensor, Parameter, every subclass alive) as a set, tested in C over
        # the collector's objects: an isinstance() per object in Python costs several times more.
        kinds = frozenset(_subclasses(self.torch.Tensor))
        objects = gc.get_objects()
        tensors = [t for t in itertools.compress(objects, map(kinds.__contains__, map(type, objects)))
                   if t.grad_fn is not None]
        del objects
        nodes: dict[int, Any] = {}
        stack = [t.grad_fn for t in tensors]
        while stack and len(nodes) < MAX_NODES:
            node = stack.pop()
            if node is None or id(node) in nodes or type(node).__name__ == "AccumulateGrad":
                continue
            nodes[id(node)] = node
            stack.extend(pair[0] for pair in node.next_functions)
        return _Scan(tensors, nodes)

    # -- judging ------------------------------------------------------------------------------
    def growing(self, increases: int = GROWTH_COUNTS) -> bool:
        """The old live nodes, or the saved tensors, increased at each of the last counts that changed."""
        for values in ([c.old_nodes for c in self.counts], [c.saved for c in self.counts]):
            changes = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
            tail = changes[-(increases + 1):]
            if len(tail) == increases + 1 and all(a < b for a, b in itertools.pairwise(tail)):
                return self.counts[-1].old_nodes > 0
        return False

    def _judge(self, scan: _Scan) -> None:
        if self.reported is not None:
            return
        waiting = self._report_by >= 0
        index = len(self.counts) - 1
        if not waiting and not self.growing():
            if self.growing(GROWTH_COUNTS - 1) and not self.recorder.on and not _oldest_sites(scan.old):
                # Growth suspected and its nodes carry no line: stamp the next ones now, so that they
                # are old, with their line, by the time the growth is confirmed.
                self._window_end = index + 1
                self.recorder.start()
            return
        sites = _oldest_sites(scan.old)
        if not sites and not waiting:
            # The oldest nodes were made after the recorder's windows: stamp the nodes made until
            # the next count; they are "old" two counts after that.
            self._window_end, self._report_by = index + 1, index + 3
            self.recorder.start()
            return
        if not sites and index < self._report_by:
            return
        text = self._report_text(scan, sites)
        self.reported = text
        self.report_to(text)

    def _report_text(self, scan: _Scan, sites: list[tuple[Site, int]]) -> str:
        tail = self.counts[-(GROWTH_COUNTS + 2):]
        old = " -> ".join(str(c.old_nodes) for c in tail)
        nodes = " -> ".join(str(c.nodes) for c in tail)
        saved = " -> ".join(str(c.saved) for c in tail)
        lines = [
            f"graphlife watch: autograd graphs keep growing ({tail[0].label} to {tail[-1].label}): graph nodes that "
            f"outlived the step that made them {old}; live graph nodes {nodes}; saved tensors {saved}",
        ]
        if sites:
            lines.append("  the oldest live nodes were built at:")
            for site, count in sites[:MAX_SITES]:
                lines.append(f"    {site} ({count} live nodes)")
                text = _line_text(site)
                if text:
                    lines.append(f"        {text}")
        else:
            lines.append("  where the oldest live nodes were built is unknown (made while the site recorder was off;"
                         " `graphlife run --sites --watch-graph` records it all along)")
        holders = self._holders(scan)
        if holders:
            lines.append("  kept alive by:")
            for path, count in holders[:MAX_HOLDERS]:
                what = f"{count} tensors with graphs" if count != 1 else "a tensor with a graph"
                lines.append(f"    `{path.container}` ({path.where}): holds {what}")
        else:
            lines.append("  what keeps them alive was not found among the program's names: a reference cycle through "
                         "torch (a `.grad` made by `backward(create_graph=True)` holds a graph that leads back to its "
                         "own tensor; the collector cannot free it), or a C extension's reference")
        lines.append("  Fix: keep numbers (`.item()`) or detached tensors (`.detach()`) in what outlives a step, and "
                     "detach state carried to the next step.")
        lines += _static_leaks([site.path for site, _ in sites[:MAX_SITES]])
        return "\n".join(lines)

    def _holders(self, scan: _Scan) -> list[tuple[HolderPath, int]]:
        """The containers holding the tensors whose graphs reach the old nodes, most tensors first."""
        old_ids = {id(node) for node in scan.old}
        # The tensors holding old nodes directly (a list of losses) and through their graph (a
        # carried state, built this step on the last one's graph).
        keepers = [t for t in scan.tensors if id(t.grad_fn) in old_ids or _reaches(t.grad_fn, old_ids)][:200]
        ignore = {id(scan), id(scan.tensors), id(keepers), id(scan.nodes), id(scan.old), id(self)}
        frames = user_frames_now()
        paths = list(find_holders(keepers, ignore, frames).values())
        if not paths:
            # A gradient made with create_graph=True holds its graph from the leaf's `.grad`,
            # which no Python object refers to: name the leaf instead.
            owners = _leaves_whose_grad_reaches(self.torch, old_ids)
            ignore |= {id(owners)}
            for path in find_holders(owners, ignore, frames).values():
                path.steps.append(".grad")
                path.holds = 1
                paths.append(path)
        by_container: Counter[str] = Counter()
        first: dict[str, HolderPath] = {}
        for path in paths:
            by_container[path.container] += path.holds
            first.setdefault(path.container, path)
        return [(first[name], count) for name, count in by_container.most_common()]


def _leaves_whose_grad_reaches(torch: Any, old_ids: set[int]) -> list[Any]:
    """Leaves (parameters, inputs) whose ``.grad`` carries a graph that reaches the old nodes."""
    kinds = _subclasses(torch.Tensor)
    found = []
    for obj in gc.get_objects():
        if type(obj) in kinds:
            if not (obj.is_leaf and obj.requires_grad):
                continue
            grad = obj.grad
            fn = grad.grad_fn if grad is not None else None
            if fn is not None and (id(fn) in old_ids or _reaches(fn, old_ids)):
                found.append(obj)
    return found[:50]


def _subclasses(root: type) -> set[type]:
    found = {root}
    stack = [root]
    while stack:
        sub: type
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def _seq(node: Any) -> int:
    try:
        return int(node._sequence_nr())
    except Exception:  # noqa: BLE001 - a node without a sequence number is never "old"
        return 1 << 62


_ATTRS: dict[type, tuple[str, ...]] = {}


def _saved_count(node: Any) -> int:
    """Saved tensors a node still holds (freed ones, after a backward, are not counted)."""
    kind = type(node)
    attrs = _ATTRS.get(kind)
    if attrs is None:
        attrs = _ATTRS[kind] = tuple(n for n in dir(kind) if n.startswith("_raw_saved_"))
    held = 0
    for attr in attrs:
        try:
            raw = getattr(node, attr)
        except Exception:  # noqa: BLE001 - a Python Function's saved tensors, once freed
            continue
        for saved in raw if isinstance(raw, (tuple, list)) else (raw,):
            try:
                if saved.unpack_hook is not None or saved.data is not None:
                    held += 1
            except Exception:  # noqa: BLE001 - released
                continue
    return held


def _reaches(root: Any, targets: set[int], limit: int = 20_000) -> bool:
    stack: list[Any] = [root]
    seen: set[int] = set()
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        if id(node) in targets:
            return True
        seen.add(id(node))
        stack.extend(pair[0] for pair in node.next_functions)
    return False


def _oldest_sites(old_nodes: list[Any]) -> list[tuple[Site, int]]:
    """Sites of the old live nodes, the site of the oldest node first, with their node counts."""
    counts: Counter[Site] = Counter()
    oldest: dict[Site, int] = {}
    for node in old_nodes:
        site = node_site(node)
        if site is None:
            continue
        counts[site] += 1
        seq = _seq(node)
        if seq < oldest.get(site, 1 << 62):
            oldest[site] = seq
    return [(site, counts[site]) for site in sorted(counts, key=lambda s: oldest[s])]


def _static_leaks(paths: list[str]) -> list[str]:
    """The checker's graph-lifetime findings (GL2xx) in the files the growing graphs were built in."""
    import os  # noqa: PLC0415 - only for a report

    from graphlife.debug.traceback_explain import static_findings  # noqa: PLC0415 - the engine, once

    out = []
    for path in dict.fromkeys(p for p in paths if os.path.isfile(p)):
        findings, note, _ = static_findings(path)
        if note:
            out.append(f"  static check of {path}: {note}")
        for finding in [f for f in findings if f.code.startswith("GL2")][:MAX_SITES]:
            where = f"{finding.span.path or path}:{finding.span.line}"
            out.append(f"  static finding at {where}: {finding.code} {finding.name}: {finding.message}")
    return out


def _line_text(site: Site) -> str:
    import linecache  # noqa: PLC0415 - only for a report

    return linecache.getline(site.path, site.line).strip()


def _print_report(text: str) -> None:
    sys.stdout.flush()
    print(text, file=sys.stderr, flush=True)
