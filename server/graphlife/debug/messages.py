"""What torch says -> which graphlife rule explains it. Plain data, no imports.

One table shared by the debug probe (loaded with ``runpy.run_path`` inside the
debugged program, where graphlife itself may not be importable), the
``graphlife explain`` command, and any front end that meets a torch error
message. ``patterns`` are substrings of torch's message (torch 2.13 wording,
checked against RULES.md); the first entry with a matching pattern wins, so
more specific entries come first. ``why`` and ``fix`` are the short form of the
rule's documentation for places that cannot import :mod:`graphlife.rules`.
"""

from typing import Any

MESSAGES: list[dict[str, Any]] = [
    {
        "code": "GL101",
        "name": "backward-through-freed-graph",
        "patterns": ["Trying to backward through the graph a second time"],
        "why": "A backward without retain_graph=True frees the tensors the graph saved. This backward "
               "reaches that graph again: the same loss twice, two losses sharing a sub-graph, or state "
               "(an RNN hidden state, a running tensor) carried from an iteration whose graph was already "
               "backpropagated.",
        "fix": "Detach carried state at the loop boundary (h = h.detach()); detach the generator output in "
               "the discriminator step; sum the losses into one backward; retain_graph=True on the earlier "
               "backward only as a last resort (it keeps memory alive).",
    },
    {
        "code": "GL102",
        "name": "inplace-modifies-saved-tensor",
        "patterns": ["modified by an inplace operation"],
        "why": "A node of the graph saved this tensor for its backward, and an in-place operation (x += y, "
               "relu_, x[i] = v, inplace=True, an optimizer step on saved parameters) changed it afterwards: "
               "its version counter no longer matches the version that was saved.",
        "fix": "Use the out-of-place form (x = x + y, x = x.add(y), inplace=False), or do the change after "
               "the backward.",
    },
    {
        "code": "GL103",
        "name": "inplace-on-leaf-requiring-grad",
        "patterns": ["a leaf Variable that requires grad is being used in an in-place operation"],
        "why": "An in-place change of a leaf that requires grad (a parameter) outside torch.no_grad() would "
               "have to be recorded in the graph of the leaf itself.",
        "fix": "Wrap the manual update in `with torch.no_grad():`.",
    },
    {
        "code": "GL104",
        "name": "backward-without-grad",
        "patterns": ["does not require grad and does not have a grad_fn"],
        "why": "The value backward starts from has no graph: it was computed under no_grad or "
               "inference_mode, detached, re-wrapped from .item()/.numpy()/.tolist(), or built only from "
               "tensors that do not require grad.",
        "fix": "Find where the graph breaks (the no_grad block, the .item() round trip, the frozen "
               "parameters) and keep the computation in autograd.",
    },
    {
        "code": "GL105",
        "name": "optimizing-non-leaf",
        "patterns": ["can't optimize a non-leaf Tensor"],
        "why": "A tensor made by an operation (x * 0.01, .double(), .to(device)) is not a leaf: its .grad "
               "stays None, so the optimizer refuses it.",
        "fix": "Create it with device=/dtype= and requires_grad=True in one call, call .requires_grad_() "
               "after the conversion, or wrap it in nn.Parameter.",
    },
    {
        "code": "GL106",
        "name": "inference-tensor-in-autograd",
        "patterns": [
            "Inference tensors cannot be saved for backward",
            "Inplace update to inference tensor outside InferenceMode",
        ],
        "why": "A tensor created under torch.inference_mode() carries no version counter, so autograd "
               "cannot save it or let it be changed in place later.",
        "fix": "Use torch.no_grad() instead of inference_mode() there, or .clone() the tensor outside it.",
    },
    {
        "code": "GL107",
        "name": "requires-grad-flag-on-non-leaf",
        "patterns": ["you can only change requires_grad flags of leaf variables"],
        "why": "requires_grad of a computed tensor follows from its inputs; only leaves can set it.",
        "fix": "y = y.detach().requires_grad_() (or .detach() to drop the gradient).",
    },
    {
        "code": "GL109",
        "name": "numpy-of-tensor-requiring-grad",
        "patterns": ["Can't call numpy() on Tensor that requires grad"],
        "why": "A NumPy array cannot carry an autograd graph; with gradients on, torch refuses a tensor "
               "that requires grad (a parameter, a model's output, a loss).",
        "fix": "t.detach().numpy() (or .detach().cpu().numpy()), or compute the value under torch.no_grad().",
    },
    {
        "code": "GL402",
        "name": "backward-arity-mismatch",
        "patterns": ["returned an incorrect number of gradients"],
        "why": "A custom autograd.Function's backward must return one gradient per forward input after ctx.",
        "fix": "Return None for the inputs that need no gradient.",
    },
    {
        "code": "GL404",
        "name": "legacy-function",
        "patterns": ["Legacy autograd function with non-static forward method is deprecated"],
        "why": "autograd.Function needs static forward/backward taking ctx, called through Fn.apply.",
        "fix": "Mark forward and backward @staticmethod, take ctx first, call Fn.apply(...).",
    },
    {
        "code": "GL406",
        "name": "save-for-backward-non-tensor",
        "patterns": ["save_for_backward can only save variables"],
        "why": "ctx.save_for_backward accepts tensors (or None) only.",
        "fix": "Store the non-tensor values as ctx attributes (ctx.scale = scale).",
    },
]


def classify(message: str) -> dict[str, Any] | None:
    """The first entry whose pattern occurs in ``message``, or ``None``."""
    for item in MESSAGES:
        if any(pattern in message for pattern in item["patterns"]):
            return item
    return None
