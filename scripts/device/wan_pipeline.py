"""The diffusers side of the whole-generation benchmark, measured in the same device run as ours.

  python wan_pipeline.py make DIR [--transformer 1.3b|14b] [--text-layers N]
      writes a random-weight diffusers-format Wan2.1 T2V checkpoint into DIR: the transformer at the
      named configuration (bf16), the real Wan2.1 VAE configuration (f32), a UMT5 encoder of the real
      width (4096) with N layers (bf16), the repository's tiny word-level tokenizer and the UniPC
      scheduler config of the golden checkpoint. Weights are N(0, 0.02), norms 1, biases 0, seed 0.
  python wan_pipeline.py time DIR --size WxH --frames F --steps S [--guidance G] [--repeat R]
      loads it into diffusers' WanPipeline (bf16 transformer and text encoder, f32 VAE, as the
      diffusers docs recommend) and times whole generations after one warm-up, with the GPU
      synchronised; prints `REF pipeline <what> | <seconds> s` rows (each run and the median) and the
      peak memory.

Needs diffusers on PYTHONPATH (its src/diffusers, carried; the device has PyTorch but not diffusers)
and transformers.
"""
import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import torch

# The repository: the first folder above this script that holds testdata/ (the script runs from
# scripts/device/ in a checkout and from .device/ in a package carried to the GPU machine).
REPO = next(p for p in Path(__file__).resolve().parents if (p / "testdata").is_dir())
GOLDEN = REPO / "testdata" / "golden" / "wan21-tiny"

TRANSFORMERS = {
    "1.3b": dict(num_attention_heads=12, attention_head_dim=128, ffn_dim=8960, num_layers=30),
    "14b": dict(num_attention_heads=40, attention_head_dim=128, ffn_dim=13824, num_layers=40),
}


def randomise(module, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif p.ndim == 1 or name.endswith("gamma"):  # norm scales
                p.fill_(1.0)
            else:
                p.copy_((torch.randn(p.shape, generator=g) * 0.02).to(p.dtype))


def make(args):
    from diffusers import AutoencoderKLWan, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(
        patch_size=(1, 2, 2), in_channels=16, out_channels=16, text_dim=4096, freq_dim=256,
        cross_attn_norm=True, qk_norm="rms_norm_across_heads", eps=1e-6, rope_max_seq_len=1024,
        **TRANSFORMERS[args.transformer])
    dit = WanTransformer3DModel(**cfg)
    randomise(dit, 0)
    dit.to(torch.bfloat16).save_pretrained(out / "transformer")
    del dit
    vae_cfg = json.loads((GOLDEN / "vae" / "config.json").read_text())
    vae = AutoencoderKLWan(
        base_dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
        temperal_downsample=[False, True, True], dropout=0.0,
        latents_mean=vae_cfg["latents_mean"], latents_std=vae_cfg["latents_std"])
    randomise(vae, 1)
    vae.save_pretrained(out / "vae")
    del vae
    vocab = json.loads((GOLDEN / "text_encoder" / "config.json").read_text())["vocab_size"]
    t5 = UMT5EncoderModel(UMT5Config(
        vocab_size=vocab, d_model=4096, d_kv=64, d_ff=10240, num_layers=args.text_layers,
        num_decoder_layers=args.text_layers, num_heads=64, relative_attention_num_buckets=32,
        relative_attention_max_distance=128, feed_forward_proj="gated-gelu",
        dense_act_fn="gelu_new", is_gated_act=True, layer_norm_epsilon=1e-6,
        tie_word_embeddings=False, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0))
    randomise(t5, 2)
    t5.to(torch.bfloat16).save_pretrained(out / "text_encoder")
    del t5
    for part in ("tokenizer", "scheduler"):
        shutil.copytree(GOLDEN / part, out / part, dirs_exist_ok=True)
    index = json.loads((GOLDEN / "model_index.json").read_text())
    import transformers
    if int(transformers.__version__.split(".")[0]) < 5:
        # Older transformers know the fast tokenizer under its former name.
        index["tokenizer"] = ["transformers", "PreTrainedTokenizerFast"]
        tc = json.loads((out / "tokenizer" / "tokenizer_config.json").read_text())
        tc["tokenizer_class"] = "PreTrainedTokenizerFast"
        (out / "tokenizer" / "tokenizer_config.json").write_text(json.dumps(tc, indent=2))
    (out / "model_index.json").write_text(json.dumps(index, indent=2))
    print(f"made {out} ({args.transformer} transformer, {args.text_layers}-layer UMT5)")


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def time_pipeline(args):
    from diffusers import AutoencoderKLWan, WanPipeline

    w, h = (int(v) for v in args.size.lower().split("x"))
    t0 = time.perf_counter()
    vae = AutoencoderKLWan.from_pretrained(args.dir, subfolder="vae", torch_dtype=torch.float32)
    pipe = WanPipeline.from_pretrained(args.dir, vae=vae, torch_dtype=torch.bfloat16).to("cuda")
    load = time.perf_counter() - t0
    what = f"{w}x{h}x{args.frames} {args.steps} steps cfg {args.guidance}"

    def run():
        pipe(prompt="a red ball bouncing", negative_prompt="", height=h, width=w,
             num_frames=args.frames, num_inference_steps=args.steps,
             guidance_scale=args.guidance, output_type="np",
             generator=torch.Generator("cuda").manual_seed(42))

    print(f"REF pipeline load {what} | {load:.2f} s", flush=True)
    print(f"REF pipeline first (cold) {what} | {timed(run):.2f} s", flush=True)
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(args.repeat):
        times.append(timed(run))
        print(f"REF pipeline warm run {i + 1} {what} | {times[-1]:.2f} s", flush=True)
    print(f"REF pipeline warm median {what} | {statistics.median(times):.2f} s", flush=True)
    print(f"REF pipeline peak memory {what} | "
          f"{torch.cuda.max_memory_allocated() / 1e9:.1f} GB", flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--transformer", choices=sorted(TRANSFORMERS), default="1.3b")
    m.add_argument("--text-layers", type=int, default=2)
    t = sub.add_parser("time")
    t.add_argument("dir")
    t.add_argument("--size", default="832x480")
    t.add_argument("--frames", type=int, default=81)
    t.add_argument("--steps", type=int, default=10)
    t.add_argument("--guidance", type=float, default=5.0)
    t.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    {"make": make, "time": time_pipeline}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
