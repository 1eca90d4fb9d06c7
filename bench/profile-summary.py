#!/usr/bin/env python3
"""Summarises async-profiler's collapsed stacks (one "frame;frame;... count" line each, plain or .gz).

    bench/profile-summary.py FILE                 # the 25 hottest leaf frames (self time)
    bench/profile-summary.py FILE ROOT [DEPTH]    # the tree under the first frame ending in ROOT

Frames are shortened: lambda and LambdaForm class names lose their addresses. Percentages are of the
file's samples (self) or of ROOT's samples (tree); branches under 1 % are left out.
How the profiles were taken: docs/BENCHMARKS.md, "Where a small message's time goes".
"""
import collections
import gzip
import re
import sys


def frames(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            stack, n = line.rstrip().rsplit(" ", 1)
            yield [norm(x) for x in stack.split(";")], int(n)


def norm(frame):
    frame = re.sub(r"\$\$Lambda[/.0-9a-fx]*", "$$Lambda", frame)
    frame = re.sub(r"LambdaForm\$[A-Z]+[/.]0x[0-9a-f]+", "LambdaForm", frame)
    return re.sub(r"0x[0-9a-f]{6,}", "X", frame)


def leaves(path):
    counts, total = collections.Counter(), 0
    for fr, n in frames(path):
        counts[fr[-1]] += n
        total += n
    print(f"{path}: {total} samples; hottest frames (self)")
    for frame, n in counts.most_common(25):
        print(f"{100 * n / total:6.2f}% {frame}")


def tree(path, root, depth):
    nodes, total = {}, 0
    for fr, n in frames(path):
        at = next((i for i, f in enumerate(fr) if f.endswith(root)), None)
        if at is None:
            continue
        total += n
        node = nodes
        for f in fr[at + 1 : at + 1 + depth]:
            entry = node.setdefault(f, [0, {}])
            entry[0] += n
            node = entry[1]
    print(f"{path}: {total} samples under {root}")

    def show(node, indent):
        for f, (n, children) in sorted(node.items(), key=lambda e: -e[1][0]):
            if total and 100 * n / total >= 1.0:
                print(f"{'  ' * indent}{100 * n / total:5.1f}% {f}")
                show(children, indent + 1)

    show(nodes, 0)


if __name__ == "__main__":
    if len(sys.argv) == 2:
        leaves(sys.argv[1])
    elif len(sys.argv) in (3, 4):
        tree(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 6)
    else:
        sys.exit(__doc__)
