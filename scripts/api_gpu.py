#!/usr/bin/env python3
"""The Python API (swapadvisor.torch.plan_training) on a CUDA GPU, against the same loop run
eagerly on the GPU: nanoGPT's shakespeare-char GPT (bench/torch_models.py:gpt, 6 layers, 384
wide, 256 tokens) with AdamW, clipping at 1.0, and bf16 autocast; then float16 autocast with
a GradScaler. Prints, per configuration, the losses of both runs (on CUDA the kernels need
not be bit for bit equal: their largest relative difference is shown), the mean step time
of each, and whether the plan stayed within its memory.

    PYTHONPATH=tools python3 scripts/api_gpu.py [--batch 8] [--steps 6] [--memory 0.5x]
"""

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--memory", default="0.5x")
    ap.add_argument("--time-limit", type=float, default=None)
    a = ap.parse_args(argv)
    import torch
    import torch_models
    from swapadvisor.torch import plan_training
    if not torch.cuda.is_available():
        print("api_gpu: no CUDA device", file=sys.stderr)
        return 7
    cache = tempfile.mkdtemp(prefix="api_gpu.")
    worst = 0

    def fresh(dev, scaler):
        torch.manual_seed(0)
        model, ins, loss_fn, tgs = torch_models.gpt(a.batch, 256, 384, 6, 6, 65)
        model.to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
        sc = torch.cuda.amp.GradScaler() if scaler else None
        return model, ins, loss_fn, tgs, opt, sc

    def batch(it):
        g = torch.Generator().manual_seed(it)
        return torch.randint(0, 65, (a.batch, 256), generator=g), torch.randint(0, 65, (a.batch, 256), generator=g)

    for name, dtype, scaler in (("bf16", torch.bfloat16, False), ("f16+GradScaler", torch.float16, True)):
        model, _, loss_fn, _, opt, sc = fresh("cuda", scaler)
        eager, te = [], []
        for it in range(a.steps):
            x, y = (t.cuda() for t in batch(it))
            torch.cuda.synchronize()
            t0 = time.time()
            with torch.autocast("cuda", dtype=dtype):
                loss = loss_fn(model(x), y)
            if sc:
                sc.scale(loss).backward()
                sc.unscale_(opt)
            else:
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if sc:
                sc.step(opt)
                sc.update()
            else:
                opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            te.append(time.time() - t0)
            eager.append(float(loss))
        del model, opt
        torch.cuda.empty_cache()
        model, ins, loss_fn, tgs, opt, sc = fresh("cpu", scaler)
        t0 = time.time()
        step = plan_training(model, loss_fn, ins, tgs, opt, memory=a.memory, device="cuda", autocast=dtype,
                             clip_grad_norm=1.0, grad_scaler=sc, time_limit=a.time_limit, cache_dir=cache,
                             verbose=True)
        plan_s = time.time() - t0
        planned, tp = [], []
        torch.cuda.reset_peak_memory_stats()
        for it in range(a.steps):
            x, y = batch(it)
            torch.cuda.synchronize()
            t0 = time.time()
            loss = step(x, y)
            torch.cuda.synchronize()
            tp.append(time.time() - t0)
            planned.append(float(loss))
        rel = max(abs(p - e) / max(abs(e), 1e-12) for p, e in zip(planned, eager))
        peak = torch.cuda.max_memory_allocated()
        print("%s: plan %.1f s (memory %d bytes), eager %.2f ms/step, planned %.2f ms/step (steps 2+), "
              "max_memory_allocated %d, losses eager %s planned %s, largest relative difference %.2e"
              % (name, plan_s, step.memory_bytes, 1e3 * sum(te[1:]) / max(1, len(te) - 1),
                 1e3 * sum(tp[1:]) / max(1, len(tp) - 1), peak, ["%.4f" % v for v in eager],
                 ["%.4f" % v for v in planned], rel))
        worst = max(worst, rel)
    return 0 if worst < 5e-2 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
