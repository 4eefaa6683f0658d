#!/usr/bin/env bash
# fem's CPU assembly of the unit-cube Poisson problem against NGSolve and
# DOLFINx on the same machine, in one run: Q1 on 99³ and Q2 on 50³ hexahedra
# (1M DOFs each), p + 2 Gauss points per direction in all three, u = 0 on the
# boundary, the sine load. Timed: fem's assembly (matrix and load, its pattern
# included), NGSolve's BilinearForm and LinearForm assembly, DOLFINx's
# sparsity, matrix and load assembly; each on 1 and on 2 threads (DOLFINx: MPI
# ranks), with the peak host memory of the whole process(es).
#
#   PY=~/dfx/bin/python FEM=target/release/fem bash benches/cpu/peers.sh
#
# PY is a Python (>= 3.12) with the peers: python3.12 -m venv ~/dfx &&
# ~/dfx/bin/pip install dolfinx-solver-real mpich ngsolve
# Writes benches/cpu/results/peers-<cores>cores.{json,md}.
set -euo pipefail
cd "$(dirname "$0")/../.."
FEM=${FEM:-target/release/fem}
PY=${PY:-$HOME/dfx/bin/python}
MPIEXEC=${MPIEXEC:-$(dirname "$PY")/mpiexec}
OUT=${OUT:-benches/cpu/results}
mkdir -p "$OUT"
[ -x "$FEM" ] || { echo "no fem binary at $FEM (cargo build --release)" >&2; exit 1; }
"$PY" -c "import dolfinx_solver, dolfinx, ngsolve" 2>/dev/null || { echo "$PY lacks ngsolve or dolfinx: see the header of $0" >&2; exit 1; }
json="$OUT/peers-$(nproc)cores.json"
: > "$json"
rss() { awk '/Maximum resident/ {print $6}' "$1"; }
for case in "1 99" "2 50"; do
  set -- $case
  p=$1; n=$2
  for t in 1 2; do
    RAYON_NUM_THREADS=$t /usr/bin/time -v "$FEM" solve --dim 3 --degree "$p" --cells "$n" --format csr --backend cpu --rtol 1e-8 --json > /tmp/fem.json 2> /tmp/fem.time
    python3 - "$p" "$t" "$(rss /tmp/fem.time)" >> "$json" <<'PYEOF'
import json, sys
d = json.load(open("/tmp/fem.json"))
print(json.dumps({"tool": "fem", "p": int(sys.argv[1]), "threads": int(sys.argv[2]), "dofs": d["dofs"], "assembly": round(d["assembly_seconds"], 3), "maxrss_kb": int(sys.argv[3])}))
PYEOF
    "$PY" benches/cpu/ngsolve_poisson.py --n "$n" --p "$p" --threads "$t" | python3 -c "
import json, sys; d = json.loads(sys.stdin.read())
print(json.dumps({'tool': 'ngsolve', 'p': d['p'], 'threads': d['threads'], 'dofs': d['dofs'], 'assembly': round(d['t']['asm_A'] + d['t']['asm_b'], 3), 'maxrss_kb': d['maxrss_kb']}))" >> "$json"
    "$MPIEXEC" -n "$t" "$PY" ../shared/peers/dolfinx_poisson.py --n "$n" --p "$p" --mode setup 2>/dev/null | tail -1 | python3 -c "
import json, sys; d = json.loads(sys.stdin.read()); t = d['t']
print(json.dumps({'tool': 'dolfinx', 'p': d['p'], 'threads': d['ranks'], 'dofs': d['dofs'], 'assembly': round(t['sparsity'] + t['asm_A'] + t['asm_b'], 3), 'maxrss_kb': d['maxrss_kb_sum']}))" >> "$json"
  done
done
python3 - "$json" > "${json%.json}.md" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
print(f"Unit-cube Poisson, 1M DOFs, assembly of matrix and load (pattern included), seconds; peak RSS in KB/DOF. {cpu}.\n")
print("| case | threads | fem | NGSolve | DOLFINx | fem / NGSolve | fem RSS | NGSolve RSS | DOLFINx RSS |")
print("|---|---|---|---|---|---|---|---|---|")
for p in (1, 2):
    for t in (1, 2):
        r = {x["tool"]: x for x in rows if x["p"] == p and x["threads"] == t}
        kb = lambda k: f'{r[k]["maxrss_kb"] * 1024 / r[k]["dofs"] / 1024:.2f}'
        print(f'| Q{p} | {t} | {r["fem"]["assembly"]:.2f} | {r["ngsolve"]["assembly"]:.2f} | {r["dolfinx"]["assembly"]:.2f} | {r["fem"]["assembly"] / r["ngsolve"]["assembly"]:.2f} | {kb("fem")} | {kb("ngsolve")} | {kb("dolfinx")} |')
PYEOF
cat "${json%.json}.md"
