"""The debug probe: what the autograd graph looks like *now*, in a stopped program.

This file runs inside the user's program (evaluated by the debugger in the
stopped frame, or called by :func:`graphlife.debug.explain`). It is loaded with
``runpy.run_path`` so it must stay one self-contained file: it imports only the
standard library and torch, and torch only when the program already imported it
(the probe never makes a program import torch).

It only *reads*, and never runs the program's code. It never calls backward,
never changes a tensor or a version counter, never calls a saved-tensor unpack
hook (checkpointing would recompute), never reads ``.grad`` of a non-leaf (that
warns), never calls ``getattr``, ``isinstance`` or ``str`` on user objects
(properties, ``__getattr__``, a ``__class__`` property and a metaclass's
``__instancecheck__`` are code): an object's fields are read through the C
``__dict__`` descriptor found in its type's MRO (a class-level ``__dict__``
property is skipped), types are compared through their ``__mro__`` read from
``type``'s own descriptors, and a tensor is read through ``torch._C.TensorBase``'s
descriptors with ``__torch_function__`` (subclasses and modes) and
``__torch_dispatch__`` disabled, so a tensor subclass's overrides never run. The
JSON is strict: an infinite or NaN number is the string ``"inf"``, ``"-inf"`` or
``"nan"``. Everything is bounded (depth, item counts, graph nodes, wall time) and
every read of an odd object fails soft.

How a saved tensor's state is measured (RULES.md, checked under torch 2.13):
reading ``grad_fn._saved_<name>`` raises ``one of the variables needed for
gradient computation has been modified by an inplace operation ... is at version
N; expected version M`` when the tensor was changed in place after it was saved
(state ``modified``, versions parsed from that message), raises ``Trying to
backward through the graph a second time ...`` when an earlier backward freed it
(state ``freed``), and returns the tensor otherwise (state ``ok``). Saved tensors
behind ``saved_tensors_hooks`` (checkpointing, offloading) are ``hooked``: not
unpacked, state unknown. ``backward_prediction`` is derived from those facts in
the order torch's engine runs the nodes (highest sequence number first); the
message it predicts is the one torch gave when the saved tensor was read.

The tensor to blame: for ``modified``, the frame's tensor sharing the saved
tensor's storage. For ``freed`` (GL101), in this order: ``consumed`` (nothing in
the graph is intact: this very tensor was backpropagated), ``stored`` (it is
built from tensors in a container whose graphs were consumed), ``shared`` (a
named part of its graph, or another loss whose backward freed the shared part),
``carried`` (live state from an earlier step that reaches the freed part: an RNN
hidden state, a running average), else ``freed`` (the tensor itself).

Snapshot JSON (``schema`` = ``"graphlife.probe/1"``; keys are stable, new keys
may be added, none removed)::

    {
      "schema": "graphlife.probe/1",
      "torch": "2.13.0" | null,          # null: the program has not imported torch
      "elapsed_ms": 3.2,
      "truncated": false,                 # a bound was hit (see "limits_hit")
      "limits_hit": ["time" | "tensors" | "objects" | "nodes"],
      "tensors": [Tensor],                # errors first, then warnings, then by name
      "containers": [Container],          # graphs kept alive by lists/dicts/objects
      "exception": Exception | null       # when called with exception=<message>
    }
    Tensor = {
      "name": "hidden[0]",                # path in the frame: x, xs[3], d['k'], obj.attr
      "aliases": ["h"],                   # other paths to the same tensor object
      "shape": [1, 2, 4], "dtype": "float32", "device": "cpu",
      "requires_grad": true, "is_leaf": false, "grad_fn": "StackBackward0" | null,
      "version": 0 | null,                # _version (null for inference tensors)
      "grad": null | {"shape": [...], "norm": 1.5 | null},
      "retains_grad": false, "is_inference": false, "is_parameter": false,
      "bytes": 32,                        # storage bytes of the tensor itself
      "severity": "error" | "warning" | "information" | null,
      "graph": null | Graph,
      "backward_prediction": null | Prediction   # null: no graph and not a scalar
    }
    Graph = {
      "nodes": 18, "nodes_truncated": false,
      "saved_count": 12, "states": {"ok": 10, "modified": 1, "freed": 1, "hooked": 0},
      "saved": [Saved],                   # problems first, at most MAX_SAVED_LISTED
      "saved_bytes": 4096,                # distinct storages the saved tensors keep alive
      "activation_bytes": 2048            # the same without leaves that require grad
    }
    Saved = {
      "node": "SigmoidBackward0", "seq": 3, "attr": "result" | "tensors[1]",
      "state": "ok" | "modified" | "freed" | "hooked",
      "shape": [3] | null, "dtype": "float32" | null, "bytes": 12 | null,
      "version": 1 | null,                # version of the tensor now
      "saved_version": 0 | null,          # version it had when saved (modified only)
      "owner": "y" | null,                # a tensor in the frame sharing its storage
      "message": "<what torch said when reading it>" | null   # modified only
    }
    Prediction = {
      "ok": true | false,
      "code": "GL101" | "GL102" | "GL104" | null,
      "error": "RuntimeError" | null,
      "message": "<the message torch will raise>" | null,
      "reason": "ok" | "modified" | "freed" | "consumed" | "shared" | "carried" | "stored"
                | "no_grad" | "non_scalar" | "hooked",
      "node": "SigmoidBackward0" | null,  # the node that will raise
      "blame": "y" | null,                # the frame's tensor (or container) to blame
      "blame_all": ["hidden[0]", "hidden[1]"],
      "explanation": "one sentence in graph-lifetime terms"
    }
    Container = {
      "name": "losses", "kind": "list" | "tuple" | "dict" | "module" | "object",
      "items": 100, "tensors": 100,       # graph-carrying tensors inside (bounded walk)
      "graphs": 100,                      # disjoint graphs among them (parameters ignored)
      "nodes": 300, "saved_bytes": 0, "activation_bytes": 0,
      "leak": true,                       # holds more than one graph
      "severity": "warning" | "information" | null,
      "explanation": "..."
    }
    Exception = {"message": "...", "code": "GL101" | null, "name": "...",
                 "why": "...", "fix": "...", "blame": "loss" | null}
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
import math
import os
import re
import sys
import time
import types
from collections import deque
from collections.abc import Callable
from typing import Any

SCHEMA = "graphlife.probe/1"

#: How deep the walk goes into containers and objects (the frame's names are depth 0).
MAX_DEPTH = 4
#: Items read per list/tuple/dict/object.
MAX_ITEMS = 1000
#: Objects visited in all (containers, objects, tensors).
MAX_OBJECTS = 20000
#: Tensors reported.
MAX_TENSORS = 500
#: Graph nodes read in all, and per tensor's graph.
MAX_NODES = 100000
MAX_NODES_PER_GRAPH = 20000
#: Saved-tensor records listed per tensor: problems (modified/freed/hooked) first, then
#: a few intact ones; the counts and bytes cover all of them.
MAX_SAVED_LISTED = 16
MAX_OK_LISTED = 4
#: Wall-time budget in seconds.
TIME_BUDGET = 2.0
#: Gradients larger than this get no norm (computing it would cost real time).
MAX_NORM_NUMEL = 4_000_000

_VERSION_RE = re.compile(r"is at version (\d+); expected version (\d+)")
_SHAPE_RE = re.compile(r"\[\w+(?:\.\w+)* \[([\d, ]*)\]\]")
_FREED_TEXT = "Trying to backward through the graph a second time"
_MODIFIED_TEXT = "modified by an inplace operation"
_NO_GRAD_MESSAGE = "element 0 of tensors does not require grad and does not have a grad_fn"
_NON_SCALAR_MESSAGE = "grad can be implicitly created only for scalar outputs"
_SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, None: 3}
_SKIP_TYPES = (
    types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.CodeType, types.FrameType, types.TracebackType, type, property, staticmethod,
    classmethod, str, bytes, bytearray, int, float, complex, bool, type(None), range,
)


class _Budget:
    """Counts and the deadline shared by one probe run."""

    def __init__(self, time_budget: float):
        self.deadline = time.monotonic() + time_budget
        self.objects = 0
        self.nodes = 0
        self.hit: set[str] = set()

    def out_of_time(self) -> bool:
        if time.monotonic() > self.deadline:
            self.hit.add("time")
            return True
        return False


# ---------------------------------------------------------------------- texts
#
# The explanations the probe writes, in English and Simplified Chinese (the terms of
# docs/zh-CN-GLOSSARY.md). They are built as ``_Text`` (a template key and its arguments)
# while the facts are read, and written out in the language asked for at the end of
# ``snapshot``, so no function in between needs to know the language. torch's own
# messages (``message`` fields) stay as torch prints them.

ENGLISH = "en"
CHINESE = "zh-CN"

_TEXTS: dict[str, dict[str, str]] = {
    "no_graph": {
        ENGLISH: "`{name}` has no graph: it was computed without autograd "
                 "(no_grad, detach, .item() round trip) or from tensors that do not require grad.",
        CHINESE: "`{name}` 没有计算图：它是在自动求导之外算出的（`no_grad`、`detach()`、经 `.item()` 转换后重新构造），"
                 "或者只由不需要梯度的张量算出。",
    },
    "non_scalar_leaf": {
        ENGLISH: "`{name}` has {numel} elements; backward() needs a gradient argument.",
        CHINESE: "`{name}` 有 {numel} 个元素；`backward()` 需要传入 `gradient` 参数。",
    },
    "leaf": {
        ENGLISH: "`{name}` is a leaf; backward() sets its .grad.",
        CHINESE: "`{name}` 是叶子张量；`backward()` 会设置它的 `.grad`。",
    },
    "non_scalar_graph": {
        ENGLISH: "`{name}` has {numel} elements: backward() needs a gradient argument; "
                 "with one, the backward through its graph would run.",
        CHINESE: "`{name}` 有 {numel} 个元素：`backward()` 需要传入 `gradient` 参数；"
                 "传入后，沿它的计算图的反向传播可以正常运行。",
    },
    "hooked": {
        ENGLISH: "Some saved tensors are behind saved_tensors_hooks (checkpointing, offloading); "
                 "their state is not read.",
        CHINESE: "部分保存的张量经由 `saved_tensors_hooks` 保存（梯度检查点、卸载），没有读取它们的状态。",
    },
    "intact": {
        ENGLISH: "Every tensor saved by the graph of `{name}` is intact.",
        CHINESE: "`{name}` 的计算图保存的张量全部完好。",
    },
    "modified_owner": {
        ENGLISH: "`{owner}` was saved by {node} for the backward and changed in place afterwards{versions}; "
                 "use the out-of-place form.",
        CHINESE: "`{owner}` 被 {node} 保存用于反向传播，之后又被原地修改{versions}；请改用非原地写法。",
    },
    "modified_shape": {
        ENGLISH: "a tensor of shape {shape} was saved by {node} for the backward and changed in place "
                 "afterwards{versions}; use the out-of-place form.",
        CHINESE: "一个形状为 {shape} 的张量被 {node} 保存用于反向传播，之后又被原地修改{versions}；请改用非原地写法。",
    },
    "versions": {
        ENGLISH: " (saved at version {saved}, now at version {now})",
        CHINESE: "（保存时版本号为 {saved}，现在为 {now}）",
    },
    "stored": {
        ENGLISH: "`{name}` is built from tensors stored in `{holder}` whose graphs earlier backwards "
                 "already consumed; store `.item()` / `.detach()` and backpropagate each loss once.",
        CHINESE: "`{name}` 由存放在 `{holder}` 中的张量算出，而这些张量的计算图已被之前的反向传播用掉；"
                 "请存放 `.item()` / `.detach()` 的结果，每个损失只做一次反向传播。",
    },
    "consumed": {
        ENGLISH: "The graph of `{name}` was already backpropagated without retain_graph=True, "
                 "which freed its saved tensors; recompute the forward pass or sum the losses into one backward.",
        CHINESE: "`{name}` 的计算图已经在没有 `retain_graph=True` 的情况下做过反向传播，保存的张量已被释放；"
                 "请重新执行前向传播，或把各个损失相加后只做一次反向传播。",
    },
    "shared_part": {
        ENGLISH: "`{part}` is part of the graph of `{name}`, and an earlier backward through it freed "
                 "its saved tensors; backward through `{part}` only once (sum the losses), or detach it.",
        CHINESE: "`{part}` 是 `{name}` 的计算图的一部分，之前经过它的反向传播已经释放了它保存的张量；"
                 "对 `{part}` 只做一次反向传播（把损失相加），或者将它分离（`detach()`）。",
    },
    "shared_sibling": {
        ENGLISH: "`{name}` shares part of its graph with `{sibling}`, whose backward already freed it; "
                 "sum the losses into one backward, or retain_graph=True on the first one.",
        CHINESE: "`{name}` 与 `{sibling}` 共享一部分计算图，而 `{sibling}` 的反向传播已经释放了这部分；"
                 "请把损失相加后只做一次反向传播，或在第一次反向传播时传入 `retain_graph=True`。",
    },
    "carried": {
        ENGLISH: "`{name}` reaches a graph an earlier backward freed through state carried across "
                 "iterations ({carried}); detach the carried state at the loop boundary.",
        CHINESE: "`{name}` 通过跨迭代保留的状态（{carried}）连到了一个已被之前的反向传播释放的计算图；"
                 "请在循环边界处分离（`detach()`）这些状态。",
    },
    "freed": {
        ENGLISH: "The graph of `{name}` reaches nodes whose saved tensors an earlier backward freed; "
                 "detach what crosses from the earlier graph, or pass retain_graph=True to the earlier backward.",
        CHINESE: "`{name}` 的计算图连到了一些节点，它们保存的张量已被之前的反向传播释放；"
                 "请分离（`detach()`）从之前的计算图传过来的值，或在之前的反向传播中传入 `retain_graph=True`。",
    },
    "container_leak_bytes": {
        ENGLISH: "`{name}` keeps {graphs} graphs alive with {bytes} bytes of saved activations; "
                 "store `.item()` or `.detach()` instead.",
        CHINESE: "`{name}` 让 {graphs} 个计算图一直存活，保存的激活值占用 {bytes} 字节；"
                 "请改为存放 `.item()` 或 `.detach()` 的结果。",
    },
    "container_leak": {
        ENGLISH: "`{name}` keeps {graphs} graphs alive ({nodes} nodes; their saved tensors "
                 "were freed by backward); store `.item()` or `.detach()` instead.",
        CHINESE: "`{name}` 让 {graphs} 个计算图一直存活（{nodes} 个节点；它们保存的张量已被反向传播释放）；"
                 "请改为存放 `.item()` 或 `.detach()` 的结果。",
    },
    "container_one_graph": {
        ENGLISH: "`{name}` holds tensors of one graph.",
        CHINESE: "`{name}` 持有的张量属于同一个计算图。",
    },
}

#: How a list argument (names of carried state) is joined in each language.
_LIST_SEPARATOR = {ENGLISH: ", ", CHINESE: "、"}


class _Text:
    """An explanation not yet written: a key of ``_TEXTS`` and its arguments (strings,
    numbers, lists of strings, or other ``_Text``)."""

    __slots__ = ("args", "key")

    def __init__(self, key: str, **args: Any):
        self.key = key
        self.args = args

    def written(self, language: str) -> str:
        values = {}
        for name, value in self.args.items():
            if type(value) is _Text:
                value = value.written(language)
            elif type(value) is list:
                value = _LIST_SEPARATOR[language].join(value)
            values[name] = value
        return _TEXTS[self.key][language].format(**values)


def _language(name: str | None) -> str:
    """``"zh-CN"`` for the Simplified Chinese spellings a caller sends (``zh-cn`` from VS Code,
    ``zh-CN``, ``zh-Hans``, ``zh``), else English. The probe cannot import graphlife's own
    language module (it runs alone in the debugged program), and its callers normalize
    already; this only accepts their spellings."""
    parts = (name or "").strip().lower().replace("_", "-").split("-")
    if parts[0] != "zh" or any(part in ("tw", "hk", "mo", "hant") for part in parts[1:]):
        return ENGLISH
    return CHINESE


def _write_texts(result: dict, language: str) -> None:
    """Every ``_Text`` of a snapshot written out in ``language``."""
    for rec in result["tensors"]:
        pred = rec.get("backward_prediction")
        if pred and type(pred.get("explanation")) is _Text:
            pred["explanation"] = pred["explanation"].written(language)
    for rec in result["containers"]:
        if type(rec.get("explanation")) is _Text:
            rec["explanation"] = rec["explanation"].written(language)


# torch objects are typed ``Any``: the probe never imports torch, it reads the program's.


def _torch() -> Any:
    """The program's torch, or ``None`` when it has not imported torch."""
    return sys.modules.get("torch")


def _safe(fn: Callable[..., Any], default: Any = None) -> Any:
    """``fn()``, or ``default`` when it raises (``fn`` takes no argument; defaults bind loop values)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - odd objects must never break the probe
        return default


#: ``type``'s own descriptors: they read a class's fields whatever its metaclass overrides.
_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_NAME = type.__dict__["__name__"]
_TYPE_MODULE = type.__dict__["__module__"]


def _mro(cls: type) -> tuple:
    return _TYPE_MRO.__get__(cls, type)


def _is_sub(cls: type, bases: tuple) -> bool:
    """``issubclass(cls, bases)`` by identity in ``cls``'s MRO: no ``__subclasscheck__``, no ``__eq__``."""
    return any(klass is base for klass in _mro(cls) for base in bases)


def _class_name(cls: type) -> str:
    name = _TYPE_NAME.__get__(cls, type)
    return name if type(name) is str else "?"


def _type_name(obj: object) -> str:
    return _class_name(type(obj))


#: The class whose C descriptors read a tensor (``torch._C.TensorBase``), bound per run.
_TENSOR_BASE: list = []


def _bind_torch(torch: Any) -> None:
    base = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase", None) or torch.Tensor
    _TENSOR_BASE[:] = [base]


def _is_tensor(value: object) -> bool:
    return bool(_TENSOR_BASE) and _is_sub(type(value), (_TENSOR_BASE[0],))


def _read(t: Any, name: str) -> Any:
    """The tensor field ``name`` of ``t`` through the base class's own C descriptor
    (a subclass's property or ``__getattr__`` never runs)."""
    base = _TENSOR_BASE[0]
    return _TYPE_DICT.__get__(base, type)[name].__get__(t, base)


def _call(t: Any, name: str) -> Any:
    """The tensor method ``name`` of the base class called on ``t``."""
    return _TYPE_DICT.__get__(_TENSOR_BASE[0], type)[name](t)


@contextlib.contextmanager
def _no_user_dispatch(torch: Any) -> Any:
    """Turn off ``__torch_function__`` (subclasses and modes) and ``__torch_dispatch__`` for the
    probe's own reads (thread-local in torch; restored on the way out)."""
    with contextlib.ExitStack() as stack:
        for name in ("DisableTorchFunction", "_DisableTorchDispatch"):
            factory = getattr(torch._C, name, None)
            if factory is not None:
                stack.enter_context(factory())
        yield


def _storage_key(t: Any) -> tuple[tuple[str, int], int] | None:
    """Identity of the memory a tensor lives in: (device, storage pointer), or None."""
    try:
        storage = _call(t, "untyped_storage")
        ptr = storage.data_ptr()
        if not ptr:
            return None
        return (str(_read(t, "device")), ptr), int(storage.nbytes())
    except Exception:  # noqa: BLE001 - sparse, meta, functorch wrappers ...
        return None


def _shape(t: Any) -> list[int] | None:
    return _safe(lambda: [int(s) for s in _read(t, "shape")])


def _dtype(t: Any) -> str | None:
    return _safe(lambda: str(_read(t, "dtype")).replace("torch.", ""))


# --------------------------------------------------------------------------- walk


class _Found:
    """One tensor found in the frame, with the containers it sits in."""

    __slots__ = ("aliases", "ancestors", "name", "tensor", "via_module")

    def __init__(self, tensor: Any, name: str, ancestors: tuple[int, ...], via_module: bool) -> None:
        self.tensor = tensor
        self.name = name
        self.aliases: list[str] = []
        self.ancestors = ancestors
        self.via_module = via_module


class _ContainerSeen:
    __slots__ = ("items", "kind", "name")

    def __init__(self, name: str, kind: str, items: int) -> None:
        self.name = name
        self.kind = kind
        self.items = items


def _key_text(key: object) -> str:
    if type(key) is str:
        return repr(key) if len(key) <= 60 else repr(key[:57] + "...")
    if type(key) in (int, float, bool) or key is None:
        return repr(key)
    return "<" + _type_name(key) + ">"


def _instance_dict(obj: object) -> dict | None:
    """``obj.__dict__`` read without running user code, or None.

    Not ``object.__getattribute__(obj, "__dict__")``: that runs a ``__dict__`` property
    defined on the class. The C descriptor that holds instance dicts is looked up in the
    type dicts along the MRO, past anything else called ``__dict__``."""
    try:
        for klass in _mro(type(obj)):
            descriptor = _TYPE_DICT.__get__(klass, type).get("__dict__")
            if type(descriptor) is types.GetSetDescriptorType:
                d = descriptor.__get__(obj, klass)
                return d if type(d) is dict else None
    except Exception:  # noqa: BLE001
        return None
    return None


def _walk(namespace: dict, torch: Any, budget: _Budget) -> tuple[list[_Found], list[_ContainerSeen]]:
    """Breadth-first over the frame's names; shallow names win as a tensor's name."""
    tensor_cls = _TENSOR_BASE[0]
    module_cls = _safe(lambda: torch.nn.Module)
    optim_cls = _safe(lambda: torch.optim.Optimizer)
    found: dict[int, _Found] = {}
    containers: list[_ContainerSeen] = []
    seen_objects: set[int] = set()
    queue: deque[tuple[str, Any, int, tuple[int, ...], bool]] = deque()  # name, value, depth, ancestors, via a module
    for name, value in list(namespace.items()):
        if type(name) is str and not (name.startswith("__") and name.endswith("__")):
            queue.append((name, value, 0, (), False))
    while queue:
        name, value, depth, ancestors, via_module = queue.popleft()
        budget.objects += 1
        if budget.objects > MAX_OBJECTS:
            budget.hit.add("objects")
            break
        if (budget.objects & 255) == 0 and budget.out_of_time():
            break
        cls = type(value)  # never isinstance(): a __class__ property is user code
        if _is_sub(cls, _SKIP_TYPES):
            continue
        if _is_sub(cls, (tensor_cls,)):
            entry = found.get(id(value))
            if entry is not None:
                if len(entry.aliases) < 8:
                    entry.aliases.append(name)
                entry.ancestors = tuple(sorted(set(entry.ancestors) | set(ancestors)))
                continue
            if len(found) >= MAX_TENSORS:
                budget.hit.add("tensors")
                continue
            found[id(value)] = _Found(value, name, ancestors, via_module)
            continue
        if id(value) in seen_objects or depth >= MAX_DEPTH:
            continue
        seen_objects.add(id(value))
        children = []
        kind = None
        try:
            # The base types' own methods: a subclass's __getitem__/items is user code.
            if _is_sub(cls, (list, tuple)):
                kind = "tuple" if _is_sub(cls, (tuple,)) else "list"
                base = tuple if kind == "tuple" else list
                for index, item in enumerate(itertools.islice(base.__iter__(value), MAX_ITEMS)):
                    children.append((f"{name}[{index}]", item, via_module))
            elif _is_sub(cls, (dict,)):
                kind = "dict"
                for key, item in itertools.islice(dict.items(value), MAX_ITEMS):
                    children.append((f"{name}[{_key_text(key)}]", item, via_module))
            elif optim_cls is not None and _is_sub(cls, (optim_cls,)):
                continue  # its params are the model's; its state is not a graph
            elif module_cls is not None and _is_sub(cls, (module_cls,)):
                kind = "module"
                attrs = _instance_dict(value) or {}
                for group in ("_parameters", "_buffers", "_modules"):
                    sub = attrs.get(group)
                    if type(sub) is dict:
                        for key, item in list(sub.items())[:MAX_ITEMS]:
                            children.append((f"{name}.{key}", item, True))
                for key, item in list(attrs.items())[:MAX_ITEMS]:
                    if type(key) is str and not key.startswith("_") and key != "training":
                        children.append((f"{name}.{key}", item, via_module))
            else:
                fields = _instance_dict(value)
                if fields is None or _TYPE_MODULE.__get__(cls, type) in ("builtins", "torch", "typing"):
                    continue
                kind = "object"
                for key, item in list(fields.items())[:MAX_ITEMS]:
                    if type(key) is str and not key.startswith("__"):
                        children.append((f"{name}.{key}", item, via_module))
        except Exception:  # noqa: BLE001 - a container that refuses to be read
            continue
        index = len(containers)
        containers.append(_ContainerSeen(name, kind, len(children)))
        for child_name, item, child_via_module in children:
            queue.append((child_name, item, depth + 1, (*ancestors, index), child_via_module))
    return list(found.values()), containers


# ------------------------------------------------------------------- graph facts


class _Node:
    """What one autograd node holds, read once per probe run."""

    __slots__ = ("children", "fn", "hooked", "name", "problem", "saved", "seq", "storages")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.name = _type_name(fn)
        self.seq = _safe(lambda: int(fn._sequence_nr()), -1)
        self.children: list[int] = []
        self.saved: list[dict] = []
        self.problem: dict | None = None  # the first modified/freed record
        self.hooked = False
        self.storages: list = []  # (storage key, bytes, is a leaf that requires grad) of live saved tensors


_ATTRS_BY_TYPE: dict[type, tuple] = {}


def _saved_attrs(fn: Any) -> tuple:
    """The saved-tensor attribute names of a node type (``_raw_saved_<x>`` exists)."""
    cls = type(fn)
    attrs = _ATTRS_BY_TYPE.get(cls)
    if attrs is None:
        names = _safe(lambda: dir(cls), []) or []
        attrs = tuple(n[len("_raw_saved_"):] for n in names if n.startswith("_raw_saved_"))
        _ATTRS_BY_TYPE[cls] = attrs
    return attrs


def _read_saved(fn: Any, attr: str, torch: Any) -> list[dict]:
    """Records for one saved attribute (one per tensor in it), each with its state."""
    public = "saved_tensors" if attr == "tensors" and hasattr(type(fn), "saved_tensors") else f"_saved_{attr}"
    try:
        raw = getattr(fn, f"_raw_saved_{attr}")
    except Exception as exc:  # noqa: BLE001 - python Function nodes raise here once freed
        return [_failed_record(str(exc), attr)] if _FREED_TEXT in str(exc) else []
    many = type(raw) in (tuple, list)
    raws = list(raw) if many else [raw]
    hooked = [_safe(lambda r=r: r.unpack_hook is not None, False) for r in raws]
    if any(hooked):
        return [
            {"attr": f"{attr}[{i}]" if many else attr, "state": "hooked", "shape": None, "dtype": None,
             "bytes": None, "version": None, "saved_version": None, "owner": None, "message": None,
             "_key": None}
            for i, _ in enumerate(raws)
        ]
    try:
        value = getattr(fn, public)
        error = None
    except Exception as exc:  # noqa: BLE001 - this is how the state is measured
        value, error = None, str(exc)
    values = list(value) if type(value) in (tuple, list) else [value]
    records = []
    message_shape = None
    if error and _MODIFIED_TEXT in error:
        m = _SHAPE_RE.search(error)
        message_shape = [int(s) for s in m.group(1).split(",") if s.strip()] if m else None
    for i, r in enumerate(raws):
        label = f"{attr}[{i}]" if many else attr
        if error is None:
            t = values[i] if i < len(values) else None
            if not _is_tensor(t):
                continue  # an optional tensor that was not given
            records.append(_tensor_record(t, label, "ok", None))
            continue
        if _FREED_TEXT in error:
            records.append(_failed_record(error, label))
            continue
        if _MODIFIED_TEXT in error:
            data = _safe(lambda r=r: r.data)
            if not _is_tensor(data):
                continue
            state = "modified"
            if many and message_shape is not None and _shape(data) != message_shape:
                state = "ok"  # another tensor of the same attribute is the modified one
            rec = _tensor_record(data, label, state, error if state == "modified" else None)
            if state == "modified":
                m = _VERSION_RE.search(error)
                if m:
                    rec["version"], rec["saved_version"] = int(m.group(1)), int(m.group(2))
            records.append(rec)
    return records


def _failed_record(message: str, label: str) -> dict:
    return {"attr": label, "state": "freed", "shape": None, "dtype": None, "bytes": None, "version": None,
            "saved_version": None, "owner": None, "message": None, "_message": message, "_key": None,
            "_leaf_rg": False}


def _tensor_record(t: Any, label: str, state: str, message: str | None) -> dict:
    key = _storage_key(t)
    return {
        "attr": label, "state": state, "shape": _shape(t), "dtype": _dtype(t),
        "bytes": key[1] if key else None,
        "version": _safe(lambda: int(_read(t, "_version"))), "saved_version": None, "owner": None,
        "message": message, "_key": key,
        "_leaf_rg": bool(_safe(lambda: _read(t, "is_leaf") and _read(t, "requires_grad"), False)),
    }


class _Graphs:
    """Every node reachable from the frame's tensors, read once, indexed by position."""

    def __init__(self, torch: Any, budget: _Budget) -> None:
        self.torch = torch
        self.budget = budget
        self.nodes: list[_Node] = []
        self.index: dict[int, int] = {}
        self._keep: list = []  # holds node objects so ids stay unique during the run
        self._reach: dict[int, tuple[list[int], bool]] = {}

    def node_id(self, fn: Any) -> int | None:
        """Read ``fn`` and everything below it; return its index (None when out of budget)."""
        if fn is None:
            return None
        known = self.index.get(id(fn))
        if known is not None:
            return known
        root = self._add(fn)
        if root is None:
            return None
        stack = [root]
        while stack:
            i = stack.pop()
            node = self.nodes[i]
            nexts = _safe(lambda n=node: n.fn.next_functions, ()) or ()
            for pair in nexts:
                child = pair[0] if type(pair) is tuple and pair else None
                if child is None:
                    continue
                j = self.index.get(id(child))
                if j is None:
                    j = self._add(child)
                    if j is None:
                        break
                    stack.append(j)
                node.children.append(j)
        return root

    def _add(self, fn: Any) -> int | None:
        if self.budget.nodes >= MAX_NODES:
            self.budget.hit.add("nodes")
            return None
        if (self.budget.nodes & 127) == 0 and self.budget.out_of_time():
            return None
        self.budget.nodes += 1
        node = _Node(fn)
        for attr in _saved_attrs(fn):
            for rec in _read_saved(fn, attr, self.torch):
                rec["node"] = node.name
                rec["seq"] = node.seq
                node.saved.append(rec)
                if node.problem is None and rec["state"] in ("modified", "freed"):
                    node.problem = rec
                if rec["state"] == "hooked":
                    node.hooked = True
                key = rec.get("_key")
                if key is not None and rec["state"] in ("ok", "modified"):
                    node.storages.append((key[0], key[1], bool(rec.get("_leaf_rg"))))
        index = len(self.nodes)
        self.nodes.append(node)
        self.index[id(fn)] = index
        self._keep.append(fn)
        return index

    def reach(self, root: int) -> tuple[list[int], bool]:
        """Indices reachable from ``root`` (bounded), and whether the bound cut it (cached)."""
        known = self._reach.get(root)
        if known is None:
            known = self._reach[root] = self._walk_from(root)
        return known

    def _walk_from(self, root: int) -> tuple[list[int], bool]:
        seen = {root}
        order = [root]
        stack = [root]
        while stack:
            for j in self.nodes[stack.pop()].children:
                if j not in seen:
                    if len(seen) >= MAX_NODES_PER_GRAPH:
                        return order, True
                    seen.add(j)
                    order.append(j)
                    stack.append(j)
        return order, False


def _is_accumulate(node: _Node) -> bool:
    return node.name == "AccumulateGrad"


def _graph_summary(graphs: _Graphs, reach: list[int], truncated: bool, leaf_keys: set, owners: dict) -> dict:
    states = {"ok": 0, "modified": 0, "freed": 0, "hooked": 0}
    problems: list[dict] = []
    intact: list[dict] = []
    storages: dict = {}
    nodes = graphs.nodes
    for i in reach:
        node = nodes[i]
        if not node.saved:
            continue
        for rec in node.saved:
            state = rec["state"]
            states[state] += 1
            if state == "ok":
                if len(intact) < MAX_OK_LISTED:
                    intact.append(rec)
            else:
                problems.append(rec)
        for key, nbytes, leaf in node.storages:
            storages[key] = (nbytes, leaf or key in leaf_keys)
    order = {"modified": 0, "freed": 1, "hooked": 2}
    if len(problems) > MAX_SAVED_LISTED:
        problems = heapq.nsmallest(MAX_SAVED_LISTED, problems, key=lambda r: (order[r["state"]], -(r.get("seq") or 0)))
    else:
        problems.sort(key=lambda r: (order[r["state"]], -(r.get("seq") or 0)))
    listed = []
    for rec in problems + intact:
        out = {k: v for k, v in rec.items() if not k.startswith("_")}
        key = rec.get("_key")
        if key is not None and key[0] in owners:
            out["owner"] = owners[key[0]]
        listed.append(out)
    return {
        "nodes": len(reach),
        "nodes_truncated": truncated,
        "saved_count": sum(states.values()),
        "states": states,
        "saved": listed,
        "saved_bytes": sum(n for n, _ in storages.values()),
        "activation_bytes": sum(n for n, leaf in storages.values() if not leaf),
    }


# -------------------------------------------------------------------- prediction


def _predict(entry: _Found, t: Any, root: int | None, graphs: _Graphs, reach: list[int], frame: list) -> dict | None:
    """What ``t.backward()`` would do now, from the states read (never by running it)."""
    requires_grad = bool(_safe(lambda: _read(t, "requires_grad"), False))
    numel = _safe(lambda: int(_call(t, "numel")), 0)
    if not requires_grad:
        if numel != 1:
            return None  # not something anyone would call backward on
        return _prediction(False, "GL104", _NO_GRAD_MESSAGE, "no_grad", None, None, [],
                           _Text("no_graph", name=entry.name))
    scalar = numel == 1
    if root is None:
        if not scalar:
            return _prediction(False, None, _NON_SCALAR_MESSAGE, "non_scalar", None, None, [],
                               _Text("non_scalar_leaf", name=entry.name, numel=numel))
        return _prediction(True, None, None, "ok", None, None, [], _Text("leaf", name=entry.name))
    pred = _predict_graph(entry, root, graphs, reach, frame)
    if not scalar and pred["ok"]:
        return _prediction(False, None, _NON_SCALAR_MESSAGE, "non_scalar", None, None, [],
                           _Text("non_scalar_graph", name=entry.name, numel=numel))
    return pred


def _predict_graph(entry: _Found, root: int, graphs: _Graphs, reach: list[int], frame: list) -> dict:
    """The outcome of a backward through the graph of ``entry`` (a gradient given if needed)."""
    nodes = graphs.nodes
    problems = [nodes[i] for i in reach if nodes[i].problem is not None]
    hooked = any(nodes[i].hooked for i in reach)
    if not problems:
        if hooked:
            return _prediction(True, None, None, "hooked", None, None, [], _Text("hooked"))
        return _prediction(True, None, None, "ok", None, None, [], _Text("intact", name=entry.name))
    first = max(problems, key=lambda n: n.seq)  # the engine runs higher sequence numbers first
    rec = first.problem
    assert rec is not None  # ``problems`` holds the nodes that have one
    message = rec.get("message") or rec.get("_message")
    if rec["state"] == "modified":
        owner = _owner_name(rec, frame)
        blame_all = [owner] if owner else []
        versions = (_Text("versions", saved=rec["saved_version"], now=rec["version"])
                    if rec.get("saved_version") is not None else "")
        why = (_Text("modified_owner", owner=owner, node=first.name, versions=versions) if owner
               else _Text("modified_shape", shape=str(rec.get("shape")), node=first.name, versions=versions))
        return _prediction(False, "GL102", message, "modified", first.name, owner, blame_all, why)
    reason, blame, blame_all, why = _blame_freed(entry, root, graphs, reach, frame)
    return _prediction(False, "GL101", message, reason, first.name, blame, blame_all, why)


def _prediction(
    ok: bool,
    code: str | None,
    message: str | None,
    reason: str,
    node: str | None,
    blame: str | None,
    blame_all: list[str],
    explanation: _Text,
) -> dict:
    return {
        "ok": ok, "code": code, "error": None if ok else "RuntimeError", "message": message,
        "reason": reason, "node": node, "blame": blame, "blame_all": blame_all, "explanation": explanation,
    }


def _owner_name(rec: dict, frame: list) -> str | None:
    """The frame's tensor that shares the saved tensor's storage (same shape preferred)."""
    key = rec.get("_key")
    if key is None:
        return None
    best = None
    for entry, info in frame:
        if info.get("key") == key[0]:
            if _shape(entry.tensor) == rec.get("shape") and not entry.via_module:
                return entry.name
            best = best or entry.name
    return best


def _hops_to(graphs: _Graphs, start: int | None, targets: set, limit: int = 2000) -> int:
    """Nodes between ``start`` and the nearest node of ``targets`` (breadth first, bounded)."""
    if start is None:
        return 1 << 30
    if start in targets:
        return 0
    seen = {start}
    level = [start]
    depth = 0
    while level and len(seen) < limit:
        depth += 1
        nxt = []
        for i in level:
            for j in graphs.nodes[i].children:
                if j in targets:
                    return depth
                if j not in seen:
                    seen.add(j)
                    nxt.append(j)
        level = nxt
    return 1 << 30


def _consumed_region(graphs: _Graphs, start: int, limit: int = 20000) -> set[int]:
    """Nodes a backward from ``start`` would have freed: reachable through freed nodes
    and nodes that save nothing, stopping at nodes whose saved tensors are intact."""
    region: set[int] = set()
    stack = [start]
    while stack and len(region) < limit:
        i = stack.pop()
        if i in region:
            continue
        node = graphs.nodes[i]
        if node.saved and (node.problem is None or node.problem["state"] != "freed"):
            continue
        region.add(i)
        stack.extend(node.children)
    return region


def _freed(node: _Node) -> bool:
    """Whether an earlier backward freed what ``node`` saved."""
    return node.problem is not None and node.problem["state"] == "freed"


def _container_of(name: str) -> str:
    """``history['train'][3]`` -> ``history['train']``; ``self.h`` -> ``self``."""
    if name.endswith("]") and "[" in name:
        return name[: name.rindex("[")]
    return name.rsplit(".", 1)[0] if "." in name else name


def _blame_freed(
    entry: _Found, root: int, graphs: _Graphs, reach: list[int], frame: list
) -> tuple[str, str | None, list[str], _Text]:
    """Name what carried the freed graph into this backward: the tensor itself,
    a shared sub-graph already backpropagated, or state carried across iterations."""
    nodes = graphs.nodes
    in_root = set(reach)
    freed = {i for i in reach if _freed(nodes[i])}
    live_saved = any(rec["state"] == "ok" for i in reach for rec in nodes[i].saved)
    name = entry.name
    if not live_saved:
        stored = []
        for other, info in frame:
            r = info.get("root")
            if other is entry or r is None or r not in in_root or not other.ancestors:
                continue
            if info.get("reach_set") is not None and info["reach_set"] & freed:
                stored.append(_container_of(other.name))
        if stored:
            holder = max(set(stored), key=stored.count)
            return ("stored", holder, sorted(set(stored)), _Text("stored", name=name, holder=holder))
        return ("consumed", name, [name], _Text("consumed", name=name))
    shared = []    # named parts of this graph that an earlier backward went through
    siblings = []  # other outputs already backpropagated through a part this graph shares
    carried = []   # live state from outside this graph that reaches the freed part
    inside = []    # live values inside this graph that reach the freed part
    for other, info in frame:
        if other is entry or info.get("root") is None or info.get("reach_set") is None:
            continue
        r = info["root"]
        reaches = bool(info["reach_set"] & freed)
        region = _consumed_region(graphs, r) if reaches else set()
        consumed = any(_freed(nodes[i]) for i in region)
        if consumed and r in in_root:
            shared.append((nodes[r].seq, other.name))
        elif consumed and region & freed:
            siblings.append(other.name)
        elif r not in in_root and reaches:
            carried.append(other.name)
        elif reaches:
            inside.append(other.name)
    if shared:
        shared.sort(reverse=True)
        names = [n for _, n in shared]
        return ("shared", names[0], names, _Text("shared_part", part=names[0], name=name))
    scalar = {other.name for other, _ in frame if _safe(lambda o=other: _call(o.tensor, "numel") == 1, False)}
    roots = {other.name: info.get("root") for other, info in frame}
    if not siblings and _safe(lambda: _call(entry.tensor, "numel") != 1, False):
        carried.insert(0, name)  # a non-scalar reaching an old graph is itself carried state
    if carried:
        # Live state from an earlier step explains more than the earlier step's loss
        # (which also freed it). Carried state is rarely a scalar (losses are), and it is
        # made right where it joins this step's graph, not by a later consumer of it.
        hops = {n: _hops_to(graphs, roots.get(n), in_root) for n in carried}
        carried.sort(key=lambda n: (n in scalar, hops[n]))
    elif siblings:
        siblings.sort(key=lambda n: n not in scalar)  # the loss that was backpropagated first
        return ("shared", siblings[0], siblings, _Text("shared_sibling", name=name, sibling=siblings[0]))
    elif inside:
        # A running value (an EMA, self.h) used by this step and built on the last step's graph.
        hops = {n: _hops_to(graphs, roots.get(n), freed) for n in inside}
        carried = sorted(inside, key=lambda n: (n in scalar, hops[n]))
    if carried:
        return ("carried", carried[0], carried,
                _Text("carried", name=name, carried=["`" + c + "`" for c in carried[:4]]))
    return ("freed", name, [name], _Text("freed", name=name))


# ---------------------------------------------------------------------- records


def _tensor_info(entry: _Found, torch: Any) -> dict:
    t = entry.tensor
    is_leaf = bool(_safe(lambda: _read(t, "is_leaf"), True))
    retains = bool(_safe(lambda: _read(t, "retains_grad"), False))
    grad = None
    if is_leaf or retains:  # .grad of a plain non-leaf is None and reading it warns
        g = _safe(lambda: _read(t, "grad"))
        if _is_tensor(g):
            norm = None
            if _safe(lambda: _call(g, "numel"), MAX_NORM_NUMEL + 1) <= MAX_NORM_NUMEL:
                with torch.no_grad():
                    norm = _safe(lambda: float(torch.linalg.vector_norm(_call(g, "detach"), dtype=torch.float64)))
            grad = {"shape": _shape(g), "norm": norm}
    fn = _safe(lambda: _read(t, "grad_fn"))
    key = _storage_key(t)
    parameter = _safe(lambda: torch.nn.Parameter)
    fields = _instance_dict(t) or {}
    return {
        "name": entry.name,
        "aliases": list(entry.aliases),
        "shape": _shape(t),
        "dtype": _dtype(t),
        "device": _safe(lambda: str(_read(t, "device"))),
        "requires_grad": bool(_safe(lambda: _read(t, "requires_grad"), False)),
        "is_leaf": is_leaf,
        "grad_fn": _type_name(fn) if fn is not None else None,
        "version": _safe(lambda: int(_read(t, "_version"))),
        "grad": grad,
        "retains_grad": retains,
        "is_inference": bool(_safe(lambda: _call(t, "is_inference"), False)),
        # Parameter's metaclass answers isinstance() by reading ``_is_param`` with getattr
        # (a subclass's __getattr__ would run): the MRO and the instance dict say the same.
        "is_parameter": (parameter is not None and _is_sub(type(t), (parameter,)))
        or fields.get("_is_param") is True,
        "bytes": _safe(lambda: int(_call(t, "numel") * _call(t, "element_size"))),
        "severity": None,
        "graph": None,
        "backward_prediction": None,
        "_fn": fn,
        "_key": key[0] if key else None,
    }


def _components(graphs: _Graphs, roots: list[int]) -> int:
    """Disjoint graphs among ``roots`` (AccumulateGrad nodes, i.e. parameters, do not join them)."""
    owner: dict[int, int] = {}
    parent = list(range(len(roots)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    nodes = graphs.nodes
    for k, r in enumerate(roots):
        touched = set()
        for i in graphs.reach(r)[0]:
            other = owner.get(i)
            if other is None:
                if nodes[i].name != "AccumulateGrad":  # parameters do not join graphs
                    owner[i] = k
            elif other != k:
                touched.add(other)
        for other in touched:
            parent[find(k)] = find(other)
    return len({find(k) for k in range(len(roots))})


def _containers(found_info: list, containers: list, graphs: _Graphs, leaf_keys: set) -> list[dict]:
    members: dict[int, list] = {}
    for entry, info in found_info:
        if info.get("root") is None:
            continue
        for a in entry.ancestors:
            members.setdefault(a, []).append((entry, info))
    records = []
    signature_seen: dict = {}
    # Deeper containers first, so a parent holding exactly the same graphs is dropped.
    for index in sorted(members, key=lambda i: -containers[i].name.count("[") - containers[i].name.count(".")):
        items = members[index]
        signature = frozenset(id(e) for e, _ in items)
        if signature in signature_seen:
            continue
        signature_seen[signature] = index
        roots = sorted({info["root"] for _, info in items})
        union: set[int] = set()
        for r in roots:
            union.update(graphs.reach(r)[0])
        storages: dict = {}
        for i in union:
            for key, nbytes, leaf in graphs.nodes[i].storages:
                storages[key] = (nbytes, leaf or key in leaf_keys)
        n_graphs = _components(graphs, roots)
        saved_bytes = sum(n for n, _ in storages.values())
        act = sum(n for n, leaf in storages.values() if not leaf)
        c = containers[index]
        leak = n_graphs > 1
        severity = ("warning" if act > 0 else "information") if leak else None
        if leak and act > 0:
            why = _Text("container_leak_bytes", name=c.name, graphs=n_graphs, bytes=act)
        elif leak:
            why = _Text("container_leak", name=c.name, graphs=n_graphs, nodes=len(union))
        else:
            why = _Text("container_one_graph", name=c.name)
        records.append({
            "name": c.name, "kind": c.kind, "items": c.items, "tensors": len(items), "graphs": n_graphs,
            "nodes": len(union), "saved_bytes": saved_bytes, "activation_bytes": act, "leak": leak,
            "severity": severity, "explanation": why,
        })
    records.sort(key=lambda r: (_SEVERITY_RANK[r["severity"]], -r["activation_bytes"], r["name"]))
    return records


# ------------------------------------------------------------------------- API


def _messages() -> list[dict[str, Any]]:
    """The autograd error table (graphlife/debug/messages.py next to this file), or []."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "messages.py")
    try:
        import runpy  # noqa: PLC0415

        return runpy.run_path(path)["MESSAGES"]
    except Exception:  # noqa: BLE001
        return []


def classify_message(message: str) -> dict[str, Any] | None:
    """The entry of the autograd error table whose pattern occurs in ``message``, or None."""
    for item in _messages():
        if any(p in message for p in item["patterns"]):
            return item
    return None


def snapshot(
    namespace: dict, *, exception: str | None = None, time_budget: float = TIME_BUDGET, language: str = ENGLISH
) -> dict:
    """The autograd facts of every tensor reachable from ``namespace`` (see the module doc).

    ``language`` (``"en"``, ``"zh-CN"``; ``"zh-cn"`` as VS Code spells it) is the language of
    the ``explanation``, ``why`` and ``fix`` texts; keys, codes and torch's messages do not change."""
    language = _language(language)
    start = time.monotonic()
    budget = _Budget(time_budget)
    torch = _torch()
    result: dict[str, Any] = {
        "schema": SCHEMA, "torch": None, "elapsed_ms": 0.0, "truncated": False, "limits_hit": [],
        "tensors": [], "containers": [], "exception": None,
    }
    if torch is not None:
        result["torch"] = str(_safe(lambda: torch.__version__, "?"))
        _bind_torch(torch)
        with _no_user_dispatch(torch):
            _fill(result, namespace, torch, budget)
        _write_texts(result, language)
    if exception:
        result["exception"] = _exception_record(exception, result["tensors"], language)
    result["limits_hit"] = sorted(budget.hit)
    result["truncated"] = bool(budget.hit)
    result["elapsed_ms"] = round((time.monotonic() - start) * 1000.0, 2)
    return result


def _fill(result: dict, namespace: dict, torch: Any, budget: _Budget) -> None:
    found, containers = _walk(namespace, torch, budget)
    graphs = _Graphs(torch, budget)
    frame = []
    for entry in found:
        info = _tensor_info(entry, torch)
        if info["_fn"] is not None and not budget.out_of_time():
            info["root"] = graphs.node_id(info["_fn"])
        else:
            info["root"] = None
        frame.append((entry, info))
    leaf_keys = {info["_key"] for e, info in frame if info["_key"] and info["is_leaf"] and info["requires_grad"]}
    owners = {}
    for entry, info in frame:
        if info["_key"] is not None and info["_key"] not in owners and not entry.via_module:
            owners[info["_key"]] = entry.name
    for entry, info in frame:
        if info["_key"] is not None and info["_key"] not in owners:
            owners[info["_key"]] = entry.name
        info["key"] = info["_key"]
        if info["root"] is not None:
            reach, cut = graphs.reach(info["root"])
            info["reach"], info["cut"] = reach, cut
            info["reach_set"] = set(reach)
        else:
            info["reach"], info["cut"], info["reach_set"] = [], False, None
    out = []
    for entry, info in frame:
        t = entry.tensor
        if info["root"] is not None:
            info["graph"] = _graph_summary(graphs, info["reach"], info["cut"], leaf_keys, owners)
        info["backward_prediction"] = _predict(entry, t, info["root"], graphs, info["reach"], frame)
        pred = info["backward_prediction"]
        raises = ("modified", "freed", "consumed", "shared", "carried", "stored")
        if pred is not None and not pred["ok"] and pred["reason"] in raises:
            info["severity"] = "error"
        out.append(info)
    blamed = set()
    for p in out:
        pred = p["backward_prediction"]
        if pred and not pred["ok"] and pred["code"] in ("GL101", "GL102"):
            blamed.update(pred["blame_all"])
    for p in out:
        if p["name"] in blamed and p["severity"] is None:
            p["severity"] = "error"  # the tensor a failing backward will trip over
    tensors = []
    for (entry, _), info in zip(frame, out):
        # Parameters reached through a module are many and rarely news: list them only when blamed.
        if entry.via_module and info["root"] is None and entry.name not in blamed:
            continue
        internal = ("_fn", "_key", "root", "key", "reach", "cut", "reach_set")
        tensors.append({k: v for k, v in info.items() if k not in internal})
    result["containers"] = _containers(frame, containers, graphs, leaf_keys)
    leaking = {c["name"]: c["severity"] for c in result["containers"] if c["leak"]}
    for rec in tensors:
        if rec["severity"] is None:
            for cname, sev in leaking.items():
                if rec["name"].startswith(cname + "[") or rec["name"].startswith(cname + "."):
                    rec["severity"] = sev
                    break
    tensors.sort(key=lambda r: (_SEVERITY_RANK[r["severity"]], r["grad_fn"] is None, r["name"]))
    result["tensors"] = tensors


def _exception_record(message: str, tensors: list, language: str = ENGLISH) -> dict:
    item = classify_message(message) or {}
    texts = item.get(language) or item  # an entry's ``zh-CN`` texts; English is the entry itself
    code = item.get("code")
    blame = None
    for rec in tensors:
        pred = rec.get("backward_prediction") or {}
        if code and pred.get("code") == code and pred.get("blame"):
            blame = pred["blame"]
            break
    if blame is None and code == "GL102":
        # A failed backward frees the nodes it ran before failing; the modified
        # saved tensor is still there to be found.
        for rec in tensors:
            for saved in (rec.get("graph") or {}).get("saved", []):
                if saved["state"] == "modified" and saved.get("owner"):
                    blame = saved["owner"]
                    break
            if blame:
                break
    return {"message": message, "code": code, "name": item.get("name"), "why": texts.get("why"),
            "fix": texts.get("fix"), "blame": blame}


def _strict(value: Any) -> Any:
    """``value`` made strict JSON: a non-finite float becomes ``"inf"``, ``"-inf"`` or ``"nan"``
    (``JSON.parse`` rejects bare ``Infinity``/``NaN``); anything not JSON becomes its type's name
    in angle brackets (never ``str()``: that is the object's code)."""
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if kind in (str, int, bool) or value is None:
        return value
    if kind is dict:
        return {key if type(key) is str else _strict_key(key): _strict(item) for key, item in value.items()}
    if kind in (list, tuple):
        return [_strict(item) for item in value]
    return "<" + _class_name(kind) + ">"


def _strict_key(key: Any) -> str:
    return str(key) if type(key) in (int, float, bool) or key is None else "<" + _type_name(key) + ">"


def _dumps(value: Any) -> str:
    return json.dumps(_strict(value), allow_nan=False)


def snapshot_json(
    namespace: dict, *, exception: str | None = None, time_budget: float = TIME_BUDGET, language: str = ENGLISH
) -> str:
    """:func:`snapshot` as strict JSON text (what the debugger client evaluates)."""
    try:
        return _dumps(snapshot(namespace, exception=exception, time_budget=time_budget, language=language))
    except Exception as exc:  # noqa: BLE001 - the client must always get JSON
        return json.dumps({"schema": SCHEMA, "error": f"{type(exc).__name__}: {exc}", "tensors": [], "containers": []})


def graph(namespace: dict, name: str, *, max_nodes: int = 300) -> dict:
    """Nodes and edges of the graph behind the tensor called ``name`` (for drawing).

    ``{"name", "root": 0, "nodes": [{"id", "name", "seq", "saved": [{"attr", "state", "shape", "owner"}],
    "state": "ok"|"modified"|"freed"|"hooked"|"leaf"}], "edges": [[from, to]], "truncated": bool}``
    """
    torch = _torch()
    empty: dict[str, Any] = {"name": name, "root": None, "nodes": [], "edges": [], "truncated": False}
    if torch is None:
        return empty
    _bind_torch(torch)
    with _no_user_dispatch(torch):
        return _graph(namespace, name, max_nodes, torch, empty)


def _graph(namespace: dict, name: str, max_nodes: int, torch: Any, empty: dict) -> dict:
    budget = _Budget(TIME_BUDGET)
    found, _ = _walk(namespace, torch, budget)
    entry = next((e for e in found if e.name == name or name in e.aliases), None)
    if entry is None:
        return empty
    owners: dict[tuple[str, int], str] = {}  # storage -> the first name found for it
    for e in found:
        key = _storage_key(e.tensor)
        if key is not None:
            owners.setdefault(key[0], e.name)
    graphs = _Graphs(torch, budget)
    root = graphs.node_id(_safe(lambda: _read(entry.tensor, "grad_fn")))
    if root is None:
        return empty
    reach, cut = graphs.reach(root)
    keep = reach[:max_nodes]
    position = {i: k for k, i in enumerate(keep)}
    nodes, edges = [], []
    for k, i in enumerate(keep):
        node = graphs.nodes[i]
        states = {rec["state"] for rec in node.saved}
        fallback = "leaf" if _is_accumulate(node) else "none"
        state = next((s for s in ("modified", "freed", "hooked", "ok") if s in states), fallback)
        saved = []
        for rec in node.saved[:8]:
            key = rec.get("_key")
            saved.append({"attr": rec["attr"], "state": rec["state"], "shape": rec["shape"],
                          "owner": owners.get(key[0]) if key else None})
        label = node.name
        if _is_accumulate(node):
            var = _safe(lambda n=node: n.fn.variable)
            vkey = _storage_key(var) if var is not None else None
            if vkey is not None and vkey[0] in owners:
                label = f"AccumulateGrad ({owners[vkey[0]]})"
        nodes.append({"id": k, "name": label, "seq": node.seq, "state": state, "saved": saved})
        for j in node.children:
            if j in position:
                edges.append([k, position[j]])
    return {"name": entry.name, "root": 0, "nodes": nodes, "edges": edges, "truncated": cut or len(reach) > max_nodes}


def graph_json(namespace: dict, name: str, *, max_nodes: int = 300) -> str:
    """:func:`graph` as JSON text."""
    try:
        return _dumps(graph(namespace, name, max_nodes=max_nodes))
    except Exception as exc:  # noqa: BLE001
        return json.dumps({"name": name, "error": f"{type(exc).__name__}: {exc}", "nodes": [], "edges": []})
