#!/usr/bin/env bash
# The GPU check in one script, from the repository root on a CUDA machine (under 8 minutes on one GPU):
#
#   python -m benchmarks.gpu.make_data --deps     # beforehand, in a checkout with ../shared beside it
#   bash benchmarks/gpu/run.sh [--out DIR]        # then on the GPU machine, with only the repository
#
# It needs python3 with torch (CUDA). spaCy and its packages come from data/site-pyXY.tar.gz (made
# by make_data.py --deps for that Python) or, without it, from the package registry; this package is
# installed from the checkout. Steps (each writes its JSON rows as it goes; a failing step does not
# stop the others):
#   1. elmo_check.py          ELMo on CUDA vs the CPU at 1e-4 with TF32 off; speed fp32, TF32, bf16, fp16
#   2. pipeline_check.py      spacy.require_gpu(): the elmo component on the GPU, fine-tuning, words/s
#   3. train_check.py         200 steps of biLM training, a stop with its checkpoint, --resume; bf16
#   4. embed_check.py         spacy-contextual elmo --device cuda, and sharded (torchrun 1 rank; 2 GPUs: --processes 2)
# Then OUT/gpu_check.json and OUT/gpu_check.md (report.py). Exit status 1 if any check failed.
#
# --cpu: the dry run: the same steps on the CPU with a tiny model and input
# (make_data.py --tiny --out DIR, then --data DIR); CI runs it so that the script cannot rot.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
DATA=benchmarks/gpu/data
OUT=benchmarks/gpu/out
CPU=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) CPU=1 ;;
    --data) DATA=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: bash benchmarks/gpu/run.sh [--cpu] [--data DIR] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
PYTHON=${PYTHON:-python3}
DATA=$(cd "$DATA" 2>/dev/null && pwd) || { echo "no $DATA: run python -m benchmarks.gpu.make_data first" >&2; exit 2; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
rm -f "$OUT"/*.json "$OUT"/steps.tsv
export PYTHONUNBUFFERED=1

# -- what the machine lacks --------------------------------------------------------------------
SITE=$WORK/site
if ! "$PYTHON" -c "import spacy, thinc, srsly" 2>/dev/null; then
  bundle=$DATA/site-py$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")').tar.gz
  if [ -f "$bundle" ]; then
    mkdir -p "$SITE" && tar -xzf "$bundle" -C "$SITE" --strip-components=1 || exit 1
  else
    echo "no $bundle: installing spaCy from the package registry" >&2
    "$PYTHON" -m pip install --quiet --target "$SITE" "spacy>=3.8,<3.9" || exit 1
  fi
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$PYTHON" -c "import spacy_contextual" 2>/dev/null || ! command -v spacy-contextual >/dev/null; then
  "$PYTHON" -m pip install --quiet --no-deps --no-index --no-build-isolation --target "$WORK/package" "$REPO" || exit 1
  export PYTHONPATH=$WORK/package${PYTHONPATH:+:$PYTHONPATH} PATH=$WORK/package/bin:$PATH
fi

{
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
  fi
  "$PYTHON" -c 'import os, platform, spacy, torch
print(f"Python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), spaCy {spacy.__version__}, {os.cpu_count()} CPU cores")'
  [ "$CPU" = 1 ] && echo "dry run on the CPU (--cpu): tiny model and input"
} > "$OUT/machine.txt"

if [ "$CPU" = 1 ]; then
  [ -d "$DATA/tiny_elmo" ] || { echo "$DATA has no tiny_elmo/: make it with make_data.py --tiny" >&2; exit 2; }
  DEVICE=cpu LIMITS=(600 600 600 600)
  export OMP_NUM_THREADS=1  # the speeds mean nothing here; a shared CI machine runs best on one thread
  GPU_CHECK=(--size tiny --exact-size tiny --lines 40)
  PIPELINE=(--model "$DATA/tiny_elmo" --lines 40)
  TRAIN=(--size tiny --steps 20)
  EMBED=(--model "$DATA/tiny_elmo")
else
  DEVICE=cuda LIMITS=(120 90 150 90)  # seconds per step: 7.5 minutes at most with the installation
  GPU_CHECK=(--size original --exact-size small --lines 2000)
  PIPELINE=(--lines 2000)
  TRAIN=(--size small --steps 200)
  EMBED=()
fi

step() {  # step NAME LIMIT COMMAND...: run it for at most LIMIT seconds, log its exit status and seconds
  local name=$1 limit=$2 started=$SECONDS status
  shift 2
  echo "== $name"
  timeout "$limit" "$@"
  status=$?
  printf '%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - started))" >> "$OUT/steps.tsv"
}

step elmo "${LIMITS[0]}" "$PYTHON" -m benchmarks.gpu.elmo_check --data "$DATA" --device "$DEVICE" --json "$OUT/elmo.json" "${GPU_CHECK[@]}"
step pipeline "${LIMITS[1]}" "$PYTHON" -m benchmarks.gpu.pipeline_check --data "$DATA" --device "$DEVICE" --json "$OUT/pipeline.json" "${PIPELINE[@]}"
step train "${LIMITS[2]}" "$PYTHON" -m benchmarks.gpu.train_check --data "$DATA" --device "$DEVICE" --work "$WORK/train" --json "$OUT/train.json" "${TRAIN[@]}"
step embed "${LIMITS[3]}" "$PYTHON" -m benchmarks.gpu.embed_check --data "$DATA" --device "$DEVICE" --work "$WORK/embed" --json "$OUT/embed.json" "${EMBED[@]}"

"$PYTHON" -m benchmarks.gpu.report "$OUT"
status=$?
rm -rf "$WORK"
exit $status
