#!/usr/bin/env python3
"""Writes a copy of a `tessera autotune export` file whose last entry is
invalid (its record's date is not an ISO 8601 time), so that `import` must
reject the whole file although the entries before it are valid.

usage: break_tuning_export.py EXPORT OUT
"""
import json
import sys

with open(sys.argv[1]) as f:
    doc = json.load(f)
doc["entries"][-1]["record"]["date"] = "yesterday"
with open(sys.argv[2], "w") as f:
    json.dump(doc, f, indent=2)
