#!/usr/bin/env python3
"""Issue 15's row-operation targets in one session on one GPU: cumsum, sort
and topk(k=8) on 4096 rows of 1024 f32, Tessera (bench/row_ops_bench.cpp,
one program a row) against torch.cumsum, torch.sort and torch.topk along the
rows, in the same run. Writes bench/results/tutorials.json, whose other rows
(the tutorial ports) are not measured yet.

    python3 bench/row_ops_peers.py --bin build/bin/row_ops_bench --commit $(git rev-parse --short HEAD)
"""
import argparse
import json
import subprocess

import torch

from peer_timing import median_ms, write_results

ROWS, N, K = 4096, 1024, 8


def torch_ms():
    x = torch.rand(ROWS, N, device="cuda") * 2 - 1
    return {"cumsum": median_ms(lambda: torch.cumsum(x, dim=1)),
            "sort": median_ms(lambda: torch.sort(x, dim=1)),
            "topk": median_ms(lambda: torch.topk(x, K, dim=1))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/row_ops_bench")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out", default="bench/results/tutorials.json")
    args = ap.parse_args()
    before = torch_ms()
    ours = {}
    for warps in (4, 8):
        out = subprocess.run([args.bin, str(warps)], check=True, capture_output=True, text=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        ours[warps] = row
    after = torch_ms()
    peers = {op: min(before[op], after[op]) for op in before}
    rows, targets = [], []
    for op in ("cumsum", "sort", "topk"):
        best = min(ours, key=lambda w: ours[w][op + "_ms"])
        ms = ours[best][op + "_ms"]
        row = {"op": op, "rows": ROWS, "n": N, "tessera_ms": ms, "num_warps": best,
               "tessera_ms_by_warps": {str(w): ours[w][op + "_ms"] for w in ours},
               "check_err": ours[best][op + "_err"], "torch_ms": peers[op],
               "torch_ms_before_after": [before[op], after[op]], "speedup": peers[op] / ms}
        rows.append(row)
        label = f"topk(k={K})" if op == "topk" else op
        targets.append({"name": f"{label} on {ROWS} rows of {N} f32 vs torch.{op} (torch_ms / tessera_ms)",
                        "measured": round(peers[op] / ms, 4), "target": 1.0, "better": "higher",
                        "met": peers[op] / ms >= 1.0})
    note = ("Issue 15. Only the row-operation rows so far; the tutorial ports are not measured yet. "
            "Tessera: one program per row, cumsum (Hillis-Steele), sort and topk (bitonic network) "
            "through shared memory, the better of 4 and 8 warps; results checked against the CPU on 64 rows. "
            "torch before and after, the faster kept. L2 warm for both (32 MB of data).")
    write_results(args.out, "tutorials", args.commit, note, rows, targets)


if __name__ == "__main__":
    main()
