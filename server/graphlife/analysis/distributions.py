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

What these ops save for backward is not measured (unlike the op table), so their
nodes save an unknown set: the rules that need saved tensors stay quiet on them,
and the ones that need only the graph (kept graphs, no graph at all) work.
"""

from __future__ import annotations

import ast

from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis.engine_api import TorchEngine
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, HeapRef, TensorVal, TupleVal, Value

#: Methods whose result is a differentiable function of the parameters (and of their arguments).
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
    return ref


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
