"""Safetensors files as torch tensors, for the reference model and its tools.

The format's rules (header, offsets, shards and index) live in tests/core/formats/safetensors_ref.py;
this module only turns its bytes into tensors and tensors into its bytes.

  load(path)                -> {name: tensor}   a .safetensors file, an index, or a model folder
  save(path, tensors, metadata=None)            one .safetensors file
  save_folder(folder, tensors, max_shard_size)  model.safetensors, or shards + model.safetensors.index.json
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "formats"))
import safetensors_ref  # noqa: E402

FormatError = safetensors_ref.FormatError

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}

if sys.byteorder != "little":
    raise RuntimeError("safetensors_io: the format is little-endian and so must this machine be")


def to_tensor(dtype, shape, data):
    if dtype not in DTYPES:
        raise FormatError(f"dtype {dtype} has no torch equivalent here")
    if not data:
        return torch.empty(shape, dtype=DTYPES[dtype])
    # bytearray: a writable buffer, so the tensor owns memory torch may modify.
    return torch.frombuffer(bytearray(data), dtype=DTYPES[dtype]).reshape(shape)


def load(path):
    """Every tensor of a file, an index or a folder (model.safetensors or its index)."""
    _, _, found = safetensors_ref.read_checkpoint(path)
    return {name: to_tensor(v[1], v[2], v[3]) for name, v in found.items()}


def load_with_metadata(path):
    """(tensors, metadata) of one .safetensors file."""
    _, metadata, tensors = safetensors_ref.read_file(path)
    return {name: to_tensor(*v) for name, v in tensors.items()}, metadata


def entry(name, tensor):
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype not in NAMES:
        raise FormatError(f"{name}: dtype {tensor.dtype} cannot be written")
    data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return {"name": name, "dtype": NAMES[tensor.dtype], "shape": list(tensor.shape), "data": data}


def save(path, tensors, metadata=None):
    entries = [entry(name, t) for name, t in tensors.items()]
    with open(path, "wb") as f:
        f.write(safetensors_ref.file_bytes(entries, metadata or {}))


def save_folder(folder, tensors, max_shard_size=5_000_000_000, metadata=None):
    """As transformers' save_pretrained lays a model out; tensors in state-dict order."""
    entries = [entry(name, t) for name, t in tensors.items()]
    safetensors_ref.write_tensors(folder, entries, {"format": "pt"} if metadata is None else metadata,
                                  max_shard_size)
