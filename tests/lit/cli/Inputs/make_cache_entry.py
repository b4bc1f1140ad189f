#!/usr/bin/env python3
"""Writes kernel-cache entry files in the format of include/tessera/KernelCache.h,
so that `tessera cache` can be tested without a GPU (only the JIT on a GPU fills the cache).

  make_cache_entry.py DIR KERNEL TARGET [--corrupt]

prints the path written. --corrupt flips a payload byte (checksum mismatch).
"""
import hashlib
import json
import os
import struct
import sys
import time

directory, kernel, target = sys.argv[1:4]
corrupt = "--corrupt" in sys.argv[4:]
key = hashlib.sha256(f"{kernel}/{target}/{corrupt}".encode()).hexdigest()
meta = json.dumps({
    "key": key, "kernel": kernel,
    "signature": {"name": kernel, "params": [{"name": "X", "type": "*f32"}, {"name": "n", "type": "i32"}],
                  "constexprs": {"BLOCK": "1024"}},
    "target": target, "format": "ptx", "shared_memory_bytes": 0, "num_warps": 4,
    "created": int(time.time())}, separators=(",", ":")).encode()
payload = f"// PTX of {kernel} for {target}\n".encode()
digest = hashlib.sha256(meta + payload).digest()
data = b"TSRC" + struct.pack("<IIQ", 1, len(meta), len(payload)) + digest + meta + payload
if corrupt:
    data = data[:-2] + bytes([data[-2] ^ 1]) + data[-1:]
os.makedirs(directory, exist_ok=True)
path = os.path.join(directory, key + ".tsrc")
with open(path, "wb") as f:
    f.write(data)
print(path)
