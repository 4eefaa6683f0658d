#!/usr/bin/env python3
"""The BP launches a user gets without tuning, against the built-in ones:
`fem bp` with the device's tuning entries (`seeded_*.jsonl`) and with
`FEM_TUNING=off` (`off_*.jsonl`), per problem and mesh size. A Markdown
table on stdout and `bp_seeded.png` (fraction of the copy against N for
the meshes with a point of at least 1e6 DOFs, the targets dotted) beside
the JSON lines.

    python3 benches/gpu/bp_seeded.py benches/gpu/results/bp/batched

A second kind of rows and its label may replace the built-in ones, e.g.
the seeded launches timed with a warm L2 (`warm_*.jsonl`) against the
cold default:

    python3 benches/gpu/bp_seeded.py benches/gpu/results/bp/cold warm "warm L2"
"""
import json, pathlib, sys

TARGET = {"bp1": 0.75, "bp3.0": 0.75, "bp3.5": 0.9}
d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
OTHER = sys.argv[2] if len(sys.argv) > 2 else "off"
OTHER_LABEL = sys.argv[3] if len(sys.argv) > 3 else "built-in"


def rows(kind):
    out = {}
    for f in sorted(d.glob(f"{kind}_*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out.setdefault((r["problem"], r["elements"] if "elements" in f.stem else "1e7 DOFs"), {})[r["degree"]] = r
    return out


seeded, off = rows("seeded"), rows(OTHER)
degrees = sorted({n for v in seeded.values() for n in v})
print("| problem | mesh | launches | " + " | ".join(f"N = {n}" for n in degrees) + " |")
print("|---|---|---|" + "---|" * len(degrees))
for key in sorted(seeded, key=lambda k: (k[0], str(k[1]))):
    for name, src in [("seeded", seeded), (OTHER_LABEL, off)]:
        rs = src.get(key, {})
        if not rs:
            continue
        cells = [f'{rs[n]["roofline_fraction"]:.3f}' + ("" if rs[n]["dofs"] >= 1e6 else "*") if n in rs else "" for n in degrees]
        mesh = f"{key[1]} elements" if key[1] != "1e7 DOFs" else key[1]
        print(f"| {key[0]} | {mesh} | {name} | " + " | ".join(cells) + " |")
print("\n`*`: fewer than 1e6 DOFs (outside the targets).")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
problems = sorted({k[0] for k in seeded})
fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 4), sharey=True)
for ax, p in zip(axes, problems):
    big = [k for k in seeded if k[0] == p and any(r["dofs"] >= 1e6 for r in seeded[k].values())]
    for i, key in enumerate(sorted(big, key=lambda k: str(k[1]))):
        c = f"C{i}"
        for src, style, name in [(seeded, "-", "seeded"), (off, "--", OTHER_LABEL)]:
            rs = src.get(key, {})
            ns = [n for n in degrees if n in rs]
            if not ns:
                continue
            mesh = f"{key[1]} el." if key[1] != "1e7 DOFs" else key[1]
            ax.plot(ns, [rs[n]["roofline_fraction"] for n in ns], style, color=c, marker="o", ms=3, label=f"{mesh}, {name}")
    ax.axhline(TARGET.get(p, 1.0), color="k", ls=":", lw=1)
    ax.set_title(p); ax.set_xlabel("degree N"); ax.grid(True, alpha=0.3)
    ax.set_ylim(0, 1.3)
axes[0].set_ylabel("fraction of the copy roofline")
axes[-1].legend(fontsize=7)
fig.tight_layout()
fig.savefig(d / "bp_seeded.png", dpi=110)
