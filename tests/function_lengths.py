#!/usr/bin/env python3
"""Lists the C++ functions whose bodies are longer than a limit.

    tests/function_lengths.py [--max N] [--top K] [--self-test] [DIR_OR_FILE ...]

Scans *.cpp/*.cc/*.cxx/*.h/*.hpp/*.hh/*.cu under the given directories (default:
compiler/ and runtime/ of this repository) and prints, for every function
longer than N lines (default 200),

    path:line: LENGTH lines: NAME

where `line` is the first line of the function's declarator (its return type or
`template` line) and LENGTH counts the lines from there to the closing brace,
inclusive. Exits 1 if any function is listed, 0 otherwise. `--top K` also
prints the K longest functions whatever their length (for information; it does
not change the exit status).

It is a heuristic, not a parser: comments, string, raw-string and character
literals and preprocessor lines are blanked first; then braces are matched.
A `{` at namespace or class scope opens a function body when the text before it
ends like a function declarator (`)`, a qualifier such as `const`/`noexcept`/
`override`, a trailing return type, or a constructor's initializer list).
Everything inside a function body -- lambdas, local classes, nested blocks --
counts towards that (outermost) function.
"""

import argparse
import os
import re
import sys

EXTS = ('.cpp', '.cc', '.cxx', '.h', '.hpp', '.hh', '.cu')
QUALIFIERS = {'const', 'noexcept', 'override', 'final', 'mutable', 'volatile', 'try', '&', '&&'}
CONTROL = {'if', 'for', 'while', 'switch', 'catch', 'sizeof', 'alignof', 'decltype',
           'return', 'alignas', 'static_assert'}
IDENT = re.compile(r'[A-Za-z_]\w*')


def blank(text):
    """Replaces comments, literals and preprocessor lines by spaces, keeping
    newlines (and so line numbers). String literals become `""`, character
    literals `' '`."""
    out = []
    i, n = 0, len(text)
    at_line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == '\n':
            out.append(c)
            at_line_start = True
            i += 1
            continue
        if at_line_start and c == '#':  # preprocessor line, with continuations
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                if text[i:i + 2] == '/*':  # a block comment may run past the line
                    end = text.find('*/', i + 2)
                    end = n if end < 0 else end + 2
                    out.append(re.sub(r'[^\n]', ' ', text[i:end]))
                    i = end
                    continue
                out.append(' ')
                i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
            continue
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
            continue
        if c == '"':
            # Raw string: R"delim( ... )delim", with an optional u8/u/U/L prefix.
            m = re.search(r'(?:^|[^\w])(?:u8|u|U|L)?R$', text[max(0, i - 3):i])
            if m:
                m2 = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
                if m2:
                    close = ')' + m2.group(1) + '"'
                    end = text.find(close, i + len(m2.group(0)))
                    end = n if end < 0 else end + len(close)
                    body = text[i:end]
                    out.append('"' + re.sub(r'[^\n]', ' ', body[1:-1]) + '"' if len(body) >= 2 else body)
                    i = end
                    continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append('""' + ' ' * max(0, min(j, n - 1) - i - 1))
            i = j + 1
            continue
        if c == "'":
            # A digit separator (1'000'000) is not a character literal.
            k = i
            while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_'."):
                k -= 1
            if k < i and text[k].isdigit():
                out.append(' ')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append("' '" + ' ' * max(0, min(j, n - 1) - i - 2))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return ''.join(out)


def match_brace(s, i):
    """The index of the `}` that closes the `{` at `i` (or len(s))."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def strip_templates_args(head):
    """Removes balanced <...> groups (best effort; `a < b` can confuse it)."""
    prev = None
    while prev != head:
        prev = head
        head = re.sub(r'<[^<>(){};]*>', ' ', head)
    return head


def tokens_before(head):
    return re.findall(r'->|&&|::|[A-Za-z_]\w*|\d\w*|\S', head)


def matching_open_paren(head, close):
    depth = 0
    for k in range(close, -1, -1):
        if head[k] == ')':
            depth += 1
        elif head[k] == '(':
            depth -= 1
            if depth == 0:
                return k
    return -1


def classify(head):
    """'function', 'container' (namespace, class, extern "C") or 'other'."""
    h = head.strip()
    if not h:
        return 'other'
    if re.match(r'^(inline\s+)?namespace\b', h) or re.match(r'^extern\s*""$', h):
        return 'container'
    bare = strip_templates_args(h)
    toks = tokens_before(bare)
    if not toks:
        return 'other'
    last = toks[-1]
    is_type_head = re.match(r'^(template\s*)?(\[\[[^\]]*\]\]\s*)*(class|struct|union|enum)\b',
                            bare.lstrip()) is not None
    if last == ')':
        k = matching_open_paren(h, len(h) - 1)
        before = h[:k].rstrip() if k >= 0 else ''
        w = re.search(r'([A-Za-z_]\w*)$', before)
        if w and w.group(1) in CONTROL:
            return 'other'
        if before.endswith('=') or before.endswith(','):
            return 'other'  # an initializer, e.g. `x = (a) {`?
        if is_type_head and not re.search(r'\)\s*$', bare):
            return 'container'
        return 'function'
    if last in QUALIFIERS:
        return 'function'
    # A trailing return type: `auto f(...) -> T {`.
    if '->' in toks:
        before = toks[:len(toks) - 1 - toks[::-1].index('->')]
        if before and before[-1] in QUALIFIERS | {')'}:
            return 'function'
    # A constructor whose initializer list ends with a braced member: `: a_{1} {`.
    if last == '}' and re.search(r'\)\s*(noexcept\s*)?:(?!:)', h):
        return 'function'
    if is_type_head:
        return 'container'
    return 'other'


def function_name(head):
    h = re.sub(r'\s+', ' ', head.strip())
    # The declarator's parameter list is the first `(` preceded by a name.
    for m in re.finditer(r'\(', h):
        before = h[:m.start()].rstrip()
        w = re.search(r'((?:[A-Za-z_~][\w]*\s*(?:<[^()]*>)?\s*::\s*)*~?[A-Za-z_]\w*'
                      r'|operator\s*(?:\(\)|[^\s(]+))$', before)
        if w and w.group(1) not in CONTROL and not w.group(1).startswith(('alignas', '__attribute__')):
            name = re.sub(r'\s+', '', w.group(1))
            if name.endswith('operator') and h[m.start():m.start() + 2] == '()':
                name += '()'
            return name
        if before.endswith(']'):
            v = re.search(r'([A-Za-z_]\w*)\s*=\s*\[[^\]]*\]$', before)
            return (v.group(1) + ' (lambda)') if v else '(lambda)'
    return h[:60]


def scan(text):
    """Yields (first_line, last_line, name) for each function body in `text`."""
    s = blank(text)
    line_of = []
    line = 1
    for ch in s:
        line_of.append(line)
        if ch == '\n':
            line += 1
    n = len(s)
    stack = []          # kinds of the enclosing braces at container scope
    head_start = 0      # where the current declaration's text begins
    i = 0
    paren = 0
    while i < n:
        c = s[i]
        if c == '(':
            paren += 1
        elif c == ')':
            paren = max(0, paren - 1)
        elif c == ';' and paren == 0:
            head_start = i + 1
        elif c == '{':
            if paren > 0:  # a braced default argument or initializer inside (...)
                i = match_brace(s, i) + 1
                continue
            head = s[head_start:i]
            # Access specifiers and labels (`public:`) are not part of a head.
            head_stripped = re.sub(r'^\s*(public|private|protected)\s*:(?!:)', ' ', head)
            offset = len(head) - len(head_stripped)
            kind = classify(head_stripped)
            if kind == 'function':
                end = match_brace(s, i)
                first = head_start + offset + (len(head_stripped) - len(head_stripped.lstrip()))
                yield (line_of[first], line_of[min(end, n - 1)], function_name(head_stripped))
                i = end + 1
                head_start = i
                continue
            if kind == 'container':
                stack.append(i)
                head_start = i + 1
            else:  # an initializer or enum body: skip it, the declaration goes on
                i = match_brace(s, i) + 1
                continue
        elif c == '}':
            if stack:
                stack.pop()
            head_start = i + 1
        i += 1


SELF_TEST = r"""#include <x>
#define M(a) { a }
namespace a::b {
// comment with { brace
/* block { */
struct S : Base<int> {
  S() : x_{1}, y_(2) {
    auto l = [&](int q) { return q; };
  }
  int f() const { return '{'; }
public:
  auto g(int a) -> int {
    const char *s = "}}}";
    const char *r = R"xx(}} " )xx";
    int n = 1'000'000;
    return n;
  }
  enum class E : int { A, B };
  int arr[3] = {1, 2, 3};
};
template <class T>
T h(std::vector<int> v = {1, 2}) noexcept {
  if (x) { y(); }
  struct Local { void m() { } };
  return T{};
}
extern "C" {
int c_fn(void) {
  return 0;
}
}
static const std::map<int, int> kTable = {{1, 2}, {3, 4}};
bool Foo::operator()(int x) const {
  return true;
}
Foo::~Foo() {
}
}
int last() { return 1; }
"""
SELF_TEST_EXPECTED = [(7, 9, 'S'), (10, 10, 'f'), (12, 17, 'g'), (21, 26, 'h'), (28, 30, 'c_fn'),
                      (33, 35, 'Foo::operator()'), (36, 37, 'Foo::~Foo'), (39, 39, 'last')]


def self_test():
    got = list(scan(SELF_TEST))
    if got != SELF_TEST_EXPECTED:
        print('self-test failed:\n  got      %s\n  expected %s' % (got, SELF_TEST_EXPECTED))
        return 1
    print('self-test passed')
    return 0


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith('.') and d != 'build')
            for f in sorted(files):
                if f.endswith(EXTS):
                    yield os.path.join(root, f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('paths', nargs='*', help='directories or files (default: compiler runtime)')
    ap.add_argument('--max', type=int, default=200, help='longest allowed function (lines)')
    ap.add_argument('--top', type=int, default=0, help='also list the K longest functions')
    ap.add_argument('--self-test', action='store_true', help='check the scanner on a built-in sample')
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    paths = args.paths
    if not paths:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        paths = [os.path.relpath(os.path.join(root, d)) for d in ('compiler', 'runtime')]
    found = []
    for path in source_files(paths):
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        for first, last, name in scan(text):
            found.append((path, first, last - first + 1, name))
    if args.top:
        print('The %d longest functions:' % args.top)
        for path, first, length, name in sorted(found, key=lambda r: -r[2])[:args.top]:
            print('  %s:%d: %d lines: %s' % (path, first, length, name))
    long_ones = [r for r in found if r[2] > args.max]
    for path, first, length, name in long_ones:
        print('%s:%d: %d lines: %s' % (path, first, length, name))
    if long_ones:
        print('%d function(s) longer than %d lines (of %d scanned)' % (len(long_ones), args.max, len(found)))
        return 1
    print('no function longer than %d lines (%d scanned)' % (args.max, len(found)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
