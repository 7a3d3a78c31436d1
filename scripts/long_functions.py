#!/usr/bin/env python3
"""Lists functions longer than N lines (default 150) in lib/ and cmd/, longest
first.  A function is a line at column 0 that opens with '{' after a
declarator and ends at the next '}' at column 0.  A function may exceed N only
with a comment containing "longer than" within the 3 lines above its
declarator, saying why; --check exits 1 when one does not.
Usage: scripts/long_functions.py [--check] [N]"""
import glob, re, sys

args = [a for a in sys.argv[1:] if a != "--check"]
check = "--check" in sys.argv[1:]
limit = int(args[0]) if args else 150
rows = []
for path in sorted(glob.glob("lib/**/*.c", recursive=True) + glob.glob("lib/**/*.cu", recursive=True)
                   + glob.glob("cmd/**/*.c", recursive=True)):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0 and re.search(r"\)\s*$", lines[i - 1]):
            j = i - 1
            while j > 0 and not re.match(r"^[A-Za-z_]", lines[j]):
                j -= 1
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            n = end - j + 1
            name = re.search(r"([A-Za-z_0-9]+)\s*\(", lines[j])
            why = any("longer than" in lines[k] for k in range(max(0, j - 3), j))
            if n > limit:
                rows.append((n, path, j + 1, name.group(1) if name else "?", why))
            i = end
        i += 1
bad = 0
for n, path, ln, name, why in sorted(rows, reverse=True):
    print(f"{n:5d} {path}:{ln} {name}{'  (says why)' if why else ''}")
    bad += not why
if check and bad:
    print(f"long_functions: {bad} function(s) over {limit} lines without a comment saying why", file=sys.stderr)
    sys.exit(1)
