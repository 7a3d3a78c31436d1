"""Models of the executor benchmark (scripts/executor_bench.py), as FILE.py:FUNC for
dfg-from-torch and swapplan-torch: each FUNC(batch) returns (module, inputs, loss_fn,
targets)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(batch=4, layers=100, width=32, classes=10):
    """Op-bound: 100 linear + relu layers of width 32; the step's time is the executor's."""
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    mods.append(nn.Linear(width, classes))
    return nn.Sequential(*mods), (torch.randn(batch, width),), F.cross_entropy, \
        (torch.zeros(batch, dtype=torch.long),)


def resnet18_32(batch=4):
    """torchvision's resnet18 on 32x32 images, 10 classes."""
    import torchvision
    m = torchvision.models.resnet18(num_classes=10)
    return m, (torch.randn(batch, 3, 32, 32),), F.cross_entropy, (torch.zeros(batch, dtype=torch.long),)


def transformer8(batch=4, seq=32, width=32, heads=4, blocks=8):
    """An 8-block transformer encoder of width 32."""
    layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=4 * width, dropout=0.0)
    m = nn.TransformerEncoder(layer, blocks)
    return m, (torch.randn(seq, batch, width),), F.mse_loss, (torch.randn(seq, batch, width),)
