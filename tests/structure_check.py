#!/usr/bin/env python3
"""Checks the layering rules of the source tree (docs/architecture.md, "Layers").

  - the public API (include/tessera/) includes only itself and the standard library;
  - compiler/transforms/ and compiler/lowering/ do not include each other;
  - runtime/ includes only public headers, its own headers and the dialects
    (never the compiler's internals), and compiler/ includes nothing of runtime/;
  - no file of compiler/lowering/ compares a target name as a string ("sm_90a"):
    the lowering asks Target (include/tessera/CompileOptions.h);
  - num_warps is validated in one place (CompileOptions::validate);
  - autotune/ includes only public headers, its own headers and the runtime's
    SHA-256 and file helpers (runtime/Sha256.h, FileUtil.h), never MLIR, LLVM or the compiler's internals;
  - no function in compiler/, runtime/ or autotune/ is longer than 200 lines
    (tests/function_lengths.py);
  - the layer APIs in kernels_dsl/ include only public headers and their own.

Prints each violation as file:line: message and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = ('.cpp', '.h')


def files_under(*dirs):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(ROOT, d)):
            for n in sorted(names):
                if n.endswith(SOURCES):
                    yield os.path.join(base, n)


def includes(path):
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield lineno, m.group(1), m.group(2)


def rel(path):
    return os.path.relpath(path, ROOT)


def main():
    problems = []

    def bad(path, lineno, msg):
        problems.append(f'{rel(path)}:{lineno}: {msg}')

    # The public API is self-contained.
    for p in files_under('include'):
        for ln, kind, inc in includes(p):
            if kind == '"' and not inc.startswith('tessera/'):
                bad(p, ln, f'public header includes "{inc}" (only tessera/ and <std>)')

    # transforms/ and lowering/ are independent; both may use analysis/.
    for p in files_under('compiler/transforms'):
        for ln, _, inc in includes(p):
            if inc.startswith('lowering/') or inc in ('KernelLowering.h', 'DotLoopEmitter.h'):
                bad(p, ln, f'transforms/ includes the lowering ("{inc}")')
    for p in files_under('compiler/lowering'):
        for ln, _, inc in includes(p):
            if inc.startswith('transforms/'):
                bad(p, ln, f'lowering/ includes transforms/ ("{inc}")')

    # runtime/ sees only the public API, its own headers and the dialects.
    runtime_headers = {os.path.relpath(p, os.path.join(ROOT, 'runtime'))
                       for p in files_under('runtime') if p.endswith('.h')}
    runtime_headers |= {os.path.basename(h) for h in runtime_headers}
    compiler_headers = {os.path.relpath(p, os.path.join(ROOT, 'compiler'))
                        for p in files_under('compiler') if p.endswith('.h')}
    compiler_headers |= {os.path.basename(h) for h in compiler_headers}
    for p in files_under('runtime'):
        for ln, kind, inc in includes(p):
            if kind != '"':
                continue
            ok = (inc.startswith('tessera/') or inc in runtime_headers or
                  inc.startswith(('tile/', 'tilegpu/', 'mlir/', 'llvm/')))
            if not ok or inc in compiler_headers - runtime_headers:
                bad(p, ln, f'runtime/ includes "{inc}" (public headers, its own, dialects only)')
    for p in files_under('compiler'):
        for ln, kind, inc in includes(p):
            if kind == '"' and inc in runtime_headers and inc not in compiler_headers \
                    and not inc.startswith('tessera/'):
                bad(p, ln, f'compiler/ includes the runtime internal "{inc}"')

    # autotune/ sees the public API, its own headers and the runtime's SHA-256.
    autotune_headers = {os.path.basename(p) for p in files_under('autotune') if p.endswith('.h')}
    for p in files_under('autotune'):
        for ln, kind, inc in includes(p):
            if kind == '"' and not (inc.startswith('tessera/') or inc in autotune_headers
                                    or inc in ('Sha256.h', 'FileUtil.h')):
                bad(p, ln, f'autotune/ includes "{inc}" (public headers, its own, Sha256.h and FileUtil.h only)')
            if kind == '<' and inc.startswith(('mlir/', 'llvm/')):
                bad(p, ln, f'autotune/ includes <{inc}> (no MLIR/LLVM: it builds with exceptions)')

    # The layer APIs (kernels_dsl/*/) are users of the public API, nothing more.
    layer_headers = {os.path.basename(p) for p in files_under('kernels_dsl') if p.endswith('.h')}
    for p in files_under('kernels_dsl'):
        for ln, kind, inc in includes(p):
            if kind == '"' and not (inc.startswith('tessera/') or inc in layer_headers):
                bad(p, ln, f'kernels_dsl/ includes "{inc}" (public headers and its own only)')
            if kind == '<' and inc.startswith(('mlir/', 'llvm/')):
                bad(p, ln, f'kernels_dsl/ includes <{inc}> (the layer APIs use the public API only)')

    # Targets are Target values in the lowering, never strings.
    for p in files_under('compiler/lowering', 'compiler/analysis', 'compiler/transforms'):
        with open(p, encoding='utf-8') as f:
            for ln, line in enumerate(f, 1):
                code = line.split('//')[0]
                if re.search(r'[=!]=\s*"sm_\d|"sm_\d+[af]?"\s*[=!]=|compare\("sm_', code):
                    bad(p, ln, 'target compared as a string (use Target)')

    # One validation of num_warps.
    sites = []
    for p in files_under('compiler', 'runtime', 'include'):
        with open(p, encoding='utf-8') as f:
            for ln, line in enumerate(f, 1):
                code = line.split('//')[0]
                if re.search(r'num_?[wW]arps[^\n]*power of two|power of two[^\n]*warps', code) \
                        and '"' in code:
                    sites.append((p, ln))
    if len(sites) != 1 or not sites[0][0].endswith('CompileOptions.cpp'):
        for p, ln in sites:
            bad(p, ln, 'num_warps validated here; the one site is CompileOptions::validate()')
        if not sites:
            problems.append('compiler/driver/CompileOptions.cpp: the num_warps check is missing')

    # Function lengths.
    r = subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'function_lengths.py'),
                        '--max', '200', 'compiler', 'runtime', 'autotune', 'kernels_dsl'],
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        problems.extend(l for l in r.stdout.splitlines() if l.strip())
        if r.stderr.strip():
            problems.append(r.stderr.strip())

    for line in problems:
        print(line)
    print(f'structure_check: {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
