"""config.json of a Qwen2.5-VL or Qwen2 folder, in every shape it is published in.

Qwen2.5-VL's text fields sit at the top level (the Hub's original files) or under `text_config`
(files saved by newer transformers); its rotary settings are `rope_scaling` ({"type": "mrope",
"mrope_section": [...]}, with `rope_theta` beside it) or `rope_parameters` ({"rope_type": ...,
"rope_theta": ..., "mrope_section": [...]}). A field present in both places with different values is
an error, never a silent choice.
"""
import json
import os
from dataclasses import dataclass, field
from typing import List, Optional


class ConfigError(Exception):
    pass


@dataclass
class TextConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    mrope_section: Optional[List[int]]  # None: ordinary 1D rotary positions (qwen2)
    tie_word_embeddings: bool


@dataclass
class VisionConfig:
    depth: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    in_channels: int
    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    window_size: int
    fullatt_block_indexes: List[int]
    out_hidden_size: int
    tokens_per_second: float

    @property
    def head_dim(self):
        return self.hidden_size // self.num_heads

    @property
    def patch_values(self):
        return self.in_channels * self.temporal_patch_size * self.patch_size * self.patch_size


@dataclass
class ModelConfig:
    kind: str  # "qwen2_5_vl" or "qwen2"
    text: TextConfig
    vision: Optional[VisionConfig] = None
    image_token_id: int = 151655
    video_token_id: int = 151656
    vision_start_token_id: int = 151652
    vision_end_token_id: int = 151653
    source: str = field(default="config.json")


KINDS = {"qwen2_5_vl": "qwen2_5_vl", "qwen2": "qwen2"}
ARCHITECTURES = {"Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl", "Qwen2ForCausalLM": "qwen2"}
MISSING = object()


def kind_of(cfg, source):
    kind = KINDS.get(cfg.get("model_type"))
    if kind is None:
        for arch in cfg.get("architectures") or []:
            kind = kind or ARCHITECTURES.get(arch)
    if kind is None:
        raise ConfigError(f"{source}: model_type {cfg.get('model_type')!r} is neither qwen2_5_vl nor qwen2")
    return kind


def pick(text, top, key, source, default=MISSING):
    """A text field from text_config, else from the top level; both present must agree."""
    in_text = key in text and text[key] is not None
    in_top = top is not text and key in top and top[key] is not None
    if in_text and in_top and text[key] != top[key]:
        raise ConfigError(f"{source}: {key} is {top[key]!r} at the top level but {text[key]!r} in text_config")
    if in_text:
        return text[key]
    if in_top:
        return top[key]
    if default is MISSING:
        raise ConfigError(f"{source}: {key} is missing")
    return default


def rope_settings(text, top, kind, source):
    """(theta, mrope_section or None) from rope_scaling / rope_parameters / rope_theta."""
    params = None
    for scope in (text, top):
        for key in ("rope_scaling", "rope_parameters"):
            if params is None and isinstance(scope.get(key), dict):
                params = scope[key]
    params = params or {}
    if isinstance(params.get("full_attention"), dict):  # per-layer-type form
        params = params["full_attention"]
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ("default", "mrope"):
        raise ConfigError(f"{source}: rope type {rope_type!r} is not supported (default or mrope only)")
    default_theta = 1000000.0 if kind == "qwen2_5_vl" else 10000.0
    theta = params.get("rope_theta")
    if theta is None:
        theta = pick(text, top, "rope_theta", source, default_theta)
    section = params.get("mrope_section")
    if kind == "qwen2_5_vl" and section is None:
        raise ConfigError(f"{source}: mrope_section is missing from rope_scaling / rope_parameters")
    return float(theta), (list(section) if kind == "qwen2_5_vl" else None)


def text_config(cfg, kind, source):
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg

    def get(key, default=MISSING):
        return pick(text, cfg, key, source, default)

    for key in ("use_sliding_window",):
        if get(key, False):
            raise ConfigError(f"{source}: {key} = true is not supported; set it to false")
    if get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{source}: hidden_act {get('hidden_act')!r} is not silu")
    hidden, heads = int(get("hidden_size")), int(get("num_attention_heads"))
    head_dim = int(get("head_dim", hidden // heads)) if kind == "qwen2" else hidden // heads
    if kind == "qwen2_5_vl" and hidden % heads:
        raise ConfigError(f"{source}: hidden_size {hidden} is not divisible by num_attention_heads {heads}")
    kv_heads = int(get("num_key_value_heads", heads))
    if heads % kv_heads:
        raise ConfigError(f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    theta, section = rope_settings(text, cfg, kind, source)
    if section is not None and sum(section) * 2 != head_dim:
        raise ConfigError(f"{source}: mrope_section {section} sums to {sum(section)}, not head_dim/2 = {head_dim // 2}")
    return TextConfig(
        vocab_size=int(get("vocab_size")), hidden_size=hidden, intermediate_size=int(get("intermediate_size")),
        num_layers=int(get("num_hidden_layers")), num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        rms_norm_eps=float(get("rms_norm_eps", 1e-6)), rope_theta=theta, mrope_section=section,
        tie_word_embeddings=bool(get("tie_word_embeddings", False)))


def vision_config(cfg, source):
    v = cfg.get("vision_config")
    if not isinstance(v, dict):
        raise ConfigError(f"{source}: vision_config is missing")
    if v.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{source}: vision_config.hidden_act {v.get('hidden_act')!r} is not silu")

    def get(key, default=MISSING):
        if key in v and v[key] is not None:
            return v[key]
        if default is MISSING:
            raise ConfigError(f"{source}: vision_config.{key} is missing")
        return default

    out = VisionConfig(
        depth=int(get("depth")), hidden_size=int(get("hidden_size")),
        intermediate_size=int(get("intermediate_size")), num_heads=int(get("num_heads")),
        in_channels=int(v.get("in_channels", v.get("in_chans", 3))), patch_size=int(get("patch_size", 14)),
        temporal_patch_size=int(get("temporal_patch_size", 2)), spatial_merge_size=int(get("spatial_merge_size", 2)),
        window_size=int(get("window_size", 112)), fullatt_block_indexes=[int(i) for i in get("fullatt_block_indexes")],
        out_hidden_size=int(get("out_hidden_size")), tokens_per_second=float(get("tokens_per_second", 2)))
    if out.head_dim * out.num_heads != out.hidden_size or out.head_dim % 4:
        raise ConfigError(f"{source}: vision head_dim {out.hidden_size}/{out.num_heads} must be a whole multiple of 4")
    return out


def parse(cfg, source="config.json"):
    kind = kind_of(cfg, source)
    text = text_config(cfg, kind, source)
    if kind == "qwen2":
        return ModelConfig(kind=kind, text=text, source=source)
    vision = vision_config(cfg, source)
    if vision.out_hidden_size != text.hidden_size:
        raise ConfigError(f"{source}: vision out_hidden_size {vision.out_hidden_size} is not the text hidden_size "
                          f"{text.hidden_size}")
    ids = {k: int(cfg.get(k, d)) for k, d in (("image_token_id", 151655), ("video_token_id", 151656),
                                               ("vision_start_token_id", 151652), ("vision_end_token_id", 151653))}
    return ModelConfig(kind=kind, text=text, vision=vision, source=source, **ids)


def load(path):
    """A folder's config.json, or the file itself."""
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: {e}")
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: not a JSON object")
    return parse(cfg, path)
