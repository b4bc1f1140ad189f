"""Triton's per-element `tl.rand` dropout (the low-memory dropout tutorial's
kernel, written here from its description) and a device-to-device copy of the
same bytes, timed by torch in one process: the peer figure beside Tessera's
dropout row in tutorials.json. None when Triton is not installed."""
import torch

from peer_timing import median_ms

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton:
    @triton.jit
    def _dropout(x_ptr, out_ptr, n_elements, p, seed, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        keep = tl.rand(seed, offsets) > p
        tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def triton_dropout_ms(n=1 << 26, block=1024):
    if not triton:
        return None
    x = torch.rand(n, device="cuda") * 2 - 1
    y = torch.empty_like(x)
    grid = (triton.cdiv(n, block),)
    return {"triton_version": triton.__version__,
            "triton_dropout_ms": median_ms(lambda: _dropout[grid](x, y, n, 0.5, 1234, BLOCK=block)),
            "torch_copy_ms": median_ms(lambda: y.copy_(x))}
