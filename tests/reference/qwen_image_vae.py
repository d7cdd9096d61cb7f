"""Qwen-Image's VAE (diffusers' AutoencoderKLQwenImage, a Wan-2.1-style causal video VAE) in plain PyTorch,
written from its mathematics, to check the project's worker against; with the latent normalisation the
Qwen-Image pipeline and its trainers apply around it.

The weights live in one dict under the names of diffusers' state dict (encoder.conv_in.weight,
encoder.down_blocks.3.time_conv.bias, decoder.up_blocks.0.upsamplers.0.resample.1.weight, ...); the forward
pass reads them by name, so a gradient asked for by its file name is that tensor's .grad.

The published model runs a video chunk by chunk (the encoder: the first frame, then four frames at a time; the
decoder: one latent frame at a time), each causal convolution keeping the last frames it saw. Here the whole
sequence goes through at once, which gives the same numbers:
  - a causal convolution with temporal padding p pads 2p zero frames in front and none behind;
  - a temporal downsampling (encoder) passes frame 0 through and then convolves frames (0, 1, 2), (2, 3, 4), ...
    with stride 2 and no padding: T = 1 + 2k frames become 1 + k;
  - a temporal upsampling (decoder) passes frame 0 through and convolves frames 1.. causally (two zero frames in
    front, frame 0 unseen) into twice the channels, each frame becoming two (first half of the channels, then
    the second): T frames become 1 + 2(T - 1).
For one frame (what image training and sampling use) no temporal convolution of the resample blocks runs and
every other 3 x 3 x 3 convolution sees two zero frames in front of the image.

Numerics follow the published code: the RMS norm divides by the L2 norm over channels (floored at 1e-12) in
fp32 or wider, then multiplies by sqrt(channels) and gamma; the mid-block attention's softmax runs in fp32 or
wider. Dropout is not applied (the model in eval mode).
"""
import dataclasses
import json
import math
import os

import torch
import torch.nn.functional as F

import qwen_image
import safetensors_io

CLASS_NAME = "AutoencoderKLQwenImage"
ConfigError = qwen_image.ConfigError
InputError = qwen_image.InputError
NORM_FLOOR = 1e-12  # F.normalize's eps: the smallest norm divided by
LOGVAR_RANGE = (-30.0, 20.0)  # the posterior clamps its log-variance to this range
ENCODER_CHUNK = 4  # frames after the first that the published encoder takes at a time
KERNEL = (3, 3, 3)
POINT = (1, 1, 1)


@dataclasses.dataclass(frozen=True)
class Config:
    base_dim: int = 96
    z_dim: int = 16
    dim_mult: tuple = (1, 2, 4, 4)
    num_res_blocks: int = 2
    temperal_downsample: tuple = (False, True, True)
    input_channels: int = 3
    dropout: float = 0.0
    latents_mean: tuple = ()
    latents_std: tuple = ()

    @property
    def spatial_ratio(self):
        return 2 ** len(self.temperal_downsample)

    @property
    def temporal_upsample(self):
        return tuple(reversed(self.temperal_downsample))


def positive_int(raw, name, where, default):
    value = raw.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    return value


def number_list(raw, name, where, length):
    value = raw.get(name)
    if value is None:
        raise ConfigError(f"{where}: {name} is missing (the published VAE config lists {length} values)")
    if not isinstance(value, list) or len(value) != length or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise ConfigError(f"{where}: {name} must be a list of {length} finite numbers (one per latent channel)")
    return tuple(float(v) for v in value)


def parse_config(raw, where="config.json"):
    """Config from config.json's fields; other fields (_diffusers_version, ...) are ignored."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    if raw.get("_class_name", CLASS_NAME) != CLASS_NAME:
        raise ConfigError(f"{where}: _class_name is {raw['_class_name']!r}, expected {CLASS_NAME}")
    base_dim = positive_int(raw, "base_dim", where, Config.base_dim)
    z_dim = positive_int(raw, "z_dim", where, Config.z_dim)
    blocks = positive_int(raw, "num_res_blocks", where, Config.num_res_blocks)
    channels = positive_int(raw, "input_channels", where, Config.input_channels)
    mult = raw.get("dim_mult", list(Config.dim_mult))
    if not isinstance(mult, list) or len(mult) < 2 or not all(
            isinstance(m, int) and not isinstance(m, bool) and m > 0 for m in mult):
        raise ConfigError(f"{where}: dim_mult must be a list of at least two positive integers, got {mult!r}")
    temporal = raw.get("temperal_downsample", list(Config.temperal_downsample))
    if not isinstance(temporal, list) or not all(isinstance(t, bool) for t in temporal):
        raise ConfigError(f"{where}: temperal_downsample must be a list of booleans, got {temporal!r}")
    if len(temporal) != len(mult) - 1:
        raise ConfigError(f"{where}: temperal_downsample has {len(temporal)} entries; the {len(mult)} stages of "
                          f"dim_mult downsample {len(mult) - 1} times (and the spatial ratio is 2^entries)")
    if sum(temporal) > 2:
        raise ConfigError(f"{where}: more than two temporal downsamplings do not fit the published chunks of "
                          f"{ENCODER_CHUNK} frames")
    if raw.get("attn_scales", []) != []:
        raise ConfigError(f"{where}: attn_scales {raw['attn_scales']!r} is not covered (the published encoder "
                          "cannot run attention in its down blocks; only [] is)")
    dropout = raw.get("dropout", 0.0)
    if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout < 1:
        raise ConfigError(f"{where}: dropout must be a number in [0, 1), got {dropout!r}")
    std = number_list(raw, "latents_std", where, z_dim)
    if min(std) <= 0:
        raise ConfigError(f"{where}: latents_std must be positive")
    return Config(base_dim, z_dim, tuple(mult), blocks, tuple(temporal), channels, float(dropout),
                  number_list(raw, "latents_mean", where, z_dim), std)


# ---------------------------------------------------------------- layout

def encoder_layout(cfg):
    """The encoder's down_blocks, a flat list: ("residual", in, out) or ("down", channels, temporal)."""
    dims = [cfg.base_dim * m for m in (1,) + cfg.dim_mult]
    layout = []
    for stage in range(len(cfg.dim_mult)):
        channels = dims[stage]
        for _ in range(cfg.num_res_blocks):
            layout.append(("residual", channels, dims[stage + 1]))
            channels = dims[stage + 1]
        if stage < len(cfg.dim_mult) - 1:
            layout.append(("down", channels, cfg.temperal_downsample[stage]))
    return layout, dims[-1]


def decoder_layout(cfg):
    """The decoder's up_blocks: (in, out, upsampling) with upsampling None, or whether it is temporal too.
    An upsampling halves the channels, so a block after one reads half of its nominal input."""
    dims = [cfg.base_dim * m for m in (cfg.dim_mult[-1],) + tuple(reversed(cfg.dim_mult))]
    layout = []
    for i in range(len(cfg.dim_mult)):
        upsampling = cfg.temporal_upsample[i] if i < len(cfg.dim_mult) - 1 else None
        layout.append((dims[i] // 2 if i > 0 else dims[i], dims[i + 1], upsampling))
    return layout, dims[0]


def parameter_shapes(cfg):
    """{name: shape} in the order of diffusers' state dict."""
    shapes = {}

    def conv(name, c_in, c_out, kernel):
        shapes[f"{name}.weight"] = (c_out, c_in) + tuple(kernel)
        shapes[f"{name}.bias"] = (c_out,)

    def residual(name, c_in, c_out):
        shapes[f"{name}.norm1.gamma"] = (c_in, 1, 1, 1)
        conv(f"{name}.conv1", c_in, c_out, KERNEL)
        shapes[f"{name}.norm2.gamma"] = (c_out, 1, 1, 1)
        conv(f"{name}.conv2", c_out, c_out, KERNEL)
        if c_in != c_out:
            conv(f"{name}.conv_shortcut", c_in, c_out, POINT)

    def mid(name, c):
        shapes[f"{name}.attentions.0.norm.gamma"] = (c, 1, 1)
        conv(f"{name}.attentions.0.to_qkv", c, 3 * c, (1, 1))
        conv(f"{name}.attentions.0.proj", c, c, (1, 1))
        residual(f"{name}.resnets.0", c, c)
        residual(f"{name}.resnets.1", c, c)

    z = cfg.z_dim
    layout, deepest = encoder_layout(cfg)
    conv("encoder.conv_in", cfg.input_channels, cfg.base_dim, KERNEL)
    for i, (kind, a, b) in enumerate(layout):
        if kind == "residual":
            residual(f"encoder.down_blocks.{i}", a, b)
        else:
            conv(f"encoder.down_blocks.{i}.resample.1", a, a, (3, 3))
            if b:
                conv(f"encoder.down_blocks.{i}.time_conv", a, a, (3, 1, 1))
    mid("encoder.mid_block", deepest)
    shapes["encoder.norm_out.gamma"] = (deepest, 1, 1, 1)
    conv("encoder.conv_out", deepest, 2 * z, KERNEL)
    conv("quant_conv", 2 * z, 2 * z, POINT)
    conv("post_quant_conv", z, z, POINT)
    layout, deepest = decoder_layout(cfg)
    conv("decoder.conv_in", z, deepest, KERNEL)
    mid("decoder.mid_block", deepest)
    for i, (c_in, c_out, upsampling) in enumerate(layout):
        for j in range(cfg.num_res_blocks + 1):
            residual(f"decoder.up_blocks.{i}.resnets.{j}", c_in if j == 0 else c_out, c_out)
        if upsampling is not None:
            if upsampling:
                conv(f"decoder.up_blocks.{i}.upsamplers.0.time_conv", c_out, 2 * c_out, (3, 1, 1))
            conv(f"decoder.up_blocks.{i}.upsamplers.0.resample.1", c_out, c_out // 2, (3, 3))
    shapes["decoder.norm_out.gamma"] = (layout[-1][1], 1, 1, 1)
    conv("decoder.conv_out", layout[-1][1], cfg.input_channels, KERNEL)
    return shapes


# ---------------------------------------------------------------- layers

def silu(x):
    return x * torch.sigmoid(x)


def causal_conv3d(x, weight, bias, padding=(0, 0, 0), stride=(1, 1, 1)):
    """x (B, C, T, H, W). Padding (pt, ph, pw): ph and pw zeros on both sides, 2 pt zero frames in front only,
    so that output frame t sees input frames up to t and no later."""
    pt, ph, pw = padding
    return F.conv3d(F.pad(x, (pw, pw, ph, ph, 2 * pt, 0)), weight, bias, stride=stride)


def conv(p, name, x, padding):
    return causal_conv3d(x, p[f"{name}.weight"], p[f"{name}.bias"], padding)


def rms_norm(x, gamma):
    """Over the channel axis 1: x / max(||x||_2, 1e-12) * sqrt(channels) * gamma, the division in fp32 or
    wider (a root-mean-square norm without epsilon, the mean taken as the sum over sqrt(channels)^2)."""
    h = x.to(qwen_image.wide(x.dtype))
    unit = h / h.pow(2).sum(1, keepdim=True).sqrt().clamp_min(NORM_FLOOR)
    return unit.to(x.dtype) * (x.shape[1] ** 0.5) * gamma


def frames_of(x):
    """(B, C, T, H, W) -> (B*T, C, H, W), frame by frame, for the layers that work on single frames."""
    b, c, t, h, w = x.shape
    return x.transpose(1, 2).reshape(b * t, c, h, w)


def video_of(frames, batch):
    bt, c, h, w = frames.shape
    return frames.reshape(batch, bt // batch, c, h, w).transpose(1, 2)


def residual_block(p, name, x):
    """conv2(SiLU(norm2(conv1(SiLU(norm1(x)))))) + shortcut(x); the shortcut is a 1 x 1 x 1 convolution where
    the channel count changes, else x itself."""
    shortcut = conv(p, f"{name}.conv_shortcut", x, (0, 0, 0)) if f"{name}.conv_shortcut.weight" in p else x
    h = conv(p, f"{name}.conv1", silu(rms_norm(x, p[f"{name}.norm1.gamma"])), (1, 1, 1))
    h = conv(p, f"{name}.conv2", silu(rms_norm(h, p[f"{name}.norm2.gamma"])), (1, 1, 1))
    return h + shortcut


def attention_block(p, name, x):
    """Single-head self-attention over the H x W positions of each frame (frames never see each other):
    norm, 1 x 1 convolution to q | k | v, softmax(q k^T / sqrt(C)) v, 1 x 1 projection, plus x."""
    b, c = x.shape[:2]
    frames = rms_norm(frames_of(x), p[f"{name}.norm.gamma"])
    n, _, h, w = frames.shape
    qkv = F.conv2d(frames, p[f"{name}.to_qkv.weight"], p[f"{name}.to_qkv.bias"])
    q, k, v = qkv.reshape(n, 3 * c, h * w).transpose(1, 2).split(c, dim=-1)
    scores = torch.matmul(q, k.transpose(1, 2)) * c ** -0.5
    probs = torch.softmax(scores.to(qwen_image.wide(x.dtype)), dim=-1).to(x.dtype)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(n, c, h, w)
    out = F.conv2d(out, p[f"{name}.proj.weight"], p[f"{name}.proj.bias"])
    return x + video_of(out, b)


def mid_block(p, name, x):
    x = residual_block(p, f"{name}.resnets.0", x)
    x = attention_block(p, f"{name}.attentions.0", x)
    return residual_block(p, f"{name}.resnets.1", x)


def downsample(p, name, x, temporal):
    """Each frame: zero-pad one column right and one row below, 3 x 3 convolution with stride 2 (H -> H/2).
    Temporal: frame 0 as is, then frames (0, 1, 2), (2, 3, 4), ... through time_conv (3 x 1 x 1, stride 2)."""
    frames = F.pad(frames_of(x), (0, 1, 0, 1))
    y = video_of(F.conv2d(frames, p[f"{name}.resample.1.weight"], p[f"{name}.resample.1.bias"], stride=2),
                 x.shape[0])
    if temporal and y.shape[2] > 1:
        if (y.shape[2] - 1) % 2:
            raise InputError(f"{name}: {y.shape[2]} frames reach a temporal downsampling; it needs 1 + 2k")
        rest = causal_conv3d(y, p[f"{name}.time_conv.weight"], p[f"{name}.time_conv.bias"], stride=(2, 1, 1))
        y = torch.cat([y[:, :, :1], rest], dim=2)
    return y


def upsample(p, name, x, temporal):
    """Temporal: frame 0 as is; frames 1.. through the causal time_conv (3 x 1 x 1, two zero frames in front) to
    2C channels, each frame becoming two (channels 0..C-1, then C..2C-1). Then each frame: nearest-neighbour
    2x (every pixel a 2 x 2 block) and a 3 x 3 convolution (padding 1) to C/2 channels."""
    b, c, t = x.shape[:3]
    if temporal and t > 1:
        rest = causal_conv3d(x[:, :, 1:], p[f"{name}.time_conv.weight"], p[f"{name}.time_conv.bias"], (1, 0, 0))
        pairs = rest.reshape(b, 2, c, t - 1, *x.shape[3:]).permute(0, 2, 3, 1, 4, 5)
        x = torch.cat([x[:, :, :1], pairs.reshape(b, c, 2 * (t - 1), *x.shape[3:])], dim=2)
    frames = frames_of(x).repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)
    out = F.conv2d(frames, p[f"{name}.resample.1.weight"], p[f"{name}.resample.1.bias"], padding=1)
    return video_of(out, b)


def encoder(p, cfg, x):
    """(B, input_channels, T, H, W) -> (B, 2 z_dim, 1 + (T-1)/4, H/8, W/8) for the published ratios."""
    x = conv(p, "encoder.conv_in", x, (1, 1, 1))
    for i, (kind, _, temporal) in enumerate(encoder_layout(cfg)[0]):
        name = f"encoder.down_blocks.{i}"
        x = residual_block(p, name, x) if kind == "residual" else downsample(p, name, x, temporal)
    x = mid_block(p, "encoder.mid_block", x)
    return conv(p, "encoder.conv_out", silu(rms_norm(x, p["encoder.norm_out.gamma"])), (1, 1, 1))


def decoder(p, cfg, z):
    """(B, z_dim, T, h, w) -> (B, input_channels, 1 + 4(T-1), 8h, 8w) for the published ratios, unclamped."""
    x = conv(p, "decoder.conv_in", z, (1, 1, 1))
    x = mid_block(p, "decoder.mid_block", x)
    for i, (_, _, upsampling) in enumerate(decoder_layout(cfg)[0]):
        for j in range(cfg.num_res_blocks + 1):
            x = residual_block(p, f"decoder.up_blocks.{i}.resnets.{j}", x)
        if upsampling is not None:
            x = upsample(p, f"decoder.up_blocks.{i}.upsamplers.0", x, upsampling)
    return conv(p, "decoder.conv_out", silu(rms_norm(x, p["decoder.norm_out.gamma"])), (1, 1, 1))


# ---------------------------------------------------------------- model

def as_video(x, channels, what):
    """(x as (B, C, T, H, W), whether it came as one frame (B, C, H, W))."""
    if x.dim() == 4:
        x = x.unsqueeze(2)
        single = True
    elif x.dim() == 5:
        single = False
    else:
        raise InputError(f"{what} must be (B, {channels}, H, W) or (B, {channels}, T, H, W), got {list(x.shape)}")
    if x.shape[1] != channels or not x.is_floating_point() or 0 in x.shape:
        raise InputError(f"{what} must be floating point with {channels} channels and no empty axis, got "
                         f"{list(x.shape)} {x.dtype}")
    return x, single


class QwenImageVAE(qwen_image.DiffusersModel):
    class_name = CLASS_NAME
    first = "quant_conv.weight"

    def encode(self, images):
        """images (B, C, H, W) or (B, C, T, H, W), T = 1 + 4k, in [-1, 1] -> the posterior's (mean, logvar),
        each (B, z_dim, h, w) or (B, z_dim, 1 + k, h, w); logvar clamped to [-30, 20]."""
        x, single = as_video(images, self.cfg.input_channels, "images")
        ratio, frames = self.cfg.spatial_ratio, x.shape[2]
        if x.shape[3] % ratio or x.shape[4] % ratio:
            raise InputError(f"images are {x.shape[3]} x {x.shape[4]}; both sides must be multiples of {ratio}")
        if (frames - 1) % ENCODER_CHUNK:
            raise InputError(f"{frames} frames: the encoder takes 1 + {ENCODER_CHUNK}k")
        moments = conv(self.params, "quant_conv", encoder(self.params, self.cfg, x.to(self.dtype)), (0, 0, 0))
        mean, logvar = moments.chunk(2, dim=1)
        logvar = logvar.clamp(*LOGVAR_RANGE)
        return (mean[:, :, 0], logvar[:, :, 0]) if single else (mean, logvar)

    def decode_raw(self, z):
        """Latents as the encoder gives them (not normalised), (B, z_dim, [T,] h, w) -> images clamped to
        [-1, 1], (B, C, [1 + 4(T-1),] 8h, 8w)."""
        x, single = as_video(z, self.cfg.z_dim, "latents")
        x = conv(self.params, "post_quant_conv", x.to(self.dtype), (0, 0, 0))
        images = decoder(self.params, self.cfg, x).clamp(-1.0, 1.0)
        return images[:, :, 0] if single else images

    def channel_stats(self, like):
        """(latents_mean, 1 / latents_std) shaped to broadcast over like's channel axis 1; the reciprocal in fp32
        as the pipeline and the trainers build it, then cast."""
        if like.dim() < 2 or like.shape[1] != self.cfg.z_dim:
            raise InputError(f"latents {list(like.shape)} do not have the {self.cfg.z_dim} channels of "
                             "latents_mean / latents_std on axis 1")
        shape = (1, self.cfg.z_dim) + (1,) * (like.dim() - 2)
        mean = torch.tensor(self.cfg.latents_mean, dtype=torch.float32).view(shape)
        inverse = 1.0 / torch.tensor(self.cfg.latents_std, dtype=torch.float32).view(shape)
        return mean.to(like.dtype), inverse.to(like.dtype)

    def normalize(self, mean):
        """The trainers' latents: (mean - latents_mean) * (1 / latents_std), per channel."""
        shift, inverse = self.channel_stats(mean)
        return (mean - shift) * inverse

    def denormalize(self, latents):
        """The pipeline's inverse before decoding: latents / (1 / latents_std) + latents_mean."""
        shift, inverse = self.channel_stats(latents)
        return latents / inverse + shift

    def decode(self, latents):
        """Normalised latents (what the transformer works on) -> images in [-1, 1]."""
        return self.decode_raw(self.denormalize(latents))

    @staticmethod
    def sample(mean, logvar, noise):
        """The posterior sample the trainers draw: mean + exp(logvar / 2) * noise."""
        return mean + torch.exp(0.5 * logvar) * noise

    def training_loss(self, images, noise, kl_weight):
        """The objective of training the VAE itself, as the worker defines it (docs/models.md, "Training the VAE"):
        z = mean + exp(logvar / 2) noise from the clamped posterior (not normalised), decoded through
        post_quant_conv and the decoder unclamped; reconstruction = mean((decoded - images)^2) over every pixel
        value, kl = mean((mean^2 + exp(logvar) - 1 - logvar) / 2) over every latent value; returns (reconstruction
        + kl_weight kl, reconstruction, kl)."""
        mean, logvar = self.encode(images)
        z = self.sample(mean, logvar, noise.to(mean.dtype))
        x, single = as_video(z, self.cfg.z_dim, "latents")
        decoded = decoder(self.params, self.cfg, conv(self.params, "post_quant_conv", x, (0, 0, 0)))
        decoded = decoded[:, :, 0] if single else decoded
        reconstruction = (decoded - images.to(decoded.dtype)).pow(2).mean()
        kl = 0.5 * (mean.pow(2) + logvar.exp() - 1 - logvar).mean()
        return reconstruction + kl_weight * kl, reconstruction, kl


# ---------------------------------------------------------------- files

def vae_folder(folder):
    """The VAE's folder: the folder itself (config.json), or vae/ of a pipeline folder (model_index.json)."""
    if os.path.isfile(os.path.join(folder, "config.json")):
        return folder
    if os.path.isfile(os.path.join(folder, "model_index.json")):
        sub = os.path.join(folder, "vae")
        if not os.path.isfile(os.path.join(sub, "config.json")):
            raise ConfigError(f"{folder}: a pipeline folder (model_index.json) without vae/config.json")
        return sub
    raise ConfigError(f"{folder}: neither config.json nor model_index.json with vae/")


def read_config(folder):
    path = os.path.join(folder, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not JSON ({e})") from e
    return parse_config(raw, path)


def read_weights(folder, shapes, dtype, owner):
    """{name: tensor} of a diffusers folder's weights, exactly the names of shapes with those shapes; a missing,
    misshaped or unknown tensor is an error naming the file and the tensor."""
    source = qwen_image.weights_path(folder)
    _, _, found = safetensors_io.safetensors_ref.read_checkpoint(source)
    params = {}
    for name, shape in shapes.items():
        if name not in found:
            raise ConfigError(f"{source}: tensor {name} is missing")
        file, dtype_name, file_shape, data = found[name]
        if tuple(file_shape) != tuple(shape):
            raise ConfigError(f"{os.path.join(folder, file)}: {name} has shape {list(file_shape)}, "
                              f"the config asks for {list(shape)}")
        params[name] = safetensors_io.to_tensor(dtype_name, file_shape, data).to(dtype)
    extra = sorted(set(found) - set(shapes))
    if extra:
        raise ConfigError(f"{source}: tensors that are not parameters of {owner}: {', '.join(extra[:8])}"
                          f"{' ...' if len(extra) > 8 else ''}")
    return params


def load_vae(folder, dtype=torch.float32):
    """The VAE of a diffusers folder: config.json and diffusion_pytorch_model.safetensors (or its sharded
    index), or a pipeline folder holding one under vae/."""
    folder = vae_folder(folder)
    cfg = read_config(folder)
    return QwenImageVAE(cfg, read_weights(folder, parameter_shapes(cfg), dtype, CLASS_NAME))
