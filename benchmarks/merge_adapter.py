"""Fold a LoRA adapter into its base model: ``python benchmarks/merge_adapter.py ADAPTER OUT [--base MODEL]``.

For SFT runs made with ``export_merged: false`` (the CPU recipe): the GRPO recipes start
from a plain model directory. The base comes from the adapter's own config unless
``--base`` names it (a directory, hub id, ``.gguf`` file or registered name such as
``smollm2-135m``, resolved by ``geoql.app.models``). Written atomically.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from geoql.app.models import resolve_model
from geoql.core.files import atomic_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("adapter")
    parser.add_argument("out")
    parser.add_argument("--base", default=None)
    args = parser.parse_args(argv)
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = args.base or json.loads((Path(args.adapter) / "adapter_config.json").read_text())["base_model_name_or_path"]
    path = resolve_model(base)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), args.adapter)
    merged = model.merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(args.adapter if (Path(args.adapter) / "tokenizer_config.json").is_file() else path)

    def write(staging: Path) -> None:
        merged.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)

    print(atomic_dir(args.out, write))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
