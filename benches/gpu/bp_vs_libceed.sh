#!/usr/bin/env bash
# fem's CEED operators on L-vectors (`fem bp --assembled`) beside libCEED's
# /gpu/cuda/gen in one run on one GPU: BP1, BP3 (fem bp3.0) and BP5 (fem
# bp3.5) at N = 2..8 on the same n³ meshes of about 1e7 DOFs. libCEED
# builds on the host's cores while fem times, and runs after it
# (`libceed_bp.sh` of the peers folder, a copy of ../shared/peers).
# JSON lines and libCEED's lines into $OUT (default .), a Markdown table of
# GDOF/s (fem / libCEED) on stdout.
#   FEM=path/to/fem PEERS=path/to/peers bash benches/gpu/bp_vs_libceed.sh
set -u
PEERS=${PEERS:-.gpu/peers}
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
source "$(dirname "$0")/common.sh"
# libCEED's build on the host's cores while fem times; its runs after
src=/tmp/libceed-src; mkdir -p $src && tar xzf $PEERS/libceed-min.tgz -C $src
cuda=$(dirname "$(dirname "$(readlink -f "$(which nvcc)")")")
( make -C $src -j12 CUDA_DIR="$cuda" CUDA_ARCH=sm_90 OPT=-O3 > /tmp/libceed-build.log 2>&1 ) &
for n in 2 3 4 5 6 7 8; do
  e=$((SIDE[$n] ** 3))
  for p in bp1 bp3.0 bp3.5; do
    timeout 60 ${FEM:-target/release/fem} bp --problem $p --degree $n --elements $e --assembled --backend cuda --repeats 10 --json | tr -d '\n' >> $OUT/fem.jsonl; echo >> $OUT/fem.jsonl
  done
done
wait
echo "fem done at $SECONDS s"
timeout 300 bash $PEERS/libceed_bp.sh 1.0e7 > $OUT/libceed.txt 2> $OUT/libceed.err
echo "libceed done at $SECONDS s"
python3 - "$OUT" <<'PY'
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
fem = {}
for l in (out / "fem.jsonl").read_text().splitlines():
    if l.strip():
        r = json.loads(l); fem[(r["problem"], r["degree"])] = r["gdofs_per_second"]
ceed = {}
for l in (out / "libceed.txt").read_text().splitlines():
    m = re.search(r"BP(\d) p=(\d+) .* ([\d.]+) GDOF/s", l)
    if m: ceed[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
names = {1: "bp1", 3: "bp3.0", 5: "bp3.5"}
print("| BP | " + " | ".join(f"N={n}" for n in range(2, 9)) + " |")
print("|---|" + "---|" * 7)
for bp in (1, 3, 5):
    cells = []
    for n in range(2, 9):
        f, c = fem.get((names[bp], n)), ceed.get((bp, n))
        cells.append(f"{f:.1f} / {c:.1f} ({f / c:.2f}×)" if f and c else f"{f} / {c}")
    print(f"| BP{bp} | " + " | ".join(cells) + " |")
PY
