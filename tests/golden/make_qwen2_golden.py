"""Golden outputs of transformers' Qwen2ForCausalLM, for the worker's qwen2 kind.

usage: python3 make_qwen2_golden.py OUT_DIR

Run where transformers is installed (the GPU machine's Python; the CPU is enough). It builds a tiny
Qwen2 (the sizes of tinyQwen2() in tests/trainer/models/QwenReferenceTest.cpp) with random weights
from a fixed seed, and a batch of two samples of 12 tokens (the second right-padded from position 8,
labels -100 on the first three positions of the first and on the padding), runs it in float32 with
eager attention, and writes to OUT_DIR:
  config.json            the model's config as transformers writes it
  model.safetensors      its weights under transformers' own names
  batch.safetensors      input_ids, attention_mask, labels (int64)
  golden.safetensors     logits (2, 12, vocab), loss (), and grad.NAME for the parameters in GRADS;
                         its metadata names the torch and transformers versions
The CPU test loads the same checkpoint and batch into the worker's model and compares.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen2Config, Qwen2ForCausalLM

GRADS = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
         "model.layers.1.self_attn.k_proj.bias", "model.layers.1.mlp.down_proj.weight",
         "model.norm.weight", "lm_head.weight"]


def tiny_config():
    cfg = Qwen2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False, hidden_act="silu")
    # transformers 5 keeps the rotary settings in rope_parameters.
    if getattr(cfg, "rope_parameters", None) is not None:
        cfg.rope_parameters = {"rope_type": "default", "rope_theta": 1000000.0}
    cfg._attn_implementation = "eager"
    return cfg


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(tiny_config()).float()
    with torch.no_grad():
        # Every weight drawn (transformers leaves biases at zero and norms at one).
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.05 * torch.randn_like(p))
    model.config.save_pretrained(out)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(out, "model.safetensors"),
              {"format": "pt"})

    g = torch.Generator().manual_seed(5)
    input_ids = torch.randint(0, 300, (2, 12), generator=g)
    attention_mask = torch.ones(2, 12, dtype=torch.int64)
    attention_mask[1, 8:] = 0
    labels = input_ids.clone()
    labels[0, :3] = -100
    labels[attention_mask == 0] = -100
    save_file({"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels},
              os.path.join(out, "batch.safetensors"))

    out_ = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    out_.loss.backward()
    params = dict(model.named_parameters())
    golden = {"logits": out_.logits.detach().contiguous(), "loss": out_.loss.detach().reshape(())}
    for name in GRADS:
        golden["grad." + name] = params[name].grad.detach().contiguous()
    save_file(golden, os.path.join(out, "golden.safetensors"),
              {"torch": torch.__version__, "transformers": transformers.__version__})
    print(json.dumps({"loss": out_.loss.item(), "torch": torch.__version__,
                      "transformers": transformers.__version__}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
