"""Golden outputs of diffusers' QwenImageTransformer2DModel on an Edit batch, for the worker's qwen_image
kind with reference latents.

usage: python3 make_qwen_image_edit_golden.py GOLDEN_DIR

Run where diffusers and safetensors import (the GPU machine's Python with diffusers' source on
PYTHONPATH; the CPU is enough), after make_qwen_image_golden.py: it reads GOLDEN_DIR/transformer (the
tiny checkpoint that script saved) through from_pretrained and writes GOLDEN_DIR/edit/:
  batch.safetensors       latents, noise (B, 16, 6, 10), sigmas (B), prompt_embeds (B, 9, 48), prompt_mask
                          (B, 9) int64 (the second sample padded after 6), and two reference images'
                          latents reference.0 (B, 16, 8, 4) and reference.1 (B, 16, 2, 6): packed grids of
                          3 x 5, 4 x 2 and 1 x 3, the reference grids of other sizes than the image's
  golden.safetensors      output (B, 15, 64), target, loss, grad.NAME (make_qwen_image_golden.GRADS), with
                          the checkpoint's config (zero_cond_t false: Qwen-Image-Edit and Edit-2509)
  golden_zero_cond_t.safetensors   the same with zero_cond_t true (Qwen-Image-Edit-2511: the reference
                          tokens' image-stream modulation reads the timestep 0), same weights
The step is the Edit pipelines' denoising input in training: the reference latents, unnoised and packed
by QwenImagePipeline._pack_latents, follow x_t on the sequence axis; img_shapes lists the three grids per
sample, so that QwenEmbedRope gives image i rotary frame i and the text starts past the largest half
side; the velocity is the output's first 15 tokens (what the pipelines keep), target = packed noise -
latents, loss the mean squared error over every value.
"""
import json
import os
import sys

import torch
import diffusers
from diffusers import QwenImageTransformer2DModel
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_qwen_image_golden import DIFFUSERS_COMMIT, GRADS, gradless, pack  # noqa: E402

REFERENCE_SHAPES = [(8, 4), (2, 6)]


def make_batch():
    g = torch.Generator().manual_seed(11)
    mask = torch.ones(2, 9, dtype=torch.int64)
    mask[1, 6:] = 0
    batch = {"latents": torch.randn(2, 16, 6, 10, generator=g), "noise": torch.randn(2, 16, 6, 10, generator=g),
             "sigmas": torch.tensor([0.45, 0.7]), "prompt_embeds": torch.randn(2, 9, 48, generator=g),
             "prompt_mask": mask}
    for i, (h, w) in enumerate(REFERENCE_SHAPES):
        batch[f"reference.{i}"] = torch.randn(2, 16, h, w, generator=g)
    return batch


def edit_loss(transformer, batch):
    """The Edit step: (output of the image being made, target, loss)."""
    latents, noise, sigmas = batch["latents"], batch["noise"], batch["sigmas"]
    s = sigmas.view(-1, 1, 1, 1)
    noisy = pack((1.0 - s) * latents + s * noise)
    references = [batch[f"reference.{i}"] for i in range(len(REFERENCE_SHAPES))]
    hidden = torch.cat([noisy] + [pack(r) for r in references], dim=1)
    b, _, h, w = latents.shape
    shapes = [(1, h // 2, w // 2)] + [(1, r.shape[2] // 2, r.shape[3] // 2) for r in references]
    output = transformer(hidden_states=hidden, encoder_hidden_states=batch["prompt_embeds"],
                         encoder_hidden_states_mask=batch["prompt_mask"], timestep=sigmas,
                         img_shapes=[shapes] * b, return_dict=False)[0]
    output = output[:, : noisy.size(1)]
    target = pack(noise - latents)
    loss = torch.mean(((output.float() - target.float()) ** 2).reshape(b, -1), 1).mean()
    return output, target, loss


def record(transformer, batch, path, versions):
    transformer.zero_grad(set_to_none=True)
    output, target, loss = edit_loss(transformer, batch)
    loss.backward()
    params = dict(transformer.named_parameters())
    golden = {"output": output.detach(), "target": target, "loss": loss.detach().reshape(())}
    for name in GRADS:
        golden["grad." + name] = params[name].grad.detach()
    none, zero = gradless(params.items())
    meta = dict(versions, zero_cond_t=str(bool(transformer.config.zero_cond_t)).lower(), grad_none=none,
                grad_zero=zero)
    save_file({k: v.contiguous() for k, v in golden.items()}, path, meta)
    return {"loss": loss.item(), "grad_none": none, "grad_zero": zero}


def main(golden_dir):
    out = os.path.join(golden_dir, "edit")
    os.makedirs(out, exist_ok=True)
    source = os.path.join(golden_dir, "transformer")
    batch = make_batch()
    save_file({k: v.contiguous() for k, v in batch.items()}, os.path.join(out, "batch.safetensors"))
    versions = {"torch": torch.__version__, "diffusers": diffusers.__version__, "diffusers_commit": DIFFUSERS_COMMIT}
    summary = dict(versions)
    for name, zero_cond_t in (("golden", False), ("golden_zero_cond_t", True)):
        saved = QwenImageTransformer2DModel.from_pretrained(source).float()
        config = dict(saved.config, zero_cond_t=zero_cond_t)
        transformer = QwenImageTransformer2DModel.from_config(config).float()
        transformer.load_state_dict(saved.state_dict())
        assert bool(transformer.config.zero_cond_t) == zero_cond_t
        summary[name] = record(transformer, batch, os.path.join(out, name + ".safetensors"), versions)
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
