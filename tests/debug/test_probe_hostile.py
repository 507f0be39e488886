"""The probe on hostile objects: it runs none of the program's code and changes nothing observable.

The probe runs inside the user's stopped program. Reading an object must not
run a class-level ``__dict__`` property, a ``__class__`` property, a metaclass's
``__instancecheck__``/``__getattribute__``/``__eq__``, a tensor subclass's
``__torch_function__`` or ``__getattr__``; none of the random number generators,
tensor versions, gradients, hooks or reference counts may change; and its JSON
must parse with a strict parser (the client's ``JSON.parse`` rejects ``NaN``).
"""

from __future__ import annotations

import json
import random
import runpy
import sys
from pathlib import Path

import pytest
import torch

PROBE = runpy.run_path(str(Path(__file__).resolve().parents[2] / "server" / "graphlife" / "debug" / "probe.py"))

#: Every run of the program's code the hostile objects below could be tricked into.
CALLS: list[str] = []


def user_code(what: str) -> None:
    """What a hostile hook does: note the call and draw random numbers (the RNG state changes)."""
    CALLS.append(what)
    random.random()
    torch.rand(1)


class DictProperty:
    """A class whose ``__dict__`` is a property (user code)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.kept = tensor

    @property
    def __dict__(self):
        user_code("class-level __dict__ property")
        return {}


class ClassProperty:
    """``__class__`` as a property: ``isinstance`` would call it."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.kept = tensor

    @property
    def __class__(self):
        user_code("__class__ property")
        return list


class Meta(type):
    """A metaclass whose hooks are user code."""

    def __instancecheck__(cls, instance):
        user_code("metaclass __instancecheck__")
        return False

    def __subclasscheck__(cls, subclass):
        user_code("metaclass __subclasscheck__")
        return False

    def __getattribute__(cls, name):
        if name in ("__module__", "__name__", "__mro__", "__dict__", "__class__"):
            user_code(f"metaclass __getattribute__({name})")
        return super().__getattribute__(name)

    def __eq__(cls, other):
        user_code("metaclass __eq__")
        return super().__eq__(other)

    __hash__ = type.__hash__


class WithMeta(metaclass=Meta):
    def __init__(self, tensor: torch.Tensor) -> None:
        self.kept = tensor


class SpyTensor(torch.Tensor):
    """A tensor subclass whose ``__torch_function__`` is user code."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        user_code(f"__torch_function__({getattr(func, '__name__', func)})")
        return super().__torch_function__(func, types, args, kwargs or {})


class RaisingTensor(torch.Tensor):
    """A tensor subclass whose ``__getattr__`` raises (``isinstance(t, nn.Parameter)`` calls it)."""

    def __getattr__(self, name):
        user_code(f"__getattr__({name})")
        raise RuntimeError("the program's __getattr__ ran")


def hostile_namespace() -> dict:
    w = torch.randn(3, requires_grad=True)
    hidden = torch.tanh(w * 2)
    spy = torch.sigmoid(w).as_subclass(SpyTensor)
    raising = torch.exp(w).as_subclass(RaisingTensor)
    inf_grad = torch.zeros(2, requires_grad=True)
    inf_grad.grad = torch.tensor([float("inf"), 1.0])
    nan_grad = torch.zeros(2, requires_grad=True)
    nan_grad.grad = torch.tensor([float("nan"), 0.0])
    hooked = (w * 3).sum()
    hooked.register_hook(lambda grad: grad)
    return {
        "w": w, "hidden": hidden, "spy": spy, "raising": raising, "inf_grad": inf_grad, "nan_grad": nan_grad,
        "hooked": hooked, "by_dict_property": DictProperty(hidden * 5), "by_class_property": ClassProperty(hidden + 1),
        "with_meta": WithMeta(hidden - 1), "meta_class": WithMeta,
    }


def tensors_of(namespace: dict) -> dict:
    """The tensors among the names (``issubclass`` on the exact type: torch's check, no user hook)."""
    return {name: value for name, value in namespace.items() if issubclass(type(value), torch.Tensor)}


def observable(namespace: dict) -> dict:
    """Everything the program could see change, read with user code turned off."""
    tensors = tensors_of(namespace)
    with torch._C.DisableTorchFunction():
        return {
            "python rng": random.getstate(),
            "torch rng": torch.get_rng_state().tolist(),
            "versions": {name: t._version for name, t in tensors.items()},
            "grads": {name: (id(t.grad), None if t.grad is None else repr(t.grad.tolist()))
                      for name, t in tensors.items() if t.is_leaf},
            "hooks": {name: list((t._backward_hooks or {}).keys()) for name, t in tensors.items()},
            "tensor refcounts": {name: sys.getrefcount(t) for name, t in tensors.items()},
            "graph refcounts": {name: sys.getrefcount(t.grad_fn) for name, t in tensors.items() if t.grad_fn},
        }


def reject_constant(token: str):
    raise AssertionError(f"non-standard JSON constant {token}")


def test_snapshot_of_hostile_objects_runs_no_user_code_and_changes_nothing() -> None:
    namespace = hostile_namespace()
    with torch._C.DisableTorchFunction():
        grad_fns = {name: t.grad_fn for name, t in tensors_of(namespace).items() if t.grad_fn}
    before = observable(namespace)
    CALLS.clear()

    text = PROBE["snapshot_json"](namespace)
    graph_text = PROBE["graph_json"](namespace, "spy")

    calls = list(CALLS)
    after = observable(namespace)
    assert calls == []
    assert after == before
    with torch._C.DisableTorchFunction():
        assert all(namespace[name].grad_fn is fn for name, fn in grad_fns.items())

    snap = json.loads(text, parse_constant=reject_constant)
    assert "error" not in snap, snap
    listed = {t["name"] for t in snap["tensors"]}
    assert {"w", "hidden", "spy", "raising", "hooked"} <= listed  # a hostile tensor empties nothing
    assert "by_dict_property.kept" not in listed  # its fields are behind user code: not read
    assert {"by_class_property.kept", "with_meta.kept"} <= listed
    grads = {t["name"]: t["grad"] for t in snap["tensors"] if t["grad"]}
    assert grads["inf_grad"]["norm"] == "inf"
    assert grads["nan_grad"]["norm"] == "nan"
    assert json.loads(graph_text, parse_constant=reject_constant)["nodes"]


def test_a_class_level_dict_property_above_a_real_dict_is_skipped() -> None:
    """A subclass that hides its base's instance dict behind a property: the dict is still read,
    through the C descriptor further down the MRO, and the property does not run."""

    class Base:
        pass

    class Hiding(Base):
        @property
        def __dict__(self):
            user_code("subclass __dict__ property")
            return {}

    w = torch.randn(2, requires_grad=True)
    holder = Hiding()
    object.__setattr__(holder, "loss", (w * 2).sum())
    CALLS.clear()
    snap = json.loads(PROBE["snapshot_json"]({"holder": holder}), parse_constant=reject_constant)
    assert CALLS == []
    assert [t["name"] for t in snap["tensors"]] == ["holder.loss"]


def test_a_torch_function_mode_of_the_program_does_not_see_the_probe() -> None:
    """A program stopped inside a ``TorchFunctionMode`` (a profiler, a tracer): the probe's reads
    and its gradient norm are not the program's torch calls and must not reach the mode."""

    class Spy(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            user_code(f"mode saw {getattr(func, '__name__', func)}")
            return func(*args, **(kwargs or {}))

    w = torch.randn(3, requires_grad=True)
    w.grad = torch.ones(3)
    loss = torch.sigmoid(w).sum()
    namespace = {"w": w, "loss": loss}
    before = observable(namespace)
    CALLS.clear()
    with Spy():
        text = PROBE["snapshot_json"](namespace)
    calls = list(CALLS)
    assert calls == []
    assert observable(namespace) == before
    grads = {t["name"]: t["grad"] for t in json.loads(text, parse_constant=reject_constant)["tensors"] if t["grad"]}
    assert grads["w"]["norm"] == pytest.approx(3 ** 0.5)
