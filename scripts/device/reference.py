"""The PyTorch side of the GPU benchmark table, measured in the same device run as ours.

The GPU machine has PyTorch but not diffusers, so this is our own eager PyTorch rendering of the
Wan2.1 DiT forward as diffusers computes it in bf16 (float32 norms and modulation, rotary
embedding in float32, torch SDPA), with random bf16 weights. It times what the issue's table asks
for with CUDA events (median after one warm-up) and prints `REF <what> | <ms>` rows.
`lora` times only the 1.3B 480p×81 forward, plain and with a rank-32 LoRA on every attention and
FFN linear of every block in PEFT's unmerged form (base(x) + scale·B(A(x))): PEFT's own LoRA layers
injected into this module structure when the `peft` package is importable, else our rendering of
that path (said so in the output).
`variants` times issue 12's Wan2.2-TI2V-5B (per-token timesteps) and Wan2.1-I2V-14B (image tokens)
forwards.
Usage: python reference.py [quick|lora|variants [ti2v|i2v]]
"""
import contextlib
import math
import re
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DEV = "cuda"
BF16 = torch.bfloat16


def param(*shape, scale=0.02):
    return (torch.randn(*shape, device=DEV, dtype=torch.float32) * scale).to(BF16)


def linear_params(n_out, n_in):
    return param(n_out, n_in), param(n_out)


def linear(n_out, n_in):
    """An nn.Linear with this file's random weights: the layers a LoRA may target."""
    layer = nn.Linear(n_in, n_out, device=DEV, dtype=BF16)
    with torch.no_grad():
        layer.weight.copy_(param(n_out, n_in))
        layer.bias.copy_(param(n_out))
    return layer


def rms_norm(x, weight, eps):
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.to(weight.dtype) * weight


def rotate(x, cos, sin):
    # x [B, L, H, D] bf16; cos/sin [1, L, 1, D/2] float32 for interleaved pairs.
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    return out.type_as(x)


def sdpa(q, k, v):
    # [B, L, H, D] in and out, as torch's SDPA takes [B, H, L, D].
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)


class Attention(nn.Module):
    # Modules named as diffusers' WanAttention (to_q … to_out.0), so LoRA targets read the same.
    # With image tokens (I2V) the cross-attention also attends them through add_k_proj/add_v_proj
    # (keys RMS-normalised by norm_added_k) and sums the two results before to_out, as diffusers'
    # processor does with the [image | text] context split at its last 512 tokens.
    def __init__(self, dim, heads, eps, image=False):
        super().__init__()
        self.heads, self.eps = heads, eps
        self.to_q, self.to_k, self.to_v = linear(dim, dim), linear(dim, dim), linear(dim, dim)
        self.to_out = nn.ModuleList([linear(dim, dim)])
        self.norm_q, self.norm_k = param(dim, scale=1.0), param(dim, scale=1.0)
        if image:
            self.add_k_proj, self.add_v_proj = linear(dim, dim), linear(dim, dim)
            self.norm_added_k = param(dim, scale=1.0)

    def forward(self, x, context, rope, image=None):
        src = x if context is None else context
        q = rms_norm(self.to_q(x), self.norm_q, self.eps).unflatten(2, (self.heads, -1))
        k = rms_norm(self.to_k(src), self.norm_k, self.eps).unflatten(2, (self.heads, -1))
        v = self.to_v(src).unflatten(2, (self.heads, -1))
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        o = sdpa(q, k, v)
        if image is not None:
            ki = rms_norm(self.add_k_proj(image), self.norm_added_k, self.eps).unflatten(2, (self.heads, -1))
            o = o + sdpa(q, ki, self.add_v_proj(image).unflatten(2, (self.heads, -1)))
        return self.to_out[0](o.flatten(2))


class GeluProjection(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.proj = linear(ffn, dim)

    def forward(self, x):
        return F.gelu(self.proj(x), approximate="tanh")


class FeedForward(nn.Module):
    # diffusers' FeedForward layout: net.0.proj (with the GELU), net.1 dropout, net.2.
    def __init__(self, dim, ffn):
        super().__init__()
        self.net = nn.ModuleList([GeluProjection(dim, ffn), nn.Identity(), linear(dim, ffn)])

    def forward(self, x):
        return self.net[2](self.net[0](x))


class Block(nn.Module):
    def __init__(self, dim, ffn, heads, eps=1e-6, image=False):
        super().__init__()
        self.eps, self.dim = eps, dim
        self.attn1, self.attn2 = Attention(dim, heads, eps), Attention(dim, heads, eps, image)
        self.norm2 = (param(dim, scale=1.0), param(dim))
        self.ffn = FeedForward(dim, ffn)
        self.table = param(1, 1, 6, dim).float()

    def forward(self, x, context, tproj, rope, image=None):
        # tproj [B, T, 6, dim]: T = 1 (one timestep per sample) or L (one per token, Wan2.2 TI2V),
        # so every modulation vector is [B, T, dim], broadcast over the tokens when T = 1.
        mods = (self.table + tproj.float()).chunk(6, dim=2)
        shift, scale, gate, c_shift, c_scale, c_gate = (m.squeeze(2) for m in mods)
        plain = lambda t: F.layer_norm(t.float(), (self.dim,), eps=self.eps)
        h = (plain(x) * (1 + scale) + shift).type_as(x)
        x = (x.float() + self.attn1(h, None, rope) * gate).type_as(x)
        h = F.layer_norm(x.float(), (self.dim,), self.norm2[0].float(), self.norm2[1].float(), self.eps).type_as(x)
        x = x + self.attn2(h, context, None, image)
        h = (plain(x) * (1 + c_scale) + c_shift).type_as(x)
        ff = self.ffn(h)
        return (x.float() + ff.float() * c_gate).type_as(x)


class ImageEmbedder(nn.Module):
    """diffusers' WanImageEmbedding: FP32 LayerNorm, exact-GELU MLP (image_dim → image_dim → dim), FP32 LayerNorm."""

    def __init__(self, image_dim, dim):
        super().__init__()
        self.norm1 = (param(image_dim, scale=1.0).float(), param(image_dim).float())
        self.ff1, self.ff2 = linear(image_dim, image_dim), linear(dim, image_dim)
        self.norm2 = (param(dim, scale=1.0).float(), param(dim).float())

    def forward(self, states):
        h = F.layer_norm(states.float(), (states.shape[-1],), *self.norm1).to(BF16)
        h = self.ff2(F.gelu(self.ff1(h)))
        return F.layer_norm(h.float(), (h.shape[-1],), *self.norm2).to(BF16)


class Dit(nn.Module):
    def __init__(self, dim, ffn, heads, layers, text_dim=4096, freq_dim=256, channels=16, in_channels=None, image_dim=None):
        super().__init__()
        self.dim, self.heads, self.freq_dim, self.channels = dim, heads, freq_dim, channels
        self.patch = (param(dim, in_channels or channels, 1, 2, 2), param(dim))
        self.t1, self.t2 = linear_params(dim, freq_dim), linear_params(dim, dim)
        self.tproj = linear_params(6 * dim, dim)
        self.c1, self.c2 = linear_params(dim, text_dim), linear_params(dim, dim)
        self.image = ImageEmbedder(image_dim, dim) if image_dim else None
        self.blocks = nn.ModuleList([Block(dim, ffn, heads, image=bool(image_dim)) for _ in range(layers)])
        self.table = param(1, 1, 2, dim).float()
        self.proj_out = linear_params(channels * 4, dim)

    def rope(self, f, h, w):
        d = self.dim // self.heads
        dh = dw = 2 * (d // 6)
        dt = d - dh - dw

        def axis(n, size):
            inv = 1.0 / (10000 ** (torch.arange(0, size, 2, device=DEV, dtype=torch.float64) / size))
            return torch.outer(torch.arange(n, device=DEV, dtype=torch.float64), inv)

        ft, fh, fw = axis(f, dt), axis(h, dh), axis(w, dw)
        grid = torch.cat(
            (
                ft[:, None, None].expand(f, h, w, -1),
                fh[None, :, None].expand(f, h, w, -1),
                fw[None, None, :].expand(f, h, w, -1),
            ),
            dim=-1,
        ).reshape(1, f * h * w, 1, d // 2)
        return grid.cos().float(), grid.sin().float()

    def forward(self, latents, t, text, image_states=None):
        """t: [B] (one timestep per sample) or [B, L] (one per token); image_states [B, S, image_dim] for I2V."""
        b, _, f, hh, ww = latents.shape
        f2, h2, w2 = f, hh // 2, ww // 2
        rope = self.rope(f2, h2, w2)
        x = F.conv3d(latents.to(BF16), *self.patch, stride=(1, 2, 2)).flatten(2).transpose(1, 2)
        half = self.freq_dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=DEV, dtype=torch.float32) / half)
        flat = t.reshape(-1, 1)
        sinus = torch.cat((torch.cos(flat * freqs), torch.sin(flat * freqs)), dim=1)
        temb = F.linear(F.silu(F.linear(sinus.to(BF16), *self.t1)), *self.t2).unflatten(0, (b, -1))
        tproj = F.linear(F.silu(temb), *self.tproj).unflatten(2, (6, self.dim))
        context = F.linear(F.gelu(F.linear(text.to(BF16), *self.c1), approximate="tanh"), *self.c2)
        image = self.image(image_states) if self.image is not None else None
        for block in self.blocks:
            x = block(x, context, tproj, rope, image)
        shift, scale = (m.squeeze(2) for m in (self.table + temb.float().unsqueeze(2)).chunk(2, dim=2))
        x = (F.layer_norm(x.float(), (self.dim,), eps=1e-6) * (1 + scale) + shift).type_as(x)
        x = F.linear(x, *self.proj_out)
        x = x.reshape(b, f2, h2, w2, 1, 2, 2, self.channels).permute(0, 7, 1, 4, 2, 5, 3, 6)
        return x.reshape(b, self.channels, f, hh, ww)


class CausalConv:
    """A causal 3-D convolution that keeps its input's last two frames for the next chunk."""

    def __init__(self, c_in, c_out, kernel=(3, 3, 3)):
        self.weight, self.bias = param(c_out, c_in, *kernel), param(c_out)
        self.kt, self.pad = kernel[0], (kernel[2] // 2, kernel[2] // 2, kernel[1] // 2, kernel[1] // 2)
        self.tail = None

    def __call__(self, x):
        if self.kt > 1:
            history = self.tail if self.tail is not None else x.new_zeros(x.shape[0], x.shape[1], self.kt - 1, *x.shape[3:])
            self.tail = torch.cat((history, x), dim=2)[:, :, -(self.kt - 1):].clone()
            x = torch.cat((history, x), dim=2)
        return F.conv3d(F.pad(x, self.pad), self.weight, self.bias)


def channel_rms(x, gamma):
    return F.normalize(x.float(), dim=1).type_as(x) * (x.shape[1] ** 0.5) * gamma


class Resnet:
    def __init__(self, c_in, c_out):
        self.g1, self.g2 = param(c_in, 1, 1, 1, scale=1.0), param(c_out, 1, 1, 1, scale=1.0)
        self.conv1, self.conv2 = CausalConv(c_in, c_out), CausalConv(c_out, c_out)
        self.short = CausalConv(c_in, c_out, (1, 1, 1)) if c_in != c_out else None

    def __call__(self, x):
        h = self.conv1(F.silu(channel_rms(x, self.g1)))
        h = self.conv2(F.silu(channel_rms(h, self.g2)))
        return (self.short(x) if self.short else x) + h


class MidAttention:
    def __init__(self, c):
        self.gamma = param(c, 1, 1, scale=1.0)
        self.qkv, self.proj = (param(3 * c, c, 1, 1), param(3 * c)), (param(c, c, 1, 1), param(c))

    def __call__(self, x):
        b, c, t, h, w = x.shape
        frames = x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w)
        y = F.conv2d(channel_rms(frames, self.gamma), *self.qkv)
        q, k, v = y.reshape(b * t, 1, 3 * c, h * w).permute(0, 1, 3, 2).chunk(3, dim=-1)
        y = F.scaled_dot_product_attention(q, k, v).squeeze(1).permute(0, 2, 1).reshape(b * t, c, h, w)
        y = F.conv2d(y, *self.proj) + frames
        return y.reshape(b, t, c, h, w).permute(0, 2, 1, 3, 4)


class Upsample:
    def __init__(self, c, temporal):
        self.conv = (param(c // 2, c, 3, 3), param(c // 2))
        self.time = CausalConv(c, 2 * c, (3, 1, 1)) if temporal else None
        self.first = True

    def __call__(self, x):
        b, c, t, h, w = x.shape
        if self.time is not None:
            if self.first:
                self.first = False
                self.time.tail = x.new_zeros(b, c, 2, h, w)  # the reference starts its cache here
            else:
                x = self.time(x).reshape(b, 2, c, t, h, w)
                x = torch.stack((x[:, 0], x[:, 1]), dim=3).reshape(b, c, 2 * t, h, w)
                t *= 2
        frames = x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w)
        frames = F.conv2d(F.interpolate(frames, scale_factor=2.0, mode="nearest-exact"), *self.conv, padding=1)
        return frames.reshape(b, t, c // 2, 2 * h, 2 * w).permute(0, 2, 1, 3, 4)


class VaeDecoder:
    """The Wan 2.1 VAE decoder (base width 96), decoding one latent frame per call as diffusers does."""

    def __init__(self, z=16, base=96, mult=(1, 2, 4, 4), res=2, temporal=(True, True, False)):
        dims = [base * mult[-1]] + [base * m for m in reversed(mult)]
        self.post = CausalConv(z, z, (1, 1, 1))
        self.conv_in = CausalConv(z, dims[0])
        self.layers = [Resnet(dims[0], dims[0]), MidAttention(dims[0]), Resnet(dims[0], dims[0])]
        for i in range(len(mult)):
            c = dims[0] if i == 0 else dims[i] // 2
            for _ in range(res + 1):
                self.layers.append(Resnet(c, dims[i + 1]))
                c = dims[i + 1]
            if i < len(mult) - 1:
                self.layers.append(Upsample(dims[i + 1], temporal[i]))
        self.gamma = param(dims[-1], 1, 1, 1, scale=1.0)
        self.conv_out = CausalConv(dims[-1], 3)

    def __call__(self, latents):
        x = self.post(latents.to(BF16))
        out = []
        for i in range(x.shape[2]):
            h = self.conv_in(x[:, :, i : i + 1])
            for layer in self.layers:
                h = layer(h)
            out.append(self.conv_out(F.silu(channel_rms(h, self.gamma))))
        return torch.cat(out, dim=2).clamp(-1, 1)

    def reset(self):
        """Forgets the causal caches, so the next call decodes a new video."""
        convs = [self.post, self.conv_in, self.conv_out]
        for layer in self.layers:
            convs += [c for c in vars(layer).values() if isinstance(c, CausalConv)]
            if isinstance(layer, Upsample):
                layer.first = True
        for conv in convs:
            conv.tail = None

# Every attention and FFN linear of every block, as diffusers names them.
LORA_TARGETS = r"blocks\.\d+\.(attn1|attn2)\.(to_q|to_k|to_v|to_out\.0)|blocks\.\d+\.ffn\.net\.(0\.proj|2)"


class UnmergedLora(nn.Module):
    """PEFT's unmerged LoRA forward, base(x) + scale·B(A(x)), for when peft is not installed."""

    def __init__(self, base, rank, scale=1.0):
        super().__init__()
        self.base, self.scale = base, scale
        self.lora_A = nn.Linear(base.in_features, rank, bias=False, device=DEV, dtype=BF16)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False, device=DEV, dtype=BF16)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scale


def add_lora(dit, rank):
    """Adds a rank-`rank` LoRA (alpha = rank, scale 1, random A and B) to every target; says how."""
    try:
        import peft
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError as e:
        names = [n for n, _ in dit.named_modules() if re.fullmatch(LORA_TARGETS, n)]
        for name in names:
            parent, _, child = name.rpartition(".")
            owner = dit.get_submodule(parent)
            setattr(owner, child, UnmergedLora(getattr(owner, child), rank))
        return f"our rendering of PEFT's unmerged LoRA (peft not importable: {e}), {len(names)} layers"
    config = LoraConfig(r=rank, lora_alpha=rank, target_modules=LORA_TARGETS, init_lora_weights=False)
    inject_adapter_in_model(config, dit)
    dit.to(device=DEV, dtype=BF16)  # the LoRA factors in the base layers' dtype, as diffusers loads them
    layers = sum(1 for m in dit.modules() if isinstance(m, peft.tuners.lora.LoraLayer))
    return f"PEFT {peft.__version__} LoRA layers (unmerged), {layers} layers"


@torch.no_grad()
def lora():
    """The 1.3B 480p×81 forward plain and with a rank-32 LoRA on every attention and FFN linear."""
    dit = Dit(1536, 8960, 12, 30)
    latents = torch.randn(1, 16, 21, 60, 104, device=DEV)
    t = torch.full((1,), 500.0, device=DEV)
    text = torch.randn(1, 512, 4096, device=DEV)
    plain = {}
    for sdpa in ("default SDPA", "SDPA forced to cuDNN"):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION) if sdpa != "default SDPA" else contextlib.nullcontext():
            plain[sdpa] = median_ms(lambda: dit(latents, t, text), 5)
        row(f"1.3B 480p×81, batch 1, plain (eager, our torch DiT, {sdpa})", f"{plain[sdpa]:.0f} ms")
    how = add_lora(dit, 32)
    print(f"== LoRA: {how}", flush=True)
    for sdpa in ("default SDPA", "SDPA forced to cuDNN"):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION) if sdpa != "default SDPA" else contextlib.nullcontext():
            ms = median_ms(lambda: dit(latents, t, text), 5)
        row(
            f"1.3B 480p×81, batch 1, rank-32 LoRA unmerged (eager, our torch DiT, {sdpa})",
            f"{ms:.0f} ms (+{100 * (ms / plain[sdpa] - 1):.1f} %)",
        )


@torch.no_grad()
def variants(only=None):
    """Issue 12's DiT forwards: Wan2.2-TI2V-5B at 720p×121 with per-token timesteps (the first
    latent frame's tokens at 0, as in TI2V image mode) and Wan2.1-I2V-14B at 480p×81 with 257 CLIP
    image tokens, or only the case `only` names (ti2v, i2v); the Wan2.2 VAE decode is not rendered
    here. Default SDPA only: forcing cuDNN changed nothing at these shapes (2026-12-01, 1344 vs
    1340 ms and 3731 vs 3733 ms)."""
    cases = [
        ("ti2v", "Wan2.2-TI2V-5B 720p×121 (latent [1, 48, 31, 44, 80], per-token timesteps)",
         dict(dim=3072, ffn=14336, heads=24, layers=30, channels=48), (1, 48, 31, 44, 80), None),
        ("i2v", "Wan2.1-I2V-14B 480p×81 (latent [1, 36, 21, 60, 104], 257 image tokens)",
         dict(dim=5120, ffn=13824, heads=40, layers=40, channels=16, in_channels=36, image_dim=1280),
         (1, 36, 21, 60, 104), (1, 257, 1280)),
    ]
    for name, what, cfg, shape, image_shape in cases:
        if only not in (None, name):
            continue
        dit = Dit(**cfg)
        latents = torch.randn(*shape, device=DEV)
        text = torch.randn(1, 512, 4096, device=DEV)
        if image_shape is None:
            frame_tokens = (shape[3] // 2) * (shape[4] // 2)
            t = torch.full((1, shape[2] * frame_tokens), 500.0, device=DEV)
            t[:, :frame_tokens] = 0.0
            image = None
        else:
            t = torch.full((1,), 500.0, device=DEV)
            image = torch.randn(*image_shape, device=DEV)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        ms = median_ms(lambda: dit(latents, t, text, image), 3)
        row(f"{what} (eager, our torch DiT, default SDPA)", f"{ms:.0f} ms")
        row(f"{what}: peak memory (torch max allocated)", f"{torch.cuda.max_memory_allocated() / 1e9:.1f} GB")
        del dit
        torch.cuda.empty_cache()


def vae22(iterations="2"):
    """The Wan2.2 VAE decode at 720p×121 (latents [1, 48, 31, 44, 80] to [1, 3, 121, 704, 1280])
    through diffusers' own AutoencoderKLWan at the released TI2V-5B configuration, random weights
    (std 0.05 as VariantBench draws ours), untiled: bf16 and f32 weights and activations, CUDA-event
    medians after a warm-up. Needs diffusers on PYTHONPATH (run.sh unpacks diffusers.tar.xz)."""
    from diffusers import AutoencoderKLWan

    vae = AutoencoderKLWan(
        base_dim=160, decoder_base_dim=256, z_dim=48, dim_mult=[1, 2, 4, 4], num_res_blocks=2,
        attn_scales=[], temperal_downsample=[False, True, True], dropout=0.0, is_residual=True,
        in_channels=12, out_channels=12, patch_size=2, scale_factor_spatial=16,
        scale_factor_temporal=4, latents_mean=[0.0] * 48, latents_std=[1.0] * 48)
    with torch.no_grad():
        for p in vae.parameters():
            p.normal_(0.0, 0.05)
    latents = torch.randn(1, 48, 31, 44, 80, device=DEV)
    for dtype in (BF16, torch.float32):
        vae.to(DEV, dtype)
        z = latents.to(dtype)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        ms = median_ms(lambda: vae.decode(z).sample, int(iterations))
        name = "bf16" if dtype == BF16 else "f32"
        row(f"Wan2.2 VAE decode [1, 48, 31, 44, 80] -> 121×704×1280, diffusers AutoencoderKLWan {name}", f"{ms:.0f} ms")
        row(f"Wan2.2 VAE decode {name}: peak memory (torch max allocated)", f"{torch.cuda.max_memory_allocated() / 1e9:.1f} GB")


def median_ms(work, iterations):
    times = []
    for i in range(iterations + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        torch.cuda.synchronize()
        if i > 0:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def row(what, value):
    print(f"REF {what} | {value}", flush=True)


@torch.no_grad()
def main():
    quick = len(sys.argv) > 1 and sys.argv[1] == "quick"
    print(f"== torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    if len(sys.argv) > 1 and sys.argv[1] in ("lora", "variants", "vae22"):
        {"lora": lora, "variants": variants, "vae22": vae22}[sys.argv[1]](*sys.argv[2:])
        return
    l = 300 if quick else 32760
    q, k, v = (torch.randn(1, 12, l, 128, device=DEV, dtype=BF16) for _ in range(3))
    for name, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        with sdpa_kernel(backend):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v), 10)
        row(f"attention alone [1, 12, {l}, 128] BF16, {name}", f"{ms:.1f} ms ({4 * 12 * l * l * 128 / ms / 1e9:.0f} TFLOP/s)")
    del q, k, v

    shapes = [("480p×81, batch 1", 1, 21, 60, 104, 5), ("480p×81, batch 2", 2, 21, 60, 104, 3), ("720p×81, batch 1", 1, 21, 90, 160, 3)]
    if quick:
        shapes = [("small", 1, 5, 16, 16, 3)]
    models = [("1.3B", (1536, 8960, 12, 2 if quick else 30))]
    if not quick:
        models.append(("14B", (5120, 13824, 40, 40)))
    for name, cfg in models:
        dit = Dit(*cfg)
        for what, b, f, h, w, iterations in shapes if name == "1.3B" else shapes[:1]:
            latents = torch.randn(b, 16, f, h, w, device=DEV)
            t = torch.full((b,), 500.0, device=DEV)
            text = torch.randn(b, 512, 4096, device=DEV)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            ms = median_ms(lambda: dit(latents, t, text), iterations)
            row(f"{name} {what} (eager, our torch DiT)", f"{ms:.0f} ms")
            row(f"{name} {what}: peak memory (torch max allocated)", f"{torch.cuda.max_memory_allocated() / 1e9:.1f} GB")
            if b == 1 and h == 60:
                # torch's default SDPA choice is not always cuDNN; this is the eager stack at its best.
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    ms = median_ms(lambda: dit(latents, t, text), iterations)
                row(f"{name} {what} (eager, our torch DiT, SDPA forced to cuDNN)", f"{ms:.0f} ms")
        del dit
        torch.cuda.empty_cache()

    vae = VaeDecoder()
    f, h, w = (2, 8, 8) if quick else (21, 60, 104)
    latents = torch.randn(1, 16, f, h, w, device=DEV)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    def decode():
        vae.reset()
        return vae(latents)

    frames = decode().shape[2]
    ms = median_ms(decode, 3)
    row(f"VAE decode {frames} frames {8 * h}×{8 * w} (our torch decoder)", f"{ms:.0f} ms")
    row(f"VAE decode {frames} frames: peak memory (torch max allocated)", f"{torch.cuda.max_memory_allocated() / 1e9:.1f} GB")


if __name__ == "__main__":
    main()
