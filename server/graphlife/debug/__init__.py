"""The debug inspector's Python side: the probe, its text report, and ``explain``.

``from graphlife.debug import explain; explain(loss)`` prints, in pdb, a terminal
or Jupyter, what the VS Code "Autograd" view shows. Importing this package does
not import torch (the language server and CLI import ``graphlife`` freely); the
probe only uses the torch the program already imported.

The report is in English or Simplified Chinese: ``explain(loss, language="zh-CN")``,
or, without ``language=``, the environment's language as gettext reads it
(``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``), as the ``graphlife`` CLI does.
"""

from __future__ import annotations

import sys
from types import FrameType, ModuleType
from typing import Any, TextIO

from graphlife.i18n import CHINESE, ENGLISH, Language, from_environment, parse_choice

#: The note printed when explain() runs in torch's own frame (pdb after a crash), per language.
_OWN_FRAME_NOTE = {
    ENGLISH: "(explaining {func} at {file}:{line}, the frame that called into torch: torch's own frame holds "
          "torch's arguments, not your names)",
    CHINESE: "（解释的是 {file}:{line} 处的 {func}，即调用 torch 的那个栈帧：torch 自己的栈帧里是 torch 的参数，"
             "不是你的变量名）",
}


def report_language(language: str | None = None) -> Language:
    """The language of the report: ``language`` (``"en"``, ``"zh-CN"``, any case; ``"auto"``
    or ``None``: the environment's). An unknown name raises ``ValueError`` naming the choices,
    rather than quietly printing English."""
    chosen = parse_choice(language) if language is not None else None
    return chosen if chosen is not None else from_environment()


def _probe() -> ModuleType:
    from graphlife.debug import probe  # noqa: PLC0415 - keeps torch out of plain imports

    return probe


def _in_torch(frame: FrameType) -> bool:
    name = frame.f_globals.get("__name__")
    return isinstance(name, str) and (name == "torch" or name.startswith("torch."))


def _user_frame_for(frame: FrameType) -> FrameType | None:
    """The frame to explain when ``explain()`` is called in ``frame``: the frame itself, unless it
    is torch's (pdb after a crash stops in torch's ``_engine_run_backward``); then the user's frame
    that called into torch, found on the traceback being debugged or up the stack."""
    if not _in_torch(frame):
        return frame
    for chain in _stacks_being_debugged(frame):
        # pdb evaluates in the frame's own dicts: the same f_locals (3.11) and f_globals.
        hits = [i for i, f in enumerate(chain) if f is frame or f.f_locals is frame.f_locals]
        hits = hits or [i for i, f in enumerate(chain) if f.f_globals is frame.f_globals]
        if hits:
            for candidate in reversed(chain[: hits[-1] + 1]):
                if not _in_torch(candidate):
                    return candidate
    outer = frame.f_back  # a breakpoint inside torch: the user's frame is up the stack
    while outer is not None and _in_torch(outer):
        outer = outer.f_back
    return outer or frame


def _stacks_being_debugged(frame: FrameType) -> list[list[FrameType]]:
    """Frame chains (outermost first) that may hold the torch frame ``explain()`` runs in: the
    stack of a pdb (or ipdb) session up the current stack, the exception being handled, the last
    uncaught one (``%debug``, ``pdb.pm()``)."""
    import bdb  # noqa: PLC0415 - only when explain() is called in torch's frame

    chains: list[list[FrameType]] = []
    outer: FrameType | None = frame
    while outer is not None:
        owner = outer.f_locals.get("self")
        stack = getattr(owner, "stack", None) if isinstance(owner, bdb.Bdb) else None
        if isinstance(stack, list):  # pdb.Pdb keeps the frames it shows in `stack`
            chains.append([f for f, _ in stack])
            break
        outer = outer.f_back
    for tb in (sys.exc_info()[2], getattr(sys, "last_traceback", None)):
        chain = []
        while tb is not None:
            chain.append(tb.tb_frame)
            tb = tb.tb_next
        chains.append(chain)
    return chains


def explain(
    *objects: Any, namespace: dict | None = None, file: TextIO | None = None, language: str | None = None
) -> None:
    """Print the autograd report of the caller's frame, or of the given tensors/containers.

    With arguments, the report is limited to them (found by identity among the
    caller's names, so they keep their variable names); without, the whole frame.
    ``language``: ``"en"`` or ``"zh-CN"``; by default the environment's (see the module doc).
    """
    from graphlife.debug.render import render_text  # noqa: PLC0415

    chosen = report_language(language)
    if namespace is None:
        frame = sys._getframe(1)
        user = _user_frame_for(frame)
        if user is not frame and user is not None:
            code = user.f_code
            note = _OWN_FRAME_NOTE[chosen].format(func=code.co_name, file=code.co_filename, line=user.f_lineno)
            print(note, file=file or sys.stdout)
            frame = user
        namespace = {**frame.f_globals, **frame.f_locals}
        del frame, user
    names = []
    if objects:
        for k, obj in enumerate(objects):
            name = next((n for n, v in namespace.items() if v is obj and not n.startswith("__")), None)
            names.append(name or f"arg{k}")
        scope = dict(namespace)
        for name, obj in zip(names, objects):
            scope.setdefault(name, obj)
        snap = _probe().snapshot(scope, language=chosen)
        keep = tuple(names)

        def mine(name: str) -> bool:
            return any(name == n or name.startswith(n + "[") or name.startswith(n + ".") for n in keep)

        blamed = {
            b
            for t in snap["tensors"]
            if mine(t["name"])
            for b in (t.get("backward_prediction") or {}).get("blame_all", [])
        }
        snap["tensors"] = [t for t in snap["tensors"] if mine(t["name"]) or t["name"] in blamed]
        snap["containers"] = [c for c in snap["containers"] if mine(c["name"])]
    else:
        snap = _probe().snapshot(namespace, language=chosen)
    print(render_text(snap, language=chosen), file=file or sys.stdout)


__all__ = ["explain"]
