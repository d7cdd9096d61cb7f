"""Qwen-Image's text-to-image sampling (diffusers' QwenImagePipeline with its FlowMatchEulerDiscreteScheduler) in
plain PyTorch and NumPy, written from their mathematics, over the reference transformer (qwen_image.py) and VAE
(qwen_image_vae.py), to check the project's sampler against.

The scheduler is the one Qwen-Image's scheduler/scheduler_config.json configures: dynamic shifting with the
exponential time shift, mu interpolated linearly from base_shift 0.5 at 256 image tokens to max_shift 0.9 at
8192, shift_terminal 0.02, 1000 training timesteps. The schedule is computed with NumPy arrays of float32 as the
scheduler computes it, so that it carries NumPy's own promotion rules; the denoising runs in the latents' dtype.
"""
import math

import numpy as np
import torch

import qwen_image

TRAIN_TIMESTEPS = 1000
BASE_SEQ_LEN, MAX_SEQ_LEN = 256, 8192
BASE_SHIFT, MAX_SHIFT = 0.5, 0.9
SHIFT_TERMINAL = 0.02


def shift_mu(image_seq_len):
    """The pipeline's calculate_shift: a line through (256, 0.5) and (8192, 0.9)."""
    slope = (MAX_SHIFT - BASE_SHIFT) / (MAX_SEQ_LEN - BASE_SEQ_LEN)
    return image_seq_len * slope + (BASE_SHIFT - slope * BASE_SEQ_LEN)


def schedule(steps, image_seq_len):
    """(sigmas (steps + 1,), timesteps (steps,)) float32 tensors: the pipeline's linspace(1, 1/steps, steps)
    through the exponential time shift at mu, then stretched so that the last sigma is the terminal one;
    timesteps are 1000 sigma, and a final sigma of 0 follows."""
    if steps < 2:
        raise qwen_image.InputError(f"steps = {steps}: the terminal stretch needs at least 2")
    base = np.linspace(1.0, 1 / steps, steps).astype(np.float32)
    e = math.exp(shift_mu(image_seq_len))
    shifted = e / (e + (1 / base - 1) ** 1.0)
    one_minus = 1 - shifted
    scale = one_minus[-1] / (1 - SHIFT_TERMINAL)
    stretched = 1 - (one_minus / scale)
    sigmas = torch.from_numpy(stretched).to(torch.float32)
    timesteps = sigmas * TRAIN_TIMESTEPS
    return torch.cat([sigmas, torch.zeros(1)]), timesteps


def guided(cond, uncond, scale):
    """True classifier-free guidance, each token's result rescaled to the conditional prediction's norm."""
    combined = uncond + scale * (cond - uncond)
    return combined * (torch.norm(cond, dim=-1, keepdim=True) / torch.norm(combined, dim=-1, keepdim=True))


def denoise(model, noise, prompt_embeds, negative_embeds, steps, true_cfg_scale):
    """noise (1, C, h, w) -> the final latents (1, C, h, w) and the schedule. prompt_embeds (T, D) and
    negative_embeds (T', D) or None: one unpadded prompt each; guidance only with both a negative prompt and a
    scale above 1."""
    _, _, h, w = noise.shape
    latents = qwen_image.pack_latents(noise)
    grid = (1, h // 2, w // 2)
    sigmas, timesteps = schedule(steps, latents.shape[1])
    prompts = [prompt_embeds[None]]
    if negative_embeds is not None and true_cfg_scale > 1:
        prompts.append(negative_embeds[None])
    for i, t in enumerate(timesteps):
        timestep = t.expand(1).to(latents.dtype) / 1000
        preds = [model(latents, p.to(latents.dtype), torch.ones(p.shape[:2], dtype=torch.long), timestep,
                       grid)["output"] for p in prompts]
        velocity = guided(preds[0], preds[1], true_cfg_scale) if len(preds) == 2 else preds[0]
        latents = (latents.to(torch.float32) + (sigmas[i + 1] - sigmas[i]) * velocity).to(velocity.dtype)
    return qwen_image.unpack_latents(latents, h, w), sigmas, timesteps


def to_uint8(images):
    """The image processor's postprocess to PIL: (B, 3, H, W) in [-1, 1] -> (B, H, W, 3) uint8."""
    x = (images / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1).float().numpy()
    return torch.from_numpy((x * 255).round().astype("uint8"))
