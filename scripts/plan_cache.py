#!/usr/bin/env python3
"""What the plan cache saves: swapadvisor.torch.plan_training called twice on the same model
(nanoGPT's shakespeare-char GPT, AdamW, bf16 autocast, clipping), memory and profile, with
an empty cache first. Prints each call's wall time, its planning part (the search, or the
cache's read) and whether the plan came from the cache.

    PYTHONPATH=tools python3 scripts/plan_cache.py [--batch 2] [--memory 0.5x] [--time-limit 20]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--memory", default="0.5x")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    import torch
    import torch_models
    from swapadvisor.torch import plan_training
    cache = tempfile.mkdtemp(prefix="plan_cache.")
    try:
        for call in (1, 2):
            torch.manual_seed(0)
            model, ins, loss_fn, tgs = torch_models.nanogpt(a.batch)
            opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
            t0 = time.time()
            step = plan_training(model, loss_fn, ins, tgs, opt, memory=a.memory, autocast=torch.bfloat16,
                                 clip_grad_norm=1.0, time_limit=a.time_limit, threads=a.threads, cache_dir=cache,
                                 verbose=False)
            print("call %d: %.2f s, of which planning %.2f s (%s); %d ops, plan memory %d bytes"
                  % (call, time.time() - t0, step.plan_seconds, "from the cache" if step.cached else "searched",
                     len(step.doc["ops"]), step.memory_bytes))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
