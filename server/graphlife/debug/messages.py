"""What torch says -> which graphlife rule explains it. Plain data, no imports.

One table shared by the debug probe (loaded with ``runpy.run_path`` inside the
debugged program, where graphlife itself may not be importable), the
``graphlife explain`` command, and any front end that meets a torch error
message. ``patterns`` are substrings of torch's message (torch 2.13 wording,
checked against RULES.md); the first entry with a matching pattern wins, so
more specific entries come first. ``why`` and ``fix`` are the short form of the
rule's documentation for places that cannot import :mod:`graphlife.rules`; ``zh-CN``
holds the same two texts in Simplified Chinese (docs/zh-CN-GLOSSARY.md), for the debug
inspector when it speaks Chinese.
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
        "zh-CN": {
            "why": "不带 `retain_graph=True` 的反向传播会释放计算图保存的张量。这次反向传播又走到了那个计算图："
                   "同一个损失反向传播了两次、两个损失共享一部分计算图，或者从上一轮迭代带过来的状态（RNN 的隐藏状态、"
                   "累加的张量）所在的计算图已经做过反向传播。",
            "fix": "在循环边界处分离跨迭代保留的状态（`h = h.detach()`）；判别器那一步对生成器的输出调用 `detach()`；"
                   "把各个损失相加后只做一次反向传播；"
                   "万不得已才在前一次反向传播中使用 `retain_graph=True`（它会让内存一直被占用）。",
        },
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
        "zh-CN": {
            "why": "计算图中的某个节点为反向传播保存了这个张量，之后一个原地操作（`x += y`、`relu_`、"
                   "`x[i] = v`、`inplace=True`、对已保存参数执行的优化步）修改了它："
                   "它的版本计数器与保存时的版本号不再一致。",
            "fix": "改用非原地写法（`x = x + y`、`x = x.add(y)`、`inplace=False`），或者把修改放到反向传播之后。",
        },
    },
    {
        "code": "GL103",
        "name": "inplace-on-leaf-requiring-grad",
        "patterns": ["a leaf Variable that requires grad is being used in an in-place operation"],
        "why": "An in-place change of a leaf that requires grad (a parameter) outside torch.no_grad() would "
               "have to be recorded in the graph of the leaf itself.",
        "fix": "Wrap the manual update in `with torch.no_grad():`.",
        "zh-CN": {
            "why": "在 `torch.no_grad()` 之外原地修改一个需要梯度的叶子张量（例如参数），"
                   "就得把这次修改记录进这个叶子张量自己的计算图。",
            "fix": "把手动更新放进 `with torch.no_grad():` 中。",
        },
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
        "zh-CN": {
            "why": "反向传播的起点没有计算图：它是在 `no_grad` 或 `inference_mode` 下算出的、"
                   "被 `detach()` 过、由 `.item()`/`.numpy()`/`.tolist()` 的结果重新包装而来，"
                   "或者只由不需要梯度的张量算出。",
            "fix": "找到计算图断开的地方（`no_grad` 代码块、`.item()` 的来回转换、被冻结的参数），"
                   "让这段计算留在自动求导中。",
        },
    },
    {
        "code": "GL105",
        "name": "optimizing-non-leaf",
        "patterns": ["can't optimize a non-leaf Tensor"],
        "why": "A tensor made by an operation (x * 0.01, .double(), .to(device)) is not a leaf: its .grad "
               "stays None, so the optimizer refuses it.",
        "fix": "Create it with device=/dtype= and requires_grad=True in one call, call .requires_grad_() "
               "after the conversion, or wrap it in nn.Parameter.",
        "zh-CN": {
            "why": "由运算得到的张量（`x * 0.01`、`.double()`、`.to(device)`）不是叶子张量："
                   "它的 `.grad` 始终为 `None`，所以优化器不接受它。",
            "fix": "在一次调用中同时指定 `device=`/`dtype=` 和 `requires_grad=True` 来创建它，"
                   "在转换之后调用 `.requires_grad_()`，或者用 `nn.Parameter` 包装它。",
        },
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
        "zh-CN": {
            "why": "在 `torch.inference_mode()` 下创建的张量没有版本计数器，"
                   "所以自动求导既不能保存它，也不允许之后对它原地修改。",
            "fix": "在那里用 `torch.no_grad()` 代替 `inference_mode()`，或者在推理模式之外对该张量调用 `.clone()`。",
        },
    },
    {
        "code": "GL107",
        "name": "requires-grad-flag-on-non-leaf",
        "patterns": ["you can only change requires_grad flags of leaf variables"],
        "why": "requires_grad of a computed tensor follows from its inputs; only leaves can set it.",
        "fix": "y = y.detach().requires_grad_() (or .detach() to drop the gradient).",
        "zh-CN": {
            "why": "计算得到的张量的 `requires_grad` 由它的输入决定；只有叶子张量可以设置它。",
            "fix": "`y = y.detach().requires_grad_()`（或者只用 `.detach()`，丢弃梯度）。",
        },
    },
    {
        "code": "GL109",
        "name": "numpy-of-tensor-requiring-grad",
        "patterns": ["Can't call numpy() on Tensor that requires grad"],
        "why": "A NumPy array cannot carry an autograd graph; with gradients on, torch refuses a tensor "
               "that requires grad (a parameter, a model's output, a loss).",
        "fix": "t.detach().numpy() (or .detach().cpu().numpy()), or compute the value under torch.no_grad().",
        "zh-CN": {
            "why": "NumPy 数组无法携带自动求导的计算图；在记录梯度时，torch 拒绝转换需要梯度的张量"
                   "（参数、模型的输出、损失）。",
            "fix": "`t.detach().numpy()`（或 `.detach().cpu().numpy()`），或者在 `torch.no_grad()` 下计算这个值。",
        },
    },
    {
        "code": "GL402",
        "name": "backward-arity-mismatch",
        "patterns": ["returned an incorrect number of gradients"],
        "why": "A custom autograd.Function's backward must return one gradient per forward input after ctx.",
        "fix": "Return None for the inputs that need no gradient.",
        "zh-CN": {
            "why": "自定义 `autograd.Function` 的 `backward` 必须为 `forward` 中 `ctx` 之后的每个输入各返回一个梯度。",
            "fix": "对不需要梯度的输入返回 `None`。",
        },
    },
    {
        "code": "GL404",
        "name": "legacy-function",
        "patterns": ["Legacy autograd function with non-static forward method is deprecated"],
        "why": "autograd.Function needs static forward/backward taking ctx, called through Fn.apply.",
        "fix": "Mark forward and backward @staticmethod, take ctx first, call Fn.apply(...).",
        "zh-CN": {
            "why": "`autograd.Function` 需要以 `ctx` 为第一个参数的静态 `forward`/`backward`，并通过 `Fn.apply` 调用。",
            "fix": "把 `forward` 和 `backward` 标记为 `@staticmethod`，第一个参数为 `ctx`，调用时写 `Fn.apply(...)`。",
        },
    },
    {
        "code": "GL406",
        "name": "save-for-backward-non-tensor",
        "patterns": ["save_for_backward can only save variables"],
        "why": "ctx.save_for_backward accepts tensors (or None) only.",
        "fix": "Store the non-tensor values as ctx attributes (ctx.scale = scale).",
        "zh-CN": {
            "why": "`ctx.save_for_backward` 只接受张量（或 `None`）。",
            "fix": "把非张量的值存为 `ctx` 的属性（`ctx.scale = scale`）。",
        },
    },
]


def classify(message: str) -> dict[str, Any] | None:
    """The first entry whose pattern occurs in ``message``, or ``None``."""
    for item in MESSAGES:
        if any(pattern in message for pattern in item["patterns"]):
            return item
    return None
