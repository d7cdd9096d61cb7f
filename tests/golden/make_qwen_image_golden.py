"""Golden outputs of diffusers' QwenImageTransformer2DModel (and one PEFT LoRA step), for the worker's
qwen_image kind.

usage: python3 make_qwen_image_golden.py OUT_DIR

Run where diffusers, PEFT and safetensors import (the GPU machine's Python with diffusers' source on
PYTHONPATH; the CPU is enough). It builds the tiny transformer the project's tests use (2 heads of 32, 2
layers, prompt states of 48, axes_dims_rope (8, 12, 12), 64 packed input channels, 16 out, patch 2) with
diffusers' own initialization, then draws every parameter again from a fixed seed so that none is zero or
one (Linear ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2), norm scales ~ 1 + N(0, 0.1^2)). It runs one training
batch in float32 the way diffusers' Qwen-Image LoRA training script does: latents of 16 x 6 x 10 (an odd
packed grid of 3 x 5), x_t = (1 - sigma) latents + sigma noise packed by QwenImagePipeline._pack_latents,
img_shapes [(1, 3, 5)] per sample, timestep = sigma (the script's timesteps / 1000), prompt states of 7
with the second sample's padded after 4 (encoder_hidden_states_mask), target = packed noise - latents, loss
the mean squared error over every value. It writes to OUT_DIR:
  transformer/            config.json, diffusion_pytorch_model.safetensors, as save_pretrained writes them
  batch.safetensors       latents, noise (B, 16, 6, 10), sigmas (B), prompt_embeds (B, 7, 48), prompt_mask
                          (B, 7) int64: run_qwen_image_reference.py's input layout
  golden.safetensors      output, target (B, 15, 64), loss, grad.NAME for GRADS; its metadata names the
                          versions, the parameters backward leaves without a gradient (grad_none) and those
                          whose gradient is zero throughout (grad_zero)
  lora.safetensors        PEFT LoRA through transformer.add_adapter (r 4, alpha 8, DiffSynth-Studio's 12
                          targets, A ~ U(+-1/sqrt(in)) and B ~ N(0, 0.05^2) from a fixed seed so that both
                          have gradients): lora.KEY (initial), grad.KEY and updated.KEY after one
                          torch.optim.AdamW step (lr 1e-3 and the worker's defaults: betas (0.9, 0.95),
                          eps 1e-8, weight decay 0.1), output and loss with the adapter; KEY is the module
                          path with .lora_A.weight / .lora_B.weight (get_peft_model_state_dict's names);
                          metadata grad_none and grad_zero as above, over the adapters
  lora/pytorch_lora_weights.safetensors   that adapter before the step, as QwenImagePipeline.save_lora_weights
                          writes it (transformer.* keys, the LoraConfig in lora_adapter_metadata)
"""
import json
import os
import sys

import torch
import diffusers
from diffusers import QwenImageTransformer2DModel
from safetensors.torch import save_file

DIFFUSERS_COMMIT = "58eb52c0803ea9af3abec60841c2a093bdf1f951"
TINY = dict(patch_size=2, in_channels=64, out_channels=16, num_layers=2, attention_head_dim=32,
            num_attention_heads=2, joint_attention_dim=48, guidance_embeds=False, axes_dims_rope=(8, 12, 12))
LORA_TARGETS = ["to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj", "to_out.0", "to_add_out",
                "img_mlp.net.2", "img_mod.1", "txt_mlp.net.2", "txt_mod.1"]
GRADS = ["img_in.weight", "txt_norm.weight", "txt_in.bias", "time_text_embed.timestep_embedder.linear_1.weight",
         "transformer_blocks.0.img_mod.1.weight", "transformer_blocks.0.txt_mod.1.bias",
         "transformer_blocks.0.attn.to_q.weight", "transformer_blocks.0.attn.add_k_proj.weight",
         "transformer_blocks.0.attn.norm_added_q.weight", "transformer_blocks.0.attn.to_add_out.weight",
         "transformer_blocks.0.txt_mlp.net.2.weight", "transformer_blocks.1.txt_mod.1.weight",
         "transformer_blocks.1.attn.to_out.0.bias", "transformer_blocks.1.attn.add_v_proj.weight",
         "transformer_blocks.1.attn.norm_k.weight", "transformer_blocks.1.img_mlp.net.0.proj.weight",
         "norm_out.linear.weight", "proj_out.bias"]
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def pipeline_class():
    """QwenImagePipeline (its _pack_latents and save_lora_weights), or None where it does not import."""
    try:
        from diffusers import QwenImagePipeline
        return QwenImagePipeline
    except Exception as e:  # noqa: BLE001 - the pipeline module imports transformers' Qwen2.5-VL
        print(f"QwenImagePipeline does not import ({e}); using its mixins", file=sys.stderr)
        return None


PIPELINE = pipeline_class()


def pack(latents):
    b, c, h, w = latents.shape
    if PIPELINE is not None:
        return PIPELINE._pack_latents(latents, b, c, h, w)
    return latents.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, h // 2 * w // 2, c * 4)


def save_lora(folder, layers, metadata):
    if PIPELINE is not None:
        PIPELINE.save_lora_weights(folder, transformer_lora_layers=layers, transformer_lora_adapter_metadata=metadata)
    else:
        from diffusers.loaders import QwenImageLoraLoaderMixin
        QwenImageLoraLoaderMixin.save_lora_weights(folder, transformer_lora_layers=layers,
                                                   transformer_lora_adapter_metadata=metadata)


def tiny_transformer():
    torch.manual_seed(0)
    model = QwenImageTransformer2DModel(**TINY).float()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith(".bias"):
                p.copy_(0.1 * noise)
            elif p.dim() == 1:
                p.copy_(1 + 0.1 * noise)
            else:
                p.copy_(noise / p.shape[1] ** 0.5)
    return model


def make_batch():
    g = torch.Generator().manual_seed(5)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 4:] = 0
    return {"latents": torch.randn(2, 16, 6, 10, generator=g), "noise": torch.randn(2, 16, 6, 10, generator=g),
            "sigmas": torch.tensor([0.3, 0.8]), "prompt_embeds": torch.randn(2, 7, 48, generator=g),
            "prompt_mask": mask}


def flow_loss(transformer, batch):
    """The training script's step: (output, target, loss)."""
    latents, noise, sigmas = batch["latents"], batch["noise"], batch["sigmas"]
    s = sigmas.view(-1, 1, 1, 1)
    noisy = (1.0 - s) * latents + s * noise
    b, _, h, w = latents.shape
    output = transformer(hidden_states=pack(noisy), encoder_hidden_states=batch["prompt_embeds"],
                         encoder_hidden_states_mask=batch["prompt_mask"], timestep=sigmas,
                         img_shapes=[(1, h // 2, w // 2)] * b, return_dict=False)[0]
    target = pack(noise - latents)
    loss = torch.mean(((output.float() - target.float()) ** 2).reshape(b, -1), 1).mean()
    return output, target, loss


def gradless(named):
    """Names whose gradient is None, and those whose gradient is zero throughout."""
    none = [n for n, p in named if p.grad is None]
    zero = [n for n, p in named if p.grad is not None and not p.grad.abs().gt(0).any()]
    return ",".join(none), ",".join(zero)


def lora_step(transformer, batch, out, versions):
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict
    transformer.requires_grad_(False)
    transformer.add_adapter(LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, init_lora_weights=True,
                                       target_modules=LORA_TARGETS))
    g = torch.Generator().manual_seed(7)
    adapters = {}
    with torch.no_grad():
        for name, p in transformer.named_parameters():
            if ".lora_A." in name:
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) / p.shape[1] ** 0.5)
            elif ".lora_B." in name:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:
                continue
            p.requires_grad_(True)
            adapters[name.replace(".default", "")] = p
    layers = get_peft_model_state_dict(transformer)
    assert sorted(layers) == sorted(adapters), "PEFT's state dict names other tensors than the adapters"
    save_lora(os.path.join(out, "lora"), layers, transformer.peft_config["default"].to_dict())

    record = {"lora." + k: p.detach().clone() for k, p in adapters.items()}
    output, _, loss = flow_loss(transformer, batch)
    loss.backward()
    torch.optim.AdamW(list(adapters.values()), **ADAMW).step()
    for k, p in adapters.items():
        if p.grad is not None:
            record["grad." + k] = p.grad.detach().clone()
        record["updated." + k] = p.detach().clone()
    record["output"] = output.detach()
    record["loss"] = loss.detach().reshape(())
    none, zero = gradless(adapters.items())
    meta = dict(versions, adapters=str(len(adapters) // 2), grad_none=none, grad_zero=zero, adamw=json.dumps(ADAMW))
    save_file({k: v.contiguous() for k, v in record.items()}, os.path.join(out, "lora.safetensors"), meta)
    return {"lora_loss": loss.item(), "lora_layers": len(adapters) // 2, "lora_grad_none": none,
            "lora_grad_zero": zero}


def main(out):
    os.makedirs(out, exist_ok=True)
    transformer = tiny_transformer()
    transformer.save_pretrained(os.path.join(out, "transformer"), safe_serialization=True)
    batch = make_batch()
    save_file({k: v.contiguous() for k, v in batch.items()}, os.path.join(out, "batch.safetensors"))

    output, target, loss = flow_loss(transformer, batch)
    loss.backward()
    params = dict(transformer.named_parameters())
    golden = {"output": output.detach(), "target": target, "loss": loss.detach().reshape(())}
    for name in GRADS:
        golden["grad." + name] = params[name].grad.detach()
    import peft
    versions = {"torch": torch.__version__, "diffusers": diffusers.__version__, "diffusers_commit": DIFFUSERS_COMMIT,
                "peft": peft.__version__, "pipeline": "QwenImagePipeline" if PIPELINE else "QwenImageLoraLoaderMixin"}
    none, zero = gradless(params.items())
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(out, "golden.safetensors"),
              dict(versions, grad_none=none, grad_zero=zero))
    transformer.zero_grad(set_to_none=True)
    summary = dict(versions, loss=loss.item(), grad_none=none, grad_zero=zero)
    summary.update(lora_step(transformer, batch, out, versions))
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
