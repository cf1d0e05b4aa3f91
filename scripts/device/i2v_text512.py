"""A reference recording of the Wan2.1 I2V transformer with 512 text tokens, made with diffusers.

The golden I2V recording (wan21-i2v-tiny-expected/dit.safetensors) has 7 text tokens, so diffusers'
attention processor, which takes the last 512 tokens of the [image | text] context as text, sends
the image tokens through the text projections and never reaches add_k_proj / add_v_proj. The
pipelines always give 512 text tokens; this recording exercises that split: the tiny checkpoint's
transformer (testdata/golden/wan21-i2v-tiny/transformer), float32 on the CPU, inputs drawn from
torch.Generator seed 12, written with the golden recordings' names to OUT/dit_text512.safetensors.

Usage (diffusers' src/ on PYTHONPATH): python i2v_text512.py OUT_DIR [CHECKPOINT_DIR]
"""
import json
import os
import sys

import diffusers
import torch
from diffusers import WanTransformer3DModel
from safetensors.torch import save_file


def main(out, checkpoint):
    torch.manual_seed(0)
    model = WanTransformer3DModel.from_pretrained(checkpoint, torch_dtype=torch.float32).eval()
    cfg = model.config
    g = torch.Generator().manual_seed(12)
    inputs = {
        "hidden_states": torch.randn(2, cfg.in_channels, 3, 4, 6, generator=g),
        "timestep": torch.tensor([999.0, 421.0]),
        "encoder_hidden_states": torch.randn(2, 512, cfg.text_dim, generator=g),
        "encoder_hidden_states_image": torch.randn(2, 17, cfg.image_dim, generator=g),
    }
    with torch.no_grad():
        result = model(**inputs, return_dict=False)[0]
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.contiguous() for k, v in inputs.items()}
    tensors["out"] = result.contiguous()
    metadata = {
        "diffusers": diffusers.__version__,
        "torch": torch.__version__,
        "checkpoint": "wan21-i2v-tiny/transformer",
        "made_by": "scripts/device/i2v_text512.py",
    }
    save_file(tensors, os.path.join(out, "dit_text512.safetensors"), metadata=metadata)
    print(json.dumps({k: list(v.shape) for k, v in tensors.items()}), metadata)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "testdata/golden/wan21-i2v-tiny/transformer")
