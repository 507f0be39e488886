"""What keeps an object alive, named as the user would write it: ``trainer.history[3]``.

The debug probe walks a frame's names *down* to the tensors; here the walk goes
*up* from the tensors through ``gc.get_referrers`` (one scan of the collector's
objects per level, for all the objects of that level at once) until it meets a
root the user can name: a module's global, a running function's local. Lists,
tuples and dicts add ``[i]`` / ``['key']``, an object's ``__dict__`` adds
``.attr``. The watch's own objects (its lists, its frames) are not referrers.
"""

from __future__ import annotations

import collections
import gc
import sys
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any

from graphlife.runtime.frames import is_library_code

#: Levels of referrers climbed (tensor <- list <- __dict__ <- object <- globals is 4).
MAX_DEPTH = 6
#: Objects followed per level (the referrers of many tensors are few containers).
MAX_PER_LEVEL = 64


@dataclass
class HolderPath:
    """How a root reaches the object: ``root`` (``trainer``) and the steps (``.history``, ``[3]``)."""

    root: str  # the name at the root, as written: `trainer`
    where: str  # what the root is: "global of module __main__ (train.py)", "local of fit() at train.py:30"
    steps: list[str]
    holds: int = 1  # targets found directly in the innermost container of the path

    @property
    def expression(self) -> str:
        return self.root + "".join(_readable(self.steps))

    @property
    def container(self) -> str:
        """The expression without its trailing positions (``trainer.history[3]`` -> ``trainer.history``)."""
        steps = _readable(self.steps)
        while steps and steps[-1].startswith("[") and steps[-1][1:-1].isdigit():
            steps = steps[:-1]  # records[0][1]: a tuple in a list is one entry of `records`
        return self.root + "".join(steps)


def _readable(steps: list[str]) -> list[str]:
    """``._modules['fc']._parameters['weight']`` as the user writes it: ``.fc.weight``."""
    out: list[str] = []
    index = 0
    while index < len(steps):
        step = steps[index]
        following = steps[index + 1] if index + 1 < len(steps) else ""
        if step in ("._parameters", "._modules", "._buffers") and following.startswith("['"):
            name = following[2:-2]
            out.append(f".{name}" if name.isidentifier() else f"[{name!r}]")
            index += 2
            continue
        out.append(step)
        index += 1
    return out


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return repr(key)
    if isinstance(key, (int, float, bool)) or key is None:
        return repr(key)
    return f"<{type(key).__name__}>"


def _module_of(namespace: dict) -> ModuleType | None:
    name = namespace.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is not None and getattr(module, "__dict__", None) is namespace:
        return module
    main = sys.modules.get("__main__")
    return main if main is not None and main.__dict__ is namespace else None


#: Sequences whose items are read by position (a `deque` of recent losses is one).
_SEQUENCES = (list, tuple, collections.deque)


def _index_in(holder: list | tuple | collections.deque, target: Any) -> str | None:
    for index, item in enumerate(holder):
        if item is target:
            return f"[{index}]"
    return None


def _instance_dict(obj: Any) -> dict | None:
    """``obj.__dict__`` read without running the object's code, or None."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:  # noqa: BLE001 - objects without a __dict__
        return None
    return d if type(d) is dict else None


def _owner_of(namespace: dict, ignore: set[int]) -> Any:
    """The object whose ``__dict__`` is ``namespace``, or None (a plain dict)."""
    for candidate in gc.get_referrers(namespace):
        if id(candidate) not in ignore and not isinstance(candidate, FrameType) and (
                _instance_dict(candidate) is namespace):
            return candidate
    return None


def find_holders(targets: list[Any], ignore: set[int], frames: list[FrameType]) -> dict[int, HolderPath]:
    """The paths from nameable roots to the targets (breadth first), one per innermost container
    (keyed by the id of the target the path ends at; ``holds`` counts the targets in that container)."""
    paths: dict[int, tuple[int, list[str]]] = {}  # object id -> (target id, steps down to the target)
    level: list[Any] = list(targets)
    target_ids = {id(t) for t in targets}
    for target in targets:
        paths[id(target)] = (id(target), [])
    found: dict[int, HolderPath] = {}
    holds: dict[int, int] = {}  # target id -> targets in the container that first reached it
    ignore = set(ignore) | {id(targets), id(paths), id(found), id(target_ids), id(holds)}

    def climb(holder: Any, value: Any, step: str, next_level: list[Any]) -> None:
        entry = paths[id(value)]
        if id(holder) not in paths:
            paths[id(holder)] = (entry[0], [step, *entry[1]])
            next_level.append(holder)
            if id(value) in target_ids:
                if isinstance(holder, _SEQUENCES):
                    items: Any = holder
                else:
                    items = (holder if isinstance(holder, dict) else _instance_dict(holder) or {}).values()
                holds[entry[0]] = sum(1 for item in items if id(item) in target_ids)

    for _ in range(MAX_DEPTH):
        if not level or len(found) == len(targets):
            break
        current = {id(x): x for x in level}
        for frame in frames:  # a running function's locals: the names the user sees around
            code = frame.f_code
            if code.co_name == "<module>":
                continue  # module level: found as a global, with its module named
            for name, value in list(frame.f_locals.items()):
                entry = paths.get(id(value))
                if id(value) in current and entry is not None and entry[0] not in found:
                    where = f"local of {code.co_name}() at {code.co_filename}:{frame.f_lineno}"
                    found[entry[0]] = HolderPath(name, where, entry[1])
        referrers = gc.get_referrers(*level)
        ignore |= {id(level), id(referrers), id(current)}
        next_level: list[Any] = []
        for holder in referrers:
            if id(holder) in ignore or isinstance(holder, FrameType) or id(holder) in paths:
                continue
            if isinstance(holder, _SEQUENCES):
                for value in level:
                    step = _index_in(holder, value)
                    if step is not None and paths[id(value)][0] not in found:
                        climb(holder, value, step, next_level)
                        break
                continue
            namespace = holder if isinstance(holder, dict) else _instance_dict(holder)
            if namespace is None:
                continue
            module = _module_of(namespace) if namespace is holder else None
            owner = holder if namespace is not holder else (None if module else _owner_of(namespace, ignore))
            for key, value in list(namespace.items()):
                entry = paths.get(id(value))
                if id(value) not in current or entry is None or entry[0] in found:
                    continue
                if module is not None and isinstance(key, str):
                    path = getattr(module, "__file__", None) or module.__name__
                    found[entry[0]] = HolderPath(key, f"global of module {module.__name__} ({path})", entry[1])
                elif owner is not None and isinstance(key, str):
                    climb(owner, value, f".{key}", next_level)
                else:
                    climb(holder, value, f"[{_key_text(key)}]", next_level)
        level = next_level[:MAX_PER_LEVEL]
        del referrers
    for target_id, path in found.items():
        path.holds = holds.get(target_id, 1)
    return found


def user_frames_now() -> list[FrameType]:
    """The running user frames of this thread, innermost first (the watch's own are skipped)."""
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not is_library_code(frame.f_code):
            frames.append(frame)
        frame = frame.f_back
    return frames
