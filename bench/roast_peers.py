#!/usr/bin/env python3
"""Issue 17's ROAST measurements in one session on one GPU; writes
bench/results/roast.json with a `targets` row for every row of the issue's
speed table and the memory comparison.

    python3 bench/roast_peers.py --bin build/bin/roast_bench --commit $(git rev-parse --short HEAD)

Tessera (bench/roast_bench.cpp, the tessera::roast::Linear layer, tf32, every
kernel tuned by the autotuner in this run):
  * batch 512, square dims 4096 / 8192 / 20480, |M| = 64 MB: the forward with
    RzLinear's mapping and with the aligned one; the training step (forward,
    dX and the atomic dM), the deterministic dM; the step's device memory;
  * batch 32, dim 20480, |M| = 32 MB (fits in L2): the forward.
Peers (written here, no code copied), f32 tensors with TF32 allowed:
  * cuBLAS dense forward `x @ w`, and dense forward + backward as three
    matmuls (`y = x @ w`, `dx = dy @ w.T`, `dw = x.T @ dy`), timed before and
    after Tessera, the faster kept; the dense step's peak memory
    (torch.cuda.max_memory_allocated over w, dw, x, y, dy, dx);
  * HashedNet-style: `x @ M[IDX]` with IDX the same tile hash's K x N index
    map, gathering the weight from M on every call.
Ratios are peer_ms / tessera_ms (> 1: ROAST faster); memory is tessera / dense.

Every timed measurement, ours (roast_bench) and the peers', starts from an idle
GPU (IDLE_S seconds without work): a tf32 kernel that keeps the tensor cores
busy reaches the H200's 700 W cap within a fraction of a second and its clock
drops from 1980 to about 1500 MHz (bench/results/logs/roast_20480_power_session33.log),
so a measurement taken right after other heavy work (our tuning) reads slower
than the same code from idle. The `*_sustained` figures are the same
measurements after SUSTAIN_S seconds of back-to-back calls: the power-capped
state of a long training loop, for the forward and its two forward peers.
"""
import argparse
import json
import subprocess
import time

import torch

from peer_timing import median_ms, write_results

DIMS = [4096, 8192, 20480]
BIG_BATCH, BIG_MEM = 512, 64 * 2**20 // 4      # |M| = 64 MB of f32
SMALL = (32, 20480, 20480)
SMALL_MEM = 32 * 2**20 // 4                    # |M| = 32 MB
P, HK, HN = 45007, 32, 64


IDLE_S, SUSTAIN_S = 1.0, 1.0


def settled_ms(fn, **kw):
    """median_ms from an idle GPU (see the module comment)."""
    torch.cuda.synchronize()
    time.sleep(IDLE_S)
    return median_ms(fn, **kw)


def sustained_ms(fn, **kw):
    """median_ms after SUSTAIN_S seconds of back-to-back calls of fn."""
    fn()
    torch.cuda.synchronize()
    start = time.monotonic()
    while time.monotonic() - start < SUSTAIN_S:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    return median_ms(fn, **kw)


def tf32():
    torch.backends.cuda.matmul.allow_tf32 = True


def dense_fwd_ms(b, k, n, sustained=False):
    tf32()
    x = torch.randn(b, k, device="cuda")
    w = torch.randn(k, n, device="cuda")
    return (sustained_ms if sustained else settled_ms)(lambda: x @ w)


def dense_train_ms(b, k, n):
    tf32()
    x = torch.randn(b, k, device="cuda")
    w = torch.randn(k, n, device="cuda")
    dy = torch.randn(b, n, device="cuda")

    def step():
        x @ w
        dy @ w.T
        x.T @ dy
    return settled_ms(step, iters=10, reps=5)


def dense_peak_bytes(b, k, n):
    """Peak allocated bytes of the dense layer's training step (w, dw, x, y, dy, dx)."""
    tf32()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    x = torch.randn(b, k, device="cuda")
    w = torch.randn(k, n, device="cuda")
    dy = torch.randn(b, n, device="cuda")
    y = x @ w
    dx = dy @ w.T
    dw = x.T @ dy
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del x, w, dy, y, dx, dw
    torch.cuda.empty_cache()
    return peak


def gather_ms(b, k, n, mem_size, sustained=False):
    """HashedNet-style: the weight gathered from M through the tile hash's index map, then a matmul."""
    tf32()
    g = torch.Generator().manual_seed(5)
    r = [P] + torch.randint(0, P, (7,), generator=g).tolist()
    kk = torch.arange(k, device="cuda", dtype=torch.int64)
    nn = torch.arange(n, device="cuda", dtype=torch.int64)
    kb, nb = (kk // HK)[:, None], (nn // HN)[None, :]
    hi = (kb * r[3] + nb * r[2] + r[1]) % P
    lo = (kb * r[7] + nb * r[5] + r[4]) % P
    idx = (hi * P + lo) % (mem_size - HK * HN)
    del hi, lo
    idx += (kk % HK)[:, None] * HN + (nn % HN)[None, :]
    m = torch.rand(mem_size, device="cuda")
    x = torch.randn(b, k, device="cuda")
    ms = (sustained_ms if sustained else settled_ms)(lambda: x @ m[idx], iters=5, reps=5)
    del idx, m, x
    torch.cuda.empty_cache()
    return ms


def run_bench(binary, args):
    out = subprocess.run([binary] + [str(a) for a in args], check=True, capture_output=True,
                         text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def target(name, measured, goal, better):
    met = measured >= goal if better == "higher" else measured <= goal
    return {"name": name, "measured": round(measured, 4), "target": goal, "better": better,
            "met": bool(met)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/roast_bench")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out", default="bench/results/roast.json")
    args = ap.parse_args()
    big = [(BIG_BATCH, d, d) for d in DIMS]
    before = {s: (dense_fwd_ms(*s), dense_train_ms(*s)) for s in big}
    before[SMALL] = (dense_fwd_ms(*SMALL), None)
    ours = run_bench(args.bin, ["--mem-elems", BIG_MEM, "--train"] + [v for s in big for v in s])
    ours += run_bench(args.bin, ["--mem-elems", SMALL_MEM] + list(SMALL))
    after = {s: (dense_fwd_ms(*s), dense_train_ms(*s)) for s in big}
    after[SMALL] = (dense_fwd_ms(*SMALL), None)
    gathers = {s: gather_ms(*s, BIG_MEM) for s in big}
    dense_sustained = {s: dense_fwd_ms(*s, sustained=True) for s in big + [SMALL]}
    gathers_sustained = {s: gather_ms(*s, BIG_MEM, sustained=True) for s in big}
    dense_peak = {s: dense_peak_bytes(*s) for s in big}

    rows, targets = [], []
    for mine in ours:
        s = (mine["B"], mine["K"], mine["N"])
        m = mine["mapping"]
        row = dict(mine)
        fwd_peer = min(before[s][0], after[s][0])
        row["cublas_tf32_dense_ms"] = fwd_peer
        row["cublas_tf32_dense_ms_before_after"] = [before[s][0], after[s][0]]
        row["fwd_vs_cublas_dense"] = fwd_peer / mine["fwd_ms"]
        row["cublas_tf32_dense_ms_sustained"] = dense_sustained[s]
        row["fwd_vs_cublas_dense_sustained"] = dense_sustained[s] / mine["fwd_ms_sustained"]
        shape = "%dx%dx%d" % s
        if s == SMALL:
            targets.append(target("small batch: roast forward %s mapping, %s, |M| = 32 MB, vs cuBLAS "
                                  "dense tf32 (x faster)" % (m, shape), row["fwd_vs_cublas_dense"],
                                  2.0, "higher"))
        else:
            goal = 0.9 if m == "aligned" else 0.8
            targets.append(target("roast forward %s mapping, %s, |M| = 64 MB, vs cuBLAS dense tf32"
                                  % (m, shape), row["fwd_vs_cublas_dense"], goal, "higher"))
            train_peer = min(before[s][1], after[s][1])
            row["cublas_tf32_dense_train_ms"] = train_peer
            row["cublas_tf32_dense_train_ms_before_after"] = [before[s][1], after[s][1]]
            row["train_vs_cublas_dense"] = train_peer / mine["train_ms"]
            targets.append(target("roast forward + dX + dM (atomic) %s mapping, %s, vs cuBLAS dense "
                                  "forward + backward (three matmuls)" % (m, shape),
                                  row["train_vs_cublas_dense"], 0.75, "higher"))
            row["hashednet_gather_ms"] = gathers[s]
            row["fwd_vs_hashednet_gather"] = gathers[s] / mine["fwd_ms"]
            row["hashednet_gather_ms_sustained"] = gathers_sustained[s]
            row["fwd_vs_hashednet_gather_sustained"] = gathers_sustained[s] / mine["fwd_ms_sustained"]
            targets.append(target("roast forward %s mapping, %s, vs HashedNet-style torch gather "
                                  "x @ M[IDX] (x faster)" % (m, shape),
                                  row["fwd_vs_hashednet_gather"], 3.0, "higher"))
            row["dense_train_peak_bytes"] = dense_peak[s]
            row["peak_vs_dense"] = mine["peak_bytes"] / dense_peak[s]
            if m == "rzlinear":  # the same bytes for both mappings
                targets.append(target("training-step device memory, roast / dense layer, %s "
                                      "(|M| + dM + activations vs W + dW + activations; issue 17 asks "
                                      "for the figure, the target is no more than dense)" % shape,
                                      row["peak_vs_dense"], 1.0, "lower"))
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "configs"}))
    write_results(args.out, "roast", args.commit,
                  ("Issue 17. tessera::roast::Linear (kernels_dsl/roast/), f32 on tf32 tensor cores, "
                   "RzLinear's mapping and the aligned one, hash tile 32x64, every kernel's config "
                   "picked by the autotuner in this run (the `configs` of each row). Batch 512 at "
                   "dims 4096/8192/20480 with |M| = 64 MB: forward, training step (forward + dX + "
                   "atomic dM), deterministic dM (wave schedule), device memory of the step (Tessera: "
                   "the bytes of M, dM, X, Y, dY, dX and the layer's own buffers; dense: torch's "
                   "max_memory_allocated over w, dw, x, y, dy, dx). Batch 32 at dim 20480 with "
                   "|M| = 32 MB: forward. Peers in the same run: cuBLAS dense tf32 (before and "
                   "after Tessera, the faster kept), dense forward + backward as three matmuls, "
                   "HashedNet-style x @ M[IDX]. Ratios are peer_ms / tessera_ms. Every "
                   "timed measurement, ours and the peers', starts after 1 s with the GPU idle; "
                   "the targets use those. The *_sustained figures (forward, dense forward, "
                   "gather) follow 1 s of back-to-back calls instead: the GPU then runs at its "
                   "700 W power cap and the clocks drop (bench/results/logs/"
                   "roast_20480_power_session33.log)."),
                  rows, targets)


if __name__ == "__main__":
    main()
