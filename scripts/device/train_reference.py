"""The PyTorch side of the training figures (issue 16), measured in the same device run as ours.

Needs diffusers on PYTHONPATH (run.sh unpacks .device/diffusers.tar.xz). Two modes:

`grads GOLDEN`: the tiny DiT of GOLDEN/wan21-lora-tiny in float32 under torch's bf16 autocast, one
flow-matching loss and backward on the batch of GOLDEN/wan21-train-expected/dit_train.safetensors,
each gradient's relative L2 error against that recording's float32 gradients — what "the bf16
bound" means for torch itself, tensor by tensor (worst ten printed).

`step SHAPE…`: one training step of a random-weight 1.3B DiT (float32 master weights, bf16 autocast,
forward, MSE loss, backward, fused AdamW), CUDA-event median after one warm-up, peak memory; each
SHAPE is `F,H,W[,ckpt]` latent frames/height/width, `ckpt` for diffusers' gradient checkpointing.
Rows: `REF <what> | <value>`.
"""
import sys

import torch
import torch.nn.functional as F
from diffusers import WanTransformer3DModel
from safetensors.torch import load_file

from reference import median_ms  # beside this file, here and in .device/

DEV = "cuda"


def rel_l2(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def grads(golden):
    model = WanTransformer3DModel.from_pretrained(f"{golden}/wan21-lora-tiny/transformer", torch_dtype=torch.float32).to(DEV)
    rec = {k: v.to(DEV) for k, v in load_file(f"{golden}/wan21-train-expected/dit_train.safetensors").items()}
    sigma = rec["sigma"].float()
    s = sigma.view(-1, 1, 1, 1, 1)
    x_t = ((1 - s) * rec["x0"] + s * rec["noise"]).requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pred = model(x_t, timestep=1000 * sigma, encoder_hidden_states=rec["encoder_hidden_states"], return_dict=False)[0]
    loss = F.mse_loss(pred.float(), rec["target"].float())
    loss.backward()
    print(f"REF tiny DiT bf16 autocast loss | {loss.item():.6f} (float32 recording {rec['loss'].item():.6f})")
    errors = [("the noised input", rel_l2(x_t.grad, rec["grad.hidden_states"]))]
    for name, p in model.named_parameters():
        want = rec.get(f"grad.{name}")
        if want is not None and p.grad is not None:
            errors.append((name, rel_l2(p.grad, want)))
    errors.sort(key=lambda e: -e[1])
    over = sum(1 for _, e in errors if e > 1e-2)
    print(f"REF tiny DiT bf16 autocast gradients | {len(errors)} compared, {over} over rel L2 1e-2")
    for name, e in errors[:10]:
        print(f"REF   bf16 autocast gradient {name} | rel L2 {e:.3e}")


def step(*shapes):
    torch.manual_seed(0)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=12, attention_head_dim=128, in_channels=16, out_channels=16,
        text_dim=4096, freq_dim=256, ffn_dim=8960, num_layers=30, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", eps=1e-6,
    ).to(DEV)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    for shape in shapes:
        parts = shape.split(",")
        f, h, w = (int(p) for p in parts[:3])
        ckpt = len(parts) > 3 and parts[3] == "ckpt"
        if ckpt:
            model.enable_gradient_checkpointing()
        else:
            model.disable_gradient_checkpointing()
        x = torch.randn(1, 16, f, h, w, device=DEV)
        target = torch.randn_like(x)
        t = torch.full((1,), 500.0, device=DEV)
        text = torch.randn(1, 512, 4096, device=DEV)

        def one():
            optimiser.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pred = model(x, timestep=t, encoder_hidden_states=text, return_dict=False)[0]
            F.mse_loss(pred.float(), target).backward()
            optimiser.step()

        one()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        ms = median_ms(one, 3)
        tokens = f * h * w // 4
        what = f"1.3B training step [1,16,{f},{h},{w}] ({tokens} tokens){', gradient checkpointing' if ckpt else ''}"
        print(f"REF {what} (diffusers, bf16 autocast, fp32 masters, fused AdamW) | {ms:.1f} ms", flush=True)
        print(f"REF {what}: peak memory (torch max allocated) | {torch.cuda.max_memory_allocated() / 1e9:.1f} GB", flush=True)


if __name__ == "__main__":
    print(f"== torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    {"grads": grads, "step": step}[sys.argv[1]](*sys.argv[2:])
