"""Shared by the peer scripts (peers.py, roast_peers.py, ...): event timing of a
torch callable, a benchmark run bracketed by peer timings, and the results file
with device, date and commit."""
import datetime
import json
import os
import subprocess

import torch


def median_ms(fn, iters=20, reps=7):
    """Median over `reps` of the mean time of `iters` calls, in ms, after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return sorted(times)[len(times) // 2]


def loaded_cublas():
    """The path of the libcublas that torch.matmul calls (read from this process's
    mappings after a matmul), for benchmarks that time cuBLAS beside our kernels in
    alternation (bench/CublasPeer.h reads it from TESSERA_BENCH_CUBLAS)."""
    x = torch.ones(16, 16, device="cuda", dtype=torch.float16)
    torch.matmul(x, x)
    torch.cuda.synchronize()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libcublas.so"):
                return path
    return None


def bracketed(cmd, peer, cases):
    """Runs `cmd` (a benchmark printing one JSON object a line) between two timings of
    `peer(*case)` for every case. The GPU's clocks drift over a run (cuBLAS at 8192^3 bf16
    measured 1.39 to 1.62 ms in different runs), so callers keep the faster of the two
    peer times, which can only understate our ratio. Returns (ours, before, after)."""
    before = [peer(*c) for c in cases]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    ours = [json.loads(line) for line in out.splitlines() if line.strip()]
    after = [peer(*c) for c in cases]
    return ours, before, after


def write_results(path, benchmark, commit, note, rows, targets=None):
    """Writes the results file; `targets` (the issue's target rows) are also printed."""
    result = {"benchmark": benchmark, "device": torch.cuda.get_device_name(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "commit": commit, "torch": torch.__version__, "note": note, "rows": rows}
    if targets is not None:
        result["targets"] = targets
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    for t in targets or []:
        print(json.dumps(t))
    print("wrote", path)
