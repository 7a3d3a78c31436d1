"""Models the dfg-from-torch tests export as FILE.py:FUNC (see docs/torch.md)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def transformer(batch=2, seq=32, d_model=64, heads=4, layers=2):
    """nn.TransformerEncoder on (seq, batch, d_model) float inputs, MSE loss."""
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.1)
    model = nn.TransformerEncoder(layer, layers)
    x = torch.randn(seq, batch, d_model)
    target = torch.randn(seq, batch, d_model)
    return model, (x,), F.mse_loss, (target,)


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 16 * 16, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def small_cnn(batch=4):
    """A small CNN on 32x32 images with int64 labels and cross-entropy."""
    return SmallCNN(), [(batch, 3, 32, 32)], F.cross_entropy, [torch.zeros(batch, dtype=torch.long)]


class DataDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:          # a tensor's value decides the control flow
            y = y * 2
        return y


def data_dependent(batch=2):
    return DataDependent(), [(batch, 8)], lambda out: out.pow(2).mean()


class NoFormula(nn.Module):
    """Uses an op the cost table has no formula for (cummax): exported with a generic cost."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.cummax(self.fc(x), 1)[0]


def no_formula(batch=2):
    return NoFormula(), [(batch, 16)], lambda out: out.sum()


def huge(batch=8, width=65536, layers=10):
    """Ten 65536 x 65536 linear layers: 43 G parameters, 172 GB of weights in f32, far
    more than any test machine; exports because nothing is allocated."""
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)])
    return model, [(batch, width)], lambda out: out.float().pow(2).mean()


def not_a_module(batch=2):
    return "resnet", [(batch, 3)], F.mse_loss


class LSTMTagger(nn.Module):
    """Embedding, a two-layer nn.LSTM and a linear head on token ids: nn.LSTM reads its
    weights from the list _flat_weights, which torch 1.13's functional_call leaves
    pointing at the module's own weights."""

    def __init__(self, vocab=50, emb=16, hidden=32, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.gru = nn.GRU(hidden, hidden)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        o, _ = self.lstm(self.emb(ids))
        o, _ = self.gru(o.transpose(0, 1))
        return self.fc(o[-1])


def lstm(batch=2, seq=12):
    return LSTMTagger(), [torch.zeros(batch, seq, dtype=torch.long)], F.cross_entropy, \
        [torch.zeros(batch, dtype=torch.long)]


class Transposed(nn.Module):
    """Weights made as transposed views (dense, not row-major)."""

    def __init__(self, classes=10):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(64, 8).t())
        self.w2 = nn.Parameter(torch.randn(64, 64).t())
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        return self.head(torch.relu(torch.relu(x @ self.w1) @ self.w2))


def transposed(batch=32):
    return Transposed(), [(batch, 8)], F.cross_entropy, [torch.zeros(batch, dtype=torch.long)]


def frozen(batch=2):
    """Every parameter frozen: the loss depends on none (exit 3)."""
    m = nn.Linear(4, 4)
    for p in m.parameters():
        p.requires_grad_(False)
    return m, [(batch, 4)], lambda out: out.sum()


def vector_loss(batch=2):
    """The loss function returns a vector, not a scalar (exit 3)."""
    return nn.Linear(4, 4), [(batch, 4)], lambda out: out.sum(0)


class CheckpointedCNN(nn.Module):
    """Three conv blocks, the middle two under torch.utils.checkpoint: their activations
    are not kept for backward but recomputed there."""

    def __init__(self, reentrant=False, classes=10):
        super().__init__()
        self.reentrant = reentrant
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.block1 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))
        self.block2 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU(),
                                    nn.Conv2d(32, 32, 3, padding=1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        x = self.stem(x)
        x = x + checkpoint(self.block1, x, use_reentrant=self.reentrant)
        x = checkpoint(self.block2, x, use_reentrant=self.reentrant)
        return self.fc(x.mean((2, 3)))


def checkpointed(batch=4):
    """torch.utils.checkpoint, non-reentrant (the recomputation is part of the graph)."""
    return CheckpointedCNN(), [(batch, 3, 32, 32)], F.cross_entropy, [torch.zeros(batch, dtype=torch.long)]


def checkpointed_reentrant(batch=4):
    """torch.utils.checkpoint with use_reentrant=True."""
    return CheckpointedCNN(reentrant=True), [(batch, 3, 32, 32)], F.cross_entropy, \
        [torch.zeros(batch, dtype=torch.long)]
