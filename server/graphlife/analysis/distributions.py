"""``torch.distributions``: what a distribution holds and which of its results carry a graph.

Why: policy-gradient, VAE and actor-critic code build their losses from
distributions: ``Categorical(logits=policy(obs))``, ``Normal(mu, sigma)``. Torch
keeps the parameter tensors in the distribution, so ``log_prob``, ``entropy``,
``rsample``, ``cdf``, the ``mean``/``stddev`` properties and
``kl_divergence(p, q)`` are differentiable functions of them: their results have
a graph when a parameter requires grad. ``sample()`` always runs under
``torch.no_grad()`` (also for reparameterizable distributions): a sample never
has a graph, and a loss made only from samples cannot be backpropagated (use
``rsample()``).

The calls themselves are made in :mod:`graphlife.analysis.torch_api` (they are ops on
the parameters); this module says what a distribution is and holds.

What a method keeps for backward is measured from torch like every other op
(``tools/gen_saved_tensors.py``, keys ``Distribution.<Class>(<params>).<method>``):
``Normal(mu, sigma).log_prob(a)`` saves ``sigma`` but not ``mu``, so an in-place
change to ``sigma`` before the backward raises and one to ``mu`` does not. A
distribution, parameter set or method the table lacks gives a node that saves an
unknown set: the rules that need saved tensors stay quiet on it, and the ones that
need only the graph (kept graphs, no graph at all) still work.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache

from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis import optable
from graphlife.analysis.engine_api import TorchEngine
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, HeapRef, TensorVal, TupleVal, Value

#: Methods whose result is a differentiable function of the parameters (and of their arguments).
#: How the op table's keys for a distribution's members begin.
DISTRIBUTION_PREFIX = "Distribution."

DIFFERENTIABLE_METHODS = frozenset({
    "log_prob", "entropy", "rsample", "cdf", "icdf", "perplexity", "expand",
})
#: Properties computed from the parameters.
DIFFERENTIABLE_PROPERTIES = frozenset({
    "mean", "mode", "stddev", "variance", "probs", "logits", "loc", "scale", "concentration",
    "concentration0", "concentration1", "rate", "covariance_matrix", "scale_tril", "precision_matrix", "low",
    "high", "df", "temperature", "total_count",
})
#: Methods whose result never has a graph.
SAMPLE_METHODS = frozenset({"sample", "sample_n", "enumerate_support"})


def is_distribution_class(name: str) -> bool:
    """``torch.distributions.Normal``, ``torch.distributions.categorical.Categorical``, ..."""
    if not name.startswith("torch.distributions."):
        return False
    short = name.rsplit(".", 1)[-1]
    return short[:1].isupper() and short not in ("Distribution", "Transform", "Constraint")


def is_kl_divergence(name: str) -> bool:
    return name in ("torch.distributions.kl_divergence", "torch.distributions.kl.kl_divergence")


def make_distribution(interp: TorchEngine, state: State, name: str, args: list[Value], kwargs: dict[str, Value],
                      call: ast.Call) -> Value:
    """A distribution object holding its parameters (by keyword name, and all of them in order)."""
    ref = interp.new_object(state, "distribution", call, cls=name.rsplit(".", 1)[-1])
    obj = state.heap[ref.oid]
    for key, value in kwargs.items():
        obj.attrs[key] = value
    obj.attrs["__params__"] = TupleVal((*args, *kwargs.values()))
    obj.attrs["__args__"] = TupleVal(tuple(args))
    # How the user wrote each parameter, so a finding can name the tensor a method saved.
    obj.extra["argument_texts"] = tuple(call.args)
    obj.extra["keyword_texts"] = {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    return ref


@dataclass(frozen=True)
class MeasuredMember:
    """A method or property of a distribution as the op table measured it: its key, its inputs
    in the table's order (the parameters, then the method's arguments) and how the user wrote
    each parameter (``None`` where unknown)."""

    key: str
    inputs: list[Value]
    input_exprs: list[ast.expr | None]


def measured_member(state: State, ref: HeapRef, member: str, args: list[Value],
                    arg_exprs: list[ast.expr | None]) -> MeasuredMember | None:
    """The op table's entry for ``dist.member(*args)``, when torch was measured for this
    distribution built from these parameters; else None.

    The constructor's positional arguments are named by its signature (recorded in the table),
    so ``Normal(mu, sigma)`` and ``Normal(loc=mu, scale=sigma)`` find the same entry."""
    obj = state.heap.get(ref.oid)
    signature = _signatures().get(obj.cls) if obj is not None and obj.kind == "distribution" else None
    if obj is None or signature is None:
        return None
    positional = obj.attrs.get("__args__")
    if not isinstance(positional, TupleVal) or len(positional.items) > len(signature):
        return None
    given: dict[str, Value] = dict(zip(signature, positional.items))
    for name in signature:
        if name in obj.attrs and name not in given:
            given[name] = obj.attrs[name]
    named = [name for name in signature if name in given]
    key = f"{DISTRIBUTION_PREFIX}{obj.cls}({','.join(named)}).{member}"
    info = optable.lookup(key)
    inputs = [*(given[name] for name in named), *args]
    if info is None or len(info.inputs) != len(inputs):
        return None
    written: dict[str, ast.expr] = dict(zip(signature, obj.extra.get("argument_texts", ())))
    written.update(obj.extra.get("keyword_texts", {}))
    exprs = [*(written.get(name) for name in named), *arg_exprs]
    return MeasuredMember(key, inputs, exprs)


@cache
def _signatures() -> dict[str, tuple[str, ...]]:
    """Class name -> its constructor's parameters, for every distribution the op table measured."""
    found: dict[str, tuple[str, ...]] = {}
    measured = optable.keys()
    for key in measured:
        if key.startswith("Distribution.") and "(" in key:
            cls = key[len("Distribution."):].split("(", 1)[0]
            info = optable.lookup(key) if cls not in found else None
            if info is not None and info.parameters:
                found[cls] = info.parameters
    return found


def parameters_of(state: State, ref: HeapRef, depth: int = 0) -> list[Value]:
    """The parameter values a distribution holds (those of a base distribution too: ``Independent``)."""
    obj = state.heap.get(ref.oid)
    params = obj.attrs.get("__params__") if obj is not None else None
    if not isinstance(params, TupleVal):
        return [UNKNOWN]
    out: list[Value] = []
    for value in params.items:
        if isinstance(value, HeapRef) and depth < 3 and state.heap.get(value.oid) is not None \
                and state.heap[value.oid].kind == "distribution":
            out.extend(parameters_of(state, value, depth + 1))
        else:
            out.append(value)
    return out


def no_graph_sample(interp: TorchEngine, call: ast.AST, method: str) -> TensorVal:
    return TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(), origin=call, desc=interp.text(call),
                     why=reasons.DISTRIBUTION_SAMPLE(method=method), why_site=call)


def is_distribution(state: State, value: Value) -> bool:
    return isinstance(value, HeapRef) and value.oid in state.heap and state.heap[value.oid].kind == "distribution"


def display_op(op: str) -> str:
    """An op's name as a message shows it: a distribution's measured member by its class and
    member (``Normal.log_prob``), not by its op-table key (``Distribution.Normal(loc,scale).log_prob``,
    which names the constructor's parameters only to tell the forms apart); other ops as they are."""
    if not op.startswith(DISTRIBUTION_PREFIX) or "(" not in op:
        return op
    cls, _, rest = op[len(DISTRIBUTION_PREFIX):].partition("(")
    member = rest.rpartition(").")[2]
    return f"{cls}.{member}" if member else cls

