#!/usr/bin/env python3
"""A.T @ B: the tutorial matmul with A stored transposed (K x M, M contiguous),
so that its rows along K are not contiguous. bf16: the pipeline copies A whole
into an M-major stage that wgmma reads with its transpose-A bit; tf32 (whose
wgmma reads K-major only): element by element (gathered copies). Side by side
in one session on one GPU:

  tessera         matmul_bench DT:ta, tuned over the kernel's @autotune space
  tessera_unpiped the same kernel at the default tile with num_stages=2: the
                  unpipelined lowering that such operands took before session 20
                  (mma.sync or FMA from shared memory)
  cublas          torch: a.t() @ b on the transposed storage (cuBLAS's TN kernel)

    python3 bench/strided_peers.py --bin build/bin/matmul_bench --commit X --out F
"""
import argparse
import json

import torch

from peer_timing import bracketed, median_ms, write_results

SHAPES = [("bf16", 4096, 4096, 4096), ("f32", 4096, 4096, 4096)]
UNPIPED = "BM=128,BN=128,BK=32,GROUP=8,num_warps=4,num_stages=2"


def cublas_ms(dt, m, n, k):
    dtype = torch.bfloat16 if dt == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = True
    at = torch.randn(k, m, dtype=dtype, device="cuda")  # A stored transposed
    b = torch.randn(k, n, dtype=dtype, device="cuda")
    return median_ms(lambda: at.t() @ b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/matmul_bench")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out", default="bench/results/strided_matmul.json")
    args = ap.parse_args()
    cmd = [args.bin]
    for dt, m, n, k in SHAPES:
        cmd += ["--also", f"{dt}:ta:{m}:{n}:{k}={UNPIPED}"]
    for dt, m, n, k in SHAPES:
        cmd += [f"{dt}:ta", str(m), str(n), str(k)]
    ours, before, after = bracketed(cmd, cublas_ms, SHAPES)
    rows = []
    for (dt, m, n, k), mine, p0, p1 in zip(SHAPES, ours, before, after):
        peer = min(p0, p1)
        row = {"dtype": dt + (" (tf32)" if dt == "f32" else ""), "M": m, "N": n, "K": k,
               "layout": "A transposed (K x M storage), B row-major",
               "tessera_ms": mine["ms"], "tessera_config": mine["config"],
               "tessera_rel_err": mine["rel_err"],
               "tessera_unpipelined_ms": mine.get("also_ms"), "unpipelined_config": UNPIPED,
               "cublas_ms": peer, "cublas_ms_before_after": [p0, p1],
               "tessera_vs_cublas": peer / mine["ms"],
               "vs_unpipelined": mine["also_ms"] / mine["ms"] if mine.get("also_ms") else None,
               "tessera_configs": mine.get("configs", [])}
        rows.append(row)
        print(json.dumps({k2: v for k2, v in row.items() if k2 != "tessera_configs"}))
    write_results(args.out, "strided_matmul", args.commit,
                  "A.T @ B with A's rows along K not contiguous (A stored K x M): bf16 copies A "
                  "whole into an M-major stage read by wgmma's transposed A, tf32 copies it "
                  "element by element (gathered); against the unpipelined lowering those "
                  "operands took before, and cuBLAS's TN matmul. Ratios peer_ms / tessera_ms "
                  "(>1: Tessera faster). No issue target: a measurement.",
                  rows, targets=[])


if __name__ == "__main__":
    main()
