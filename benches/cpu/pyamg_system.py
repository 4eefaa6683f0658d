"""pyamg (smoothed aggregation, `smoothed_aggregation_solver`) on a linear
system that `fem solve --physics ... --write-system DIR` wrote: set-up and
solve seconds on this host, CG iterations to a relative residual of 1e-8
(as fem's Newton counts it: against the first residual, ‖b‖ from a zero
start), levels, operator and grid complexity, and peak RSS, as one JSON
line on stdout.

    python3 benches/cpu/pyamg_system.py DIR [--tol 1e-8] [--cycles V,W]

pyamg runs with its defaults (symmetric strength of θ = 0, standard
aggregation, a Jacobi-smoothed prolongator, symmetric Gauss-Seidel
smoothing), as a user of pyamg gets it; a field of three components gets
the six rigid-body modes from the written coordinates as its
near-nullspace and 3×3 blocks, as fem's AMG does for elasticity.
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import scipy.sparse as sp


def rigid_body_modes(x, components):
    """Translations and rotations of the nodes at `x`, interleaved as the
    rows are (row = node · components + component)."""
    n, d = x.shape
    if components == 1:
        return np.ones((n, 1))
    if components != d:
        raise SystemExit(f"{components} components on {d}-dimensional coordinates: no rigid-body modes")
    modes = []
    for c in range(d):
        m = np.zeros((n, d))
        m[:, c] = 1.0
        modes.append(m)
    pairs = [(0, 1)] if d == 2 else [(0, 1), (1, 2), (2, 0)]
    for a, b in pairs:
        m = np.zeros((n, d))
        m[:, a], m[:, b] = -x[:, b], x[:, a]
        modes.append(m)
    return np.stack([m.reshape(-1) for m in modes], axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--cycles", default="V,W")
    ap.add_argument("--maxiter", type=int, default=1000)
    a = ap.parse_args()
    import pyamg

    info = json.load(open(os.path.join(a.dir, "system.json")))
    load = lambda name: np.load(os.path.join(a.dir, name + ".npy"))
    start = time.perf_counter()
    n = info["rows"]
    A = sp.csr_matrix((load("data"), load("indices"), load("indptr")), shape=(n, n))
    b = load("rhs")
    x = load("coordinates")
    read = time.perf_counter() - start
    nc = info["components"]
    B = rigid_body_modes(x, nc)
    if nc > 1:
        A = A.tobsr(blocksize=(nc, nc))
    start = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(A, B=B)
    setup = time.perf_counter() - start
    out = {
        "system": info,
        "pyamg": pyamg.__version__,
        "read_seconds": read,
        "setup_seconds": setup,
        "levels": [lv.A.shape[0] for lv in ml.levels],
        "operator_complexity": ml.operator_complexity(),
        "grid_complexity": ml.grid_complexity(),
        "cycles": {},
    }
    bnorm = np.linalg.norm(b)
    for cycle in a.cycles.split(","):
        res = []
        start = time.perf_counter()
        u = ml.solve(b, x0=np.zeros_like(b), tol=a.tol, accel="cg", cycle=cycle, maxiter=a.maxiter, residuals=res)
        seconds = time.perf_counter() - start
        rel = np.linalg.norm(b - A @ u) / bnorm if bnorm > 0 else 0.0
        out["cycles"][cycle] = {"iterations": len(res) - 1, "solve_seconds": seconds, "relative_residual": float(rel)}
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
