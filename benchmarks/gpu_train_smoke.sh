#!/usr/bin/env bash
# GPU smoke test of the training stack (<= 8 min on one H100/H200): a few SFT and GRPO
# steps of the tiny random Qwen3 model with the GPU settings (bf16, dev evaluation through
# the compile path, vLLM rollouts when vLLM is installed), then prints timings and peak memory.
#
#   GEOQL_DATA_DIR=../shared/overpassnl benchmarks/gpu_train_smoke.sh [WORK_DIR]
#
# Needs a retrieval index: $GEOQL_INDEX_DIR, or one is built into WORK_DIR (that build
# fetches the OSM tag schema from the npm registry once). On a machine without the
# registry, NO_INDEX=1 trains on prompts without retrieval (k_tags = k_examples = 0),
# which need no index. PY=python3 uses another interpreter than .venv's (GPU images often
# bring their own torch); CPU_OK=1 runs it without a GPU (bf16 off) to check the script.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
GEOQL="$PY -m geoql"
WORK="${1:-$(mktemp -d -t geoql-gpu-smoke.XXXXXX)}"
mkdir -p "$WORK"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

BF16=true
if ! $PY - <<'PY'
import torch, sys
if not torch.cuda.is_available():
    sys.exit("no CUDA GPU visible: this smoke test is for a GPU machine (the CPU tests cover the rest; CPU_OK=1 runs it anyway)")
print("gpu:", torch.cuda.get_device_name(0), "bf16:", torch.cuda.is_bf16_supported())
PY
then
  [[ "${CPU_OK:-0}" == 1 ]] || exit 1
  BF16=false
fi
USE_VLLM=false
if $PY -c "import vllm" 2>/dev/null; then USE_VLLM=true; fi
echo "vLLM rollouts: $USE_VLLM"

if [[ "${NO_INDEX:-0}" == 1 ]]; then
  echo "== prompts without retrieval (NO_INDEX=1)"
  $GEOQL train data --out "$WORK/data" --set limit=200 --set k_tags=0 --set k_examples=0
  DATA=(--set "data.dataset_dir=$WORK/data" --set data.k_tags=0 --set data.k_examples=0)
else
  INDEX="${GEOQL_INDEX_DIR:-$WORK/index}"
  DATA=(--set "data.index_dir=$INDEX")
  if [[ ! -f "$INDEX/manifest.json" ]]; then
    echo "== building a small retrieval index in $INDEX"
    if ! $GEOQL index build --out "$INDEX" --no-taginfo --train-limit 1000; then
      echo "could not build an index here (the build fetches the OSM tag schema from the npm registry);" >&2
      echo "build one where the registry is reachable and pass it: GEOQL_INDEX_DIR=DIR $0" >&2
      exit 2
    fi
  fi
fi

t0=$(date +%s)
echo "== tiny model"
$PY -c "from geoql.app.tiny_model import build_tiny_model; print(build_tiny_model('$WORK/tiny'))"

t1=$(date +%s)
echo "== SFT: 30 steps, bf16, LoRA, dev eval through the compile path"
$GEOQL train sft --config training/configs/tiny-sft.yaml --overwrite \
  --set "model=$WORK/tiny" --set "train.output_dir=$WORK/sft" --set train.bf16=$BF16 \
  "${DATA[@]}" --set dev_eval.enabled=true --set dev_eval.subset_size=8

t2=$(date +%s)
echo "== GRPO: 4 steps x 2 seeds, bf16, all rewards, use_vllm=$USE_VLLM"
$GEOQL train grpo --config training/configs/tiny-grpo.yaml --overwrite \
  --set "model=$WORK/sft/merged" --set "train.output_dir=$WORK/grpo" --set train.bf16=$BF16 \
  "${DATA[@]}" --set train.max_steps=4 --set "seeds=[0, 1]" \
  --set "use_vllm=$USE_VLLM" --set vllm_gpu_memory_utilization=0.2 \
  --set dev_eval.enabled=true --set dev_eval.every_steps=2 --set dev_eval.subset_size=4

t3=$(date +%s)
if [[ "$USE_VLLM" == true ]]; then
  echo "== vLLM loads the SFT LoRA adapter (what vllm serve --lora-modules does)"
  $PY - "$WORK" <<'PY'
import sys
from vllm import LLM, SamplingParams
from vllm.lora.request import LoRARequest
work = sys.argv[1]
llm = LLM(model=f"{work}/tiny", enable_lora=True, max_lora_rank=8, gpu_memory_utilization=0.2, max_model_len=2048)
out = llm.generate(["cafes in Bonn"], SamplingParams(max_tokens=8, temperature=0),
                   lora_request=LoRARequest("geoql", 1, f"{work}/sft/adapter"))
print("vLLM + adapter:", repr(out[0].outputs[0].text))
PY
fi
t4=$(date +%s)
$PY - "$WORK" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
sft = json.loads((work / "sft" / "summary.json").read_text())["result"]
grpo = json.loads((work / "grpo" / "summary.json").read_text())["result"]
print(f"SFT loss {sft['first_loss']:.3f} -> {sft['last_loss']:.3f} in {sft['steps']} steps, "
      f"{sft['train_runtime_s']} s, peak {sft['peak_gpu_memory_gb']} GB; dev: {sft['dev_eval'][-1:]}")
for run in grpo["runs"]:
    print(f"GRPO seed {run['seed']}: {run['steps']} steps, {run['train_runtime_s']} s, "
          f"peak {run['peak_gpu_memory_gb']} GB, reward means {run['reward_means']}")
PY
echo "timings (s): tiny model $((t1 - t0)), SFT $((t2 - t1)), GRPO $((t3 - t2)), vLLM adapter $((t4 - t3)), total $((t4 - t0))"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv || true
