"""Stand-ins for model libraries the test environment does not install: torchvision, timm, transformers.

Fixtures about models built by libraries (``tests/fixtures/*/*library*``) import them as a
user's script does. The oracle cannot run the real libraries here, so the truth of those
fixtures comes from these stand-ins: small ``nn.Module`` networks with the *same shape* as
the library's model (what the builder takes, what the forward returns: a tensor of
logits for classifiers, a dict of losses in training mode for torchvision's detection
models, a ``ModelOutput`` read by field, key or position for transformers). What the
fixtures' rules are about - a training loop's gradients, graphs and backward calls -
depends only on that shape and on the model owning parameters that require grad and
saving tensors for backward, which the stand-ins do as the real models do.

:func:`install` adds an import hook at the *end* of ``sys.meta_path``: it answers only
for these names, and only when no installed package does (a real torchvision, if ever
installed, is the one imported).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


class _SmallClassifier(nn.Module):
    """An image classifier: (N, 3, H, W) -> (N, num_classes) logits, with the layers every such
    model has (a convolution, a normalization, a pooled linear head)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.norm = nn.GroupNorm(2, 4)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.norm(self.conv(x)))
        return self.fc(features.mean(dim=(2, 3)))


def resnet18(*, weights: Any = None, num_classes: int = 1000, **_: Any) -> nn.Module:
    """Like ``torchvision.models.resnet18``: a classifier."""
    return _SmallClassifier(num_classes)


def create_model(model_name: str, pretrained: bool = False, num_classes: int = 1000, **_: Any) -> nn.Module:
    """Like ``timm.create_model``: a classifier, whatever the name."""
    return _SmallClassifier(num_classes)


class _SmallDetector(nn.Module):
    """Like torchvision's detection models: ``model(images, targets)`` returns a dict of losses
    in training mode, a list of per-image dicts of detections in evaluation mode."""

    def __init__(self, num_classes: int = 91) -> None:
        super().__init__()
        self.backbone = nn.Conv2d(3, 4, 3, padding=1)
        self.classifier = nn.Linear(4, num_classes)
        self.box_regressor = nn.Linear(4, 4)

    def forward(self, images: Sequence[torch.Tensor], targets: Sequence[dict[str, torch.Tensor]] | None = None) -> Any:
        features = torch.stack([torch.relu(self.backbone(image)).mean(dim=(1, 2)) for image in images])
        logits, boxes = self.classifier(features), self.box_regressor(features)
        if not self.training:
            return [{"boxes": b, "labels": s.argmax(-1), "scores": s.softmax(-1).max(-1).values}
                    for b, s in zip(boxes, logits)]
        assert targets is not None, "in training mode torchvision's detection models need targets"
        labels = torch.stack([t["labels"][0] for t in targets])
        wanted = torch.stack([t["boxes"][0] for t in targets])
        return {"loss_classifier": F.cross_entropy(logits, labels), "loss_box_reg": F.smooth_l1_loss(boxes, wanted)}


def fasterrcnn_resnet50_fpn(*, weights: Any = None, num_classes: int = 91, **_: Any) -> nn.Module:
    """Like ``torchvision.models.detection.fasterrcnn_resnet50_fpn``."""
    return _SmallDetector(num_classes)


class ModelOutput(OrderedDict):  # type: ignore[type-arg]
    """Like transformers' ``ModelOutput``: fields read as attributes, by key, or by position
    (``out[0]`` is the first field that is set: the loss when labels were given)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int):
            return list(self.values())[key]
        return super().__getitem__(key)


class _SmallTextModel(nn.Module):
    """A text model: token ids (N, T) -> logits, the loss when labels are given."""

    def __init__(self, num_labels: int, causal: bool, vocab: int = 50) -> None:
        super().__init__()
        self.causal = causal
        self.embed = nn.Embedding(vocab, 8)
        self.head = nn.Linear(8, vocab if causal else num_labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> ModelOutput:
        hidden = torch.tanh(self.embed(input_ids))
        if self.causal:
            logits = self.head(hidden)
            loss = None if labels is None else F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        else:
            logits = self.head(hidden.mean(dim=1))
            loss = None if labels is None else F.cross_entropy(logits, labels)
        out = ModelOutput()
        if loss is not None:
            out["loss"] = loss
        out["logits"] = logits
        return out


class AutoModelForSequenceClassification:
    """Like transformers' auto class: ``from_pretrained(name, num_labels=...)`` builds the model."""

    @classmethod
    def from_pretrained(cls, name: str, num_labels: int = 2, **_: Any) -> nn.Module:
        return _SmallTextModel(num_labels, causal=False)


class AutoModelForCausalLM:
    @classmethod
    def from_pretrained(cls, name: str, **_: Any) -> nn.Module:
        return _SmallTextModel(0, causal=True)


def _module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(name, f"Stand-in for {name} (tests/oracle/library_stand_ins.py)")
    module.__dict__.update(members)
    return module


def _stand_ins() -> dict[str, types.ModuleType]:
    detection = _module("torchvision.models.detection", fasterrcnn_resnet50_fpn=fasterrcnn_resnet50_fpn)
    models = _module("torchvision.models", resnet18=resnet18, detection=detection)
    return {
        "torchvision": _module("torchvision", models=models),
        "torchvision.models": models,
        "torchvision.models.detection": detection,
        "timm": _module("timm", create_model=create_model),
        "transformers": _module(
            "transformers", AutoModelForSequenceClassification=AutoModelForSequenceClassification,
            AutoModelForCausalLM=AutoModelForCausalLM, ModelOutput=ModelOutput,
        ),
    }


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the stand-ins, after every other finder declined."""

    def __init__(self) -> None:
        self.modules = _stand_ins()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname.count(".") < 2)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.modules[spec.name]

    def exec_module(self, module: types.ModuleType) -> None:
        """The stand-in is built already."""


def install() -> None:
    """Make the stand-ins importable where the real libraries are not installed (once)."""
    if not any(isinstance(finder, _StandInFinder) for finder in sys.meta_path):
        sys.meta_path.append(_StandInFinder())
