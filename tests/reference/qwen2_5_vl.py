"""Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration) and Qwen2 (Qwen2ForCausalLM) in plain PyTorch, written from
the mathematics of the published modeling code, to check the project's worker against.

Module paths are those of the published model classes (newer layout): model.language_model.*, model.visual.*,
lm_head for Qwen2.5-VL; model.*, lm_head for Qwen2. Checkpoints in either published name layout load
(load_model); parameters report under the names of the file they came from.

Numerics follow the published code: RMSNorm and attention softmax in fp32 (or wider, so that float64 runs
stay float64), rotary tables computed in fp32, causal mask as an additive minimum of the compute dtype.
"""
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import qwen_config
import safetensors_io


class InputError(Exception):
    pass


def wide(dtype):
    return torch.promote_types(dtype, torch.float32)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.to(wide(x.dtype))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def attend(q, k, v, scale, mask=None):
    """softmax(q k^T * scale + mask) v over the last two dimensions, the softmax in fp32 or wider."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    probs = torch.softmax(scores.to(wide(q.dtype)), dim=-1).to(q.dtype)
    return torch.matmul(probs, v)


# ---------------------------------------------------------------- text decoder

def inverse_frequencies(dim, theta):
    # (dim/2,) in fp32, as the published rotary tables are built.
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def text_rotary(text, position_ids, dtype):
    """cos, sin of shape (B, T, head_dim). position_ids: (3, B, T) with M-RoPE, else (B, T).

    M-RoPE: the frequency channels are cut into mrope_section (t, h, w) and again the same cut for the second
    half of the duplicated table; chunk i takes its angle from position stream i % 3.
    """
    inv = inverse_frequencies(text.head_dim, text.rope_theta)
    freqs = position_ids.float()[..., None] * inv  # (..., B, T, head_dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    if text.mrope_section is not None:
        chunks, start = [], 0
        for i, size in enumerate(text.mrope_section * 2):
            chunks.append((i % 3, start, start + size))
            start += size
        cos = torch.cat([cos[s, ..., a:b] for s, a, b in chunks], dim=-1)
        sin = torch.cat([sin[s, ..., a:b] for s, a, b in chunks], dim=-1)
    return cos.to(dtype), sin.to(dtype)


class TextAttention(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.t = t
        self.q_proj = nn.Linear(t.hidden_size, t.num_heads * t.head_dim, bias=True)
        self.k_proj = nn.Linear(t.hidden_size, t.num_kv_heads * t.head_dim, bias=True)
        self.v_proj = nn.Linear(t.hidden_size, t.num_kv_heads * t.head_dim, bias=True)
        self.o_proj = nn.Linear(t.num_heads * t.head_dim, t.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask):  # x (B, T, C); cos, sin (B, T, hd); mask (B, 1, T, T)
        t = self.t
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, t.num_heads, t.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, t.num_kv_heads, t.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, t.num_kv_heads, t.head_dim).transpose(1, 2)
        cos, sin = cos[:, None], sin[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = t.num_heads // t.num_kv_heads  # query head h reads key/value head h // group
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        out = attend(q, k, v, t.head_dim ** -0.5, mask)  # (B, H, T, hd)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, t.num_heads * t.head_dim))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden, bias):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=bias)
        self.up_proj = nn.Linear(dim, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.input_layernorm = RMSNorm(t.hidden_size, t.rms_norm_eps)
        self.self_attn = TextAttention(t)
        self.post_attention_layernorm = RMSNorm(t.hidden_size, t.rms_norm_eps)
        self.mlp = SwiGLU(t.hidden_size, t.intermediate_size, bias=False)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Embedding(nn.Module):
    """nn.Embedding's mathematics, padding_idx included: that row gets no gradient."""

    def __init__(self, vocab, dim, padding_idx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, dim))
        self.padding_idx = padding_idx

    def forward(self, ids):
        if int(ids.min()) < 0 or int(ids.max()) >= self.weight.shape[0]:
            raise InputError(f"input_ids hold ids outside the vocabulary 0..{self.weight.shape[0] - 1}")
        return F.embedding(ids, self.weight, padding_idx=self.padding_idx)


class TextModel(nn.Module):
    def __init__(self, t, pad_token_id=None):
        super().__init__()
        self.t = t
        padding = pad_token_id if pad_token_id is not None and 0 <= pad_token_id < t.vocab_size else None
        self.embed_tokens = Embedding(t.vocab_size, t.hidden_size, padding)
        self.layers = nn.ModuleList([DecoderLayer(t) for _ in range(t.num_layers)])
        self.norm = RMSNorm(t.hidden_size, t.rms_norm_eps)

    def forward(self, embeds, position_ids, attention_mask):
        cos, sin = text_rotary(self.t, position_ids, embeds.dtype)
        mask = causal_mask(attention_mask, embeds.shape[0], embeds.shape[1], embeds.dtype)
        x = embeds
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


def causal_mask(attention_mask, batch, length, dtype):
    """(B, 1, T, T) additive: 0 where query i may read key j (j <= i and j not padding), else the dtype's minimum."""
    allowed = torch.ones(length, length, dtype=torch.bool).tril()[None].expand(batch, -1, -1)
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool()[:, None, :]
    zero = torch.zeros((), dtype=dtype)
    return torch.where(allowed, zero, torch.tensor(torch.finfo(dtype).min, dtype=dtype))[:, None]


def causal_lm_loss(logits, labels):
    """Mean cross-entropy of token i+1 from position i over the labels that are not -100 (the whole batch)."""
    shifted = F.pad(labels, (0, 1), value=-100)[:, 1:]
    return F.cross_entropy(logits.to(wide(logits.dtype)).reshape(-1, logits.shape[-1]), shifted.reshape(-1),
                           ignore_index=-100, reduction="mean")


# ---------------------------------------------------------------- vision tower

class PatchEmbed(nn.Module):
    """A Conv3d whose kernel equals its stride over (C, 2, 14, 14) patches: one Linear over the flattened patch."""

    def __init__(self, v):
        super().__init__()
        self.proj = nn.Conv3d(v.in_channels, v.hidden_size, (v.temporal_patch_size, v.patch_size, v.patch_size),
                              stride=(v.temporal_patch_size, v.patch_size, v.patch_size), bias=False)

    def forward(self, pixels):  # (S, C*Tp*P*P) -> (S, D)
        w = self.proj.weight
        return F.linear(pixels.to(w.dtype), w.reshape(w.shape[0], -1))


class VisionAttention(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.heads = v.num_heads
        self.qkv = nn.Linear(v.hidden_size, 3 * v.hidden_size, bias=True)
        self.proj = nn.Linear(v.hidden_size, v.hidden_size, bias=True)

    def forward(self, x, cos, sin, bounds):  # x (S, D); cos, sin (S, hd); bounds: [0, ..., S] block edges
        s, d = x.shape
        q, k, v = self.qkv(x).reshape(s, 3, self.heads, d // self.heads).unbind(1)  # each (S, H, hd)
        dtype = q.dtype
        cos, sin = cos[:, None].to(wide(dtype)), sin[:, None].to(wide(dtype))
        q = (q.to(cos.dtype) * cos + rotate_half(q.to(cos.dtype)) * sin).to(dtype)
        k = (k.to(cos.dtype) * cos + rotate_half(k.to(cos.dtype)) * sin).to(dtype)
        pieces = []
        for a, b in zip(bounds[:-1], bounds[1:]):  # attention only within each block
            qi, ki, vi = (t[a:b].transpose(0, 1) for t in (q, k, v))  # (H, n, hd)
            pieces.append(attend(qi, ki, vi, (d // self.heads) ** -0.5).transpose(0, 1))
        return self.proj(torch.cat(pieces, dim=0).reshape(s, d))


class VisionBlock(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.norm1 = RMSNorm(v.hidden_size, 1e-6)
        self.norm2 = RMSNorm(v.hidden_size, 1e-6)
        self.attn = VisionAttention(v)
        self.mlp = SwiGLU(v.hidden_size, v.intermediate_size, bias=True)

    def forward(self, x, cos, sin, bounds):
        x = x + self.attn(self.norm1(x), cos, sin, bounds)
        return x + self.mlp(self.norm2(x))


class PatchMerger(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.unit = v.hidden_size * v.spatial_merge_size ** 2
        self.ln_q = RMSNorm(v.hidden_size, 1e-6)
        self.mlp = nn.Sequential(nn.Linear(self.unit, self.unit), nn.GELU(), nn.Linear(self.unit, v.out_hidden_size))

    def forward(self, x):  # (S, D) -> (S / merge^2, out): the merge^2 consecutive patches of a unit side by side
        return self.mlp(self.ln_q(x).reshape(-1, self.unit))


def patch_positions(grid_thw, merge):
    """(S, 2) (row, column) of every patch in the processor's order: frame, merged row, merged column, then the
    merge x merge patches of the unit row by row."""
    rows = []
    for t, h, w in grid_thw.tolist():
        r = torch.arange(h).view(h // merge, merge, 1, 1).expand(-1, -1, w // merge, merge)
        c = torch.arange(w).view(1, 1, w // merge, merge).expand(h // merge, merge, -1, -1)
        pos = torch.stack([r.permute(0, 2, 1, 3).reshape(-1), c.permute(0, 2, 1, 3).reshape(-1)], dim=-1)
        rows.append(pos.repeat(t, 1))
    return torch.cat(rows, dim=0)


def window_order(grid_thw, v):
    """(window_index, window bounds): merged units listed window by window (each frame's windows row by row,
    each window's units row by row), and the edges of each window in patches. Windows are
    window_size / merge / patch merged units on a side; those at the right and bottom edges are cut short."""
    side = v.window_size // v.spatial_merge_size // v.patch_size
    unit = v.spatial_merge_size ** 2
    order, bounds, offset = [], [0], 0
    for t, h, w in grid_thw.tolist():
        gh, gw = h // v.spatial_merge_size, w // v.spatial_merge_size
        for frame in range(t):
            base = offset + frame * gh * gw
            for r0 in range(0, gh, side):
                for c0 in range(0, gw, side):
                    rows, cols = range(r0, min(r0 + side, gh)), range(c0, min(c0 + side, gw))
                    cells = [base + r * gw + c for r in rows for c in cols]
                    order.extend(cells)
                    bounds.append(bounds[-1] + len(cells) * unit)
        offset += t * gh * gw
    return torch.tensor(order, dtype=torch.long), bounds


def image_bounds(grid_thw):
    """Edges of each frame of each image in patches: full attention never crosses them."""
    bounds = [0]
    for t, h, w in grid_thw.tolist():
        for _ in range(t):
            bounds.append(bounds[-1] + h * w)
    return bounds


class VisionTower(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v
        self.patch_embed = PatchEmbed(v)
        self.blocks = nn.ModuleList([VisionBlock(v) for _ in range(v.depth)])
        self.merger = PatchMerger(v)

    def rotary(self, grid_thw):
        """cos, sin (S, head_dim): 2D RoPE, theta 10000; the first quarter of frequencies from the row, the second
        from the column, the table duplicated for rotate-half."""
        dim = self.v.head_dim // 2
        inv = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        pos = patch_positions(grid_thw, self.v.spatial_merge_size).float()
        freqs = (pos[..., None] * inv).reshape(pos.shape[0], -1)  # (S, hd/2): row freqs then column freqs
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, pixels, grid_thw):
        check_grid(pixels, grid_thw, self.v)
        unit = self.v.spatial_merge_size ** 2
        x = self.patch_embed(pixels)
        s = x.shape[0]
        cos, sin = self.rotary(grid_thw)
        index, windows = window_order(grid_thw, self.v)
        x = x.reshape(s // unit, unit, -1)[index].reshape(s, -1)
        cos = cos.reshape(s // unit, unit, -1)[index].reshape(s, -1)
        sin = sin.reshape(s // unit, unit, -1)[index].reshape(s, -1)
        # Window order keeps each image's patches together, so image edges hold in the reordered sequence.
        full = image_bounds(grid_thw)
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, full if i in self.v.fullatt_block_indexes else windows)
        x = self.merger(x)
        return x[torch.argsort(index)]


def check_grid(pixels, grid_thw, v):
    if grid_thw.dim() != 2 or grid_thw.shape[1] != 3:
        raise InputError(f"image_grid_thw has shape {list(grid_thw.shape)}, not (images, 3)")
    for i, (t, h, w) in enumerate(grid_thw.tolist()):
        if t < 1 or h < 1 or w < 1 or h % v.spatial_merge_size or w % v.spatial_merge_size:
            raise InputError(f"image {i}: grid {t}x{h}x{w} is not a whole number of {v.spatial_merge_size}x"
                             f"{v.spatial_merge_size} units")
    rows = int(grid_thw.prod(-1).sum())
    if pixels.dim() != 2 or pixels.shape[0] != rows or pixels.shape[1] != v.patch_values:
        raise InputError(f"pixel_values has shape {list(pixels.shape)}, but image_grid_thw asks for "
                         f"[{rows}, {v.patch_values}]")


# ---------------------------------------------------------------- the whole model

class VLInner(nn.Module):
    def __init__(self, cfg, pad_token_id):
        super().__init__()
        self.visual = VisionTower(cfg.vision)
        self.language_model = TextModel(cfg.text, pad_token_id)


class CausalLM(nn.Module):
    """Qwen2.5-VL (cfg.kind "qwen2_5_vl") or Qwen2 ("qwen2"): forward gives logits, loss, positions, image features."""

    def __init__(self, cfg, pad_token_id=None):
        super().__init__()
        self.cfg = cfg
        self.model = VLInner(cfg, pad_token_id) if cfg.kind == "qwen2_5_vl" else TextModel(cfg.text, pad_token_id)
        if not cfg.text.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.text.hidden_size, cfg.text.vocab_size, bias=False)

    @property
    def text_model(self):
        return self.model.language_model if self.cfg.kind == "qwen2_5_vl" else self.model

    def head(self, hidden):
        if self.cfg.text.tie_word_embeddings:
            return F.linear(hidden, self.text_model.embed_tokens.weight)
        return self.lm_head(hidden)

    def forward(self, input_ids, attention_mask=None, pixel_values=None, image_grid_thw=None, labels=None,
                position_ids=None):
        check_batch(input_ids, attention_mask, labels)
        embeds = self.text_model.embed_tokens(input_ids)
        out = {}
        if self.cfg.kind == "qwen2_5_vl":
            if (pixel_values is None) != (image_grid_thw is None):
                raise InputError("pixel_values and image_grid_thw come together or not at all")
            images = count_images(self.cfg, input_ids, attention_mask, image_grid_thw)
            if pixel_values is not None and image_grid_thw is not None and image_grid_thw.shape[0]:
                features = self.model.visual(pixel_values, image_grid_thw)
                out["image_features"] = features
                mask = (input_ids == self.cfg.image_token_id)[..., None].expand_as(embeds)
                embeds = embeds.masked_scatter(mask, features.to(embeds.dtype))
            elif images:
                raise InputError("the batch has image tokens but no pixel_values / image_grid_thw")
            if position_ids is None:
                position_ids = rope_index(self.cfg, input_ids, attention_mask, image_grid_thw)
        elif position_ids is None:
            position_ids = torch.arange(input_ids.shape[1]).expand(input_ids.shape[0], -1)
        hidden = self.text_model(embeds, position_ids, attention_mask)
        out["hidden"] = hidden  # the last hidden state, after the final norm
        out["logits"] = self.head(hidden)
        out["position_ids"] = position_ids
        if labels is not None:
            out["loss"] = causal_lm_loss(out["logits"], labels)
        return out


def check_batch(input_ids, attention_mask, labels):
    if input_ids.dim() != 2:
        raise InputError(f"input_ids has shape {list(input_ids.shape)}, not (batch, length)")
    for name, t in (("attention_mask", attention_mask), ("labels", labels)):
        if t is not None and t.shape != input_ids.shape:
            raise InputError(f"{name} has shape {list(t.shape)}, input_ids {list(input_ids.shape)}")


def sample_tokens(input_ids, attention_mask, b):
    ids = input_ids[b]
    return ids[attention_mask[b] == 1] if attention_mask is not None else ids


def images_in(cfg, tokens):
    """Images of one sample as the published code counts them: a vision start followed by an image token."""
    starts = (tokens[:-1] == cfg.vision_start_token_id).nonzero().flatten()
    return int((tokens[starts + 1] == cfg.image_token_id).sum())


def count_images(cfg, input_ids, attention_mask, grid_thw):
    """Checks each sample's <|image_pad|> tokens against the features of its images (images are taken in order,
    sample by sample); returns the number of images. A mismatch names the sample."""
    merge = cfg.vision.spatial_merge_size ** 2
    grids = grid_thw.tolist() if grid_thw is not None else []
    used = 0
    for b in range(input_ids.shape[0]):
        tokens = sample_tokens(input_ids, attention_mask, b)
        n = images_in(cfg, tokens)
        pads = int((tokens == cfg.image_token_id).sum())
        padded = int((input_ids[b] == cfg.image_token_id).sum()) - pads
        if padded:
            raise InputError(f"sample {b}: {padded} <|image_pad|> tokens lie under attention_mask = 0")
        if used + n > len(grids):
            raise InputError(f"sample {b}: {n} images but image_grid_thw has only {len(grids) - used} rows left")
        expected = sum(t * h * w // merge for t, h, w in grids[used:used + n])
        if pads != expected:
            raise InputError(f"sample {b}: {pads} <|image_pad|> tokens but its {n} images (image_grid_thw rows "
                             f"{used}..{used + n - 1}) give {expected} features")
        used += n
    if used != len(grids):
        raise InputError(f"image_grid_thw has {len(grids)} rows but the samples hold {used} images")
    return used


def rope_index(cfg, input_ids, attention_mask=None, grid_thw=None):
    """(3, B, T) M-RoPE positions. Text counts up in all three streams; an image of t x h x w merged units
    takes (temporal, row, column) = (0, i, j) + the position after the text before it, and the text after it
    resumes at one past the largest of those. Positions under attention_mask = 0 are 1."""
    merge = cfg.vision.spatial_merge_size
    batch, length = input_ids.shape
    out = torch.ones(3, batch, length, dtype=torch.long)
    grids = grid_thw.tolist() if grid_thw is not None else []
    image = 0
    for b in range(batch):
        tokens = sample_tokens(input_ids, attention_mask, b).tolist()
        pieces, cursor, start = [], 0, 0
        for _ in range(images_in(cfg, torch.tensor(tokens))):
            at = tokens.index(cfg.image_token_id, cursor)
            pieces.append(torch.arange(at - cursor).expand(3, -1) + start)
            start += at - cursor
            t, h, w = grids[image][0], grids[image][1] // merge, grids[image][2] // merge
            if tokens[at:at + t * h * w] != [cfg.image_token_id] * (t * h * w):
                raise InputError(f"sample {b}: image {image} needs {t * h * w} consecutive <|image_pad|> tokens")
            # Images have no time step between frames (a still image is one frame pair).
            grid = torch.stack([torch.zeros(t, h, w, dtype=torch.long),
                                torch.arange(h).view(1, h, 1).expand(t, h, w),
                                torch.arange(w).view(1, 1, w).expand(t, h, w)]).reshape(3, -1)
            pieces.append(grid + start)
            start = int(pieces[-1].max()) + 1
            cursor = at + t * h * w
            image += 1
        pieces.append(torch.arange(len(tokens) - cursor).expand(3, -1) + start)
        positions = torch.cat(pieces, dim=1)
        if attention_mask is not None:
            out[:, b, attention_mask[b] == 1] = positions
        else:
            out[:, b] = positions
    return out


# ---------------------------------------------------------------- checkpoints

def file_layout(names):
    """"current" (model.language_model.*, model.visual.*) or "legacy" (model.*, visual.*)."""
    current = any(n.startswith(("model.language_model.", "model.visual.")) for n in names)
    legacy = any(n.startswith("visual.") or (n.startswith("model.") and not n.startswith(
        ("model.language_model.", "model.visual."))) for n in names)
    if current and legacy:
        raise qwen_config.ConfigError("the checkpoint mixes model.language_model.* / model.visual.* names with "
                                      "model.* / visual.* names")
    return "current" if current else "legacy"


def to_internal(kind, name, layout):
    if kind != "qwen2_5_vl" or layout == "current":
        return name
    if name.startswith("visual."):
        return "model." + name
    if name.startswith("model."):
        return "model.language_model." + name[len("model."):]
    return name


def to_layout(kind, name, layout):
    """The inverse of to_internal: an internal (module) path in the given published layout."""
    if kind != "qwen2_5_vl" or layout == "current":
        return name
    if name.startswith("model.visual."):
        return name[len("model."):]
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def pad_token_id(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else {}
    value = text.get("pad_token_id", cfg.get("pad_token_id"))
    return int(value) if isinstance(value, int) else None


def load_model(folder, dtype=torch.float32):
    """(model, layout) from a published folder: config.json and model.safetensors or its sharded index."""
    cfg = qwen_config.load(folder)
    model = CausalLM(cfg, pad_token_id(folder)).to(dtype)
    tensors = safetensors_io.load(folder)
    layout = file_layout(tensors)
    params = dict(model.named_parameters())
    found = {}
    for name, tensor in tensors.items():
        internal = to_internal(cfg.kind, name, layout)
        if internal == "lm_head.weight" and cfg.text.tie_word_embeddings:
            continue  # tied: the head is the embedding, as the published model ties it on load
        if internal not in params:
            raise qwen_config.ConfigError(f"{folder}: tensor {name} is not a parameter of {cfg.kind}")
        if list(tensor.shape) != list(params[internal].shape):
            raise qwen_config.ConfigError(f"{folder}: {name} has shape {list(tensor.shape)}, the config asks for "
                                          f"{list(params[internal].shape)}")
        found[internal] = tensor
    missing = sorted(to_layout(cfg.kind, n, layout) for n in params if n not in found)
    if missing:
        raise qwen_config.ConfigError(f"{folder}: missing tensors: {', '.join(missing[:8])}"
                                      f"{' ...' if len(missing) > 8 else ''}")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(found[name].to(dtype))
    return model, layout


def state_dict_in_layout(model, layout):
    return {to_layout(model.cfg.kind, n, layout): p for n, p in model.named_parameters()}


def num_parameters(model):
    return sum(p.numel() for p in model.parameters())


def describe(cfg):
    t = cfg.text
    text = (f"{cfg.kind}: text {t.num_layers} layers, hidden {t.hidden_size}, heads {t.num_heads}/{t.num_kv_heads}, "
            f"vocab {t.vocab_size}, {'tied' if t.tie_word_embeddings else 'untied'} head")
    if cfg.vision is None:
        return text
    v = cfg.vision
    return text + (f"; vision depth {v.depth}, hidden {v.hidden_size}, window {v.window_size}, "
                   f"full {v.fullatt_block_indexes}")

