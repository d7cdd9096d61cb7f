#!/usr/bin/env python3
"""A safetensors reader and writer written from the format's specification, with nothing but the
standard library, to check the project's files against a second implementation.

  safetensors_ref.py dump PATH
      Reads a .safetensors file, an index (*.safetensors.index.json) or a folder (model.safetensors
      or model.safetensors.index.json), checks every rule of the format, and prints one JSON object:
      {"files": {name: {"header_length": N, "metadata": {...}}}, "total_size": N or null,
       "tensors": [{"name", "dtype", "shape", "file", "hex"}, ...]} (tensors sorted by name).
      Exits 1 with the problem on standard error when a rule is broken.
  safetensors_ref.py write FOLDER SPEC_JSON [--max-shard-size BYTES]
      Writes the tensors of SPEC_JSON ({"metadata": {...}, "tensors": [{"name", "dtype", "shape",
      "hex"}, ...]}, in state-dict order) as transformers' save_pretrained lays them out: one
      model.safetensors, or model-0000i-of-0000n.safetensors shards and model.safetensors.index.json.
"""
import json
import os
import struct
import sys

MAX_HEADER = 100_000_000
# Bits per element, in the format's order of alignment (the writer stores the last first).
DTYPES = [("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8),
          ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8), ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8),
          ("I16", 16), ("U16", 16), ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32), ("F32", 32),
          ("C64", 64), ("F64", 64), ("I64", 64), ("U64", 64)]
BITS = dict(DTYPES)
RANK = {name: i for i, (name, _) in enumerate(DTYPES)}


class FormatError(Exception):
    pass


def no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise FormatError(f"key {key!r} appears twice")
        out[key] = value
    return out


def is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def tensor_bytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    bits = n * BITS[dtype]
    if bits % 8:
        raise FormatError(f"{n} elements of {dtype} do not fill whole bytes")
    return bits // 8


def read_file(path):
    """(header_length, metadata, {name: (dtype, shape, bytes)}) of one file, every rule checked."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise FormatError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER or 8 + n > len(blob):
        raise FormatError(f"{path}: header length {n} is too large for the file")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"{path}: the header is not UTF-8 JSON: {e}")
    if not isinstance(header, dict):
        raise FormatError(f"{path}: the header is not an object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise FormatError(f"{path}: __metadata__ is not a map of strings to strings")
    data = blob[8 + n:]
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{path}: {name}: the entry is not dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in BITS:
            raise FormatError(f"{path}: {name}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(is_count(d) for d in shape):
            raise FormatError(f"{path}: {name}: bad shape {shape!r}")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(is_count(o) for o in offsets):
            raise FormatError(f"{path}: {name}: bad data_offsets {offsets!r}")
        begin, end = offsets
        if end < begin or end - begin != tensor_bytes(dtype, shape):
            raise FormatError(f"{path}: {name}: data_offsets do not match the shape and dtype")
        entries.append((begin, end, name, dtype, shape))
    entries.sort()
    position = 0
    tensors = {}
    for begin, end, name, dtype, shape in entries:
        if begin != position:
            raise FormatError(f"{path}: {name}: not contiguous (begins at {begin}, expected {position})")
        position = end
        tensors[name] = (dtype, shape, data[begin:end])
    if position != len(data):
        raise FormatError(f"{path}: the tensors end at {position}, the data holds {len(data)} bytes")
    return n, metadata, tensors


def locate(path):
    if not os.path.isdir(path):
        return path
    for name in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.isfile(os.path.join(path, name)):
            return os.path.join(path, name)
    raise FormatError(f"{path}: no checkpoint")


def read_checkpoint(path):
    source = locate(path)
    if not source.endswith(".index.json"):
        n, metadata, tensors = read_file(source)
        name = os.path.basename(source)
        return {name: (n, metadata)}, None, {t: (name,) + v for t, v in tensors.items()}
    with open(source, encoding="utf-8") as f:
        index = json.load(f, object_pairs_hook=no_duplicates)
    weight_map = index["weight_map"]
    total_size = index.get("metadata", {}).get("total_size")
    folder = os.path.dirname(source)
    files, found = {}, {}
    for shard in sorted(set(weight_map.values())):
        if "/" in shard:
            raise FormatError(f"{source}: shard {shard!r} is not a plain file name")
        n, metadata, tensors = read_file(os.path.join(folder, shard))
        files[shard] = (n, metadata)
        for t, v in tensors.items():
            if weight_map.get(t) != shard:
                raise FormatError(f"{shard}: {t} is not mapped to this shard")
            found[t] = (shard,) + v
    missing = set(weight_map) - set(found)
    if missing:
        raise FormatError(f"{source}: tensors missing from their shards: {sorted(missing)}")
    if total_size is not None and total_size != sum(len(v[3]) for v in found.values()):
        raise FormatError(f"{source}: metadata.total_size {total_size} is not the tensors' bytes")
    return files, total_size, found


def dump(path):
    files, total_size, tensors = read_checkpoint(path)
    out = {
        "files": {name: {"header_length": n, "metadata": m} for name, (n, m) in files.items()},
        "total_size": total_size,
        "tensors": [{"name": t, "dtype": v[1], "shape": v[2], "file": v[0], "hex": v[3].hex()}
                    for t, v in sorted(tensors.items())],
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


def file_bytes(tensors, metadata):
    """A whole file as safetensors writes it: largest dtype first, then by name; header 8-aligned."""
    order = sorted(tensors, key=lambda t: (-RANK[t["dtype"]], t["name"]))
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for t in order:
        size = len(t["data"])
        if size != tensor_bytes(t["dtype"], t["shape"]):
            raise FormatError(f"{t['name']}: {size} bytes do not match its shape and dtype")
        header[t["name"]] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t["data"] for t in order)


def split(tensors, max_shard_size):
    """huggingface_hub's rule: in state-dict order; a tensor over the limit gets a shard of its own."""
    shards, current, current_size = [], [], 0
    for t in tensors:
        size = len(t["data"])
        if size > max_shard_size:
            shards.append([t])
            continue
        if current_size + size > max_shard_size and current:
            shards.append(current)
            current, current_size = [], 0
        current.append(t)
        current_size += size
    if current or not shards:
        shards.append(current)
    return shards


def write(folder, spec_path, max_shard_size):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    tensors = [dict(t, data=bytes.fromhex(t["hex"])) for t in spec["tensors"]]
    write_tensors(folder, tensors, spec.get("metadata") or {}, max_shard_size)


def write_tensors(folder, tensors, metadata, max_shard_size):
    """tensors: [{"name", "dtype", "shape", "data"}] in state-dict order."""
    shards = split(tensors, max_shard_size)
    os.makedirs(folder, exist_ok=True)
    if len(shards) == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(file_bytes(shards[0], metadata))
        return
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        with open(os.path.join(folder, name), "wb") as f:
            f.write(file_bytes(shard, metadata))
        weight_map.update({t["name"]: name for t in shard})
    index = {"metadata": {"total_size": sum(len(t["data"]) for t in tensors)}, "weight_map": weight_map}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def main(argv):
    try:
        if len(argv) == 2 and argv[0] == "dump":
            dump(argv[1])
        elif len(argv) in (3, 5) and argv[0] == "write":
            limit = int(argv[4]) if len(argv) == 5 and argv[3] == "--max-shard-size" else 5_000_000_000
            write(argv[1], argv[2], limit)
        else:
            sys.stderr.write(__doc__)
            return 2
    except (FormatError, OSError, KeyError) as e:
        sys.stderr.write(f"safetensors_ref: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
