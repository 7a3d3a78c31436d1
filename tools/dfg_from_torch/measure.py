"""--measure: op times from the GPU. Placeholder until implemented below."""

from .errors import NoCuda


def check_cuda():
    import torch
    if not torch.cuda.is_available():
        raise NoCuda("no CUDA device: torch.cuda.is_available() is false (torch %s%s)"
                     % (torch.__version__, ", built without CUDA" if not torch.backends.cuda.is_built() else ""))


def measure(cap, low, doc, note):
    raise NoCuda("--measure is not implemented")
