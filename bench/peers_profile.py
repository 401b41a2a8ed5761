#!/usr/bin/env python3
"""Per-file profile tables from `PROFILE=strace|perf bench/peers.sh` output (issue 15).

    bench/peers_profile.py DIR FILES [FLAT_FILES]

DIR holds WORKLOAD-JOB-CONTENDER.strace (strace -f -c) and .perf (perf record -e
cpu-clock -g) files. For each job a Markdown table: per contender the syscalls per file
(those with at least 0.01 a file), the share of samples in the kernel, and the top
kernel and user functions by self time (share of all samples).
"""
import collections
import glob
import os
import re
import subprocess
import sys

d, files = sys.argv[1], int(sys.argv[2])
flat = int(sys.argv[3]) if len(sys.argv) > 3 else 0


def strace(path, n):
    calls = {}
    for line in open(path):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m and m.group(2) != "total":
            calls[m.group(2)] = int(m.group(1))
    per = {k: v / n for k, v in calls.items() if v / n >= 0.01}
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def perf(path, top=6):
    out = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "-g", "none", "--sort", "dso,sym", "--stdio", "-q", "--percent-limit", "0.3"],
        capture_output=True, text=True).stdout
    kern, user, ksum = [], [], 0.0
    dso_total = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$", line)
        if not m:
            continue
        pct, dso, where, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        sym = re.sub(r"::h[0-9a-f]{16}$", "", sym)
        if where == "k":
            kern.append((pct, sym))
        else:
            user.append((pct, f"{sym} ({dso})"))
    # Kernel share over all samples (not limited by --percent-limit).
    out = subprocess.run(["perf", "report", "-i", path, "--no-children", "-g", "none", "--sort", "dso", "--stdio", "-q"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.*)$", line)
        if m:
            dso_total[m.group(2).strip()] += float(m.group(1))
    ksum = dso_total.get("[kernel.kallsyms]", 0.0)
    return ksum, kern[:top], user[:top]


def fmt(items):
    return "; ".join(f"{s} {p:.1f}%" for p, s in items) or "—"


names = sorted({os.path.basename(p).rsplit(".", 1)[0] for p in glob.glob(os.path.join(d, "*.strace")) + glob.glob(os.path.join(d, "*.perf"))})
jobs = collections.OrderedDict()
for n in names:
    w, job, c = n.split("-", 2)
    jobs.setdefault((w, job), []).append(c)
for (w, job), cs in jobs.items():
    n = flat if w == "flat" else files
    print(f"\n#### {job}, {w} ({n:,} files)\n")
    print("| contender | syscalls per file | kernel % of samples | top kernel functions (self, % of all samples) | top user functions |")
    print("|---|---|---:|---|---|")
    for c in cs:
        base = os.path.join(d, f"{w}-{job}-{c}")
        sc = strace(base + ".strace", n) if os.path.exists(base + ".strace") else {}
        total = sum(sc.values())
        sct = f"**{total:.2f}**: " + ", ".join(f"{k} {v:.2f}" for k, v in sc.items()) if sc else "—"
        if os.path.exists(base + ".perf"):
            k, kt, ut = perf(base + ".perf")
            print(f"| {c} | {sct} | {k:.1f} | {fmt(kt)} | {fmt(ut)} |")
        else:
            print(f"| {c} | {sct} | — | — | — |")
