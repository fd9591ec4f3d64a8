"""What the GPU scripts of tests/python share: torch with a CUDA device, or exit 77 (ctest's
skipped) saying which is missing."""
import sys


def torch_with_cuda():
    try:
        import torch
    except ImportError:
        print("torch is not importable: skipped")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("torch sees no CUDA device: skipped")
        sys.exit(77)
    return torch
