#!/usr/bin/env python3
"""The policies table (scripts/policies.sh) as data.

  policies_table.py check TABLE
      prints the footer policies.sh appends: in how many cells another policy
      planned, and every cell where the search (swapadvisor) is below the best
      of them (issue 15: the search is never slower than any other policy;
      ideal is left out, it has unlimited memory).
  policies_table.py merge BASE UPDATE... > OUT
      BASE's header and rows, each row replaced by the row of the same model and
      policy from the last UPDATE that has one (policies.sh outputs of some
      models or policies), then the check's footer.  BASE's other comment lines
      (its notes) are dropped: write the new notes after it.
"""
import re
import sys


def rows(path):
    """(model, policy) -> the row's line, in file order."""
    out = {}
    for line in open(path):
        if line.startswith("#") or line.startswith("model"):
            continue
        f = line.split()
        if len(f) >= 3:
            out[(f[0], f[1])] = line.rstrip("\n")
    return out


def check(table):
    by_model = {}
    for (m, p), line in table.items():
        by_model.setdefault(m, {})[p] = line.split()[2:]
    bad, cells = [], 0
    for m, pols in by_model.items():
        sa = pols.get("swapadvisor")
        if not sa:
            continue
        for j, c in enumerate(sa):
            best = max(((float(re.match(r"([\d.]+)%", v[j]).group(1)), p) for p, v in pols.items()
                        if p not in ("swapadvisor", "ideal") and j < len(v) and re.match(r"[\d.]+%", v[j])),
                       default=None)
            if best is None:
                continue
            cells += 1
            mine = re.match(r"([\d.]+)%", c)
            if not mine or float(mine.group(1)) < best[0]:
                bad.append("%s col %d: swapadvisor %s < %s %.1f%%" % (m, j + 1, c, best[1], best[0]))
    return "# cells where another policy planned: %d; the search below the best of them: %d%s" % (
        cells, len(bad), "".join("\n#   " + b for b in bad))


def main(argv):
    if len(argv) == 3 and argv[1] == "check":
        print(check(rows(argv[2])))
        return 0
    if len(argv) >= 4 and argv[1] == "merge":
        base = rows(argv[2])
        for u in argv[3:]:
            for k, line in rows(u).items():
                if k not in base:
                    sys.stderr.write("policies_table: %s: %s %s is not in %s\n" % (u, k[0], k[1], argv[2]))
                    return 1
                base[k] = line
        for line in open(argv[2]):
            if line.startswith("#") or line.startswith("model"):
                if line.startswith("model") or line.startswith("# scripts/policies.sh") or \
                        line.startswith("# swapadvisor and optimal-search"):
                    sys.stdout.write(line)
            else:
                break
        for line in base.values():
            print(line)
        print(check(base))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
