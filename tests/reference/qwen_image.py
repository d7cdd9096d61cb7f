"""The Qwen-Image transformer (diffusers' QwenImageTransformer2DModel) in plain PyTorch, written from its
mathematics, to check the project's worker against; with the pipeline's latent packing and the flow-matching
training loss of the published trainers.

The weights live in one dict under the names of diffusers' state dict (img_in.weight,
transformer_blocks.0.attn.to_q.bias, ...); the forward pass reads them by name, so a gradient asked for by its
file name is that tensor's .grad.

Numerics follow the published code: the sinusoidal timestep features and the rotary angles are computed in fp32
whatever the compute dtype; norms and the attention softmax run in fp32 or wider, so that float64 runs stay
float64. Only the default configuration is covered (no guidance embedding, zero_cond_t, additional timestep
condition or layered 3D rope).
"""
import dataclasses
import json
import math
import os

import torch

import safetensors_io

CLASS_NAME = "QwenImageTransformer2DModel"
TIME_CHANNELS = 256
ROPE_THETA = 10000.0
ROPE_TABLE_LENGTH = 4096  # positions the published tables hold; past them the published model fails
NORM_EPS = 1e-6
MLP_RATIO = 4
UNSUPPORTED = ("guidance_embeds", "use_additional_t_cond", "use_layer3d_rope")
WEIGHTS_FILE = "diffusion_pytorch_model.safetensors"
WEIGHTS_INDEX = "diffusion_pytorch_model.safetensors.index.json"


class ConfigError(Exception):
    pass


class InputError(Exception):
    pass


def wide(dtype):
    return torch.promote_types(dtype, torch.float32)


@dataclasses.dataclass(frozen=True)
class Config:
    patch_size: int = 2
    in_channels: int = 64
    out_channels: int = 16
    num_layers: int = 60
    attention_head_dim: int = 128
    num_attention_heads: int = 24
    joint_attention_dim: int = 3584
    axes_dims_rope: tuple = (16, 56, 56)
    # Qwen-Image-Edit-2511: the image stream's modulation of reference tokens uses timestep 0.
    zero_cond_t: bool = False

    @property
    def inner(self):
        return self.num_attention_heads * self.attention_head_dim

    @property
    def out_features(self):
        return self.patch_size * self.patch_size * self.out_channels


def parse_config(raw, where="config.json"):
    """Config from config.json's fields; other fields (pooled_projection_dim, _class_name, ...) are ignored."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    if raw.get("_class_name", CLASS_NAME) != CLASS_NAME:
        raise ConfigError(f"{where}: _class_name is {raw['_class_name']!r}, expected {CLASS_NAME}")
    for name in UNSUPPORTED:
        if raw.get(name):
            raise ConfigError(f"{where}: {name} true is not covered by this reference (only the default)")
    values = {}
    for field in dataclasses.fields(Config):
        value = raw.get(field.name, field.default)
        if field.name == "out_channels" and value is None:
            value = raw.get("in_channels", Config.in_channels)
        if field.name == "axes_dims_rope":
            if not isinstance(value, (list, tuple)) or len(value) != 3 or not all(
                    isinstance(v, int) and v > 0 and v % 2 == 0 for v in value):
                raise ConfigError(f"{where}: axes_dims_rope must be three positive even integers, got {value!r}")
            value = tuple(value)
        elif field.name == "zero_cond_t":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: zero_cond_t must be true or false, got {value!r}")
        elif not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"{where}: {field.name} must be a positive integer, got {value!r}")
        values[field.name] = value
    cfg = Config(**values)
    if sum(cfg.axes_dims_rope) != cfg.attention_head_dim:
        raise ConfigError(f"{where}: axes_dims_rope {list(cfg.axes_dims_rope)} must sum to attention_head_dim "
                          f"{cfg.attention_head_dim}")
    return cfg


def parameter_shapes(cfg):
    """{name: shape} in the order of diffusers' state dict."""
    d, hd = cfg.inner, cfg.attention_head_dim
    shapes = {}

    def linear(name, fan_in, fan_out):
        shapes[f"{name}.weight"] = (fan_out, fan_in)
        shapes[f"{name}.bias"] = (fan_out,)

    linear("time_text_embed.timestep_embedder.linear_1", TIME_CHANNELS, d)
    linear("time_text_embed.timestep_embedder.linear_2", d, d)
    shapes["txt_norm.weight"] = (cfg.joint_attention_dim,)
    linear("img_in", cfg.in_channels, d)
    linear("txt_in", cfg.joint_attention_dim, d)
    for i in range(cfg.num_layers):
        block = f"transformer_blocks.{i}"
        for stream in ("img", "txt"):
            linear(f"{block}.{stream}_mod.1", d, 6 * d)
            if stream == "img":
                shapes[f"{block}.attn.norm_q.weight"] = (hd,)
                shapes[f"{block}.attn.norm_k.weight"] = (hd,)
                for proj in ("to_q", "to_k", "to_v", "add_k_proj", "add_v_proj", "add_q_proj", "to_out.0",
                             "to_add_out"):
                    linear(f"{block}.attn.{proj}", d, d)
                shapes[f"{block}.attn.norm_added_q.weight"] = (hd,)
                shapes[f"{block}.attn.norm_added_k.weight"] = (hd,)
            linear(f"{block}.{stream}_mlp.net.0.proj", d, MLP_RATIO * d)
            linear(f"{block}.{stream}_mlp.net.2", MLP_RATIO * d, d)
    linear("norm_out.linear", d, 2 * d)
    linear("proj_out", d, cfg.out_features)
    return shapes


# ---------------------------------------------------------------- latents

def pack_latents(latents):
    """(B, C, H, W) -> (B, H/2 * W/2, 4C): each 2 x 2 patch becomes one token, tokens row by row over the patch
    grid, features channel-major then (row in patch, column in patch)."""
    if latents.dim() != 4 or latents.shape[2] % 2 or latents.shape[3] % 2:
        raise InputError(f"latents must be (B, C, H, W) with H and W even, got {list(latents.shape)}")
    b, c, h, w = latents.shape
    patches = latents.reshape(b, c, h // 2, 2, w // 2, 2)
    return patches.permute(0, 2, 4, 1, 3, 5).reshape(b, (h // 2) * (w // 2), c * 4)


def unpack_latents(packed, height, width):
    """pack_latents' inverse: (B, H/2 * W/2, 4C) -> (B, C, H, W) for latents of height x width."""
    b, n, f = packed.shape
    if height % 2 or width % 2 or n != (height // 2) * (width // 2) or f % 4:
        raise InputError(f"packed latents {list(packed.shape)} do not fit a {height} x {width} grid")
    grid = packed.reshape(b, height // 2, width // 2, f // 4, 2, 2)
    return grid.permute(0, 3, 1, 4, 2, 5).reshape(b, f // 4, height, width)


# ---------------------------------------------------------------- embeddings

def timestep_features(timesteps):
    """(B,) in [0, 1] -> (B, 256) fp32: [cos | sin] of 1000 t 10000^(-k/128), k = 0..127."""
    half = TIME_CHANNELS // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    angles = (timesteps.float()[:, None] * freqs[None, :]) * 1000.0
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)


def axis_frequencies(dim):
    """(dim/2,) fp32: theta^(-2i/dim)."""
    return 1.0 / torch.pow(ROPE_THETA, torch.arange(0, dim, 2, dtype=torch.float32) / dim)


def rope_angles(axes_dims, grids, text_len):
    """(image (sum of F*H*W, head_dim/2), text (T, head_dim/2)) rotation angles in fp32.

    `grids` is one (F, H, W) or a list of them: the image being made, then the reference images an Edit
    pipeline appends to the sequence. Each token has a (frame, row, column) position; channel block a of the
    head takes its angles from position component a times that axis' frequencies. Image rows and columns are
    centred: row r of H sits at r - (H - H//2) (so -2, -1, 0 for H = 3), likewise columns; the frames of
    image i count from i. Text token j sits at the largest max(H//2, W//2) of the images plus j on all three
    axes, just past the images' largest positive position.
    """
    if isinstance(grids[0], int):
        grids = [grids]
    start = max(max(h // 2, w // 2) for _, h, w in grids)
    image_pos = [[], [], []]
    for index, (frames, height, width) in enumerate(grids):
        if max(index + frames, height - height // 2, width - width // 2, start + text_len) > ROPE_TABLE_LENGTH:
            raise InputError(f"image grid {[frames, height, width]} with {text_len} text tokens passes the "
                             f"{ROPE_TABLE_LENGTH} positions of the published rotary tables")
        f, r, c = torch.meshgrid(torch.arange(frames) + index, torch.arange(height) - (height - height // 2),
                                 torch.arange(width) - (width - width // 2), indexing="ij")
        for axis, pos in enumerate((f, r, c)):
            image_pos[axis].append(pos.reshape(-1))
    image_pos = [torch.cat(p) for p in image_pos]
    text_pos = torch.arange(text_len) + start
    image, text = [], []
    for axis, dim in enumerate(axes_dims):
        freqs = axis_frequencies(dim)
        image.append(image_pos[axis].float()[:, None] * freqs[None, :])
        text.append(text_pos.float()[:, None] * freqs[None, :])
    return torch.cat(image, dim=-1), torch.cat(text, dim=-1)


def rotate(x, angles):
    """x (B, S, heads, D): channels (2i, 2i+1) as the complex number x_2i + i x_2i+1, times exp(i angle_i)."""
    cos = torch.cos(angles).to(wide(x.dtype))[None, :, None, :]
    sin = torch.sin(angles).to(wide(x.dtype))[None, :, None, :]
    pairs = x.to(cos.dtype).reshape(*x.shape[:-1], -1, 2)
    re, im = pairs[..., 0], pairs[..., 1]
    out = torch.stack([re * cos - im * sin, re * sin + im * cos], dim=-1)
    return out.flatten(-2).to(x.dtype)


# ---------------------------------------------------------------- layers

def linear(p, name, x):
    return torch.matmul(x, p[f"{name}.weight"].t()) + p[f"{name}.bias"]


def silu(x):
    return x * torch.sigmoid(x)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def rms_norm(x, weight, eps=NORM_EPS):
    h = x.to(wide(x.dtype))
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return h.to(x.dtype) * weight


def layer_norm(x, eps=NORM_EPS):
    """LayerNorm without scale or shift: (x - mean) / sqrt(biased variance + eps)."""
    h = x.to(wide(x.dtype))
    centred = h - h.mean(-1, keepdim=True)
    return (centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def per_token(m):
    """A modulation row per sample (B, C) as (B, 1, C); one per token (B, P, C) as it is."""
    return m[:, None, :] if m.dim() == 2 else m


def modulate(x, shift, scale):
    return x * (1 + per_token(scale)) + per_token(shift)


def mlp(p, name, x):
    return linear(p, f"{name}.net.2", gelu_tanh(linear(p, f"{name}.net.0.proj", x)))


def attention(q, k, v, key_mask):
    """q, k, v (B, S, heads, D); key_mask (B, S) bool. softmax(q k^T / sqrt(D)) v over the keys kept."""
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores.to(wide(q.dtype)), dim=-1).to(q.dtype)
    out = torch.matmul(probs, v).transpose(1, 2)
    return out.reshape(*out.shape[:2], -1)


def joint_attention(p, name, img, txt, text_mask, image_angles, text_angles, head_dim):
    """One attention over [text, image]: text projections add_*_proj, image projections to_*; per-head RMSNorm of
    q and k in each stream, rotary, then the outputs split back through to_add_out / to_out.0."""
    def heads(t):
        return t.reshape(*t.shape[:2], -1, head_dim)

    def stream(x, q_proj, k_proj, v_proj, q_norm, k_norm, angles):
        q = rms_norm(heads(linear(p, f"{name}.{q_proj}", x)), p[f"{name}.{q_norm}.weight"])
        k = rms_norm(heads(linear(p, f"{name}.{k_proj}", x)), p[f"{name}.{k_norm}.weight"])
        return rotate(q, angles), rotate(k, angles), heads(linear(p, f"{name}.{v_proj}", x))

    tq, tk, tv = stream(txt, "add_q_proj", "add_k_proj", "add_v_proj", "norm_added_q", "norm_added_k", text_angles)
    iq, ik, iv = stream(img, "to_q", "to_k", "to_v", "norm_q", "norm_k", image_angles)
    image_keys = torch.ones(img.shape[:2], dtype=torch.bool)
    out = attention(torch.cat([tq, iq], 1), torch.cat([tk, ik], 1), torch.cat([tv, iv], 1),
                    torch.cat([text_mask, image_keys], 1))
    seq_txt = txt.shape[1]
    return linear(p, f"{name}.to_out.0", out[:, seq_txt:]), linear(p, f"{name}.to_add_out", out[:, :seq_txt])


def block(p, name, img, txt, temb, text_mask, image_angles, text_angles, head_dim, zero=None):
    """One dual-stream block: each stream's modulation Linear(SiLU(temb)) gives (shift, scale, gate) for the
    attention and again for the MLP; residuals are gated. `zero` (zero_cond_t): (temb of timestep 0, the
    image tokens (P,) bool that are references' ), whose image modulation comes from that embedding."""
    img_mod = linear(p, f"{name}.img_mod.1", silu(temb))
    if zero is not None:
        zero_temb, reference = zero
        zero_mod = linear(p, f"{name}.img_mod.1", silu(zero_temb))
        img_mod = torch.where(reference[None, :, None], zero_mod[:, None, :], img_mod[:, None, :])
    img_mod = img_mod.chunk(6, dim=-1)
    txt_mod = linear(p, f"{name}.txt_mod.1", silu(temb)).chunk(6, dim=-1)
    img_attn, txt_attn = joint_attention(p, f"{name}.attn", modulate(layer_norm(img), img_mod[0], img_mod[1]),
                                         modulate(layer_norm(txt), txt_mod[0], txt_mod[1]), text_mask,
                                         image_angles, text_angles, head_dim)
    img = img + per_token(img_mod[2]) * img_attn
    txt = txt + txt_mod[2][:, None, :] * txt_attn
    img = img + per_token(img_mod[5]) * mlp(p, f"{name}.img_mlp", modulate(layer_norm(img), img_mod[3], img_mod[4]))
    txt = txt + txt_mod[5][:, None, :] * mlp(p, f"{name}.txt_mlp", modulate(layer_norm(txt), txt_mod[3], txt_mod[4]))
    return img, txt


# ---------------------------------------------------------------- model

class DiffusersModel:
    """A diffusers model's parameters by their state-dict names, with its config; `class_name` names it in
    messages and `first` is a parameter whose dtype is the model's."""
    class_name = CLASS_NAME
    first = "img_in.weight"

    def __init__(self, cfg, params):
        self.cfg = cfg
        self.params = params

    def to(self, dtype):
        self.params = {k: v.detach().to(dtype) for k, v in self.params.items()}
        return self

    @property
    def dtype(self):
        return self.params[self.first].dtype

    def requires_grad(self, names):
        """Gradients for these names only (others frozen); unknown names are an error naming them."""
        unknown = [n for n in names if n not in self.params]
        if unknown:
            raise InputError(f"not parameters of {self.class_name}: {', '.join(unknown)}")
        for name, t in self.params.items():
            t.requires_grad_(name in names)
            t.grad = None


class QwenImageTransformer(DiffusersModel):
    def time_embedding(self, timesteps):
        p, name = self.params, "time_text_embed.timestep_embedder"
        features = timestep_features(timesteps).to(self.dtype)
        return linear(p, f"{name}.linear_2", silu(linear(p, f"{name}.linear_1", features)))

    def forward(self, hidden_states, encoder_hidden_states, encoder_mask, timestep, grid):
        """hidden_states (B, F*H*W, in_channels) packed latents over grid (F, H, W), or over a list of grids
        one after the other (an Edit pipeline's image being made, then its references); encoder_hidden_states
        (B, T, joint_attention_dim); encoder_mask (B, T), nonzero for tokens; timestep (B,) in [0, 1].
        Returns output (B, image tokens, patch^2 * out_channels), temb, and the rope angles."""
        p, cfg = self.params, self.cfg
        text_len = encoder_hidden_states.shape[1]
        grids = [grid] if isinstance(grid[0], int) else list(grid)
        if hidden_states.shape[1] != sum(f * h * w for f, h, w in grids):
            raise InputError(f"{hidden_states.shape[1]} image tokens do not fill the grids {[list(g) for g in grids]}")
        grid = grids
        if encoder_mask.shape != encoder_hidden_states.shape[:2]:
            raise InputError(f"the text mask {list(encoder_mask.shape)} is not (B, T) of the text "
                             f"{list(encoder_hidden_states.shape)}")
        image_angles, text_angles = rope_angles(cfg.axes_dims_rope, grid, text_len)
        img = linear(p, "img_in", hidden_states)
        txt = linear(p, "txt_in", rms_norm(encoder_hidden_states, p["txt_norm.weight"]))
        temb = self.time_embedding(timestep)
        zero = None
        if cfg.zero_cond_t and len(grid) > 1:
            made = grid[0][0] * grid[0][1] * grid[0][2]
            reference = torch.arange(img.shape[1], device=img.device) >= made
            zero = (self.time_embedding(torch.zeros_like(timestep)), reference)
        text_mask = encoder_mask != 0
        for i in range(cfg.num_layers):
            img, txt = block(p, f"transformer_blocks.{i}", img, txt, temb, text_mask, image_angles, text_angles,
                             cfg.attention_head_dim, zero)
        scale, shift = linear(p, "norm_out.linear", silu(temb)).chunk(2, dim=-1)
        output = linear(p, "proj_out", modulate(layer_norm(img), shift, scale))
        return {"output": output, "temb": temb, "image_angles": image_angles, "text_angles": text_angles}

    __call__ = forward


def rope_table(angles):
    """(N, D/2) angles -> (N, D/2, 2) (cos, sin), as the project's rotary tables are written."""
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)


def flow_matching_loss(model, latents, noise, sigmas, prompt_embeds, prompt_mask, references=()):
    """The published trainers' loss: x_t = (1 - sigma) latents + sigma noise, the transformer at timestep sigma
    predicts the velocity noise - latents; the loss is the mean squared error over every element. `references`
    (Edit): latents (B, C, h, w) of reference images, packed and appended after x_t's tokens unnoised, as the
    Edit pipelines do; the prediction is read for x_t's tokens only."""
    cfg = model.cfg
    if latents.dim() != 4 or noise.shape != latents.shape:
        raise InputError(f"latents {list(latents.shape)} and noise {list(noise.shape)} must be one (B, C, H, W)")
    b, c, h, w = latents.shape
    if c * 4 != cfg.in_channels or cfg.out_features != cfg.in_channels:
        raise InputError(f"latents have {c} channels; the config's in_channels {cfg.in_channels} and "
                         f"patch_size^2 * out_channels {cfg.out_features} must both be 4 x {c}")
    if sigmas.shape != (b,):
        raise InputError(f"sigmas {list(sigmas.shape)} must be ({b},), one per sample")
    if prompt_embeds.dim() != 3 or prompt_embeds.shape[0] != b or prompt_embeds.shape[2] != cfg.joint_attention_dim:
        raise InputError(f"prompt_embeds {list(prompt_embeds.shape)} must be ({b}, T, {cfg.joint_attention_dim})")
    for i, r in enumerate(references):
        if r.dim() != 4 or r.shape[:2] != (b, c):
            raise InputError(f"reference {i} {list(r.shape)} must be ({b}, {c}, h, w)")
    sigma = sigmas.to(latents.dtype)[:, None, None, None]
    noisy = pack_latents((1 - sigma) * latents + sigma * noise)
    tokens = noisy.shape[1]
    grids = [(1, h // 2, w // 2)] + [(1, r.shape[2] // 2, r.shape[3] // 2) for r in references]
    sequence = torch.cat([noisy] + [pack_latents(r) for r in references], dim=1)
    out = model(sequence, prompt_embeds, prompt_mask, sigmas, grids)
    out["output"] = out["output"][:, :tokens]
    target = pack_latents(noise - latents)
    out["target"] = target
    out["loss"] = (out["output"] - target).pow(2).mean()
    return out


# ---------------------------------------------------------------- files

def transformer_folder(folder):
    """The transformer's folder: the folder itself, or transformer/ of a pipeline folder (model_index.json)."""
    if os.path.isfile(os.path.join(folder, "config.json")):
        return folder
    if os.path.isfile(os.path.join(folder, "model_index.json")):
        sub = os.path.join(folder, "transformer")
        if not os.path.isfile(os.path.join(sub, "config.json")):
            raise ConfigError(f"{folder}: a pipeline folder (model_index.json) without transformer/config.json")
        return sub
    raise ConfigError(f"{folder}: neither config.json nor model_index.json with transformer/")


def weights_path(folder):
    for name in (WEIGHTS_FILE, WEIGHTS_INDEX):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise ConfigError(f"{folder}: no {WEIGHTS_FILE} or {WEIGHTS_INDEX}")


def load_model(folder, dtype=torch.float32):
    """The transformer of a diffusers folder: config.json and diffusion_pytorch_model.safetensors (or its
    sharded index); every tensor must be there with the shape the config gives, and no other."""
    folder = transformer_folder(folder)
    config_path = os.path.join(folder, "config.json")
    try:
        with open(config_path, encoding="utf-8") as f:
            raw = json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{config_path}: not JSON ({e})") from e
    cfg = parse_config(raw, config_path)
    source = weights_path(folder)
    _, _, found = safetensors_io.safetensors_ref.read_checkpoint(source)
    shapes = parameter_shapes(cfg)
    params = {}
    for name, shape in shapes.items():
        if name not in found:
            raise ConfigError(f"{source}: tensor {name} is missing")
        file, dtype_name, file_shape, data = found[name]
        if tuple(file_shape) != shape:
            raise ConfigError(f"{os.path.join(folder, file)}: {name} has shape {list(file_shape)}, "
                              f"the config asks for {list(shape)}")
        params[name] = safetensors_io.to_tensor(dtype_name, file_shape, data).to(dtype)
    extra = sorted(set(found) - set(shapes))
    if extra:
        raise ConfigError(f"{source}: tensors that are not parameters of {CLASS_NAME}: {', '.join(extra[:8])}"
                          f"{' ...' if len(extra) > 8 else ''}")
    return QwenImageTransformer(cfg, params)
