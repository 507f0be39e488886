"""Small training scripts the language-server tests open (real graph-lifetime bugs, checked by torch's rules)."""

# GL101: the second backward raises "Trying to backward through the graph a second time"
# (w * w saves w; the first backward frees it). Line 6 (1-based) is the second backward.
DOUBLE_BACKWARD = """\
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
loss.backward()
"""
DOUBLE_BACKWARD_LINE = 5  # 0-based line of the second backward

# GL103: in-place update of a leaf that requires grad, outside no_grad. Line 8 (1-based).
MANUAL_UPDATE = """\
import torch

w = torch.randn(3, requires_grad=True)
lr = 0.1
for step in range(3):
    loss = (w * w).sum()
    loss.backward()
    w -= lr * w.grad
"""
MANUAL_UPDATE_LINE = 7

# The same double backward inside a function, after a line with characters outside the BMP.
EMOJI_PREFIX = '    s = "\U0001f600\U0001f600"; '
EMOJI = f"""\
import torch


def train():
    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
{EMOJI_PREFIX}loss.backward()
"""
EMOJI_LINE = 7

CLEAN = """\
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
"""


def big_file(functions: int) -> str:
    """A generated training module: ``functions`` functions of 10-11 lines, every 10th with a GL101."""
    parts = ["import torch\n", "import torch.nn as nn\n", "\n"]
    for index in range(functions):
        bug = "    loss.backward()\n" if index % 10 == 0 else ""
        parts.append(
            f"def step_{index}(batch):\n"
            f"    w = torch.randn(8, requires_grad=True)\n"
            f"    out = batch * w + {index}\n"
            f"    loss = (out * out).mean()\n"
            f"    loss.backward()\n"
            f"{bug}"
            f"    with torch.no_grad():\n"
            f"        w -= 0.1 * w.grad\n"
            f"    return loss.item()\n"
            f"\n\n"
        )
    return "".join(parts)


def padded_big_file(min_chars: int, functions: int = 200) -> str:
    """``big_file(functions)`` with a block of comment lines after each function, long enough to
    pass ``min_chars``: big enough for the server's checker process, yet a full check of it takes
    a fraction of a second (comments cost the parser little and the engine nothing)."""
    code = big_file(functions)
    comment = "# " + "padding " * 8 + "\n"
    per_function = (min_chars - len(code)) // (len(comment) * functions) + 1
    padding = comment * per_function
    return code.replace("    return loss.item()\n", "    return loss.item()\n" + padding)
