"""Generate graphlife's saved-tensor table from the installed torch.

Why: the analysis engine must know what each torch op keeps for backward (its
inputs, its own result, module parameters), whether it returns a view, whether
it mutates its first argument, and whether its result carries a graph - but the
language server must never import torch.  Folklore about this is often wrong
(``x * 2`` saves nothing, ``addmm`` does not save its output, ``sigmoid`` saves
its result), so nothing here is written by hand: every entry comes from running
the op on small tensors and reading ``grad_fn._saved_*`` over the graph it built.

Usage::

    python tools/gen_saved_tensors.py            # rewrite the shipped table
    python tools/gen_saved_tensors.py --check    # exit 1 if the shipped table is stale

Adding an op is one line in ``SPECS`` (see the helpers ``t``/``idx``/``mask``
and the builders ``fn``/``meth``/``func``/``mod``/``factory``).

Table format (see also ``server/graphlife/analysis/optable.py``)::

    {"torch_version": ..., "generator": "tools/gen_saved_tensors.py",
     "ops": {key: entry}}

An entry has ``kind`` (function | method | property | functional | module |
factory | distribution_method), ``inputs`` (names of the tensor arguments, in order), ``call`` (how it
was called), ``differentiable``, ``view`` (shares input 0's storage without
being input 0), ``inplace`` (bumps input 0's version) and ``cases``: one per
pattern, a string with one character per input: ``1`` a tensor that requires
grad, ``0`` one that does not, ``s`` a Python number.  A case records:

- ``saved``: indices of inputs saved for backward *and version-checked* (an
  in-place change to them makes backward raise);
- ``result``: an output is saved (for in-place ops: the mutated input 0 at its
  new version); ``saved_outputs`` says which, when there are several;
- ``requires_grad``: the result requires grad;
- ``internal``: count of other saved tensors (wrapped Python numbers, masks,
  workspaces); modules: ``params`` / ``buffers`` (one of them is saved);
- ``saved_unchecked`` / ``result_unchecked`` / ``params_unchecked``: the same
  memory is kept alive but not version-checked, so an in-place change there
  gives silently wrong gradients instead of the version error (``torch.kron``);
- ``backward_fails``: torch's own graph already fails the version check
  (``torch.vander`` in torch 2.13): any backward through it raises.

Optional entry fields: ``nondiff_inputs`` (integer/bool tensors),
``shares_version`` (views), ``identity`` (may return input 0 itself),
``outputs`` (number of flattened tensor outputs when more than one), ``sequence`` (with
``outputs``: the op's schema returns ``Tensor[]``, whose length depends on the call: the
sample's ``outputs`` is not a count to rely on),
``returns_tensor``, ``inplace_kwarg`` / ``inplace_arg`` with ``inplace_cases``
(the cases of the in-place form), ``converts``, ``proxy`` (measured through a
stand-in), ``requires_grad_kwarg`` (factories), ``variants`` (other call forms,
e.g. ``torch.max`` ``dim``; modules' ``eval``), ``parameters`` (distributions: the
constructor's parameters in order, so that positional arguments can be named).

``torch.distributions`` entries (kind ``distribution_method``) are keyed
``Distribution.<Class>(<params>).<method or property>``: the constructor given those
parameters by keyword, then the method; their inputs are the parameters, then the
method's value argument.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import increment_version

REPO = Path(__file__).resolve().parents[1]
TABLE_PATH = REPO / "server" / "graphlife" / "data" / "saved_tensors.json"
GENERATOR = "tools/gen_saved_tensors.py"

S = (2, 3)  # default shape: small, 2-D, non-square so transposes are visible


# --------------------------------------------------------------------------- #
# Declarative spec
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class In:
    """A tensor argument of the op under test (one character of a case pattern)."""

    name: str
    shape: tuple = S
    dtype: str = "float"  # float | long | bool
    scalar: float | None = None  # a Python number may stand here ('s')
    high: int = 2  # exclusive upper bound for long inputs
    nested: int | None = None  # pack this and the next inputs into a tuple (modules: hx)

    def chars(self) -> str:
        if self.dtype != "float":
            return "0"
        return "10s" if self.scalar is not None else "10"


def t(name: str = "input", shape: tuple = S, scalar: float | None = None) -> In:
    return In(name, tuple(shape), "float", scalar)


def idx(name: str, shape: tuple, high: int) -> In:
    return In(name, tuple(shape), "long", None, high)


def mask(name: str = "mask", shape: tuple = S) -> In:
    return In(name, tuple(shape), "bool")


@dataclass
class Spec:
    """One table entry: the key, how to call it, and its arguments."""

    key: str
    kind: str
    call: Callable[..., Any]
    args: tuple  # positional arguments: In placeholders or constants
    kwargs: dict = field(default_factory=dict)  # constants or In placeholders
    ctor: tuple = ()  # modules: constructor arguments
    ctor_kwargs: dict = field(default_factory=dict)
    variant: str | None = None  # stored under entry["variants"][variant]
    proxy: str | None = None
    converts: tuple | None = None  # (converting call spec, no-op call spec)
    module_cls: type | None = None
    call_text: str | None = None  # how the call is shown when it is not the key itself
    eval_mode: bool = False  # modules: call after .eval() (BatchNorm, Dropout behave otherwise)
    parameters: tuple[str, ...] = ()  # distributions: the constructor's parameters, in order


def _resolve(key: str) -> Callable[..., Any]:
    head, _, name = key.rpartition(".")
    owner = {"torch": torch, "F": F, "torch.linalg": torch.linalg, "torch.fft": torch.fft}[head]
    return getattr(owner, name)


def fn(key: str, *args: Any, variant: str | None = None, **kwargs: Any) -> Spec:
    """A torch function (``torch.*``, ``torch.linalg.*``)."""
    return Spec(key, "function", _resolve(key), args, kwargs, variant=variant)


def func(name: str, *args: Any, variant: str | None = None, **kwargs: Any) -> Spec:
    """A ``torch.nn.functional`` function, keyed ``F.<name>``."""
    return Spec("F." + name, "functional", getattr(F, name), args, kwargs, variant=variant)


def meth(name: str, *args: Any, variant: str | None = None, **kwargs: Any) -> Spec:
    """A Tensor method or operator; the first In is ``self``."""

    def call(self: Any, *a: Any, **k: Any) -> Any:
        return getattr(self, name)(*a, **k)

    if not args or not (isinstance(args[0], In) and args[0].name == "self"):
        args = (t("self"), *args)
    return Spec("Tensor." + name, "method", call, args, kwargs, variant=variant)


def prop(name: str) -> Spec:
    """A Tensor property such as ``T`` or ``data``."""
    return Spec("Tensor." + name, "property", lambda self: getattr(self, name), (t("self", (2, 3)),))


def mod(cls_name: str, ctor: tuple, *args: Any, variant: str | None = None,
        ctor_kwargs: dict | None = None, **kwargs: Any) -> Spec:
    """An ``nn`` module built with ``ctor`` and called on ``args``."""
    cls = getattr(nn, cls_name)
    return Spec("nn." + cls_name, "module", cls, args, kwargs, ctor=ctor,
                ctor_kwargs=ctor_kwargs or {}, variant=variant, module_cls=cls)


def mod_eval(cls_name: str, ctor: tuple, *args: Any) -> Spec:
    """The module in eval mode, stored as its ``eval`` variant."""
    spec = mod(cls_name, ctor, *args, variant="eval")
    spec.eval_mode = True
    return spec


def factory(name: str, *args: Any, grad: bool = True, **kwargs: Any) -> Spec:
    """A tensor factory; ``grad`` says whether to try ``requires_grad=True``."""
    spec = Spec("torch." + name, "factory", getattr(torch, name), args, kwargs)
    spec.ctor_kwargs = {"grad": grad}
    return spec


def distribution_specs(cls_name: str, params: tuple[In, ...], value: In | None,
                       methods: tuple[str, ...], properties: tuple[str, ...] = ()) -> list[Spec]:
    """A ``torch.distributions`` class built from ``params`` (by keyword), then one method
    or property of it, keyed ``Distribution.<Class>(<param,...>).<method>``.

    Why the whole call is one op: the engine keeps a distribution as the parameter tensors
    it was given and runs each method as an op on them (and on the method's argument), so
    what matters is what the graph built by constructor *and* method keeps of those tensors
    (``Normal.log_prob`` saves ``scale`` but not ``loc``; ``Categorical(logits=...)``
    normalizes its logits in the constructor). Arguments are not validated (``validate_args
    =False``): the small tensors are not in every support, and validation builds no graph.
    """
    cls = getattr(torch.distributions, cls_name)
    names = [p.name for p in params]
    signature = tuple(n for n in inspect.signature(cls.__init__).parameters if n not in ("self", "validate_args"))
    head = f"Distribution.{cls_name}({','.join(names)})"
    specs: list[Spec] = []

    def build(*tensors: Any) -> Any:
        return cls(**dict(zip(names, tensors[:len(names)])), validate_args=False)

    for method in methods:
        args: tuple = (*params, value) if method in _VALUE_METHODS and value is not None else params

        def call(*tensors: Any, _method: str = method) -> Any:
            return getattr(build(*tensors), _method)(*tensors[len(names):])

        shown = ", ".join(f"{n}={n}" for n in names)
        arg = "value" if len(args) > len(params) else ""
        specs.append(Spec(f"{head}.{method}", "distribution_method", call, args,
                          call_text=f"{cls_name}({shown}).{method}({arg})", parameters=signature))
    for prop_name in properties:
        def read(*tensors: Any, _prop: str = prop_name) -> Any:
            return getattr(build(*tensors), _prop)

        specs.append(Spec(f"{head}.{prop_name}", "distribution_method", read, params,
                          call_text=f"{cls_name}({', '.join(f'{n}={n}' for n in names)}).{prop_name}",
                          parameters=signature))
    return specs


#: Methods of a distribution that take a value (the rest take nothing we measure).
_VALUE_METHODS = frozenset({"log_prob", "cdf", "icdf"})

#: The distributions policy-gradient, actor-critic and VAE code build, with the methods it calls.
_DIST_METHODS = ("log_prob", "entropy", "rsample", "sample")
_DIST_PROPERTIES = ("mean", "stddev", "variance")
#: Discrete distributions have no ``rsample`` (no reparameterization).
_DISCRETE_METHODS = ("log_prob", "entropy", "sample")


def _distribution_specs() -> list[Spec]:
    unit = t("value", scalar=0.5)
    return [
        *distribution_specs("Normal", (t("loc", scalar=0.0), t("scale", scalar=1.0)), unit,
                            (*_DIST_METHODS, "cdf"), _DIST_PROPERTIES),
        *distribution_specs("LogNormal", (t("loc", scalar=0.0), t("scale", scalar=1.0)), unit,
                            _DIST_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Laplace", (t("loc", scalar=0.0), t("scale", scalar=1.0)), unit,
                            (*_DIST_METHODS, "cdf"), _DIST_PROPERTIES),
        *distribution_specs("Uniform", (t("low", scalar=0.0), t("high", scalar=1.0)), unit,
                            (*_DIST_METHODS, "cdf"), _DIST_PROPERTIES),
        *distribution_specs("Beta", (t("concentration1", scalar=1.0), t("concentration0", scalar=1.0)), unit,
                            _DIST_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Gamma", (t("concentration", scalar=1.0), t("rate", scalar=1.0)), unit,
                            _DIST_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Exponential", (t("rate", scalar=1.0),), unit, _DIST_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Dirichlet", (t("concentration"),), t("value"), _DIST_METHODS, ("mean", "variance")),
        *distribution_specs("Bernoulli", (t("probs"),), t("value"), _DISCRETE_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Bernoulli", (t("logits"),), t("value"), _DISCRETE_METHODS, _DIST_PROPERTIES),
        *distribution_specs("Categorical", (t("probs"),), idx("value", (2,), 3), _DISCRETE_METHODS, ("probs",)),
        *distribution_specs("Categorical", (t("logits"),), idx("value", (2,), 3), _DISCRETE_METHODS,
                            ("probs", "logits")),
        *distribution_specs("OneHotCategorical", (t("probs"),), t("value"), _DISCRETE_METHODS, ("probs",)),
        *distribution_specs("OneHotCategorical", (t("logits"),), t("value"), _DISCRETE_METHODS, ("probs",)),
        *distribution_specs("MultivariateNormal", (t("loc", (3,)), t("scale_tril", (3, 3))), t("value", (3,)),
                            _DIST_METHODS, ("mean", "variance")),
    ]


def conv(name: str, convert: tuple | None, noop: tuple | None,
         self_dtype=(torch.float32, torch.float32), proxy: str | None = None,
         method: str | None = None) -> Spec:
    """A conversion method (``to``, ``double``...): a converting and a no-op call.

    ``convert`` / ``noop`` are the call arguments of each form (None: not measurable
    here); ``self_dtype`` the dtype of the input for each.
    """
    method = method or name

    def call(self: Any, *a: Any) -> Any:
        return getattr(self, method)(*a)

    shown = convert if convert is not None else noop
    spec = Spec("Tensor." + name, "method", call, (t("self"), *shown), proxy=proxy)
    spec.converts = (convert, noop, self_dtype)
    if method != name:
        spec.call_text = f"self.{method}({', '.join(repr(a) for a in shown)})"
    return spec


# Elementwise unary ops: torch.X, Tensor.X, Tensor.X_ and torch.X_ when they exist.
UNARY = """abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin
acos atan sinh cosh tanh asinh atanh sigmoid relu reciprocal square sign sgn floor
ceil round trunc frac erf erfc erfinv logit digamma lgamma nan_to_num deg2rad
rad2deg sinc i0 signbit isnan isfinite isinf positive logical_not angle fix
negative absolute arcsin arccos arctan arctanh""".split()

# Elementwise binary ops; those marked with '*' accept a Python number as `other`.
BINARY = """add* sub* mul* div* pow* true_divide* floor_divide* fmod* remainder*
maximum minimum fmax fmin atan2 hypot logaddexp xlogy* copysign* eq* ne* lt* le* gt*
ge* subtract* multiply* divide* nextafter""".split()

# Dunder operators on Tensor; '*' marks a Python number accepted as `other`.
OPERATORS = """__add__* __radd__* __iadd__* __sub__* __rsub__* __isub__* __mul__*
__rmul__* __imul__* __truediv__* __rtruediv__* __itruediv__* __pow__* __rpow__*
__ipow__* __floordiv__* __mod__* __eq__* __ne__* __lt__* __le__* __gt__* __ge__*""".split()
UNARY_OPERATORS = "__neg__ __abs__ __pos__".split()

REDUCTIONS = """sum mean prod amax amin argmax argmin logsumexp std var norm all any
count_nonzero cumsum cumprod median nansum nanmean""".split()


def _unary_specs() -> list[Spec]:
    out = []
    for name in UNARY:
        if hasattr(torch, name):
            out.append(fn("torch." + name, t()))
        if hasattr(torch, name + "_"):
            out.append(fn("torch." + name + "_", t()))
        if hasattr(torch.Tensor, name):
            out.append(meth(name))
        if hasattr(torch.Tensor, name + "_"):
            out.append(meth(name + "_"))
    return out


def _binary_specs() -> list[Spec]:
    out = []
    for raw in BINARY:
        name, sc = raw.rstrip("*"), (2.0 if raw.endswith("*") else None)
        out.append(fn("torch." + name, t(), t("other", scalar=sc)))
        out.append(meth(name, t("self"), t("other", scalar=sc)))
        if hasattr(torch.Tensor, name + "_"):
            out.append(meth(name + "_", t("self"), t("other", scalar=sc)))
    for raw in OPERATORS:
        name, sc = raw.rstrip("*"), (2.0 if raw.endswith("*") else None)
        out.append(meth(name, t("self"), t("other", scalar=sc)))
    out += [meth(name) for name in UNARY_OPERATORS if hasattr(torch.Tensor, name)]
    return out


def _reduction_specs() -> list[Spec]:
    out = []
    for name in REDUCTIONS:
        dim_kw: dict = {} if name not in ("cumsum", "cumprod", "logsumexp") else {"dim": 1}
        out.append(fn("torch." + name, t(), **dim_kw))
        out.append(meth(name, **dim_kw))
    for name in ("sum", "mean", "prod", "std", "var", "norm", "median"):
        out.append(fn("torch." + name, t(), dim=1, variant="dim"))
        out.append(meth(name, dim=1, variant="dim"))
    for name in ("max", "min"):
        out.append(fn("torch." + name, t()))
        out.append(meth(name))
        out.append(fn("torch." + name, t(), 1, variant="dim"))
        out.append(meth(name, 1, variant="dim"))
        out.append(fn("torch." + name, t(), t("other"), variant="binary"))
    return out


SQ = (3, 3)
IMG = (1, 2, 5, 5)
SEQ = (1, 2, 6)
LOGITS = (4, 5)
TARGET = idx("target", (4,), 5)


SPECS: list[Spec] = [
    *_unary_specs(),
    *_binary_specs(),
    *_reduction_specs(),
    # clamp / interpolation / pointwise with several tensors
    fn("torch.clamp", t(), min=0.3, max=0.6), meth("clamp", min=0.3, max=0.6),
    meth("clamp_", min=0.3, max=0.6), fn("torch.clip", t(), 0.3, 0.6),
    meth("clip", min=0.3, max=0.6), meth("clip_", min=0.3, max=0.6),
    fn("torch.clamp_min", t(), 0.3), fn("torch.clamp_max", t(), 0.6),
    meth("clamp_min", 0.3), meth("clamp_max", 0.6),
    fn("torch.lerp", t(), t("end"), t("weight", scalar=0.5)),
    meth("lerp", t("self"), t("end"), t("weight", scalar=0.5)),
    meth("lerp_", t("self"), t("end"), t("weight", scalar=0.5)),
    fn("torch.addcmul", t(), t("tensor1"), t("tensor2")),
    meth("addcmul_", t("self"), t("tensor1"), t("tensor2")),
    fn("torch.addcdiv", t(), t("tensor1"), t("tensor2")),
    meth("addcdiv_", t("self"), t("tensor1"), t("tensor2")),
    fn("torch.where", mask("condition"), t(), t("other", scalar=0.0)),
    meth("where", mask("condition"), t("other", scalar=0.0)),
    fn("torch.softmax", t(), 1), meth("softmax", 1),
    fn("torch.log_softmax", t(), 1), meth("log_softmax", 1),
    fn("torch.dist", t(), t("other")), fn("torch.cdist", t("x1"), t("x2")),
    fn("torch.diff", t()), fn("torch.cross", t("input", (2, 3)), t("other", (2, 3)), dim=1),
    fn("torch.outer", t("input", (3,)), t("vec2", (2,))),
    fn("torch.dot", t("input", (3,)), t("tensor", (3,))),
    fn("torch.trace", t("input", SQ)), fn("torch.std_mean", t()), fn("torch.var_mean", t()),
    fn("torch.sort", t(), 1), meth("sort", 1), fn("torch.argsort", t(), 1),
    fn("torch.topk", t(), 2), meth("topk", 2), fn("torch.kthvalue", t(), 2),
    fn("torch.mode", t()), fn("torch.cummax", t(), 1), fn("torch.cummin", t(), 1),
    fn("torch.nonzero", t()), fn("torch.unique", t()), fn("torch.bincount", idx("input", (5,), 3)),
    fn("torch.allclose", t(), t("other")), fn("torch.isclose", t(), t("other")),
    fn("torch.equal", t(), t("other")),
    # matmul family
    fn("torch.matmul", t("input", (2, 3)), t("other", (3, 4))),
    meth("matmul", t("self", (2, 3)), t("other", (3, 4))),
    meth("__matmul__", t("self", (2, 3)), t("other", (3, 4))),
    meth("__rmatmul__", t("self", (3, 4)), t("other", (2, 3))),
    fn("torch.mm", t("input", (2, 3)), t("mat2", (3, 4))),
    meth("mm", t("self", (2, 3)), t("mat2", (3, 4))),
    fn("torch.bmm", t("input", (2, 2, 3)), t("mat2", (2, 3, 4))),
    meth("bmm", t("self", (2, 2, 3)), t("mat2", (2, 3, 4))),
    fn("torch.addmm", t("input", (4,)), t("mat1", (2, 3)), t("mat2", (3, 4))),
    fn("torch.addmv", t("input", (2,)), t("mat", (2, 3)), t("vec", (3,))),
    fn("torch.baddbmm", t("input", (2, 2, 4)), t("batch1", (2, 2, 3)), t("batch2", (2, 3, 4))),
    fn("torch.mv", t("input", (2, 3)), t("vec", (3,))),
    fn("torch.einsum", "ij,jk->ik", t("a", (2, 3)), t("b", (3, 4))),
    fn("torch.tensordot", t("a", (2, 3)), t("b", (3, 4)), dims=1),
    fn("torch.kron", t("input", (2, 2)), t("other", (2, 2))),
    fn("torch.linalg.norm", t()), fn("torch.linalg.vector_norm", t()),
    fn("torch.linalg.matrix_norm", t("A", SQ)), fn("torch.linalg.inv", t("A", SQ)),
    fn("torch.linalg.det", t("A", SQ)), fn("torch.linalg.solve", t("A", SQ), t("B", (3, 2))),
    fn("torch.linalg.svd", t("A", SQ)), fn("torch.linalg.qr", t("A", SQ)),
    fn("torch.linalg.eigh", t("A", SQ)), fn("torch.linalg.pinv", t("A", SQ)),
    fn("torch.fft.fft", t()), fn("torch.fft.rfft", t()),
    # shape ops and views
    meth("view", 3, 2), meth("view_as", t("other", (3, 2))), fn("torch.reshape", t(), (3, 2)),
    meth("reshape", 3, 2), meth("reshape_as", t("other", (3, 2))),
    fn("torch.transpose", t(), 0, 1), meth("transpose", 0, 1), meth("transpose_", 0, 1),
    fn("torch.t", t()), meth("t"), meth("t_"), fn("torch.permute", t(), (1, 0)),
    meth("permute", 1, 0), fn("torch.unsqueeze", t(), 0), meth("unsqueeze", 0),
    meth("unsqueeze_", 0), fn("torch.squeeze", t("input", (1, 3))), meth("squeeze", 0),
    meth("squeeze_", 0), meth("expand", 4, 2, 3), meth("expand_as", t("other", (4, 2, 3))),
    fn("torch.broadcast_to", t(), (4, 2, 3)), fn("torch.narrow", t(), 1, 0, 2),
    meth("narrow", 1, 0, 2), fn("torch.select", t(), 0, 1), meth("select", 0, 1),
    fn("torch.flatten", t("input", (2, 3, 2))), meth("flatten"),
    fn("torch.unflatten", t(), 1, (3, 1)), meth("unflatten", 1, (3, 1)),
    fn("torch.movedim", t(), 0, 1), fn("torch.diagonal", t("input", SQ)),
    meth("diagonal"), fn("torch.as_strided", t(), (2, 2), (3, 1)),
    meth("unfold", 1, 2, 1), fn("torch.chunk", t(), 2, 1), meth("chunk", 2, 1),
    fn("torch.split", t(), 1, 1), meth("split", 1, 1), fn("torch.unbind", t()), meth("unbind"),
    fn("torch.tensor_split", t(), 2, 1), meth("tensor_split", 2, 1),
    meth("contiguous"), fn("torch.clone", t()), meth("clone"),
    meth("detach"), meth("detach_"), fn("torch.detach", t()), prop("T"), prop("mT"), prop("data"),
    meth("repeat", 2, 1), fn("torch.tile", t(), (2, 1)), fn("torch.flip", t(), (0,)),
    meth("flip", 0), fn("torch.roll", t(), 1, 1), fn("torch.rot90", t()),
    fn("torch.repeat_interleave", t(), 2), fn("torch.diag", t("input", (3,))),
    fn("torch.diag_embed", t()), fn("torch.tril", t("input", SQ)), fn("torch.triu", t("input", SQ)),
    meth("tril_"), meth("triu_"), fn("torch.atleast_2d", t("input", (3,))),
    fn("torch.cat", [t("t0"), t("t1")]), fn("torch.cat", [t("t0"), t("t1")], 1, variant="dim"),
    fn("torch.concat", [t("t0"), t("t1")]), fn("torch.stack", [t("t0"), t("t1")]),
    fn("torch.hstack", [t("t0"), t("t1")]), fn("torch.vstack", [t("t0"), t("t1")]),
    # indexing
    meth("__getitem__", 0), meth("__getitem__", idx("index", (2,), 2), variant="advanced"),
    meth("__getitem__", mask("mask", S), variant="mask"),
    meth("__getitem__", (slice(None), slice(0, 2)), variant="slice"),
    meth("__setitem__", 0, t("value", (3,), scalar=0.0)),
    meth("__setitem__", mask("mask", S), t("value", (), scalar=0.0), variant="mask"),
    fn("torch.gather", t(), 1, idx("index", (2, 2), 3)),
    meth("gather", 1, idx("index", (2, 2), 3)),
    fn("torch.take_along_dim", t(), idx("indices", (2, 2), 3), 1),
    fn("torch.scatter", t(), 1, idx("index", (2, 2), 3), t("src", (2, 2))),
    meth("scatter_", 1, idx("index", (2, 2), 3), t("src", (2, 2))),
    fn("torch.scatter_add", t(), 1, idx("index", (2, 2), 3), t("src", (2, 2))),
    meth("scatter_add_", 1, idx("index", (2, 2), 3), t("src", (2, 2))),
    fn("torch.index_select", t(), 0, idx("index", (2,), 2)),
    meth("index_select", 0, idx("index", (2,), 2)),
    fn("torch.index_add", t(), 0, idx("index", (2,), 2), t("source", S)),
    meth("index_add_", 0, idx("index", (2,), 2), t("source", S)),
    meth("index_copy_", 0, idx("index", (2,), 2), t("source", S)),
    meth("index_fill_", 0, idx("index", (1,), 2), 0.0),
    meth("index_put_", (idx("indices", (2,), 2),), t("values", (2, 3))),
    fn("torch.masked_fill", t(), mask(), 0.0), meth("masked_fill", mask(), 0.0),
    meth("masked_fill_", mask(), 0.0), fn("torch.masked_select", t(), mask()),
    meth("masked_scatter_", mask(), t("source", S)), fn("torch.take", t(), idx("index", (2,), 6)),
    # in-place fills and random fills
    meth("zero_"), meth("fill_", 1.0), meth("copy_", t("src")), meth("normal_"),
    meth("uniform_"), meth("bernoulli_", 0.5), meth("exponential_"), meth("requires_grad_"),
    meth("fill_diagonal_", t("self", SQ), 0.0), meth("add", t("other", scalar=2.0), alpha=2, variant="alpha"),
    meth("item", t("self", ())), meth("tolist"), meth("size"), meth("dim"), meth("numel"),
    meth("__float__", t("self", ())), meth("__int__", t("self", ())), meth("__bool__", t("self", ())),
    meth("__len__"), meth("sum_to_size", 1, 3), fn("torch.meshgrid", t("x", (2,)), t("y", (3,)), indexing="ij"),
    fn("torch.block_diag", t("a", (2, 2)), t("b", (1, 1))), fn("torch.cartesian_prod", t("a", (2,)), t("b", (2,))),
    fn("torch.logical_and", t(), t("other")), fn("torch.heaviside", t(), t("values")),
    fn("torch.trapezoid", t()), fn("torch.cumulative_trapezoid", t()), fn("torch.vander", t("x", (3,))),
    fn("torch.bernoulli", t()),
    fn("torch.multinomial", t("input", (4,)), 2), fn("torch.dropout", t(), 0.5, True),
    # conversions
    conv("to", (torch.float64,), (torch.float32,)),
    conv("double", (), (), (torch.float32, torch.float64)),
    conv("float", (), (), (torch.float64, torch.float32)),
    conv("half", (), (), (torch.float32, torch.float16)),
    conv("type", (torch.float64,), (torch.float32,)),
    conv("cpu", None, (), proxy="no device but CPU here: converting case not measured"),
    conv("cuda", ("meta",), None, proxy="Tensor.to(device) to the meta device stands for cuda",
         method="to"),
    # activations and functional
    fn("torch.relu_", t()), fn("torch.sigmoid_", t()), fn("torch.tanh_", t()),
    *[func(n, t()) for n in """relu relu6 elu selu celu leaky_relu gelu silu mish softplus
      softsign hardtanh hardswish hardsigmoid logsigmoid tanhshrink softshrink hardshrink
      sigmoid tanh rrelu dropout normalize""".split()],
    func("alpha_dropout", t(), training=True), func("feature_alpha_dropout", t("input", (2, 3, 4)), training=True),
    func("threshold", t(), 0.5, 0.0), func("glu", t("input", (2, 4))),
    func("prelu", t(), t("weight", (1,))), func("softmax", t(), 1), func("log_softmax", t(), 1),
    func("softmin", t(), 1), func("gumbel_softmax", t()),
    func("dropout1d", t("input", (2, 3, 4))), func("dropout2d", t("input", IMG)),
    func("dropout3d", t("input", (1, 2, 2, 3, 3))),
    func("linear", t("input", (2, 3)), t("weight", (4, 3)), t("bias", (4,))),
    func("bilinear", t("input1", (2, 3)), t("input2", (2, 2)), t("weight", (4, 3, 2)), t("bias", (4,))),
    func("conv1d", t("input", SEQ), t("weight", (3, 2, 3)), t("bias", (3,))),
    func("conv2d", t("input", IMG), t("weight", (3, 2, 3, 3)), t("bias", (3,))),
    func("conv_transpose1d", t("input", SEQ), t("weight", (2, 3, 3)), t("bias", (3,))),
    func("conv_transpose2d", t("input", IMG), t("weight", (2, 3, 3, 3)), t("bias", (3,))),
    func("max_pool1d", t("input", SEQ), 2), func("max_pool2d", t("input", IMG), 2),
    func("avg_pool1d", t("input", SEQ), 2), func("avg_pool2d", t("input", IMG), 2),
    func("adaptive_avg_pool1d", t("input", SEQ), 2), func("adaptive_avg_pool2d", t("input", IMG), 2),
    func("adaptive_max_pool1d", t("input", SEQ), 2), func("adaptive_max_pool2d", t("input", IMG), 2),
    func("embedding", idx("input", (2, 3), 5), t("weight", (5, 4))),
    func("one_hot", idx("tensor", (3,), 4)), func("pad", t(), (1, 1)),
    func("interpolate", t("input", SEQ), scale_factor=2.0),
    func("pixel_shuffle", t("input", (1, 4, 2, 2)), 2), func("unfold", t("input", IMG), 2),
    func("layer_norm", t(), (3,), t("weight", (3,)), t("bias", (3,))),
    func("rms_norm", t(), (3,), t("weight", (3,))),
    func("batch_norm", t("input", (4, 3)), None, None, t("weight", (3,)), t("bias", (3,)), training=True),
    func("group_norm", t("input", (2, 4, 3)), 2, t("weight", (4,)), t("bias", (4,))),
    func("instance_norm", t("input", (2, 3, 4))),
    func("scaled_dot_product_attention", t("query", (1, 3, 4)), t("key", (1, 3, 4)), t("value", (1, 3, 4))),
    func("conv3d", t("input", (1, 2, 3, 3, 3)), t("weight", (3, 2, 2, 2, 2)), t("bias", (3,))),
    func("local_response_norm", t("input", (1, 3, 2, 2)), 2),
    func("grid_sample", t("input", (1, 1, 3, 3)), t("grid", (1, 2, 2, 2)), align_corners=False),
    func("affine_grid", t("theta", (1, 2, 3)), (1, 1, 2, 2), align_corners=False),
    func("embedding_bag", idx("input", (2, 3), 5), t("weight", (5, 4))),
    func("multi_head_attention_forward", t("query", (3, 1, 4)), t("key", (3, 1, 4)),
         t("value", (3, 1, 4)), 4, 2, t("in_proj_weight", (12, 4)), t("in_proj_bias", (12,)),
         None, None, False, 0.0, t("out_proj_weight", (4, 4)), t("out_proj_bias", (4,))),
    func("cosine_similarity", t("x1"), t("x2")), func("pairwise_distance", t("x1"), t("x2")),
    # losses
    func("mse_loss", t(), t("target")), func("l1_loss", t(), t("target")),
    func("smooth_l1_loss", t(), t("target")), func("huber_loss", t(), t("target")),
    func("cross_entropy", t("input", LOGITS), TARGET),
    func("cross_entropy", t("input", LOGITS), t("target", LOGITS), variant="probabilities"),
    func("nll_loss", t("input", LOGITS), TARGET),
    func("binary_cross_entropy", t(), t("target")),
    func("binary_cross_entropy_with_logits", t(), t("target")),
    func("kl_div", t(), t("target"), reduction="batchmean"),
    func("soft_margin_loss", t(), t("target")), func("poisson_nll_loss", t(), t("target")),
    func("gaussian_nll_loss", t(), t("target"), t("var")),
    func("margin_ranking_loss", t("input1", (3,)), t("input2", (3,)), t("target", (3,))),
    func("hinge_embedding_loss", t(), t("target")),
    func("cosine_embedding_loss", t("input1"), t("input2"), t("target", (2,))),
    func("triplet_margin_loss", t("anchor"), t("positive"), t("negative")),
    func("multilabel_soft_margin_loss", t(), t("target")),
    # modules
    mod("Linear", (3, 4), t("input", (2, 3))), mod("Bilinear", (3, 2, 4), t("input1", (2, 3)), t("input2", (2, 2))),
    mod("Conv1d", (2, 3, 3), t("input", SEQ)), mod("Conv2d", (2, 3, 3), t("input", IMG)),
    mod("ConvTranspose1d", (2, 3, 3), t("input", SEQ)), mod("ConvTranspose2d", (2, 3, 3), t("input", IMG)),
    mod("BatchNorm1d", (3,), t("input", (4, 3))), mod("BatchNorm2d", (2,), t("input", (2, 2, 3, 3))),
    mod("LayerNorm", (3,), t()), mod("GroupNorm", (2, 4), t("input", (2, 4, 3))),
    mod("InstanceNorm1d", (3,), t("input", (2, 3, 4))), mod("RMSNorm", (3,), t()),
    mod("Embedding", (5, 4), idx("input", (2, 3), 5)),
    mod("EmbeddingBag", (5, 4), idx("input", (2, 3), 5)),
    mod("LSTM", (3, 4), t("input", (2, 1, 3)), In("h0", (1, 1, 4), nested=2), t("c0", (1, 1, 4))),
    mod("GRU", (3, 4), t("input", (2, 1, 3)), t("hx", (1, 1, 4))),
    mod("RNN", (3, 4), t("input", (2, 1, 3)), t("hx", (1, 1, 4))),
    mod("LSTM", (3, 4), t("input", (2, 1, 3)), variant="no_state"),
    mod("LSTMCell", (3, 4), t("input", (2, 3)), In("h", (2, 4), nested=2), t("c", (2, 4))),
    mod("GRUCell", (3, 4), t("input", (2, 3)), t("hx", (2, 4))),
    mod("RNNCell", (3, 4), t("input", (2, 3)), t("hx", (2, 4))),
    mod("MultiheadAttention", (4, 2), t("query", (3, 1, 4)), t("key", (3, 1, 4)), t("value", (3, 1, 4))),
    mod("TransformerEncoderLayer", (4, 2, 8), t("src", (3, 1, 4))),
    *[mod(n, (), t()) for n in """ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Softplus
      Softsign Hardtanh Hardswish Hardsigmoid Sigmoid Tanh LogSigmoid Tanhshrink Softshrink
      Hardshrink RReLU PReLU Dropout AlphaDropout Identity Flatten""".split()],
    mod("Softmax", (1,), t()), mod("LogSoftmax", (1,), t()), mod("Softmin", (1,), t()),
    mod("GLU", (), t("input", (2, 4))), mod("Threshold", (0.5, 0.0), t()),
    mod("Dropout1d", (), t("input", (2, 3, 4))), mod("Dropout2d", (), t("input", IMG)),
    mod("MaxPool1d", (2,), t("input", SEQ)), mod("MaxPool2d", (2,), t("input", IMG)),
    mod("AvgPool1d", (2,), t("input", SEQ)), mod("AvgPool2d", (2,), t("input", IMG)),
    mod("AdaptiveAvgPool1d", (2,), t("input", SEQ)), mod("AdaptiveAvgPool2d", (2,), t("input", IMG)),
    mod("Upsample", (), t("input", SEQ), ctor_kwargs={"scale_factor": 2.0}),
    mod("MSELoss", (), t(), t("target")), mod("L1Loss", (), t(), t("target")),
    mod("SmoothL1Loss", (), t(), t("target")), mod("HuberLoss", (), t(), t("target")),
    mod("CrossEntropyLoss", (), t("input", LOGITS), TARGET), mod("NLLLoss", (), t("input", LOGITS), TARGET),
    mod("BCELoss", (), t(), t("target")), mod("BCEWithLogitsLoss", (), t(), t("target")),
    mod("KLDivLoss", (), t(), t("target"), ctor_kwargs={"reduction": "batchmean"}),
    mod("Conv3d", (2, 3, 2), t("input", (1, 2, 3, 3, 3))), mod("InstanceNorm2d", (2,), t("input", (1, 2, 3, 3))),
    mod("LocalResponseNorm", (2,), t("input", (1, 3, 2, 2))), mod("AdaptiveMaxPool2d", (2,), t("input", IMG)),
    mod("CosineSimilarity", (), t("x1"), t("x2")), mod("PairwiseDistance", (), t("x1"), t("x2")),
    mod("PixelShuffle", (2,), t("input", (1, 4, 2, 2))), mod("ZeroPad2d", (1,), t("input", IMG)),
    mod("Unflatten", (1, (3, 1)), t()), mod("Softmax2d", (), t("input", IMG)),
    mod("TransformerDecoderLayer", (4, 2, 8), t("tgt", (3, 1, 4)), t("memory", (2, 1, 4))),
    mod("CosineEmbeddingLoss", (), t("input1"), t("input2"), t("target", (2,))),
    mod("MarginRankingLoss", (), t("input1", (3,)), t("input2", (3,)), t("target", (3,))),
    mod("TripletMarginLoss", (), t("anchor"), t("positive"), t("negative")),
    mod("GaussianNLLLoss", (), t(), t("target"), t("var")), mod("PoissonNLLLoss", (), t(), t("target")),
    mod_eval("BatchNorm1d", (3,), t("input", (4, 3))), mod_eval("BatchNorm2d", (2,), t("input", (2, 2, 3, 3))),
    mod_eval("Dropout", (), t()), mod_eval("MultiheadAttention", (4, 2), t("query", (3, 1, 4)),
                                            t("key", (3, 1, 4)), t("value", (3, 1, 4))),
    mod_eval("LSTM", (3, 4), t("input", (2, 1, 3)), In("h0", (1, 1, 4), nested=2), t("c0", (1, 1, 4))),
    # factories
    meth("new_zeros", (2, 3)), meth("new_ones", (2, 3)), meth("new_empty", (2, 3)),
    meth("new_full", (2, 3), 1.0), meth("new_tensor", [1.0, 2.0]),
    factory("randn", 2, 3), factory("rand", 2, 3), factory("zeros", 2, 3), factory("ones", 2, 3),
    factory("empty", 2, 3), factory("full", (2, 3), 1.0), factory("tensor", [1.0, 2.0]),
    factory("as_tensor", [1.0, 2.0], grad=False), factory("arange", 0.0, 3.0),
    factory("linspace", 0.0, 1.0, 5), factory("logspace", 0.0, 1.0, 5), factory("eye", 3),
    factory("randint", 0, 5, (2, 3), grad=False), factory("randperm", 5, grad=False),
    factory("empty_like", t()), factory("zeros_like", t()), factory("ones_like", t()),
    factory("rand_like", t()), factory("randn_like", t()), factory("full_like", t(), 1.0),
    factory("randint_like", t(), 5, grad=False), factory("normal", 0.0, 1.0, (2, 3)),
    # torch.distributions: constructor and method measured together (see distribution_specs)
    *_distribution_specs(),
]


# --------------------------------------------------------------------------- #
# Running one case
# --------------------------------------------------------------------------- #


def _storage(x: torch.Tensor) -> int:
    try:
        return x.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - sparse, meta, ... never match anything
        return 0


def _flatten(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in _flatten(o)]
    return []


def _make_input(spec: In, char: str) -> Any:
    if char == "s":
        return spec.scalar
    if spec.dtype == "long":
        return torch.randint(0, spec.high, spec.shape)
    if spec.dtype == "bool":
        return torch.rand(spec.shape) > 0.5
    leaf = torch.rand(spec.shape) * 0.6 + 0.2  # in (0.2, 0.8): valid for log, acos, BCE...
    if char == "1":
        # A non-leaf, so in-place ops on it are legal; its own node stops the walk.
        return leaf.requires_grad_().clone()
    return leaf


def _substitute(template: Any, values: dict[int, Any]) -> Any:
    if isinstance(template, In):
        return values[id(template)]
    if isinstance(template, list):
        return [_substitute(v, values) for v in template]
    if isinstance(template, tuple):
        return tuple(_substitute(v, values) for v in template)
    return template


def _flat_ins(args: tuple, kwargs: dict) -> list[In]:
    found: list[In] = []

    def visit(v: Any) -> None:
        if isinstance(v, In):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    for a in args:
        visit(a)
    for _, v in sorted(kwargs.items()):
        visit(v)
    return found


def _saved_values(node: Any) -> tuple[list[torch.Tensor], bool]:
    """Every tensor a graph node keeps for backward (``_saved_*`` and ``saved_tensors``).

    The flag says whether one of them could not be read: torch itself already
    modified it in place (``torch.vander`` in 2.13), so backward will raise.
    """
    found: list[torch.Tensor] = []
    broken = False
    names = [a for a in dir(node) if a.startswith("_saved_")]
    if hasattr(node, "saved_tensors") and not names:
        names = ["saved_tensors"]
    for name in names:
        try:
            value = getattr(node, name)
        except RuntimeError as exc:
            broken |= "modified by an inplace operation" in str(exc)
            continue
        except Exception:  # noqa: BLE001 - a saved slot torch cannot hand out is not a saved tensor
            continue
        found.extend(_flatten(value))
    return found, broken


@dataclass
class Run:
    pattern: str
    outputs: list
    result_obj: Any
    inputs: list
    case: dict


def _build_call(spec: Spec, pattern: str, inplace_kw: str | None = None,
                module_inplace: bool = False):
    ins = _flat_ins(spec.args, spec.kwargs)
    values: dict[int, Any] = {}
    torch.manual_seed(0)
    for p, char in zip(ins, pattern):
        values[id(p)] = _make_input(p, char)
    args = _substitute(spec.args, values)
    kwargs = {k: _substitute(v, values) for k, v in spec.kwargs.items()}
    if inplace_kw:
        kwargs[inplace_kw] = True
    module = None
    if spec.kind == "module":
        ckw = dict(spec.ctor_kwargs)
        if module_inplace:
            ckw["inplace"] = True
        module = spec.module_cls(*spec.ctor, **ckw)
        if spec.eval_mode:
            module.eval()
        args = _nest(spec, ins, args)
        call = module
    else:
        call = spec.call
    return ins, [values[id(p)] for p in ins], call, args, kwargs, module


def _nest(spec: Spec, ins: list[In], args: tuple) -> tuple:
    """Modules: pack inputs marked ``nested=k`` with the next k-1 into a tuple (LSTM hx)."""
    out: list = []
    i = 0
    while i < len(args):
        a, tmpl = args[i], spec.args[i]
        if isinstance(tmpl, In) and tmpl.nested:
            out.append(tuple(args[i:i + tmpl.nested]))
            i += tmpl.nested
        else:
            out.append(a)
            i += 1
    return tuple(out)


def run_case(spec: Spec, pattern: str, inplace_kw: str | None = None,
             module_inplace: bool = False) -> Run | None:
    """Run ``spec`` with one requires-grad pattern and classify what its graph saves."""
    _ins, vals, call, args, kwargs, module = _build_call(spec, pattern, inplace_kw, module_inplace)
    tensors_in = [v if isinstance(v, torch.Tensor) else None for v in vals]
    before_versions = [v._version if v is not None else None for v in tensors_in]
    stop = {id(v.grad_fn) for v in tensors_in if v is not None and v.grad_fn is not None}
    keep_alive = [v.grad_fn for v in tensors_in if v is not None]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(*args, **kwargs)
    except Exception:  # noqa: BLE001 - an op torch rejects for this pattern saves nothing
        return None
    outputs = _flatten(result)
    first = tensors_in[0] if tensors_in else None
    inplace = first is not None and first._version != before_versions[0]
    roots = [o.grad_fn for o in outputs if o.grad_fn is not None]
    roots += [v.grad_fn for v, b in zip(tensors_in, before_versions)
              if v is not None and v._version != b and v.grad_fn is not None]

    in_storage = [_storage(v) if v is not None else 0 for v in tensors_in]
    out_storage = [_storage(o) for o in outputs]
    params = list(module.parameters()) if module is not None else []
    buffers = list(module.buffers()) if module is not None else []
    param_storage = {_storage(p) for p in params}
    buffer_storage = {_storage(b) for b in buffers}

    # (saved tensor, what it belongs to, the tensor whose version it must follow)
    hits: list[tuple[torch.Tensor, tuple, torch.Tensor]] = []
    internal = 0
    broken = False
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        tensors, node_broken = _saved_values(node)
        broken |= node_broken
        for tensor in tensors:
            ptr = _storage(tensor)
            if ptr == 0:
                internal += 1
            elif inplace and ptr == in_storage[0]:
                hits.append((tensor, ("result", 0), first))
            elif ptr in in_storage:
                hits += [(tensor, ("input", i), tensors_in[i])
                         for i, s in enumerate(in_storage) if s == ptr]
            elif ptr in out_storage:
                hits += [(tensor, ("result", k), outputs[k])
                         for k, s in enumerate(out_storage) if s == ptr]
            elif ptr in param_storage:
                hits += [(tensor, ("params", 0), p) for p in params if _storage(p) == ptr]
            elif ptr in buffer_storage:
                hits += [(tensor, ("buffers", 0), b) for b in buffers if _storage(b) == ptr]
            else:
                internal += 1
        todo.extend(f for f, _ in node.next_functions)
    del keep_alive

    # Same memory is not enough: backward only notices an in-place change when the
    # saved tensor shares the version counter (``torch.kron`` saves ``_unsafe_view``s
    # of its inputs, which do not).  Bump the owner's version and see if it shows.
    checked: set[tuple] = set()
    unchecked: set[tuple] = set()
    for tensor, owner, source in hits:
        before = tensor._version
        increment_version(source)
        (checked if tensor._version != before else unchecked).add(owner)
    unchecked -= checked

    def indices(group: set[tuple], kind: str) -> list[int]:
        return sorted({i for k, i in group if k == kind})

    saved_outputs = indices(checked, "result")
    saved_result = bool(saved_outputs)
    case: dict[str, Any] = {
        "saved": indices(checked, "input"),
        "result": saved_result,
        # In-place ops (``x[i] = v`` returns None) make the mutated input the result.
        "requires_grad": any(o.requires_grad for o in outputs)
        or (inplace and first.requires_grad),
    }
    if internal:
        case["internal"] = internal
    if broken:
        case["backward_fails"] = True  # torch's own graph is already invalid (a torch bug)
    if len(outputs) > 1 and saved_outputs:
        case["saved_outputs"] = saved_outputs
    if module is not None:
        case["params"] = bool(indices(checked, "params"))
        case["buffers"] = bool(indices(checked, "buffers"))
    # Kept alive but not version-checked: in-place changes give silently wrong gradients.
    if indices(unchecked, "input"):
        case["saved_unchecked"] = indices(unchecked, "input")
    for kind in ("result", "params", "buffers"):
        if indices(unchecked, kind):
            case[kind + "_unchecked"] = True
    # A view shares the first input's storage without being that very tensor
    # (``identity`` covers ``x.contiguous()`` / ``x.float()`` returning ``x``).
    case["_view"] = (first is not None and bool(outputs) and not inplace and in_storage[0] != 0
                     and outputs[0] is not first
                     and all(_storage(o) == in_storage[0] for o in outputs))
    case["_inplace"] = inplace
    case["_identity"] = bool(outputs) and first is not None and outputs[0] is first and not inplace
    return Run(pattern, outputs, result, vals, case)


def _patterns(ins: list[In]) -> list[str]:
    pats = ["".join(p) for p in itertools.product(*(i.chars() for i in ins))]
    return [p for p in pats if not p or set(p) != {"s"}]


def _shares_version(spec: Spec) -> bool | None:
    """For views: does an in-place change of the input bump the result's version?"""
    pattern = "".join("0" for _ in _flat_ins(spec.args, spec.kwargs))
    _ins, vals, call, args, kwargs, _ = _build_call(spec, pattern)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _flatten(call(*args, **kwargs))
        if not out:
            return None
        before = out[0]._version
        increment_version(vals[0])
        return out[0]._version != before
    except Exception:  # noqa: BLE001 - a view torch cannot change in place shares nothing
        return None


def _describe_call(spec: Spec) -> str:
    if spec.call_text:
        return spec.call_text
    def show(v: Any) -> str:
        if isinstance(v, In):
            return v.name
        if isinstance(v, list):
            return "[" + ", ".join(show(x) for x in v) + "]"
        if isinstance(v, tuple):
            return "(" + ", ".join(show(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if isinstance(v, slice):
            parts = ["" if x is None else repr(x) for x in (v.start, v.stop)]
            return ":".join(parts)
        if isinstance(v, torch.dtype):
            return str(v)
        return repr(v)

    parts = [show(a) for a in spec.args]
    parts += [f"{k}={show(v)}" for k, v in sorted(spec.kwargs.items())]
    if spec.kind in ("method", "property"):
        name = spec.key.split(".", 1)[1]
        rest = ", ".join(parts[1:])
        return f"{parts[0]}.{name}" if spec.kind == "property" else f"{parts[0]}.{name}({rest})"
    if spec.kind == "module":
        ctor = [repr(a) for a in spec.ctor] + [f"{k}={v!r}" for k, v in sorted(spec.ctor_kwargs.items())]
        mode = ".eval()" if spec.eval_mode else ""
        return f"{spec.key}({', '.join(ctor)}){mode}({', '.join(parts)})"
    return f"{spec.key}({', '.join(parts)})"


def _cases(spec: Spec, **mode: Any) -> tuple[dict, dict]:
    cases: dict[str, dict] = {}
    flags = {"inplace": False, "identity": False, "view": False}
    for pattern in _patterns(_flat_ins(spec.args, spec.kwargs)):
        run = run_case(spec, pattern, **mode)
        if run is None:
            continue
        flags["inplace"] |= run.case.pop("_inplace")
        flags["identity"] |= run.case.pop("_identity")
        flags["view"] |= run.case.pop("_view")
        flags.setdefault("outputs", len(run.outputs))
        flags.setdefault("returns_tensor", isinstance(run.result_obj, torch.Tensor)
                         or bool(run.outputs) or run.result_obj is None)
        cases[pattern] = run.case
    return cases, flags


def _inplace_param(spec: Spec) -> tuple[str, int] | None:
    target = spec.module_cls.__init__ if spec.kind == "module" else spec.call
    if spec.kind not in ("module", "functional"):
        return None
    try:
        params = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return None
    if "inplace" not in params:
        return None
    if spec.kind == "module":
        params = params[1:]  # drop self
    return "inplace", params.index("inplace")


def _returns_tensor_list(key: str) -> bool:
    """Whether the ATen op behind ``key`` returns ``Tensor[]`` (``chunk``, ``split``, ``unbind``):
    as many tensors as the arguments and shapes make, unlike a fixed tuple (``std_mean``'s two).
    Read from torch's own schema: the sample call's count says nothing about other calls."""
    name = key.rsplit(".", 1)[-1]
    if key.startswith("torch.linalg."):
        name = f"linalg_{name}"
    schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    return any(len(s.returns) == 1 and str(s.returns[0].type) == "List[Tensor]" for s in schemas)


def build_entry(spec: Spec) -> dict | None:
    ins = _flat_ins(spec.args, spec.kwargs)
    if spec.kind == "factory":
        return _factory_entry(spec, ins)
    cases, flags = _cases(spec)
    if not cases:
        return None
    entry: dict[str, Any] = {
        "kind": spec.kind,
        "inputs": [i.name for i in ins],
        "call": _describe_call(spec),
        "cases": cases,
        # Modules own parameters that require grad, so every case counts for them.
        "differentiable": any(c["requires_grad"] for p, c in cases.items()
                              if "1" in p or spec.kind == "module"),
        "inplace": flags["inplace"],
        "view": flags["view"],
    }
    nondiff = [n for n, i in enumerate(ins) if i.dtype != "float"]
    if nondiff:
        entry["nondiff_inputs"] = nondiff
    if flags["identity"]:
        entry["identity"] = True
    if flags.get("outputs", 1) > 1:
        entry["outputs"] = flags["outputs"]
        if spec.kind in ("function", "method") and _returns_tensor_list(spec.key):
            entry["sequence"] = True
    if not flags.get("returns_tensor", True):
        entry["returns_tensor"] = False
    if entry["view"]:
        entry["shares_version"] = _shares_version(spec)
    if spec.proxy:
        entry["proxy"] = spec.proxy
    if spec.parameters:
        entry["parameters"] = list(spec.parameters)
    if spec.converts:
        entry["converts"] = _converts(spec)
    ip = _inplace_param(spec)
    if ip:
        if spec.kind == "module":
            icases, iflags = _cases(spec, module_inplace=True)
        else:
            icases, iflags = _cases(spec, inplace_kw=ip[0])
        if iflags["inplace"]:  # verified: the keyword really mutates the input
            if spec.kind == "module":
                entry["inplace_arg"] = {"keyword": ip[0], "position": ip[1]}
            else:
                entry["inplace_kwarg"] = ip[0]
            entry["inplace_cases"] = icases
    return entry


def _converts(spec: Spec) -> dict:
    """A conversion is a new non-leaf only when it really converts; else the input itself."""
    convert, noop, (dtype_convert, dtype_noop) = spec.converts
    report: dict[str, Any] = {}
    for label, args, dtype in (("converting", convert, dtype_convert), ("noop", noop, dtype_noop)):
        if args is None:
            continue
        leaf = (torch.rand(S) + 0.2).to(dtype).requires_grad_()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = spec.call(leaf, *args)
        except Exception:  # noqa: BLE001 - a conversion torch rejects has nothing to report
            continue
        report[label] = {"returns_input": out is leaf, "leaf": out.is_leaf,
                         "requires_grad": out.requires_grad}
    return report


def _factory_entry(spec: Spec, ins: list[In]) -> dict | None:
    """Factories: what the result is without the keyword, and whether the keyword works."""
    cases: dict[str, dict] = {}
    for pattern in _patterns(ins) or [""]:
        run = run_case(spec, pattern)
        if run is None or not run.outputs:
            continue
        case = {k: v for k, v in run.case.items() if not k.startswith("_")}
        case["leaf"] = run.outputs[0].is_leaf
        cases[pattern] = case
    if not cases:
        return None
    ok = False
    if spec.ctor_kwargs.get("grad"):
        try:
            _, _, call, args, kwargs, _ = _build_call(spec, "0" * len(ins))
            out = call(*args, requires_grad=True, **kwargs)
            ok = out.requires_grad and out.is_leaf
        except Exception:  # noqa: BLE001 - a factory that rejects requires_grad=True makes no leaf
            ok = False
    return {
        "kind": "factory",
        "inputs": [i.name for i in ins],
        "call": _describe_call(spec),
        "cases": cases,
        "differentiable": any(c["requires_grad"] for p, c in cases.items() if "1" in p),
        "view": False,
        "inplace": False,
        "requires_grad_kwarg": ok,
    }


# --------------------------------------------------------------------------- #
# Table
# --------------------------------------------------------------------------- #


def generate() -> dict:
    """Run every spec and return the table (a plain, JSON-ready dict)."""
    torch.set_num_threads(1)
    ops: dict[str, dict] = {}
    variants: list[tuple[Spec, dict]] = []
    skipped: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for spec in SPECS:
            entry = build_entry(spec)
            if entry is None:
                skipped.append(spec.key + (f"[{spec.variant}]" if spec.variant else ""))
                continue
            if spec.variant:
                variants.append((spec, entry))
            elif spec.key not in ops:
                ops[spec.key] = entry
    for spec, entry in variants:
        base = ops.get(spec.key)
        if base is None:
            continue
        base.setdefault("variants", {})[spec.variant] = entry
    if skipped:  # specs torch rejected in every case: a spec bug, or an op that changed
        print("no case ran for: " + ", ".join(skipped), file=sys.stderr)
    return {"torch_version": torch.__version__, "generator": GENERATOR, "ops": ops}


def render(table: dict) -> str:
    return json.dumps(table, sort_keys=True, indent=1) + "\n"


def stale_message(fresh: str, path: Path) -> str | None:
    """None when ``path`` holds exactly ``fresh``; otherwise what to tell the developer."""
    shipped = path.read_text(encoding="utf-8") if path.exists() else ""
    if shipped == fresh:
        return None
    old, new = json.loads(shipped or "{}").get("ops", {}), json.loads(fresh)["ops"]
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    shown = ", ".join(changed[:8]) + (" ..." if len(changed) > 8 else "")
    return (f"{path} is stale for torch {torch.__version__} ({len(changed)} entries differ: "
            f"{shown}); run `python {GENERATOR}` and commit the result.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="regenerate in memory; exit 1 if the shipped table differs")
    parser.add_argument("--output", type=Path, default=TABLE_PATH)
    ns = parser.parse_args(argv)
    text = render(generate())
    if ns.check:
        problem = stale_message(text, ns.output)
        if problem:
            print(problem, file=sys.stderr)
            return 1
        print(f"{ns.output} is up to date ({len(json.loads(text)['ops'])} ops).")
        return 0
    ns.output.parent.mkdir(parents=True, exist_ok=True)
    ns.output.write_text(text, encoding="utf-8")
    print(f"wrote {ns.output} ({len(json.loads(text)['ops'])} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
