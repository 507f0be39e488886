"""Where graph nodes were built and tensors changed in place: the site recorder.

torch's anomaly mode keeps a formatted stack for every node, and checks every
backward for NaNs: too dear to leave on. The recorder is a ``TorchFunctionMode``
that, while it is on, stamps each new graph node (``grad_fn.metadata``) with the
user's line that made it (the innermost frame outside torch), and remembers the
user's line of every call that bumped a tensor's version counter (an in-place
change), by storage. It is one Python call per torch call while on, nothing
while off: ``graphlife run --sites`` keeps it on for the whole run, the leak watch
turns it on for one optimizer step at a time.

A node is stamped once (the outermost torch call that made it wins: the user's
``model(x)``, not ``F.linear`` inside it); nodes made before the recorder started
(lower sequence numbers) are never stamped, so an old graph reached by a new
call keeps no false site.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from graphlife.runtime.frames import is_library_code, user_frame

#: Key of the site in a node's ``metadata`` dict.
SITE_KEY = "graphlife.site"
#: New nodes stamped per torch call (the graph a composite call builds is small).
MAX_STAMPS_PER_CALL = 256


@dataclass(frozen=True)
class Site:
    """A line of the user's code."""

    path: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"


@dataclass
class InplaceRecord:
    site: Site
    version: int  # the tensor's version after the change
    module: str | None = None  # the torch module that made the change (``ReLU(inplace=True)``), if one did

    def describe(self) -> str:
        return f"by {self.module}, called at {self.site}" if self.module else f"at {self.site}"


def _torch_module_running(torch: Any) -> str | None:
    """The innermost torch ``nn.Module`` whose ``forward`` is running inside torch's code
    (an in-place change made by ``nn.ReLU(inplace=True)`` is the module's, not the user's line)."""
    frame: FrameType | None = sys._getframe(1)
    module_cls = torch.nn.Module
    while frame is not None:
        if frame.f_code.co_name == "forward":
            owner = frame.f_locals.get("self")
            if isinstance(owner, module_cls):
                if not is_library_code(frame.f_code):
                    return None  # the user's own module: its line is the site
                text = repr(owner).splitlines()[0]
                return text if len(text) <= 80 else text[:77] + "..."
        if not is_library_code(frame.f_code):
            return None
        frame = frame.f_back
    return None


def current_site() -> Site | None:
    """The user's line running now (the innermost frame outside torch and graphlife)."""
    frame = user_frame(sys._getframe(1))
    if frame is None:
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def node_site(node: Any) -> Site | None:
    """The site stamped on a graph node, or None."""
    try:
        site = node.metadata.get(SITE_KEY)
    except Exception:  # noqa: BLE001 - a node type without metadata
        return None
    return site if isinstance(site, Site) else None


def next_sequence_number(torch: Any) -> int:
    """The sequence number the next graph node of this thread will get (a throwaway node is made)."""
    with torch.enable_grad():
        leaf = torch.zeros(1, requires_grad=True)
        return int(leaf.view(1).grad_fn._sequence_nr()) + 1


class SiteRecorder:
    """Stamps graph nodes and records in-place changes while on (see the module doc)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.inplace: dict[tuple[str, int], InplaceRecord] = {}
        self.floor = 0  # nodes numbered below were made before recording started
        self.stamped = 0
        #: (first, end, site) of the sequence numbers each backward call gave the nodes it made
        #: (``create_graph=True``): they are stamped with the backward's line when reached later.
        self.backward_ranges: list[tuple[int, int, Site]] = []
        #: Called after each backward call the recorder sees (the pytest plugin counts there).
        self.on_backward: Callable[[], None] | None = None
        self._mode: Any = None
        self.on = False

    # -- switching --------------------------------------------------------------------------
    def start(self) -> None:
        """Turn recording on (a no-op when on)."""
        if self.on:
            return
        if self._mode is None:
            self._mode = _recorder_mode(self.torch)(self)
        self.floor = next_sequence_number(self.torch)
        self._mode.__enter__()
        self.on = True

    def stop(self) -> bool:
        """Turn recording off; False (still recording) when another mode sits above ours."""
        if not self.on:
            return True
        c = self.torch._C
        depth = c._len_torch_function_stack()
        if depth == 0 or c._get_function_stack_at(depth - 1) is not self._mode:
            return False  # the program entered a mode of its own inside ours: popping would pop its
        self._mode.__exit__(None, None, None)
        self.on = False
        return True

    # -- lookups ------------------------------------------------------------------------------
    def inplace_site(self, tensor: Any) -> Site | None:
        """Where ``tensor``'s storage was last changed in place, if that change made its current version."""
        key = _storage_key(tensor)
        record = self.inplace.get(key) if key is not None else None
        if record is None:
            return None
        try:
            version = int(tensor._version)
        except Exception:  # noqa: BLE001 - inference tensors have no version
            return None
        return record.site if record.version == version else None

    # -- called by the mode -------------------------------------------------------------------
    def after_call(self, result: Any, changed: list[Any], site_cache: list[Site | None]) -> None:
        def site() -> Site | None:
            if not site_cache:
                site_cache.append(current_site())
            return site_cache[0]

        for tensor in changed:
            key = _storage_key(tensor)
            where = site()
            if key is not None and where is not None:
                module = _torch_module_running(self.torch)
                self.inplace[key] = InplaceRecord(where, int(tensor._version), module)
        for out in _tensors(result, self.torch.Tensor):
            fn = out.grad_fn
            if fn is not None:
                self._stamp(fn, site)

    def backward_made(self, first: int, end: int) -> None:
        """A backward call made the nodes numbered ``first`` to ``end`` (exclusive), if any."""
        site = current_site()
        if end > first and site is not None:
            self.backward_ranges.append((first, end, site))
            del self.backward_ranges[:-64]

    def _stamp(self, root: Any, site: Any) -> None:
        stack = [root]
        budget = MAX_STAMPS_PER_CALL
        while stack and budget:
            node = stack.pop()
            if node is None or type(node).__name__ == "AccumulateGrad":
                continue
            try:
                meta = node.metadata
                seq = node._sequence_nr()
                if SITE_KEY in meta or seq < self.floor:
                    continue
                where = next((s for lo, hi, s in self.backward_ranges if lo <= seq < hi), None) or site()
                if where is None:
                    return
                meta[SITE_KEY] = where
            except Exception:  # noqa: BLE001 - a node without metadata or sequence number
                continue
            budget -= 1
            self.stamped += 1
            stack.extend(pair[0] for pair in node.next_functions)


def _storage_key(tensor: Any) -> tuple[str, int] | None:
    try:
        ptr = tensor.untyped_storage().data_ptr()
        return (str(tensor.device), int(ptr)) if ptr else None
    except Exception:  # noqa: BLE001 - sparse, meta and wrapper tensors
        return None


def storage_key(tensor: Any) -> tuple[str, int] | None:
    """The (device, storage pointer) of a tensor, as the probe's saved-tensor records key it."""
    return _storage_key(tensor)


def _tensors(value: Any, tensor_cls: Any) -> list[Any]:
    if isinstance(value, tensor_cls):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, tensor_cls)]
    return []


def _versions(args: tuple, kwargs: dict, tensor_cls: Any) -> list[tuple[Any, int]]:
    """(tensor, version) of the tensors a call receives (top level, and ``out=``)."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, tensor_cls):
            try:
                found.append((value, value._version))
            except Exception:  # noqa: BLE001 - inference tensors have no version counter
                continue
    return found


_MODE_CLASS: dict[int, type] = {}


def _recorder_mode(torch: Any) -> type:
    """The TorchFunctionMode class, made once the program's torch is known (no torch import here)."""
    known = _MODE_CLASS.get(id(torch))
    if known is not None:
        return known
    base = torch.overrides.TorchFunctionMode
    tensor_cls = torch.Tensor
    backwards = (torch.Tensor.backward, torch.autograd.backward)  # autograd.grad returns its graphs: stamped

    class RecorderMode(base):  # type: ignore[misc, valid-type]
        def __init__(self, recorder: SiteRecorder) -> None:
            super().__init__()
            self.recorder = recorder

        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            if func in backwards:
                first = None
                with contextlib.suppress(Exception):  # the recorder must never break the program
                    first = next_sequence_number(torch)
                result = func(*args, **kwargs)
                with contextlib.suppress(Exception):
                    if first is not None:
                        self.recorder.backward_made(first, next_sequence_number(torch))
                if self.recorder.on_backward is not None:
                    self.recorder.on_backward()  # the watch guards its own counts
                return result
            before = _versions(args, kwargs, tensor_cls)
            result = func(*args, **kwargs)
            changed = []
            for tensor, version in before:
                with contextlib.suppress(Exception):  # a tensor that stopped having a version
                    if tensor._version != version:
                        changed.append(tensor)
            with contextlib.suppress(Exception):  # the recorder must never break the program
                self.recorder.after_call(result, changed, [])
            return result

    _MODE_CLASS[id(torch)] = RecorderMode
    return RecorderMode
