"""Writes the tuning seeds the library ships (crates/fem-host/src/tune/seeds/)
from tuned GPU results: the tuning files the residual suite leaves
(benches/gpu/results/residual/<gpu>/tuning-*.json) and the tuned BP runs
(benches/gpu/results/bp/tuned_*.jsonl, `fem bp --tune --json`).

    python3 benches/gpu/seed_tuning.py
"""
import glob
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benches", "gpu", "results")
SEEDS = os.path.join(ROOT, "crates", "fem-host", "src", "tune", "seeds")


def pow2_bucket(v):
    """As `fem_host::tune::pow2_bucket`."""
    return "2^%d" % round(math.log2(max(v, 1)))


def file_name(device):
    """`fem_host::tune::cache::slug` of the device, `.json`."""
    out, dash = [], False
    for c in device.lower():
        if c.isalnum():
            out.append(c)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out) + ".json"


def bp_entries(path):
    """Signature → entry of every tuned BP run in a JSON-lines file."""
    out = {}
    for line in open(path):
        if not line.strip():
            continue
        j = json.loads(line)
        t = j.get("tuned")
        if not t:
            continue
        on = "assembled" if j["assembled"] else "elements"
        key = "bp/%s/n%d/f64/elements=%s/%s" % (j["problem"], j["degree"], pow2_bucket(j["elements"]), on)
        out[key] = {"params": t["best"], "seconds": t["seconds"], "default_seconds": t["default_seconds"], "timed": len(t.get("timed", [])), "pruned": t.get("pruned", 0)}
    return out


def main():
    seeds = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "residual", "*", "tuning-*.json"))):
        f = json.load(open(path))
        seeds.setdefault(f["device"], {}).update(f["entries"])
    for path in sorted(glob.glob(os.path.join(RESULTS, "bp", "tuned_*.jsonl"))):
        device = json.loads(open(path).readline())["backend"]
        seeds.setdefault(device, {}).update(bp_entries(path))
    os.makedirs(SEEDS, exist_ok=True)
    for device, entries in sorted(seeds.items()):
        doc = {"format": "fem-tuning", "version": 1, "device": device, "entries": dict(sorted(entries.items()))}
        with open(os.path.join(SEEDS, file_name(device)), "w") as out:
            json.dump(doc, out, indent=1)
            out.write("\n")
        print(device, len(entries), "entries")


if __name__ == "__main__":
    main()
