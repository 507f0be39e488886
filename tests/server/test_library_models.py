"""Models from libraries: which calls build one, and what the training loop around it is told.

The torch truth of the loop rules on library models is in the fixtures (``tests/fixtures/*/
*library*``, run by the oracle on stand-ins of the same shape). Here: that only calls which
build a model count as one (a tokenizer, a weights enum, a TensorFlow model or a loss helper
is no torch module whose step could go wrong), and that the facts stay *may* facts: a second
backward through a library model is a warning, never an error.
"""

from __future__ import annotations

import textwrap

import pytest

from graphlife.checker import check

LOOP = """\
import torch
{imports}

model = {build}
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch, target in loader:
    out = model(batch)
    loss = torch.nn.functional.cross_entropy(out, target)
    loss.backward()
    optimizer.step()
"""


def _codes(source: str) -> list[str]:
    return [f.code for f in check(textwrap.dedent(source), "train.py")]


@pytest.mark.parametrize(("imports", "build"), [
    ("import torchvision", "torchvision.models.resnet18(weights=None)"),
    ("from torchvision import models", "models.__dict__[arch](pretrained=True)"),
    ("from torchvision.models.resnet import ResNet, BasicBlock", "ResNet(BasicBlock, [2, 2, 2, 2])"),
    ("from torchvision import models", "models.vgg19(pretrained=True).features"),
    ("import torch.nn as nn\nfrom torchvision import models",
     "nn.Sequential(*list(models.resnet50(pretrained=True).children())[:-1])"),
    ("import timm", "timm.create_model('resnet50', pretrained=True, num_classes=10)"),
    ("from transformers import AutoModelForImageClassification",
     "AutoModelForImageClassification.from_pretrained('google/vit-base-patch16-224')"),
    ("from transformers import BertConfig, BertForSequenceClassification",
     "BertForSequenceClassification(BertConfig())"),
])
def test_a_library_model_never_zeroed_gets_the_missing_zero_grad_warning(imports: str, build: str) -> None:
    findings = check(LOOP.format(imports=imports, build=build), "train.py")
    assert [(f.code, f.severity.value) for f in findings] == [("GL302", "warning")]


@pytest.mark.parametrize(("imports", "build"), [
    ("from transformers import AutoTokenizer", "AutoTokenizer.from_pretrained('bert-base-uncased')"),
    ("from transformers import TFBertForSequenceClassification",
     "TFBertForSequenceClassification.from_pretrained('bert-base-uncased')"),
    ("from transformers import AutoConfig", "AutoConfig.from_pretrained('bert-base-uncased')"),
    ("from torchvision.models import ResNet50_Weights", "ResNet50_Weights.DEFAULT.transforms()"),
    ("from torchvision.models import get_model_weights", "get_model_weights('resnet50')"),
    ("from torchvision.models.detection.roi_heads import fastrcnn_loss", "fastrcnn_loss(a, b, c, d)"),
    ("from torchvision.models.feature_extraction import create_feature_extractor",
     "create_feature_extractor(backbone, ['layer4'])"),
])
def test_what_is_not_a_torch_model_is_not_taken_for_one(imports: str, build: str) -> None:
    assert _codes(LOOP.format(imports=imports, build=build)) == []


def test_a_second_backward_through_a_library_model_is_a_warning_not_an_error() -> None:
    findings = check(textwrap.dedent("""\
        import torch
        import timm

        model = timm.create_model("resnet18", pretrained=True)
        x = torch.randn(2, 3, 32, 32, requires_grad=True)
        loss = model(x).sum()
        loss.backward()
        loss.backward()
        """), "probe.py")
    assert [(f.code, f.severity.value, f.span.line) for f in findings] == [("GL101", "warning", 8)]


def test_a_transformers_output_is_read_by_field_key_and_position() -> None:
    source = """\
        import torch
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
        kept = []
        for batch in loader:
            optimizer.zero_grad()
            outputs = model(**batch)
            outputs{read}.backward()
            optimizer.step()
            kept.append(outputs{read})
        """
    for read in (".loss", "['loss']", "[0]"):
        assert _codes(source.format(read=read)) == ["GL201"], read


FEATURE_LOSS = """\
import torch
import torch.nn as nn
from torchvision import models


class Features(nn.Module):
    def __init__(self, requires_grad=False):
        super().__init__()
        layers = models.vgg16(weights=None).features
        self.block = nn.Sequential()
        for index in range(4):
            self.block.add_module(str(index), layers[index])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, x):
        return self.block(x)


net = nn.Conv2d(3, 3, 3, padding=1)
features = Features()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
target = features(style_image)
for image in loader:
{reset}    loss = (features(net(image)) - target).pow(2).mean()
    loss.backward()
    optimizer.step()
"""


def test_a_frozen_library_feature_network_passes_the_gradient_to_the_trained_one() -> None:
    """A style loss: a frozen VGG's layers (`add_module` into a Sequential) between the trained
    network and the loss. Its features of the style image, computed once, keep no graph."""
    assert _codes(FEATURE_LOSS.format(reset="    optimizer.zero_grad()\n")) == []
    assert _codes(FEATURE_LOSS.format(reset="")) == ["GL302"]


def test_a_hook_on_a_library_layer_may_run_inside_any_call_of_the_library() -> None:
    """A forward hook on one of a library model's layers runs inside calls the engine cannot see
    (the layers of the library's own forward): what it stores is unknown, never "no graph"."""
    source = """\
        import torch
        from torchvision import models


        class Dream:
            def __init__(self, layers, index):
                self.layers = layers
                self.activation = 0
                layers[index].register_forward_hook(self.keep)

            def keep(self, module, inputs, output):
                self.activation = output

            def run(self, image):
                optimizer = torch.optim.SGD([image], lr=0.1)
                for step in range(10):
                    optimizer.zero_grad()
                    x = image
                    for layer in self.layers:
                        x = layer(x)
                    loss = -torch.mean(self.activation)
                    loss.backward()
                    optimizer.step()


        Dream(models.vgg19(pretrained=True).features, 30).run(torch.rand(1, 3, 64, 64, requires_grad=True))
        """
    assert _codes(source) == []


def test_a_library_model_wrapped_and_reloaded_is_still_the_model_the_optimizer_steps() -> None:
    """`.to(device)`, `DistributedDataParallel`, `torch.compile` and a `load_state_dict` that may
    fail keep the model (and its parameters) the loop trains."""
    source = """\
        import torch
        import timm

        model = timm.create_model("vit_small_patch16_224", pretrained=True).to("cuda")
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
        model = torch.compile(model)
        try:
            model.load_state_dict(torch.load("checkpoint.pt"))
        except FileNotFoundError:
            pass
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for images, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        """
    assert _codes(source) == ["GL302"]
