"""Tests of the Python API, swapadvisor.torch.plan_training (docs/torch.md, "From Python"):
a training loop with a plan leaves the model and the optimizer where the same loop
written eagerly with torch.optim (foreach=False), a learning-rate schedule, autocast and
clip_grad_norm_ leaves them, bit for bit; a plan is cached and reused; errors are one
line.

Run by test/py/run.sh under the Python that has torch ($DFG_TEST_PYTHON).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from swapadvisor.torch import PlanError, plan_training  # noqa: E402
import torch_models  # noqa: E402


def nanogpt_optimizer(model, lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1):
    """nanoGPT's configure_optimizers: weight decay on the matrices only, two groups."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas, foreach=False)


def nanogpt_lr(it, lr=6e-4, warmup=2, decay_iters=10, min_lr=6e-5):
    """nanoGPT's get_lr: linear warm-up, then cosine decay to min_lr."""
    import math
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


class Case:
    """One model and training loop, built twice from the same seed: eagerly, and with a plan."""

    def __init__(self, build, make_opt, make_sched=None, set_lr=None, autocast=None, clip=None, steps=3):
        self.build, self.make_opt, self.make_sched, self.set_lr = build, make_opt, make_sched, set_lr
        self.autocast, self.clip, self.steps = autocast, clip, steps

    def fresh(self):
        torch.manual_seed(0)
        model, ins, loss_fn, tgs = self.build()
        opt = self.make_opt(model)
        sched = self.make_sched(opt) if self.make_sched else None
        return model, tuple(ins), loss_fn, tuple(tgs), opt, sched

    def data(self, ins, tgs, it):
        g = torch.Generator().manual_seed(100 + it)

        def one(t, n=None):
            if t.dtype.is_floating_point:
                return torch.randn(t.shape, generator=g, dtype=t.dtype)
            return torch.randint(0, n or 2, t.shape, generator=g, dtype=t.dtype)
        return tuple(one(t, self.classes) for t in ins), tuple(one(t, self.classes) for t in tgs)

    classes = 10

    def batch(self, opt, ins, tgs, it):
        """Step it's data, with the learning rate set by hand first where the loop does."""
        if self.set_lr:
            for group in opt.param_groups:
                group["lr"] = self.set_lr(it)
        return self.data(ins, tgs, it)

    def eager(self):
        model, ins, loss_fn, tgs, opt, sched = self.fresh()
        losses = []
        for it in range(self.steps):
            x, y = self.batch(opt, ins, tgs, it)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=self.autocast or torch.bfloat16, enabled=self.autocast is not None):
                loss = loss_fn(model(*x), *y)
            loss.backward()
            if self.clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.clip)
            opt.step()
            if sched:
                sched.step()
            losses.append(loss.detach().clone())
        return model, opt, losses

    def planned(self, memory, cache, **kw):
        model, ins, loss_fn, tgs, opt, sched = self.fresh()
        step = plan_training(model, loss_fn, ins, tgs, opt, memory=memory, autocast=self.autocast,
                             clip_grad_norm=self.clip, generations=0, threads=2, cache_dir=cache, verbose=False, **kw)
        losses = []
        for it in range(self.steps):
            x, y = self.batch(opt, ins, tgs, it)
            losses.append(step(x, y).clone())
            if sched:
                sched.step()
        return model, opt, losses, step


def differing(a, b, path=""):
    """The paths where two state_dict()s differ (tensors bit for bit, the rest by ==)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        ok = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and a.shape == b.shape and torch.equal(a.cpu(), b.cpu())
        return [] if ok else [path]
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a, key=str) != sorted(b, key=str):
            return [path + " (keys)"]
        out = []
        for k in a:
            out += differing(a[k], b[k], "%s/%s" % (path, k))
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differing(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else [path]


class Cached(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="swapadvisor-api-test.")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)


class TestTrainsLikeEager(Cached):
    """Three steps with a plan at 0.5x (or the lowest fraction that plans) against the
    same loop run eagerly: losses, model and optimizer state_dict()s equal bit for bit."""

    def check(self, case, memories=("0.5x", "0.6x", "0.7x")):
        model0, opt0, losses0 = case.eager()
        for mem in memories:
            try:
                model1, opt1, losses1, step = case.planned(mem, self.cache)
                break
            except PlanError as e:
                self.assertEqual(e.code, 5, str(e))
        else:
            self.fail("no plan at %s" % (memories,))
        c = step.plan.counts
        self.assertGreater(c["swap_in"] + c["recompute"], 0, "the plan moves or recomputes nothing")
        self.assertLessEqual(step.stats["peak_live_bytes"], step.memory_bytes)
        self.assertEqual([float(x) for x in losses1], [float(x) for x in losses0])
        self.assertEqual(differing(model0.state_dict(), model1.state_dict()), [])
        self.assertEqual(differing(opt0.state_dict(), opt1.state_dict()), [])
        # the module's tensors keep their layouts (a transposed parameter stays transposed)
        self.assertEqual({k: v.stride() for k, v in model1.state_dict().items()},
                         {k: v.stride() for k, v in model0.state_dict().items()})
        return step

    def test_gpt_adamw_cosine_bf16_clip(self):
        """nanoGPT's shakespeare-char GPT (bench/torch_models.py's code: tied embedding, its
        65 characters, dropout 0.2) at 2 layers, 128 wide and 64 tokens, with its optimizer
        (AdamW, two groups), warm-up + cosine learning rate set by hand each step, bf16
        autocast and clipping at 1.0. Dropout draws from the global generator in the eager
        loop's order (a recomputed dropout replays its draws). The full size runs in
        TestReadmeExample (docs/torch.md's example): a CPU without bf16 instructions
        emulates them, slowly."""
        case = Case(lambda: torch_models.gpt(2, 64, 128, 4, 2, 65, 0.2), nanogpt_optimizer, set_lr=nanogpt_lr,
                    autocast=torch.bfloat16, clip=1.0)
        case.classes = 65
        step = self.check(case)
        self.assertTrue(any(o["type"] == "adam_update" for o in step.doc["ops"]))

    def test_resnet18_sgd_nesterov_weight_decay(self):
        import torchvision

        def build():
            m = torchvision.models.resnet18(num_classes=10)
            return m, (torch.randn(4, 3, 64, 64),), F.cross_entropy, (torch.zeros(4, dtype=torch.long),)
        case = Case(build, lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                                     weight_decay=5e-4, foreach=False),
                    make_sched=lambda o: torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5))
        self.check(case)

    def test_mobilenet_v2_adam(self):
        import torchvision

        def build():
            m = torchvision.models.mobilenet_v2(num_classes=10)
            return m, (torch.randn(2, 3, 64, 64),), F.cross_entropy, (torch.zeros(2, dtype=torch.long),)
        case = Case(build, lambda m: torch.optim.Adam(m.parameters(), lr=1e-3, foreach=False),
                    make_sched=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 5))
        self.check(case)

    def test_small_cnn_adam_amsgrad_groups(self):
        """Adam with amsgrad, two groups of different learning rates, a frozen bias,
        batch norm, and clipping at 0.5."""
        nn = torch.nn

        def build():
            m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 16, 3),
                              nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
            m[0].bias.requires_grad_(False)
            return m, (torch.randn(4, 3, 16, 16),), F.cross_entropy, (torch.zeros(4, dtype=torch.long),)

        def opt(m):
            first = [m[0].weight] + list(m[1].parameters()) + list(m[3].parameters())
            rest = list(m[4].parameters()) + list(m[8].parameters())
            return torch.optim.Adam([{"params": first, "lr": 1e-2}, {"params": rest}], lr=1e-3, amsgrad=True,
                                    foreach=False)
        self.check(Case(build, opt, clip=0.5))


    def test_non_contiguous_parameters(self):
        """Parameters made as transposed views (not contiguous) train as eagerly, bit for
        bit, and keep their layout (docs/torch.md): the plan's products read them with the
        eager loop's strides (a BLAS may round a transposed product differently, as
        OpenBLAS's Haswell and Zen kernels do)."""
        nn = torch.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w1 = nn.Parameter(torch.randn(64, 8).t())
                self.w2 = nn.Parameter(torch.randn(64, 64).t())
                self.head = nn.Linear(64, 10)

            def forward(self, x):
                return self.head(torch.relu(torch.relu(x @ self.w1) @ self.w2))

        def build():
            m = Net()
            self.assertFalse(m.w1.is_contiguous())
            return m, (torch.randn(32, 8),), F.cross_entropy, (torch.zeros(32, dtype=torch.long),)

        self.check(Case(build, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=False)))


class TestAccumulate(Cached):
    def test_gpt_tiny_three_micro_batches(self):
        """Gradient accumulation over 3 micro-batches (each loss divided by 3, .grad summed by
        backward), AdamW, bf16 autocast and clipping: as the eager loop, bit for bit."""
        k = 3

        def batches(it):
            g = torch.Generator().manual_seed(200 + it)
            return ([torch.randint(0, 97, (2, 16), generator=g) for _ in range(k)],
                    [torch.randint(0, 97, (2, 16), generator=g) for _ in range(k)])

        def fresh():
            torch.manual_seed(0)
            model, ins, loss_fn, tgs = torch_models.gpt_tiny(2)
            return model, ins, loss_fn, tgs, nanogpt_optimizer(model, lr=1e-3)
        model0, _, loss_fn, _, opt0 = fresh()
        losses0 = []
        for it in range(2):
            xs, ys = batches(it)
            total = None
            for x, y in zip(xs, ys):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = loss_fn(model0(x), y) / k
                loss.backward()
                total = loss.detach() if total is None else total + loss.detach()
            torch.nn.utils.clip_grad_norm_(model0.parameters(), 1.0)
            opt0.step()
            opt0.zero_grad(set_to_none=True)
            losses0.append(float(total))
        model1, ins, loss_fn, tgs, opt1 = fresh()
        step = plan_training(model1, loss_fn, ins, tgs, opt1, memory="0.5x", autocast=torch.bfloat16,
                             clip_grad_norm=1.0, accumulate=k, generations=0, cache_dir=self.cache, verbose=False)
        self.assertEqual(sum(1 for o in step.doc["ops"] if o["type"] == "adam_update"),
                         sum(1 for p in model1.parameters() if p.requires_grad))  # the tied head counted once
        losses1 = [float(step(*batches(it))) for it in range(2)]
        self.assertEqual(losses1, losses0)
        self.assertEqual(differing(model0.state_dict(), model1.state_dict()), [])
        self.assertEqual(differing(opt0.state_dict(), opt1.state_dict()), [])
        with self.assertRaises(PlanError) as cm:
            step(ins, tgs)
        self.assertIn("must be a list of 3 micro-batches", str(cm.exception))


def cpu_grad_scaler(**kw):
    """torch.amp.GradScaler on the CPU (torch 2.x), or None where this torch has none."""
    amp = getattr(torch, "amp", None)
    try:
        return amp.GradScaler("cpu", **kw)
    except (AttributeError, TypeError, RuntimeError):
        return None


class TestGradScaler(Cached):
    def test_f16_scaler_skips_and_backs_off(self):
        """float16 autocast with a GradScaler whose first scale overflows the float16
        gradients: the first steps are skipped and the scale backs off, later ones update;
        with clipping after unscale_. Model, optimizer and scaler state_dict()s equal the
        eager loop's (scaler.scale(loss).backward(), unscale_, clip_grad_norm_, step, update)."""
        if cpu_grad_scaler() is None or not _cpu_f16():
            self.skipTest("torch %s has no CPU GradScaler or float16 CPU autocast" % torch.__version__)

        def fresh():
            torch.manual_seed(0)
            model, ins, loss_fn, tgs = torch_models.gpt_tiny(2)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
            return model, ins, loss_fn, tgs, opt, cpu_grad_scaler(init_scale=2.0 ** 18, growth_interval=2)

        def batch(it):
            g = torch.Generator().manual_seed(300 + it)
            return torch.randint(0, 97, (2, 16), generator=g), torch.randint(0, 97, (2, 16), generator=g)
        steps = 6
        model0, _, loss_fn, _, opt0, sc0 = fresh()
        scales0 = []
        for it in range(steps):
            x, y = batch(it)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = loss_fn(model0(x), y)
            sc0.scale(loss).backward()
            sc0.unscale_(opt0)
            torch.nn.utils.clip_grad_norm_(model0.parameters(), 1.0)
            sc0.step(opt0)
            sc0.update()
            opt0.zero_grad(set_to_none=True)
            scales0.append(sc0.get_scale())
        model1, ins, loss_fn, tgs, opt1, sc1 = fresh()
        step = plan_training(model1, loss_fn, ins, tgs, opt1, memory="0.5x", autocast=torch.float16,
                             clip_grad_norm=1.0, grad_scaler=sc1, generations=0, cache_dir=self.cache,
                             verbose=False)
        scales1, skipped = [], []
        for it in range(steps):
            step(*batch(it))
            scales1.append(sc1.get_scale())
            skipped.append(step.skipped)
        self.assertEqual(scales1, scales0)
        self.assertTrue(skipped[0] and not all(skipped), (skipped, scales1))
        self.assertEqual(differing(model0.state_dict(), model1.state_dict()), [])
        self.assertEqual(differing(opt0.state_dict(), opt1.state_dict()), [])
        self.assertEqual(differing(sc0.state_dict(), sc1.state_dict()), [])


def _cpu_f16():
    from swapadvisor.torch import _autocast_works
    return _autocast_works("cpu", torch.float16)


class TestPlanCache(Cached):
    def test_reused_and_replanned(self):
        def build():
            return torch_models.mlp(4, layers=20, width=32)
        case = Case(build, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=False))
        t0 = time.time()
        _, _, _, first = case.planned("0.5x", self.cache)
        t1 = time.time()
        _, _, _, second = case.planned("0.5x", self.cache)
        t2 = time.time()
        self.assertFalse(first.cached)
        self.assertTrue(second.cached, "the same model, memory and profile plan again")
        self.assertEqual(first.plan_path, second.plan_path)
        # a reused plan skips the search: its planning phase is the cache's read
        self.assertLess(second.plan_seconds, first.plan_seconds)
        sys.stderr.write("[plan %.2f s, then %.2f s from the cache; whole call %.2f s, then %.2f s] "
                         % (first.plan_seconds, second.plan_seconds, t1 - t0, t2 - t1))
        _, _, _, other = case.planned("0.6x", self.cache)
        self.assertFalse(other.cached, "another memory plans again")
        _, _, _, prof = case.planned("0.5x", self.cache, profile="h100-sxm5-80gb")
        self.assertFalse(prof.cached, "another profile plans again")
        wider = Case(lambda: torch_models.mlp(4, layers=20, width=48),
                     lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=False))
        _, _, _, changed = wider.planned("0.5x", self.cache)
        self.assertFalse(changed.cached, "another model plans again")
        # a damaged cache entry is planned again and replaced
        with open(first.plan_path, "w") as f:
            f.write('{"format": "swapplan", "version": 1, "nodes": [')
        _, _, _, again = case.planned("0.5x", self.cache)
        self.assertFalse(again.cached)
        _, _, _, fixed = case.planned("0.5x", self.cache)
        self.assertTrue(fixed.cached)


class TestToolAnswers(unittest.TestCase):
    """The tools' answers (--version, part of the plan cache's key; --list-devices) are
    asked once a process per build of the tool: a rebuilt tool is asked again."""

    def test_rebuilt_tool_asked_again(self):
        import swapadvisor.torch as sat
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        exe = os.path.join(d, "swapadvisor-search")

        def write(version, mtime):
            with open(exe, "w") as f:
                f.write("#!/bin/sh\necho 'swapadvisor-search %s'\n" % version)
            os.chmod(exe, 0o755)
            os.utime(exe, (mtime, mtime))

        found = sat._find_tool
        sat._find_tool = lambda name: exe
        self.addCleanup(setattr, sat, "_find_tool", found)
        write("9.1", 1000000000)
        self.assertEqual(sat._search_version(), "swapadvisor-search 9.1")
        self.assertEqual(sat._search_version(), "swapadvisor-search 9.1")
        write("9.20", 1000000100)
        self.assertEqual(sat._search_version(), "swapadvisor-search 9.20")


class TestMemoryArgument(unittest.TestCase):
    def test_numbers_below_16_are_fractions(self):
        import swapadvisor.torch as sat
        self.assertEqual(sat._parse_memory(0.5), "0.5x")
        self.assertEqual(sat._parse_memory(2), "2x")
        self.assertEqual(sat._parse_memory(16), "16")
        self.assertEqual(sat._parse_memory(1 << 30), "1073741824")
        self.assertEqual(sat._parse_memory(" 8GiB "), "8GiB")
        for bad in (0, -1.0, True, "", None):
            with self.assertRaises(PlanError):
                sat._parse_memory(bad)


class TestGpuProfiles(unittest.TestCase):
    def test_every_table_entry_is_bundled(self):
        """The GPU-name table names bundled profiles only, and the names CUDA reports map
        to their own (the table is the one scripts/torch_gpu.py reads too)."""
        import swapadvisor.torch as sat
        bundled = sat._bundled_profiles()
        for _, prof in sat._GPU_PROFILES:
            self.assertIn(prof, bundled)
        for name, prof in (("NVIDIA H200", "h200-sxm-141gb"), ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"),
                           ("NVIDIA H100 PCIe", "h100-pcie-80gb"), ("NVIDIA A100 80GB PCIe", "a100-sxm4-80gb"),
                           ("NVIDIA A100-PCIE-40GB", "a100-pcie4-40gb"), ("Tesla V100-PCIE-16GB", "v100-pcie3-16gb"),
                           ("NVIDIA L4", None), (None, None)):
            self.assertEqual(sat.profile_for_gpu(name), prof, name)
        self.assertEqual(sat.default_profile("cpu"), "v100-pcie3-16gb")


class TestFirstStepCompiles(Cached):
    def test_fake_compile_fails(self):
        """Where the plan cannot be compiled on fake tensors (an op they cannot run), the
        first step runs through the checking interpreter on its real inputs and is
        recorded; the steps after it run the compiled code. Still the eager loop's bits."""
        from swapadvisor import compiled

        def refuse(*args, **kw):
            raise compiled.ExportError("an op fake tensors cannot run (simulated)", 3)
        case = Case(lambda: torch_models.resnet18_32(2),
                    lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, foreach=False))
        model0, opt0, losses0 = case.eager()
        saved = compiled._compile_dry
        compiled._compile_dry = refuse
        try:
            model1, opt1, losses1, step = case.planned("0.5x", self.cache)
        finally:
            compiled._compile_dry = saved
        self.assertIsNotNone(step.prog.first, "the first step compiled the plan")
        self.assertEqual([float(x) for x in losses1], [float(x) for x in losses0])
        self.assertEqual(differing(model0.state_dict(), model1.state_dict()), [])
        self.assertEqual(differing(opt0.state_dict(), opt1.state_dict()), [])


class TestResume(Cached):
    def test_checkpoint_and_resume(self):
        """torch.save of the model's and the optimizer's state_dict() after two planned steps,
        loaded into a fresh model and optimizer, continues as the uninterrupted run does."""
        case = Case(lambda: torch_models.mlp(4, layers=6, width=16),
                    lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, foreach=False), steps=2)
        model, opt, _, step = case.planned("0.5x", self.cache)
        ck = os.path.join(self.cache, "ck.pt")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, ck)
        model2, ins, loss_fn, tgs, opt2, _ = case.fresh()
        sd = torch.load(ck)
        model2.load_state_dict(sd["model"])
        opt2.load_state_dict(sd["opt"])
        x, y = case.data(ins, tgs, 7)
        l1 = step(x, y)
        step2 = plan_training(model2, loss_fn, ins, tgs, opt2, memory="0.5x", generations=0, threads=2,
                              cache_dir=self.cache, verbose=False)
        self.assertTrue(step2.cached)
        l2 = step2(x, y)
        self.assertEqual(float(l1), float(l2))
        self.assertEqual(differing(model.state_dict(), model2.state_dict()), [])
        self.assertEqual(differing(opt.state_dict(), opt2.state_dict()), [])
        # a reload between steps is seen by the next step
        model.load_state_dict(model2.state_dict())
        with torch.no_grad():
            model[0].weight.add_(1.0)
        self.assertNotEqual(float(step(x, y)), float(step2(x, y)))


class TestErrors(Cached):
    def model(self):
        torch.manual_seed(0)
        m, ins, loss_fn, tgs = torch_models.mlp(4, layers=3, width=8)
        return m, ins, loss_fn, tgs

    def test_one_line_errors(self):
        m, ins, loss_fn, tgs = self.model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        cases = [
            (dict(optimizer=torch.optim.RMSprop(m.parameters())), 3, "RMSprop is not supported"),
            (dict(optimizer=opt, memory="1KiB"), 5, ""),
            (dict(optimizer=opt, device="tpu"), 2, "device 'tpu'"),
            (dict(optimizer=opt, autocast=torch.int8), 2, "expected torch.bfloat16 or torch.float16"),
            (dict(optimizer=opt, accumulate=0), 2, "accumulate 0 must be a positive integer"),
            (dict(optimizer=opt, profile="no-such-gpu"), 2, "no bundled device profile"),
            (dict(optimizer=opt, clip_grad_norm=-1), 2, "clip_grad_norm"),
            (dict(optimizer=torch.optim.SGD(list(m.parameters())[:2], lr=0.1)), 3, "in none of the optimizer"),
        ]
        for kw, code, text in cases:
            with self.assertRaises(PlanError) as cm:
                plan_training(m, loss_fn, ins, tgs, cache_dir=self.cache, generations=0, verbose=False, **kw)
            msg = str(cm.exception)
            self.assertEqual(cm.exception.code, code, msg)
            self.assertIn(text, msg)
            self.assertNotIn("\n", msg)

    def test_accumulate_with_batch_norm_refused(self):
        nn = torch.nn
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        with self.assertRaises(PlanError) as cm:
            plan_training(m, F.cross_entropy, torch.randn(2, 3, 8, 8), torch.zeros(2, dtype=torch.long),
                          torch.optim.SGD(m.parameters(), lr=0.1), accumulate=2, generations=0,
                          cache_dir=self.cache, verbose=False)
        self.assertEqual(cm.exception.code, 3)
        self.assertIn("1.running_mean is updated in place twice in one iteration", str(cm.exception))

    def test_wrong_batch_at_step(self):
        m, ins, loss_fn, tgs = self.model()
        step = plan_training(m, loss_fn, ins, tgs, torch.optim.SGD(m.parameters(), lr=0.1), memory="0.7x",
                             generations=0, cache_dir=self.cache, verbose=False)
        with self.assertRaises(PlanError) as cm:
            step(torch.randn(3, ins[0].shape[1]), tgs)
        self.assertIn("the plan was made for [4,", str(cm.exception))
        # a label past the classes: the kernel's refusal, one line naming the plan node
        with self.assertRaises(PlanError) as cm:
            step(ins, torch.full_like(tgs[0], 1000))
        self.assertEqual(cm.exception.code, 3)
        self.assertIn("nodes[", str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))
        self.assertTrue(torch.isfinite(step(ins, tgs)), "a failed step leaves the plan usable")

    def test_cuda_without_gpu(self):
        if torch.cuda.is_available():
            self.skipTest("a CUDA device is present")
        m, ins, loss_fn, tgs = self.model()
        with self.assertRaises(PlanError) as cm:
            plan_training(m, loss_fn, ins, tgs, torch.optim.SGD(m.parameters(), lr=0.1), device="cuda",
                          cache_dir=self.cache, verbose=False)
        self.assertEqual(cm.exception.code, 7)


class TestReadmeExample(unittest.TestCase):
    def test_docs_example_runs(self):
        """docs/torch.md's example, run as written (with its cache in a temporary folder)."""
        self.run_block("docs/torch.md", "```python\n# swapadvisor.torch example")

    def test_readme_example_runs(self):
        """README's example, run as written (the search's defaults)."""
        self.run_block("README.md", "```python\nimport torch, torch.nn as nn")

    def run_block(self, doc, opening):
        with open(os.path.join(ROOT, doc)) as f:
            text = f.read()
        start = text.index(opening) + len("```python\n")
        code = text[start:text.index("```", start)]
        d = tempfile.mkdtemp(prefix="swapadvisor-example.")
        try:
            env = dict(os.environ, SWAPADVISOR_CACHE=d, PYTHONPATH=os.path.join(ROOT, "tools"))
            r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertIn("step 3", r.stdout)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
