"""Why a tensor has no graph, as the engine records it on the value (``TensorVal.why``).

GL104 and the hovers quote the reason (`` `loss` has no graph to backpropagate through:
{reason}``); it is a message of its own, in English and Chinese, so that a Chinese finding
does not carry an English clause.
"""

from __future__ import annotations

from graphlife.findings import MessageTemplate

DISTRIBUTION_SAMPLE = MessageTemplate(
    "why.distribution-sample", "drawn by `{method}()`, which never has a graph (`rsample()` has one)",
    zh_cn="它由 `{method}()` 采样得到，这种采样永远没有计算图（`rsample()` 才有）")
GRADIENTS_DISABLED = MessageTemplate(
    "why.gradients-disabled", "computed while gradients were disabled (`{mode}`)",
    zh_cn="它是在梯度记录关闭时（`{mode}`）计算的")
A_GRAD = MessageTemplate(
    "why.a-grad", "a `.grad`, which has no graph unless a backward used `create_graph=True`",
    zh_cn="它是一个 `.grad`，除非某次反向传播使用了 `create_graph=True`，否则它没有计算图")
A_HOOK_GRAD = MessageTemplate(
    "why.a-hook-grad",
    "a gradient torch handed to a backward hook, which has no graph unless the backward used `create_graph=True`",
    zh_cn="它是 torch 在反向传播中交给反向传播钩子的梯度，除非该次反向传播使用了 `create_graph=True`，否则它没有计算图")
IN_BACKWARD_HOOK = MessageTemplate(
    "why.in-backward-hook",
    "computed inside a backward hook, where torch turns gradients off unless the backward used `create_graph=True`",
    zh_cn="它是在反向传播钩子里计算的；除非该次反向传播使用了 `create_graph=True`，torch 在钩子里会关闭梯度记录")
REENTRANT_CHECKPOINT = MessageTemplate(
    "why.reentrant-checkpoint",
    "the output of a reentrant `checkpoint` whose inputs do not require grad has no graph (pass `use_reentrant=False`)",
    zh_cn="输入都不需要梯度的可重入（reentrant）`checkpoint` 的输出没有计算图（请传入 `use_reentrant=False`）")
VARIABLE_WITHOUT_GRAD = MessageTemplate(
    "why.variable", "wrapped by `Variable(...)` without `requires_grad=True`",
    zh_cn="它被 `Variable(...)` 包装时没有指定 `requires_grad=True`")
COPIED_TENSOR = MessageTemplate(
    "why.copied-tensor", "a new tensor made by `torch.{factory}(...)`, which copies values and drops the graph",
    zh_cn="它是 `torch.{factory}(...)` 新建的张量，只复制数值而丢掉了计算图")
NEW_TENSOR = MessageTemplate(
    "why.new-tensor", "a new tensor from `torch.{factory}(...)` without `requires_grad=True`",
    zh_cn="它是 `torch.{factory}(...)` 新建的张量，且没有指定 `requires_grad=True`")
FROZEN_MODULE = MessageTemplate(
    "why.frozen-module", "computed by `{module}`, whose parameters are all frozen (`requires_grad=False`)",
    zh_cn="它由 `{module}` 计算得到，而该模块的参数全部被冻结（`requires_grad=False`）")
INDICES = MessageTemplate(
    "why.indices", "the indices `{op}` returns, which have no graph",
    zh_cn="它是 `{op}` 返回的索引，索引没有计算图")
DETACHED = MessageTemplate(
    "why.detached", "cut from its graph by `.detach()`",
    zh_cn="它已被 `.detach()` 从计算图上切断")
NO_GRAD_REQUIRED = MessageTemplate("why.no-requires-grad", "it does not require grad", zh_cn="它不需要梯度")
BUILT_FROM_NO_GRAD = MessageTemplate("why.built-from-no-grad", "built only from tensors that do not require grad",
                                     zh_cn="它只由不需要梯度的张量计算得到")
NOT_DIFFERENTIABLE = MessageTemplate("why.not-differentiable", "the result of `{op}`, which is not differentiable",
                                     zh_cn="它是 `{op}` 的结果，而该操作不可微")
#: What GL102 calls the parameters a module saved for backward (not a reason: it shares this module
#: as the engine's other words about tensors do).
PARAMETERS_OF = MessageTemplate("what.parameters-of", "parameters of {module}", zh_cn="`{module}` 的参数")
