#!/usr/bin/env bash
# The GPU check: install zslbench from a wheel built beforehand, run `pytest -m gpu` and the whole
# suite, then configs/paper-time.toml on the stand-ins, and print train seconds and peak GPU memory
# per method and dataset. Sized for at most 8 minutes on one H100/H200 (16 cores).
#
#   # on a machine with a package index, in the checkout:
#   pip wheel --no-deps -w .whl .
#   # on the GPU machine (its torch, gpytorch, pytest, ... preinstalled; no index needed), in a
#   # copy of the checkout that holds .whl/:
#   bash benchmarks/gpu_check.sh
#
#   DEV=cpu bash benchmarks/gpu_check.sh     # the same steps on the CPU (the gpu tests skip)
#
# Settings (environment): DEV (cuda), DATASETS (synth-all), SEEDS (1), SUITE (1: run the whole
# suite; DEV=cpu defaults to 0, as CI runs it), WORKERS (pytest-xdist workers, 8 when installed),
# OUT (folder for the venv, the records and the logs; /tmp/zslbench-gpu-check).
set -uo pipefail
cd "$(dirname "$0")/.."
DEV=${DEV:-cuda}
DATASETS=${DATASETS:-synth-all}
SEEDS=${SEEDS:-1}
OUT=${OUT:-/tmp/zslbench-gpu-check}
if [ "$DEV" = cpu ]; then SUITE=${SUITE:-0}; else SUITE=${SUITE:-1}; fi
mkdir -p "$OUT"
status=0
step() { printf '\n== %s\n' "$*"; }

step "install (from .whl/, no index)"
if ls .whl/zslbench-*.whl >/dev/null 2>&1; then
  if [ ! -x "$OUT/venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$OUT/venv" || exit 2
    # Called from inside a venv that has torch (a development machine): the new venv sees the
    # base interpreter's packages only, so it also gets that venv's (after its own, so that the
    # wheel's zslbench wins).
    if ! "$OUT/venv/bin/python" -c "import torch" 2>/dev/null && python3 -c "import torch" 2>/dev/null; then
      python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
        >"$("$OUT/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz-caller.pth"
    fi
  fi
  "$OUT/venv/bin/pip" install -q --no-deps --no-index --force-reinstall .whl/zslbench-*.whl || exit 2
  PY="$OUT/venv/bin/python"
  export PATH="$OUT/venv/bin:$PATH"
else
  echo "no .whl/zslbench-*.whl here: using the installed zslbench (build one with: pip wheel --no-deps -w .whl .)"
  PY=$(command -v python3)
fi
"$PY" - <<'EOF' || exit 2
import torch, zslbench
print(f"zslbench from {zslbench.__file__}; torch {torch.__version__}, "
      f"CUDA {'yes: ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no'}")
EOF
xdist=()
if "$PY" -c "import xdist" 2>/dev/null; then xdist=(-n "${WORKERS:-8}"); fi

step "pytest -m gpu (CUDA tests; per-method report in $OUT/gpu_report.json)"
ZSLBENCH_GPU_REPORT="$OUT/gpu_report.json" timeout 300 "$PY" -m pytest -m gpu -q -p no:cacheprovider \
  -rfEs --tb=short 2>&1 | tee "$OUT/pytest_gpu.log" | tail -n 25 || status=1

if [ "$SUITE" = 1 ]; then
  step "the whole suite (${xdist[*]:-one process})"
  timeout 420 "$PY" -m pytest -q -p no:cacheprovider -rfE --tb=short "${xdist[@]}" \
    >"$OUT/pytest_all.log" 2>&1 || status=1
  tail -n 15 "$OUT/pytest_all.log"
fi

step "configs/paper-time.toml on $DATASETS, --device $DEV, $SEEDS seed(s)"
REC="$OUT/records-$(date +%Y%m%d-%H%M%S)"   # a new folder each time: nothing cached, nothing deleted
timeout 300 "$PY" -m zslbench run --config configs/paper-time.toml --dataset "$DATASETS" \
  --device "$DEV" --seeds "$SEEDS" --results-dir "$REC" >"$OUT/paper_time.log" 2>&1 || status=1
tail -n 5 "$OUT/paper_time.log"

step "train seconds and peak GPU memory, per method and dataset"
"$PY" - "$REC" "$OUT/gpu_report.json" <<'EOF'
import json, statistics, sys
from collections import defaultdict
from pathlib import Path

rows = defaultdict(list)
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    rows[(r["method"], r["dataset"])].append(r)
print(f"{'method':10} {'dataset':10} {'runs':>4} {'train s':>8} {'start-up s':>10} {'peak MiB':>9}  device")
for (method, dataset), recs in sorted(rows.items()):
    train = statistics.median(r["timings"]["train"] for r in recs)
    start = max(r["device"].get("startup_seconds", 0.0) for r in recs)
    peak = max((r["device"].get("peak_memory_mib") or 0.0) for r in recs)
    print(f"{method:10} {dataset:10} {len(recs):>4} {train:8.2f} {start:10.2f} "
          f"{peak if peak else '-':>9}  {recs[0]['device']['name']}")
report = Path(sys.argv[2])
if report.exists():
    body = json.loads(report.read_text())
    print(f"\npytest -m gpu, toy, one seed each ({body['device']}, torch {body['torch']}):")
    print(f"{'method':10} {'seconds':>8} {'peak MiB':>9} {'H':>6}")
    for method, v in sorted(body["methods"].items()):
        print(f"{method:10} {v['seconds']:8.2f} {v['peak_mib']:9.1f} {v['H']:6.2f}")
EOF
step "done: exit $status (logs in $OUT)"
exit $status
