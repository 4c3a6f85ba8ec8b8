#!/usr/bin/env bash
# GPU smoke test of the vllm backend: install the [vllm] extra, save the tiny
# random Qwen3 model (+ a LoRA adapter), and compile with vLLM, the grammar and
# the adapter. Prints the queries and whether they parse. Run on a GPU machine
# from the repository root:  benchmarks/gpu_smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
WORK=${WORK:-$(mktemp -d)}

if ! "$PY" -c "import vllm" 2>/dev/null; then
  "$PY" -m pip install -q -e '.[vllm]'
fi

"$PY" - "$WORK" <<'PYEOF'
import sys, time
from pathlib import Path

from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from geoql.app import Compiler
from geoql.app.tiny_model import build_tiny_model

work = Path(sys.argv[1])
model_dir = build_tiny_model(work / "tiny", texts=None)
base = AutoModelForCausalLM.from_pretrained(model_dir)
adapter = work / "adapter"
get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])).save_pretrained(adapter)

requests = ["drinking water taps in Vienna", "cafes in Heidelberg", "bus stops in Bonn", "hotels in Paris"]
for label, options in (("base", {}), ("lora", {"adapter": str(adapter)})):
    compiler = Compiler("vllm", model=str(model_dir), gpu_memory_utilization=0.3, max_model_len=2048,
                        enforce_eager="true", k_tags=0, k_examples=0, max_new_tokens=128, **options)
    t0 = time.perf_counter()
    comps = compiler.compile_batch(requests, n=4)
    dt = time.perf_counter() - t0
    for c in comps:
        print(f"[{label}] valid={c.valid} errors={c.errors[:1]} query={c.query[:160]!r}")
    n_valid = sum(c.valid for c in comps)
    print(f"[{label}] {n_valid}/{len(comps)} valid, {dt:.1f} s for {len(comps)} requests x 4 samples")
    compiler.close()
    if n_valid != len(comps):
        sys.exit(f"[{label}] some outputs do not parse")
print("gpu smoke: OK")
PYEOF
