"""The steps swapplan-torch must reproduce, run eagerly: the reference its results are
compared with (test/py, docs/torch.md "Checking a run").

One step is   out = module(*inputs); loss = loss_fn(out, *targets);
              grads = torch.autograd.grad(loss, trainable params); update in place
with the update of the export (trace._update: SGD lr 0.01, momentum, or Adam at its
steady-state bias correction), optimizer state starting at zero.
"""

from .trace import _named_tensors, _update, optimizer_states


def unique_params(module):
    """(name, tensor) per distinct parameter object, first name first (as the export)."""
    seen, out = set(), []
    for name, p in _named_tensors(module, "_parameters"):
        if id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


def eager_steps(module, loss_fn, inputs, targets, optimizer="sgd", iterations=1):
    """Runs `iterations` training steps on module in place; returns the losses."""
    import torch
    module.train()
    params = [p for _, p in unique_params(module) if p.requires_grad]
    states = {id(p): [torch.zeros_like(p) for _ in optimizer_states(optimizer)] for p in params}
    losses = []
    for _ in range(iterations):
        out = module(*inputs)
        loss = loss_fn(out, *targets)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(params, grads):
                if g is not None:
                    _update(optimizer, p, g, states[id(p)])
        losses.append(float(loss.detach()))
    return losses
