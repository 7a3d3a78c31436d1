#!/usr/bin/env python3
"""Finds code written twice in lib/, cmd/ and tools/: a run of N (default 12)
consecutive significant lines (not blank, not a lone brace, not a comment)
that occurs again, in the same file or another, after whitespace is
normalised.  Such a run belongs in one helper that both places call.
--check exits 1 when there is one.
Usage: scripts/duplicates.py [--check] [N]"""
import glob, re, sys

args = [a for a in sys.argv[1:] if a != "--check"]
check = "--check" in sys.argv[1:]
n = int(args[0]) if args else 12
paths = sorted(glob.glob("lib/**/*.[ch]", recursive=True) + glob.glob("lib/**/*.cu", recursive=True)
               + glob.glob("cmd/**/*.[ch]", recursive=True) + glob.glob("tools/**/*.py", recursive=True))
seen = {}
found = []
for path in paths:
    sig = []  # (normalised text, line number)
    in_comment = False
    for ln, raw in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        s = raw.strip()
        if in_comment:
            if "*/" in s:
                in_comment = False
            continue
        if s.startswith("/*"):
            in_comment = "*/" not in s
            continue
        if not s or s.startswith("//") or s.startswith("#") or re.fullmatch(r"[{}();,]*", s):
            continue
        sig.append((re.sub(r"\s+", " ", s), ln))
    last = None
    for i in range(len(sig) - n + 1):
        key = "\n".join(t for t, _ in sig[i:i + n])
        where = (path, sig[i][1])
        if key in seen and seen[key] != where:
            first = seen[key]
            # one report per run of overlapping windows
            if last is None or last[0] != first[0] or abs(first[1] - last[1]) > n or where[1] - last[2] > n:
                found.append((first, where))
            last = (first[0], first[1], where[1])
        else:
            seen.setdefault(key, where)
for (p1, l1), (p2, l2) in found:
    print(f"{p2}:{l2}: {n}+ lines as at {p1}:{l1}")
if check and found:
    print(f"duplicates: {len(found)} run(s) of {n} or more lines written twice", file=sys.stderr)
    sys.exit(1)
