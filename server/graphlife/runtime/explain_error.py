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

from graphlife import i18n
from graphlife.debug.messages import classify
from graphlife.findings import MessageTemplate, localized
from graphlife.runtime.frames import frame_namespace, traceback_frames, user_frames
from graphlife.runtime.sites import Site, SiteRecorder, node_site

#: Tensors listed in the explanation (the problems and the tensors the call got come first).
MAX_TENSORS = 8
#: User frames listed above the one that called into torch.
MAX_CALLERS = 4
#: Names of torch functions that run a backward.
_BACKWARD_FUNCTIONS = {"backward", "grad", "_engine_run_backward", "run_backward"}


#: The static checker's lines for (path, line) places, the rule explained and the language.
StaticLines = Callable[[list[tuple[str, int]], str, str], list[str]]

# The explanation's own words, in both languages (torch's messages, paths and code stay as they are).
WHY = MessageTemplate("run.why", "  Why: {text}", zh_cn="  原因：{text}")
FIX = MessageTemplate("run.fix", "  Fix: {text}", zh_cn="  修复：{text}")
NO_USER_FRAME = MessageTemplate("run.no-user-frame", "  (no frame of the traceback is in the program's own code)",
                                zh_cn="  （回溯中没有一帧位于程序自己的代码里）")
BACKWARD_AT = MessageTemplate("run.backward-at", "  backward was called at {where}",
                              zh_cn="  在 {where} 调用了反向传播")
RAISED_AT = MessageTemplate("run.raised-at", "  raised at {where}", zh_cn="  在 {where} 报错")
CALLED_FROM = MessageTemplate("run.called-from", "  called from {where}", zh_cn="  调用自 {where}")
SITES_HINT = MessageTemplate(
    "run.sites-hint", "  (run with `graphlife run --sites` to also name the line that built the graph)",
    zh_cn="  （用 `graphlife run --sites` 运行，还能指出构建计算图的那一行）",
)
SITES_HINT_CHANGED = MessageTemplate(
    "run.sites-hint-changed",
    "  (run with `graphlife run --sites` to also name the line that built the graph and the line that changed "
    "the saved tensor)",
    zh_cn="  （用 `graphlife run --sites` 运行，还能指出构建计算图的那一行，以及原地修改了保存的张量的那一行）",
)
SAVED_GRAPH_BUILT = MessageTemplate("run.saved-graph-built", "the graph that saved the changed tensor was built at",
                                    zh_cn="保存了被修改张量的计算图构建于")
CHANGED_BY_MODULE = MessageTemplate("run.changed-by-module",
                                    "the saved tensor was changed in place by {module}, called at",
                                    zh_cn="保存的张量被 {module} 原地修改，调用位置")
CHANGED_AT = MessageTemplate("run.changed-at", "the saved tensor was changed in place at",
                             zh_cn="保存的张量在此处被原地修改")
FREED_GRAPH_BUILT = MessageTemplate("run.freed-graph-built", "the freed graph was built at",
                                    zh_cn="已释放的计算图构建于")
STATIC_NOTE = MessageTemplate("run.static-note", "  static check of {path}: {note}",
                              zh_cn="  对 {path} 的静态检查：{note}")
STATIC_FINDING = MessageTemplate("run.static-finding", "  static finding at {where}: {code} {name}: {message}",
                                 zh_cn="  静态检查在 {where} 发现：{code} {name}：{message}")
STATIC_SAME_RULE = MessageTemplate(
    "run.static-same-rule", "  static finding at {where}: {code} {name} (the same rule): {message}",
    zh_cn="  静态检查在 {where} 发现：{code} {name}（同一条规则）：{message}",
)
STATIC_ELSEWHERE = MessageTemplate("run.static-elsewhere", "  static finding of the same rule at {where}: {message}",
                                   zh_cn="  静态检查在 {where} 发现同一条规则的问题：{message}")
STATIC_NOTHING = MessageTemplate("run.static-nothing", "  the static checker reports nothing on this line of {path}",
                                 zh_cn="  静态检查在 {path} 的这一行没有发现问题")


def explain_exception(exc: BaseException, recorder: SiteRecorder | None = None, *,
                      static: StaticLines | None = None, sites_hint: bool = True,
                      language: str | None = None) -> str | None:
    """The explanation of ``exc``, or None when it is not an autograd error graphlife knows.

    ``static`` replaces the checker run on the files of the frames (a notebook checks its cells
    together); ``sites_hint`` says how to learn the building line when no recorder ran;
    ``language`` (``"en"``, ``"zh-CN"``; the environment's when ``None``, as ``graphlife check``
    reads it) is the language of the explanation around torch's own message.
    """
    lang = i18n.normalize(language) or i18n.from_environment()
    message = str(exc)
    item = classify(message)
    if item is None:
        return None
    texts = item.get(lang) if lang != i18n.ENGLISH else None
    why, fix = (texts or item)["why"], (texts or item)["fix"]
    tb = exc.__traceback__
    mine = user_frames(tb)
    lines = [f"graphlife: {item['code']} {item['name']}"]
    if not mine:
        lines += [WHY(text=why).in_language(lang), FIX(text=fix).in_language(lang), NO_USER_FRAME().in_language(lang)]
        return "\n".join(lines)
    frame, line = mine[0]
    call = _call_into_torch(tb, frame)
    is_backward = call is not None and call.f_code.co_name in _BACKWARD_FUNCTIONS
    at = BACKWARD_AT if is_backward else RAISED_AT
    lines.append(at(where=_where(frame, line)).in_language(lang))
    lines += _source(frame.f_code.co_filename, line)
    for outer, outer_line in mine[1:1 + MAX_CALLERS]:
        lines.append(CALLED_FROM(where=_where(outer, outer_line)).in_language(lang))
    torch = _torch()
    roots = _tensor_arguments(call, torch) if call is not None and torch is not None else []
    lines.append("")
    lines.append(_snapshot_text(frame, roots, message, predictions=is_backward, language=lang))
    places = _graph_places(roots, item["code"], torch, recorder) if torch is not None else []
    if places:
        lines.append("")
        for label, site in places:
            lines.append(f"  {localized(label, lang)} {site}")
            lines += _source(site.path, site.line)
    elif recorder is None and sites_hint and item["code"] in ("GL101", "GL102"):
        hint = SITES_HINT_CHANGED if item["code"] == "GL102" else SITES_HINT
        lines += ["", hint().in_language(lang)]
    findings = (static or _static_lines)([(frame.f_code.co_filename, line), *((s.path, s.line) for _, s in places)],
                                         item["code"], lang)
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


def _snapshot_text(frame: FrameType, roots: list[Any], message: str, *, predictions: bool,
                   language: i18n.Language) -> str:
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
    snap = probe.snapshot(scope, exception=message, language=language)
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
    text = render_text(snap, language=language)
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
                places.append((SAVED_GRAPH_BUILT(), built))
            key = record.get("_key")
            changed = recorder.inplace.get(key[0]) if key else None
            if changed is not None and changed.version == record.get("version"):
                label = CHANGED_BY_MODULE(module=changed.module) if changed.module else CHANGED_AT()
                places.append((label, changed.site))
        elif built is not None:
            places.append((FREED_GRAPH_BUILT(), built))
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


def _static_lines(places: list[tuple[str, int]], code: str, language: str = i18n.ENGLISH) -> list[str]:
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
                out.append(STATIC_NOTE(path=path, note=note).in_language(language))
        for finding in findings_on_line(checked[path], line):
            where = f"{finding.span.path or path}:{finding.span.line}"
            if (finding.code, where) in seen:
                continue
            seen.add((finding.code, where))
            template = STATIC_SAME_RULE if finding.code == code else STATIC_FINDING
            out.append(template(where=where, code=finding.code, name=finding.name,
                                message=localized(finding.message, language)).in_language(language))
    if not out:
        path = places[0][0]
        for finding in [f for f in checked.get(path, []) if f.code == code][:3]:
            where = f"{finding.span.path or path}:{finding.span.line}"
            out.append(STATIC_ELSEWHERE(where=where, message=localized(finding.message, language))
                       .in_language(language))
    if not out:
        out.append(STATIC_NOTHING(path=places[0][0]).in_language(language))
    return out
