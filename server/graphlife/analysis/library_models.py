"""Models that libraries build: which calls make one, and what calling it returns.

Why: most training scripts do not define their network; they ask a library for it
(``torchvision.models.resnet18(...)``, ``timm.create_model(...)``,
``AutoModelForSequenceClassification.from_pretrained(...)``). The engine cannot read
the library, so without this such a model is an unknown value: its output has no
graph the engine knows, its parameters are not the optimizer's, and the training
loop around it (a missing ``zero_grad()``, a loss kept across iterations, a second
backward) goes unchecked.

What the engine may assume is what every ``nn.Module`` of these libraries does: it
owns parameters that require grad unless the user froze them, and its forward builds
a graph that saves tensors for backward. Neither is certain (a model may be frozen
inside the library, or built for inference), so both are *may* facts: the rules of
the loop around the model warn where they need them and never report an error on
them alone.

What the call returns has the library's shape: a tensor for classification models;
a mapping for torchvision's detection and segmentation models (a dict of losses in
training mode, ``{"out": ..., "aux": ...}`` for segmentation); a ``ModelOutput`` for
transformers, read by field (``out.loss``, ``out.logits``), by key or by position
(``out[0]``). The calls themselves are made in :mod:`graphlife.analysis.torch_api`;
this module only reads names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cache

from graphlife.analysis.state import GraphStore
from graphlife.analysis.values import TensorVal


class OutputShape(enum.Enum):
    """How a library model hands back what its forward computed."""

    TENSOR = "tensor"
    MAPPING = "mapping"
    MODEL_OUTPUT = "model_output"


@dataclass(frozen=True)
class LibraryModel:
    """A model built by a library: where it comes from (for messages) and its output's shape."""

    library: str
    output: OutputShape


#: The fields of transformers' ``ModelOutput`` classes that hold results of the forward.
MODEL_OUTPUT_FIELDS = frozenset({
    "loss", "logits", "last_hidden_state", "pooler_output", "hidden_states", "attentions", "past_key_values",
    "encoder_last_hidden_state", "encoder_hidden_states", "decoder_hidden_states", "start_logits", "end_logits",
    "prediction_logits", "seq_relationship_logits", "image_embeds", "text_embeds", "logits_per_image",
    "logits_per_text", "cross_attentions", "aux_loss",
})

#: Functions of ``torchvision.models`` that do not build a model.
_TORCHVISION_HELPERS = frozenset({"get_weight", "get_model_weights", "list_models", "get_model_builder"})
#: Modules of ``torchvision.models`` whose callables are not models (a graph rewriter that
#: wraps a given model, private helpers).
_TORCHVISION_NOT_MODELS = frozenset({"feature_extraction", "_api", "_utils", "_meta"})
#: ``torchvision.models`` subpackages whose models return mappings.
_TORCHVISION_MAPPING = frozenset({"detection", "segmentation"})
_TIMM_FACTORIES = frozenset({"timm.create_model", "timm.models.create_model", "timm.models._factory.create_model"})
#: transformers classes with "Model" in their name that are not models.
_TRANSFORMERS_NOT_MODELS = ("Output", "Config", "Tokenizer", "TokenizerFast", "Processor", "FeatureExtractor",
                            "ImageProcessor", "Mixin")


#: How far back through the graph a store looks for a library model's forward.
_MAX_DEPTH = 24


def stores_graph(graph: GraphStore, tensor: TensorVal) -> bool:
    """Does storing ``tensor`` keep a graph, for the leak rules? Certainly when it requires grad;
    and when it may, because a library model's forward made its graph: the model's parameters
    require grad unless frozen where the engine cannot see, so its output is reported as a
    *may* (a warning at most), where an unknown input alone reports nothing."""
    if tensor.requires_grad is True:
        return bool(tensor.grad_fn)
    if tensor.requires_grad is False:
        return False
    frontier, seen = list(tensor.grad_fn), set()
    for _ in range(_MAX_DEPTH):
        following: list[int] = []
        for nid in frontier:
            if nid in seen:
                continue
            seen.add(nid)
            node = graph.nodes[nid]
            if is_library_model_op(node.op):
                return True
            following.extend(node.parents)
        if not following:
            return False
        frontier = following
    return False


@cache
def is_library_model_op(op: str) -> bool:
    """Is the graph node of this op a library model's forward (its op is the builder's name)?"""
    return library_model(op) is not None


#: Attributes of these libraries' models that hold settings or numbers, not submodules.
NOT_SUBMODULES = frozenset({
    "config", "device", "dtype", "training", "num_features", "num_classes", "num_labels", "in_features",
    "out_features", "default_cfg", "pretrained_cfg", "name_or_path", "generation_config", "main_input_name",
    "base_model_prefix", "feature_info", "embed_dim", "hidden_size", "transform", "anchor_generator",
})


def is_submodule_attribute(attr: str) -> bool:
    """Does ``model.<attr>`` of a library's model name one of its layers (``model.fc``,
    ``model.features``, ``model.backbone``, ``model.bert``)?"""
    return not attr.startswith("_") and attr not in NOT_SUBMODULES and not attr.isupper()


#: Optimizers that libraries export with torch's constructor (parameters first): stepped like torch's.
LIBRARY_OPTIMIZERS = frozenset({
    "transformers.AdamW", "transformers.optimization.AdamW", "transformers.Adafactor",
    "transformers.optimization.Adafactor",
})
#: What ``torchvision.models.__dict__[args.arch]`` names: some member of the package, chosen at run time.
ANY_MEMBER = "any_member"
#: Packages whose members, looked up by a name known only at run time, are model builders.
_MODEL_NAMESPACES = frozenset({"torchvision.models"})


def namespace_member(namespace_dict: str, key: object) -> str | None:
    """The name ``package.__dict__[key]`` stands for, when ``package`` is a namespace of model
    builders (``models.__dict__[args.arch](pretrained=True)``, pytorch/examples' ImageNet
    script); ``None`` for any other package."""
    package = namespace_dict.removesuffix(".__dict__")
    if package == namespace_dict or package not in _MODEL_NAMESPACES:
        return None
    return f"{package}.{key if isinstance(key, str) and key.isidentifier() else ANY_MEMBER}"


def library_model(name: str) -> LibraryModel | None:
    """The model a call of the imported name ``name`` builds, or ``None`` when it builds none
    the engine knows of."""
    parts = name.split(".")
    if parts[0] == "torchvision":
        return _torchvision(parts)
    if name in _TIMM_FACTORIES:
        return LibraryModel("timm", OutputShape.TENSOR)
    if parts[0] == "transformers":
        return _transformers(parts)
    return None


def _torchvision(parts: list[str]) -> LibraryModel | None:
    """``torchvision.models.resnet18``, ``torchvision.models.detection.fasterrcnn_resnet50_fpn``,
    ``torchvision.models.resnet.ResNet``, ``torchvision.models.detection.faster_rcnn.FastRCNNPredictor``."""
    if len(parts) < 3 or parts[1] != "models":
        return None
    packages, builder = parts[2:-1], parts[-1]
    if any(p.startswith("_") or p in _TORCHVISION_NOT_MODELS or not p.islower() for p in packages):
        return None
    if len(packages) > 2 or builder.startswith("_") or builder in _TORCHVISION_HELPERS:
        return None
    if builder[:1].isupper():
        if builder.endswith("Weights") or "_" in builder:
            return None  # `ResNet50_Weights`: an enum of weights, not a model
    elif len(packages) > 1 or "loss" in builder or "inference" in builder or "postprocess" in builder:
        return None  # `detection.roi_heads.fastrcnn_loss`: a function of the model's internals
    mapping = bool(packages) and packages[0] in _TORCHVISION_MAPPING and not builder[:1].isupper()
    return LibraryModel("torchvision", OutputShape.MAPPING if mapping else OutputShape.TENSOR)


def _transformers(parts: list[str]) -> LibraryModel | None:
    """``transformers.AutoModelForCausalLM.from_pretrained``, ``transformers.BertModel(config)``,
    ``transformers.AutoModel.from_config``; never a tokenizer, a config or TensorFlow's and Flax's
    models (not torch modules)."""
    if parts[-1] in ("from_pretrained", "from_config"):
        parts = parts[:-1]
    cls = parts[-1]
    if len(parts) < 2 or not cls[:1].isupper() or cls.startswith(("TF", "Flax")):
        return None
    if not ("Model" in cls or "For" in cls) or cls.endswith(_TRANSFORMERS_NOT_MODELS):
        return None
    return LibraryModel("transformers", OutputShape.MODEL_OUTPUT)
