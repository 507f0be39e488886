"""The semantic layer: what the syntax of a file says, found once per tree.

One place answers the questions that rules, fix proofs and the interpreter each
used to answer their own way:

- **names** (:mod:`.names`): which qualified name a local name means at a node,
  through imports (``import torch as T``, ``from torch import nn``, ``from
  torch.autograd import Function as F``), aliases (``Fn = torch.autograd.Function``)
  and Python's scopes (a function's own imports and variables, closures, class
  bodies, comprehensions);
- **grad mode** (:mod:`.grad`): which ``with`` items and decorators turn gradients
  off or on (``torch.no_grad()``, ``enable_grad``, ``set_grad_enabled(flag)``,
  ``inference_mode``, ``@torch.no_grad()``), and the mode the code around a node sets;
- **autograd Functions** (:mod:`.functions`): which classes are custom
  ``torch.autograd.Function`` s, their forward / backward / setup_context and ctx
  parameters, ``save_for_backward`` calls, and the calls of their ``apply``.

``semantics_of(tree)`` gives the file's :class:`Semantics`, built from the walk the
checker's tree index made (:mod:`graphlife.analysis.tree_index`) and kept on that
index. Syntactic rules get it as ``ModuleContext.semantics``; engine rules ask
``RuleContext`` (``qualified_name``, ``grad_switches``, ``mentions``, ...), which
notes the code a question read for the language server's unit cache (the
``read`` parameters here).

How the interpreter calls it (it still resolves on its own; these are the calls
that replace its code, without a change of findings unless said):

- ``Interpreter.exec_import``: bind each :func:`import_bindings` (``binding.name``
  to ``QualName(binding.qualified)``); a relative import then keeps its dots, which
  no torch name matches (today ``from .m import x`` binds ``m.x``).
- ``Interpreter.class_ref``: a base whose value is ``QualName(q)`` makes an autograd
  Function when ``q in FUNCTION_BASES`` (adds ``InplaceFunction``).
- ``torch_api.call_qualname`` and ``GRAD_CONTEXTS``: ``grad_context_kind(name)``
  gives the kind (``torch.autograd.enable_grad`` & co. included), and
  ``setting_for_flag(kind, const_bool(flag))`` what entering it does
  (``torch_api.enter_context`` then sets the state from the :class:`GradSetting`).
- ``Interpreter.inline_call``: the grad mode of a decorated callee is
  ``semantics_of(tree).grad.decorator_switches(func)`` (today it compares the text
  of each decorator with ``"torch.no_grad()"``, so ``@no_grad()`` after ``from torch
  import no_grad`` and ``@torch.enable_grad()`` are missed: a change of findings).
- ``Interpreter.function_entry_state`` / ``inline_call``: ``is_static(func)`` and
  ``is_classmethod(func)`` instead of comparing decorator texts.
"""

from graphlife.analysis.semantics.functions import (
    CHECKPOINT_FUNCTIONS,
    CHECKPOINT_SEQUENTIAL,
    FUNCTION_BASES,
    ApplyCall,
    FunctionClass,
    FunctionModel,
    Method,
    is_classmethod,
    is_static,
)
from graphlife.analysis.semantics.grad import (
    GRAD_CONTEXTS,
    Grad,
    GradRegion,
    GradSetting,
    GradSwitch,
    grad_context_kind,
    setting_for_flag,
)
from graphlife.analysis.semantics.model import Semantics, semantics_of
from graphlife.analysis.semantics.names import ImportBinding, Names, Reader, import_bindings

__all__ = [
    "CHECKPOINT_FUNCTIONS",
    "CHECKPOINT_SEQUENTIAL",
    "FUNCTION_BASES",
    "GRAD_CONTEXTS",
    "ApplyCall",
    "FunctionClass",
    "FunctionModel",
    "Grad",
    "GradRegion",
    "GradSetting",
    "GradSwitch",
    "ImportBinding",
    "Method",
    "Names",
    "Reader",
    "Semantics",
    "grad_context_kind",
    "import_bindings",
    "is_classmethod",
    "is_static",
    "semantics_of",
    "setting_for_flag",
]
