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


class _Block(nn.Module):
    def __init__(self, width, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.drop = nn.Dropout(dropout)
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / float(c // h) ** 0.5)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = self.drop(F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """A GPT shaped as nanoGPT's: learned positions, pre-norm blocks, causal attention
    written out (softmax of masked scores: torch 1.13 has no scaled_dot_product_attention),
    the head tied to the token embedding."""

    def __init__(self, vocab, seq, width, heads, layers, dropout=0.0):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[_Block(width, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        return self.head(self.ln(self.blocks(x)))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def gpt(batch=8, seq=256, width=384, heads=6, layers=6, vocab=50257, dropout=0.0):
    """A nanoGPT-sized GPT (6 layers, 384 wide, 256 tokens, tied embedding)."""
    m = GPT(vocab, seq, width, heads, layers, dropout)
    ids = torch.zeros(batch, seq, dtype=torch.long)
    return m, (ids,), lm_loss, (torch.zeros(batch, seq, dtype=torch.long),)


def nanogpt(batch=12):
    """nanoGPT's shakespeare-char configuration: 6 layers, 6 heads, 384 wide, 256
    characters of context, a 65-character vocabulary, dropout 0.2."""
    return gpt(batch, 256, 384, 6, 6, 65, 0.2)


def gpt2_small(batch=8, seq=1024):
    """GPT-2 small's size: 12 layers, 768 wide, 12 heads, 1024 tokens, 50257 words."""
    return gpt(batch, seq, 768, 12, 12, 50257)


def gpt_tiny(batch=2):
    """The same code at a size the CPU tests and smoke runs train in seconds."""
    return gpt(batch, 16, 32, 4, 2, 97)
