"""The explanation of an autograd error that escaped the program, from the live traceback.

Unlike ``graphlife explain`` (a traceback's text), this runs while the frames of
the traceback are still alive: the tensors the failing call got, and the user's
names for them, can be read. It explains from the innermost *user* frame (the
line that called into torch), never from torch's own frames, whose locals
(``args[0][0]``, a ``grad_tensors`` of ones) would be explained as if they were
the user's. It reports:

- the rule (the table of :mod:`graphlife.debug.messages`), why, the fix;
- where the backward (or the failing call) was made, and the user frames above;
- the tensors involved, with their ``grad_fn``, version and saved-tensor states (the
  debug probe's snapshot of that frame, narrowed to the tensors that matter);
- with the site recorder on, the line that built the freed graph or the graph that
  saved the changed tensor, and the line that changed it in place;
- the static checker's finding on those lines, when it has one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from graphlife.debug.messages import classify
from graphlife.runtime.frames import frame_namespace, traceback_frames, user_frames
from graphlife.runtime.sites import Site, SiteRecorder, node_site

#: Tensors listed in the explanation (the problems and the tensors the call got come first).
MAX_TENSORS = 8
#: User frames listed above the one that called into torch.
MAX_CALLERS = 4
#: Names of torch functions that run a backward.
_BACKWARD_FUNCTIONS = {"backward", "grad", "_engine_run_backward", "run_backward"}


#: The static checker's lines for (path, line) places and the rule explained.
StaticLines = Callable[[list[tuple[str, int]], str], list[str]]


def explain_exception(exc: BaseException, recorder: SiteRecorder | None = None, *,
                      static: StaticLines | None = None, sites_hint: bool = True) -> str | None:
    """The explanation of ``exc``, or None when it is not an autograd error graphlife knows.

    ``static`` replaces the checker run on the files of the frames (a notebook checks its cells
    together); ``sites_hint`` says how to learn the building line when no recorder ran.
    """
    message = str(exc)
    item = classify(message)
    if item is None:
        return None
    tb = exc.__traceback__
    mine = user_frames(tb)
    lines = [f"graphlife: {item['code']} {item['name']}"]
    if not mine:
        lines += [f"  Why: {item['why']}", f"  Fix: {item['fix']}",
                  "  (no frame of the traceback is in the program's own code)"]
        return "\n".join(lines)
    frame, line = mine[0]
    call = _call_into_torch(tb, frame)
    is_backward = call is not None and call.f_code.co_name in _BACKWARD_FUNCTIONS
    verb = "backward was called" if is_backward else "raised"
    lines.append(f"  {verb} at {_where(frame, line)}")
    lines += _source(frame.f_code.co_filename, line)
    for outer, outer_line in mine[1:1 + MAX_CALLERS]:
        lines.append(f"  called from {_where(outer, outer_line)}")
    torch = _torch()
    roots = _tensor_arguments(call, torch) if call is not None and torch is not None else []
    lines.append("")
    lines.append(_snapshot_text(frame, roots, message, predictions=is_backward))
    places = _graph_places(roots, item["code"], torch, recorder) if torch is not None else []
    if places:
        lines.append("")
        for label, site in places:
            lines.append(f"  {label} {site}")
            lines += _source(site.path, site.line)
    elif recorder is None and sites_hint and item["code"] in ("GL101", "GL102"):
        lines += ["", "  (run with `graphlife run --sites` to also name the line that built the graph"
                      + (" and the line that changed the saved tensor)" if item["code"] == "GL102" else ")")]
    findings = (static or _static_lines)([(frame.f_code.co_filename, line), *((s.path, s.line) for _, s in places)],
                                         item["code"])
    if findings:
        lines += ["", *findings]
    return "\n".join(lines)


def _torch() -> Any:
    import sys  # noqa: PLC0415 - only the program's torch, never an import of it

    return sys.modules.get("torch")


def _where(frame: FrameType, line: int) -> str:
    return f"{frame.f_code.co_filename}:{line} in {frame.f_code.co_name}"


def _source(path: str, line: int) -> list[str]:
    import linecache  # noqa: PLC0415 - only when an error is explained

    text = linecache.getline(path, line).strip()
    return [f"      {text}"] if text else []


def _call_into_torch(tb: TracebackType | None, frame: FrameType) -> FrameType | None:
    """The first library frame the user's ``frame`` called (torch's ``backward``, ``step``...)."""
    frames = [f for f, _ in traceback_frames(tb)]
    for index, candidate in enumerate(frames):
        if candidate is frame and index + 1 < len(frames):
            return frames[index + 1]
    return None


def _tensor_arguments(call: FrameType, torch: Any) -> list[Any]:
    """The tensors a torch function was called with (its parameters, and lists of tensors in them)."""
    code = call.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    found: list[Any] = []
    local = call.f_locals
    for name in code.co_varnames[:count]:
        value = local.get(name)
        values = value if isinstance(value, (tuple, list)) else [value]
        for item in values:
            if isinstance(item, torch.Tensor) and all(item is not t for t in found):
                found.append(item)
    return found


def _snapshot_text(frame: FrameType, roots: list[Any], message: str, *, predictions: bool) -> str:
    """The probe's report of ``frame``, narrowed to the problems and the tensors the call got."""
    from graphlife.debug import probe  # noqa: PLC0415 - the probe reads torch; load it only on an error
    from graphlife.debug.render import render_text  # noqa: PLC0415

    scope = frame_namespace(frame)
    root_names = []
    for index, tensor in enumerate(roots):
        name = next((n for n, v in scope.items() if v is tensor and not n.startswith("__")), None)
        if name is None:
            name = "backward_root" if index == 0 else f"backward_root{index}"
            scope[name] = tensor
        root_names.append(name)
    snap = probe.snapshot(scope, exception=message)
    blamed = {b for t in snap["tensors"] for b in (t.get("backward_prediction") or {}).get("blame_all", [])}
    exc = snap.get("exception") or {}
    if exc.get("blame"):
        blamed.add(exc["blame"])

    def rank(t: dict) -> tuple:
        return (t["name"] not in root_names, t["name"] not in blamed, t.get("severity") is None, t["name"])

    kept = [t for t in snap["tensors"] if t["name"] in root_names or t["name"] in blamed or t.get("severity")]
    code = exc.get("code")
    for t in kept:
        prediction = t.get("backward_prediction") or {}
        if not predictions or (code and prediction.get("code") not in (None, code)):
            # What a backward would do says nothing about an error outside one; and after a failed
            # backward the graph is half freed: a prediction of another error would describe that.
            t["backward_prediction"] = None
    snap["tensors"] = sorted(kept, key=rank)[:MAX_TENSORS]
    snap["containers"] = [c for c in snap["containers"] if c.get("leak")]
    text = render_text(snap)
    return "\n".join("  " + line if line else "" for line in text.splitlines())


def _graph_places(roots: list[Any], code: str, torch: Any, recorder: SiteRecorder | None) -> list[tuple[str, Site]]:
    """With the recorder: the line that built the freed graph (GL101), or the graph that saved
    the changed tensor and the line that changed it (GL102)."""
    if recorder is None or code not in ("GL101", "GL102"):
        return []
    from graphlife.debug import probe  # noqa: PLC0415

    graphs = probe._Graphs(torch, probe._Budget(1.0))
    places: list[tuple[str, Site]] = []
    for tensor in roots:
        root = graphs.node_id(probe._safe(lambda t=tensor: t.grad_fn))
        if root is None:
            continue
        reach, _ = graphs.reach(root)
        # A failed backward freed what it ran before failing: for GL102 the changed tensor is
        # the news, not those.
        wanted = "modified" if code == "GL102" else "freed"
        problems = [(i, rec) for i in reach for rec in graphs.nodes[i].saved if rec["state"] == wanted]
        if not problems:
            continue
        # The engine runs nodes in decreasing sequence number and stops at the first whose saved
        # tensors an earlier backward freed: the nodes this failing backward ran (and freed) are
        # all newer than that one, so the oldest freed node was freed before, by the earlier backward.
        # A changed tensor is told apart by its state: the newest is the one the engine met first.
        pick = max if code == "GL102" else min
        first, record = pick(problems, key=lambda p: graphs.nodes[p[0]].seq)
        built = _nearest_site(graphs, first, reach)
        if record["state"] == "modified":
            if built is not None:
                places.append(("the graph that saved the changed tensor was built at", built))
            key = record.get("_key")
            changed = recorder.inplace.get(key[0]) if key else None
            if changed is not None and changed.version == record.get("version"):
                label = f"the saved tensor was changed in place by {changed.module}, called at" if changed.module else (
                    "the saved tensor was changed in place at")
                places.append((label, changed.site))
        elif built is not None:
            places.append(("the freed graph was built at", built))
        break
    return places


def _nearest_site(graphs: Any, index: int, reach: list[int]) -> Site | None:
    """The site of node ``index``, or of the nearest node above it that has one (a node
    built inside a composite call is stamped through the call's output)."""
    parents: dict[int, list[int]] = {}
    for i in reach:
        for child in graphs.nodes[i].children:
            parents.setdefault(child, []).append(i)
    queue = deque([index])
    seen = {index}
    while queue:
        i = queue.popleft()
        site = node_site(graphs.nodes[i].fn)
        if site is not None:
            return site
        for parent in parents.get(i, []):
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return None


def _findings_for(path: str, static_findings: Any) -> tuple[list, str | None]:
    """The checker's findings for a file, or for code that is no file (a notebook cell, whose
    text the interpreter keeps in ``linecache``)."""
    import linecache  # noqa: PLC0415
    import os  # noqa: PLC0415

    if os.path.isfile(path):
        findings, note, _ = static_findings(path)
        return findings, note
    text = "".join(linecache.getlines(path))
    if not text:
        return [], None
    try:
        from graphlife.checker import check_source  # noqa: PLC0415

        return check_source(text, path).findings, None
    except Exception as exc:  # noqa: BLE001 - a checker bug must not hide the explanation
        return [], f"the checker failed: {type(exc).__name__}: {exc}"


def _static_lines(places: list[tuple[str, int]], code: str) -> list[str]:
    """The checker's findings on the lines named (saying when the same rule found it); else its
    findings of the same rule in the file that called into torch."""
    from graphlife.debug.traceback_explain import findings_on_line, static_findings  # noqa: PLC0415

    out: list[str] = []
    seen = set()
    checked: dict[str, list] = {}
    for path, line in dict.fromkeys(places):
        if path not in checked:
            findings, note = _findings_for(path, static_findings)
            checked[path] = findings
            if note:
                out.append(f"  static check of {path}: {note}")
        for finding in findings_on_line(checked[path], line):
            where = f"{finding.span.path or path}:{finding.span.line}"
            if (finding.code, where) in seen:
                continue
            seen.add((finding.code, where))
            agrees = " (the same rule)" if finding.code == code else ""
            out.append(f"  static finding at {where}: {finding.code} {finding.name}{agrees}: {finding.message}")
    if not out:
        path = places[0][0]
        for finding in [f for f in checked.get(path, []) if f.code == code][:3]:
            where = f"{finding.span.path or path}:{finding.span.line}"
            out.append(f"  static finding of the same rule at {where}: {finding.message}")
    if not out:
        out.append(f"  the static checker reports nothing on this line of {places[0][0]}")
    return out
