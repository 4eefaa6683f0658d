#!/usr/bin/env python3
"""Fraction of the copy against the element count (`bp_sizes.sh`): a
Markdown table of each run's time and its copy's, the least-squares line
time = fixed + per element · E of both over the meshes of at least 2048
elements, and `bp_sizes.png` (fraction against E; times against E with
the lines) beside the JSON lines.

    python3 benches/gpu/bp_sizes.py benches/gpu/results/bp/sizes
"""
import json, pathlib, sys

d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
FIT_FROM = 2048


def runs(f):
    out = []
    for line in f.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            t = r["seconds_per_apply"] * 1e6
            copy = r["bytes_moved"] / (r["copy_gbytes_per_second"] * 1e3)
            out.append((r, t, copy))
    return out


def fit(points):
    """Least squares y = a + b x."""
    n = len(points)
    sx, sy = sum(x for x, _ in points), sum(y for _, y in points)
    sxx, sxy = sum(x * x for x, _ in points), sum(x * y for x, y in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


series = {}
for f in sorted(d.glob("*.jsonl")):
    rs = runs(f)
    print(f"\n`{f.name}`\n")
    print("| elements | DOFs | elements per block | µs per application | copy µs | copy | of copy |")
    print("|---|---|---|---|---|---|---|")
    for r, t, c in rs:
        print(f'| {r["elements"]} | {r["dofs"]} | {r["elements_per_block"]} | {t:.2f} | {c:.2f} | {r["copy_method"]} | {r["roofline_fraction"]:.3f} |')
    for epb in sorted({r["elements_per_block"] for r, _, _ in rs}):
        sel = [(r, t, c) for r, t, c in rs if r["elements_per_block"] == epb]
        big = [(r["elements"], t, c) for r, t, c in sel if r["elements"] >= FIT_FROM]
        label = f'{sel[0][0]["problem"]} N = {sel[0][0]["degree"]}, {epb} per block'
        if len({r["copy_method"] for r, _, _ in sel if r["elements"] >= FIT_FROM}) > 1:
            # the copy from L2 on the small meshes, from DRAM on the large: no one line
            print(f"\n{epb} per block: the copy reference changes method across the meshes, no line fitted")
            series[label] = (sel, None, None)
            continue
        (ka, kb), (ca, cb) = fit([(e, t) for e, t, _ in big]), fit([(e, c) for e, _, c in big])
        print(f"\n{epb} per block, E ≥ {FIT_FROM}: operator {ka:.2f} µs + {kb * 1e3:.2f} ns per element, copy {ca:.2f} µs + {cb * 1e3:.2f} ns per element (per element {cb / kb:.3f} of the copy)")
        series[label] = (sel, (ka, kb), (ca, cb))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("matplotlib is missing: no plot")
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
for n, (label, (sel, op, copy)) in enumerate(series.items()):
    e, col = [r["elements"] for r, _, _ in sel], f"C{n}"
    a1.plot(e, [r["roofline_fraction"] for r, _, _ in sel], "o-", color=col, label=label)
    a2.plot(e, [t for _, t, _ in sel], "o", color=col, label=f"{label}: operator (o, line)")
    a2.plot(e, [c for _, _, c in sel], "x", color=col, label=f"{label}: copy (x, dashed)")
    if op:
        a2.plot(e, [op[0] + op[1] * x for x in e], "-", color=col, lw=0.8)
        a2.plot(e, [copy[0] + copy[1] * x for x in e], "--", color=col, lw=0.8)
for a in (a1, a2):
    a.set_xscale("log", base=2)
    a.set_xlabel("elements")
a1.axhline(0.9, ls=":", color="gray")
a1.axhline(0.75, ls=":", color="gray")
a1.set_ylabel("fraction of the copy")
a2.set_yscale("log")
a2.set_ylabel("µs per application")
a1.legend(fontsize=7)
a2.legend(fontsize=6)
fig.tight_layout()
fig.savefig(d / "bp_sizes.png", dpi=120)
