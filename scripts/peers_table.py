#!/usr/bin/env python3
"""Prints scripts/peers.sh's CSV as a markdown table: per graph and memory the
predicted iteration time (ms) of the search, dtr and memory-budget (or why
there is no plan), and whether the search is no slower than both peers (>=)
and strictly faster than every peer that planned (>).  Exits 1 when the
search is behind a peer on some cell, or planned no valid plan where a peer
did.

Usage: scripts/peers_table.py bench/results/peers.csv
"""
import csv
import sys

POLS = ("search", "dtr", "memory-budget")


def cell(r):
    if r is None:
        return "-"
    if r["status"] == "ok":
        return "%.1f" % (float(r["iteration_us"]) / 1e3)
    if r["status"] == "INVALID":
        return "INVALID"
    why = r["detail"]
    if "cannot run within" in why:
        return "refused: an op cannot fit"
    if "alone need" in why:
        return "refused: op or params > memory"
    if "no budget" in why:
        return "refused: no budget fits"
    if "timeout" in why:
        return "timeout"
    return "refused"


def main(path):
    rows = {}
    order = []
    with open(path) as f:
        for r in csv.DictReader(f):
            k = (r["graph"], r["memory"])
            if k not in rows:
                rows[k] = {}
                order.append(k)
            rows[k][r["policy"]] = r
    print("| graph | memory | search (ms) | dtr (ms) | memory-budget (ms) | search >= both | strictly ahead |")
    print("|---|---|---|---|---|---|---|")
    behind = 0
    for k in order:
        c = rows[k]
        s = c.get("search")
        su = float(s["iteration_us"]) if s and s["status"] == "ok" else None
        peers = [float(c[p]["iteration_us"]) for p in POLS[1:] if p in c and c[p]["status"] == "ok"]
        if su is None:
            ge = "no plan" if not peers else "BEHIND (no plan)"
            ahead = "-"
        else:
            ge = "yes" if all(su <= u * (1 + 1e-9) for u in peers) else "BEHIND"
            ahead = ("yes" if all(su < u * (1 - 1e-6) for u in peers) else "tie") if peers else "only plan"
        if ge.startswith("BEHIND"):
            behind += 1
        print("| %s | %s | %s | %s | %s | %s | %s |" % (k[0], k[1], cell(s), cell(c.get("dtr")),
                                                       cell(c.get("memory-budget")), ge, ahead))
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
