#!/usr/bin/python3
"""Checks of the reference model itself: each test compares it against an independent way of getting the same
number (hand-computed positions, finite differences, a second layout of the same weights, Pillow directly).

Run: /usr/bin/python3 tests/reference/test_reference.py   (exits 77, skipped, when torch is not importable)
"""
import contextlib
import dataclasses
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    print("SKIP: /usr/bin/python3 cannot import torch; install Debian's python3-torch (packaging/deps.sh)")
    sys.exit(77)

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import image_processor  # noqa: E402
import lora as lora_mod  # noqa: E402
import make_tiny_checkpoint as tiny  # noqa: E402
import qwen2_5_vl as ref  # noqa: E402
import qwen_config  # noqa: E402
import run_reference  # noqa: E402
import safetensors_io  # noqa: E402

SMALL_VOCAB = 300  # special tokens at 278..299


def tiny_model(kind="qwen2_5_vl", vocab=SMALL_VOCAB, tied=True, dtype=torch.float32, seed=0):
    make = tiny.vl_config if kind == "qwen2_5_vl" else tiny.qwen2_config
    model = ref.CausalLM(qwen_config.parse(make("flat", vocab, tied, "float32")))
    tiny.fill(model, seed)
    return model.to(dtype)


def noise_image(height, width, seed=0):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def vl_batch(cfg, images, texts):
    """texts: lists of ids where None stands for one image (vision start, pads, vision end); right-padded."""
    pixels, grid = image_processor.preprocess(images) if images else (None, None)
    ids = []
    for text in texts:
        ids.append(sum(([cfg.vision_start_token_id, cfg.image_token_id, cfg.vision_end_token_id] if t is None
                        else [t] for t in text), []))
    if images:
        ids = image_processor.expand_image_pads(ids, grid, cfg.image_token_id)
    length = max(map(len, ids))
    input_ids = torch.tensor([x + [0] * (length - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (length - len(x)) for x in ids])
    labels = input_ids.masked_fill((mask == 0) | (input_ids == cfg.image_token_id), -100)
    return {"input_ids": input_ids, "attention_mask": mask, "labels": labels, "pixel_values": pixels,
            "image_grid_thw": grid}


class SafetensorsTest(unittest.TestCase):
    def test_every_dtype_round_trips(self):
        tensors = {"f32": torch.randn(3, 4), "f16": torch.randn(5).half(), "bf16": torch.randn(2, 3).bfloat16(),
                   "i64": torch.arange(6).reshape(2, 3), "i32": torch.arange(4, dtype=torch.int32),
                   "f64": torch.randn(2, dtype=torch.float64), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4)}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.safetensors")
            safetensors_io.save(path, tensors, {"k": "v"})
            back, metadata = safetensors_io.load_with_metadata(path)
            _, _, raw = safetensors_io.safetensors_ref.read_file(path)
        self.assertEqual(metadata, {"k": "v"})
        self.assertEqual({k: v[0] for k, v in raw.items()}["bf16"], "BF16")
        for name, t in tensors.items():
            self.assertEqual(back[name].dtype, t.dtype, name)
            self.assertEqual(back[name].shape, t.shape, name)
            self.assertTrue(torch.equal(back[name], t), name)

    def test_sharded_folder_round_trips_and_truncation_is_refused(self):
        tensors = {f"layer.{i}.weight": torch.randn(64, 64) for i in range(5)}
        with tempfile.TemporaryDirectory() as d:
            safetensors_io.save_folder(d, tensors, max_shard_size=40_000)
            with open(os.path.join(d, "model.safetensors.index.json")) as f:
                index = json.load(f)
            self.assertEqual(len(set(index["weight_map"].values())), 3)
            back = safetensors_io.load(d)
            self.assertTrue(all(torch.equal(back[k], v) for k, v in tensors.items()))
            shard = os.path.join(d, index["weight_map"]["layer.4.weight"])
            os.truncate(shard, os.path.getsize(shard) - 4)
            with self.assertRaises(safetensors_io.FormatError):
                safetensors_io.load(d)


class CheckpointTest(unittest.TestCase):
    def write(self, d, name, **kw):
        folder = os.path.join(d, name)
        tiny.write(folder, vocab=SMALL_VOCAB, **kw)
        return folder

    def test_both_config_shapes_and_name_layouts_load_the_same_model(self):
        with tempfile.TemporaryDirectory() as d:
            folders = [self.write(d, "a", shape="flat", layout="legacy"),
                       self.write(d, "b", shape="nested", layout="current"),
                       self.write(d, "c", shape="nested", layout="legacy", max_shard_size=200_000),
                       self.write(d, "e", shape="flat", layout="current", dtype="BF16")]
            with open(os.path.join(folders[1], "config.json")) as f:
                self.assertIn("text_config", json.load(f))
            self.assertTrue(os.path.exists(os.path.join(folders[2], "model.safetensors.index.json")))
            names = safetensors_io.load(folders[1])
            self.assertIn("model.language_model.layers.0.self_attn.q_proj.bias", names)
            self.assertIn("model.visual.merger.mlp.2.weight", names)
            models = [ref.load_model(f) for f in folders]
        self.assertEqual([m[1] for m in models], ["legacy", "current", "legacy", "current"])
        cfg = models[0][0].cfg
        batch = vl_batch(cfg, [noise_image(150, 200)], [[1, 2, None, 3, 4]])
        outs = [m(**batch)["logits"] for m, _ in models]
        self.assertTrue(torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2]))
        self.assertFalse(torch.equal(outs[0], outs[3]))  # BF16 weights: same model, rounded
        self.assertLess((outs[0] - outs[3]).abs().max().item(), 0.2)

    def test_missing_and_conflicting_fields_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            folder = self.write(d, "a", tied=False)
            tensors = safetensors_io.load(folder)
            self.assertIn("lm_head.weight", tensors)
            del tensors["visual.blocks.1.attn.qkv.bias"]
            safetensors_io.save_folder(folder, tensors)
            with self.assertRaisesRegex(qwen_config.ConfigError, r"visual\.blocks\.1\.attn\.qkv\.bias"):
                ref.load_model(folder)
        cfg = tiny.vl_config("nested", SMALL_VOCAB, True, "float32")
        cfg["hidden_size"] = 128
        with self.assertRaisesRegex(qwen_config.ConfigError, "hidden_size is 128 at the top level but 64"):
            qwen_config.parse(cfg)
        flat = qwen_config.parse(tiny.vl_config("flat", SMALL_VOCAB, True, "float32"))
        nested = qwen_config.parse(tiny.vl_config("nested", SMALL_VOCAB, True, "float32"))
        self.assertEqual(flat.text, nested.text)
        self.assertEqual(flat.vision, nested.vision)
        self.assertEqual(flat.text.mrope_section, [2, 3, 3])
        self.assertEqual(flat.text.rope_theta, 1e6)

    def test_tied_head_is_the_embedding(self):
        model = tiny_model()
        ids = torch.tensor([[5, 6, 7]])
        hidden = model.text_model(model.text_model.embed_tokens(ids), torch.arange(3).expand(3, 1, 3), None)
        expected = hidden @ model.text_model.embed_tokens.weight.T
        self.assertTrue(torch.allclose(model(ids)["logits"], expected, atol=1e-6))
        self.assertNotIn("lm_head.weight", dict(model.named_parameters()))
        self.assertIn("lm_head.weight", dict(tiny_model(tied=False).named_parameters()))


class BlocksTest(unittest.TestCase):
    def test_norm_swiglu_and_merger_gelu_by_hand(self):
        norm = ref.RMSNorm(2, 1e-6)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor([1.0, 2.0]))
        expected = torch.tensor([3.0, 8.0]) / math.sqrt(12.5 + 1e-6)
        self.assertTrue(torch.allclose(norm(torch.tensor([3.0, 4.0])), expected))
        mlp = ref.SwiGLU(1, 1, bias=True)
        with torch.no_grad():
            for layer, (w, b) in zip((mlp.gate_proj, mlp.up_proj, mlp.down_proj), ((1.0, 1.0), (3.0, 0.0), (1.0, 0.5))):
                layer.weight.fill_(w)
                layer.bias.fill_(b)
        x = torch.tensor([1.0])  # gate 2, up 3: silu(2) * 3 + 0.5
        self.assertAlmostEqual(mlp(x).item(), 2 / (1 + math.exp(-2)) * 3 + 0.5, places=5)
        gelu = tiny_model().model.visual.merger.mlp[1]
        self.assertAlmostEqual(gelu(torch.tensor([1.0])).item(), 0.5 * (1 + math.erf(1 / math.sqrt(2))), places=7)


class VisionTest(unittest.TestCase):
    def tower_features(self, model, images, full_blocks):
        tower = model.model.visual
        tower.v = dataclasses.replace(tower.v, fullatt_block_indexes=full_blocks)
        pixels, grid = image_processor.preprocess(images)
        return tower(pixels, grid)

    def test_window_covering_the_image_equals_full_attention(self):
        model = tiny_model()
        small = [noise_image(112, 84)]  # 8 x 6 patches, 4 x 3 merged units: one 112-pixel window
        self.assertTrue(torch.equal(self.tower_features(model, small, []), self.tower_features(model, small, [0, 1])))
        large = [noise_image(140, 196)]  # 5 x 7 merged units: four windows
        self.assertFalse(torch.allclose(self.tower_features(model, large, []),
                                        self.tower_features(model, large, [0, 1]), atol=1e-4))

    def test_images_never_attend_to_each_other(self):
        model = tiny_model()
        images = [noise_image(140, 196, 1), noise_image(84, 112, 2), noise_image(280, 56, 3)]
        together = self.tower_features(model, images, [1])
        apart = torch.cat([self.tower_features(model, [im], [1]) for im in images])
        self.assertTrue(torch.allclose(together, apart, atol=1e-5))

    def test_a_patch_reaches_only_its_window_and_features_come_back_in_grid_order(self):
        model = tiny_model()
        image = noise_image(140, 196)  # 5 x 7 merged units, windows of 4 x 4 units
        changed = np.array(image)
        changed[0:28, 112:140] = 255 - changed[0:28, 112:140]  # the unit at merged row 0, column 4
        a = self.tower_features(model, [image], [])
        b = self.tower_features(model, [Image.fromarray(changed)], [])
        moved = ((a - b).abs().amax(-1) > 1e-6).nonzero().flatten().tolist()
        self.assertEqual(moved, [r * 7 + c for r in range(4) for c in range(4, 7)])  # the top-right window

    def test_window_order_and_patch_positions_by_hand(self):
        v = tiny_model().cfg.vision
        # 10 x 14 patches = 5 x 7 merged units; 112-pixel windows are 4 x 4 units: 16, 12, 4, 3 units.
        index, bounds = ref.window_order(torch.tensor([[1, 10, 14]]), v)
        self.assertEqual(bounds, [0, 64, 112, 128, 140])
        self.assertEqual(index[:5].tolist(), [0, 1, 2, 3, 7])
        self.assertEqual(index[16:20].tolist(), [4, 5, 6, 11])
        self.assertEqual(index[28:].tolist(), [28, 29, 30, 31, 32, 33, 34])
        self.assertEqual(sorted(index.tolist()), list(range(35)))
        pos = ref.patch_positions(torch.tensor([[1, 4, 4]]), 2)
        self.assertEqual(pos[:8].tolist(), [[0, 0], [0, 1], [1, 0], [1, 1], [0, 2], [0, 3], [1, 2], [1, 3]])
        self.assertEqual(pos[8:12].tolist(), [[2, 0], [2, 1], [3, 0], [3, 1]])


class PositionTest(unittest.TestCase):
    def test_text_only_positions_are_one_dimensional(self):
        cfg = tiny_model().cfg
        ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
        mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
        pos = ref.rope_index(cfg, ids, mask)
        self.assertEqual(pos[:, 0].tolist(), [[0, 1, 2, 3]] * 3)
        self.assertEqual(pos[:, 1].tolist(), [[0, 1, 1, 1]] * 3)  # padding: 1, as the published code leaves it
        self.assertEqual(ref.rope_index(cfg, ids).tolist(), [[[0, 1, 2, 3]] * 2] * 3)
        left = ref.rope_index(cfg, ids, torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]]))
        self.assertEqual(left[:, 1].tolist(), [[1, 1, 0, 1]] * 3)

    def test_image_positions_on_the_merged_grid(self):
        cfg = tiny_model().cfg
        vs, pad, ve = cfg.vision_start_token_id, cfg.image_token_id, cfg.vision_end_token_id
        # One image of 1 x 4 x 6 patches = 2 x 3 merged units after "a b".
        ids = torch.tensor([[1, 2, vs] + [pad] * 6 + [ve, 3]])
        pos = ref.rope_index(cfg, ids, None, torch.tensor([[1, 4, 6]]))
        self.assertEqual(pos[0, 0].tolist(), [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7])
        self.assertEqual(pos[1, 0].tolist(), [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7])
        self.assertEqual(pos[2, 0].tolist(), [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7])

    def test_images_are_taken_sample_by_sample_and_mismatches_name_the_sample(self):
        model = tiny_model()
        cfg = model.cfg
        images = [noise_image(56, 56, 1), noise_image(84, 56, 2), noise_image(56, 112, 3)]
        batch = vl_batch(cfg, images, [[1, None, 2], [3, 4], [None, 5, None, 6]])
        pos = model(**batch)["position_ids"]
        second = ref.rope_index(cfg, batch["input_ids"][2:], batch["attention_mask"][2:], batch["image_grid_thw"][1:])
        self.assertTrue(torch.equal(pos[:, 2:], second))
        broken = dict(batch, input_ids=batch["input_ids"].clone())
        row = broken["input_ids"][2]
        row[(row == cfg.image_token_id).nonzero()[0]] = 7  # one pad fewer in sample 2
        with self.assertRaisesRegex(ref.InputError, "sample 2: 9 <|image_pad|> tokens but its 2 images"):
            model(**broken)


class RotaryTest(unittest.TestCase):
    def test_mrope_with_equal_streams_is_ordinary_rope(self):
        text = tiny_model().cfg.text
        pos = torch.tensor([[0, 1, 2, 50, 1000, 30000]])
        plain = ref.text_rotary(dataclasses.replace(text, mrope_section=None), pos, torch.float32)
        mrope = ref.text_rotary(text, pos.expand(3, -1, -1), torch.float32)
        self.assertTrue(torch.equal(plain[0], mrope[0]) and torch.equal(plain[1], mrope[1]))

    def test_mrope_sections_take_t_h_w_angles(self):
        text = tiny_model().cfg.text  # head_dim 16, mrope_section [2, 3, 3]
        pos = torch.tensor([5, 70, 900]).view(3, 1, 1)
        cos, _ = ref.text_rotary(text, pos, torch.float64)
        inv = [1 / 1e6 ** (2 * i / 16) for i in range(8)]
        stream = [0, 0, 1, 1, 1, 2, 2, 2]
        expected = [math.cos(float(pos[stream[j % 8]]) * inv[j % 8]) for j in range(16)]
        self.assertTrue(np.allclose(cos[0, 0].numpy(), expected, atol=1e-5))

    def test_rotation_direction_and_vision_row_column_channels(self):
        # x cos + rotate_half(x) sin turns each pair (x_i, x_{i+d/2}) by +angle.
        self.assertEqual(ref.rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist(), [-3.0, -4.0, 1.0, 2.0])
        tower = tiny_model().model.visual  # head_dim 16: 4 row frequencies, 4 column frequencies, twice
        cos, _ = tower.rotary(torch.tensor([[1, 4, 4]]))
        inv = [1 / 10000 ** (2 * i / 8) for i in range(4)]
        row, col = 0, 3  # patch 5: the second unit's top-right patch
        expected = [math.cos(row * f) for f in inv] + [math.cos(col * f) for f in inv]
        self.assertTrue(np.allclose(cos[5].numpy(), expected * 2, atol=1e-6))

    def test_query_heads_share_key_value_heads_in_consecutive_groups(self):
        attn = tiny_model().text_model.layers[0].self_attn  # 4 query heads over 2 key/value heads of 16
        with torch.no_grad():
            attn.v_proj.weight.zero_()
            attn.v_proj.bias.copy_(torch.cat([torch.ones(16), torch.zeros(16)]))
            attn.o_proj.weight.copy_(torch.eye(64))
        cos, sin = torch.ones(1, 3, 16), torch.zeros(1, 3, 16)
        out = attn(torch.randn(1, 3, 64), cos, sin, ref.causal_mask(None, 1, 3, torch.float32))
        expected = torch.tensor([1.0] * 32 + [0.0] * 32)  # heads 0, 1 read head 0; heads 2, 3 read head 1
        self.assertTrue(torch.allclose(out[0, 2], expected, atol=1e-6))

    def test_text_only_qwen2_5_vl_equals_qwen2_with_the_same_weights(self):
        vl = tiny_model("qwen2_5_vl")
        lm = tiny_model("qwen2", seed=5)
        lm.model.load_state_dict(vl.model.language_model.state_dict())
        ids = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 0, 0]])
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
        a, b = vl(ids, mask)["logits"], lm(ids, mask)["logits"]
        self.assertTrue(torch.equal(a[mask == 1], b[mask == 1]))


class ProcessorTest(unittest.TestCase):
    def test_smart_resize_by_hand(self):
        self.assertEqual(image_processor.smart_resize(28, 28), (56, 56))  # raised to min_pixels
        self.assertEqual(image_processor.smart_resize(1000, 2000), (700, 1400))  # lowered under max_pixels
        self.assertEqual(image_processor.smart_resize(100, 150), (112, 140))  # rounded to multiples of 28
        self.assertEqual(image_processor.smart_resize(20, 500), (28, 504))  # under 28 pixels: enlarged
        self.assertEqual(image_processor.smart_resize(30, 2000, max_pixels=20 * 28 * 28), (28, 1008))  # not 0
        with self.assertRaises(ValueError):
            image_processor.smart_resize(10, 2500)  # aspect ratio above 200

    def test_patches_unpatchify_to_the_resized_normalized_image(self):
        image = noise_image(100, 150)
        pixels, grid = image_processor.preprocess([image])
        self.assertEqual(grid.tolist(), [[1, 8, 10]])
        self.assertEqual(list(pixels.shape), [80, 1176])
        frames = image_processor.unpatchify(pixels.numpy(), grid[0].tolist())
        resized = np.asarray(image.resize((140, 112), Image.BICUBIC), dtype=np.float32) / 255
        mean, std = np.array(image_processor.CLIP_MEAN), np.array(image_processor.CLIP_STD)
        expected = ((resized - mean) / std).transpose(2, 0, 1)
        self.assertTrue(np.array_equal(frames[0], frames[1]))
        self.assertTrue(np.allclose(frames[0], expected, atol=1e-5))
        # Row 1 is the second patch of the first 2 x 2 unit: pixels (0..13, 14..27), channel 0, frame 0 first.
        self.assertTrue(np.allclose(pixels[1, :196].numpy().reshape(14, 14), expected[0, :14, 14:28], atol=1e-5))

    def test_transparency_is_white_and_the_cli_writes_a_batch(self):
        rgba = Image.new("RGBA", (60, 40), (0, 0, 0, 0))
        pixels, _ = image_processor.preprocess([rgba])
        white = (1 - np.array(image_processor.CLIP_MEAN)) / np.array(image_processor.CLIP_STD)
        self.assertTrue(np.allclose(pixels[0].numpy().reshape(3, -1), white[:, None], atol=1e-5))
        with tempfile.TemporaryDirectory() as d:
            noise_image(100, 150).save(os.path.join(d, "a.png"))
            noise_image(60, 40, 2).save(os.path.join(d, "b.png"))
            out = os.path.join(d, "out.safetensors")
            subprocess.run([sys.executable, os.path.join(HERE, "image_processor.py"), os.path.join(d, "a.png"),
                            os.path.join(d, "b.png"), "-o", out], check=True)
            t = safetensors_io.load(out)
        self.assertEqual(t["image_grid_thw"].tolist(), [[1, 8, 10], [1, 6, 4]])  # 40 x 60 raised to 56 x 84
        self.assertEqual(list(t["pixel_values"].shape), [104, 1176])


def finite_difference(f, p, index, eps=1e-6):
    with torch.no_grad():
        old = p[index].item()
        p[index] = old + eps
        up = f().item()
        p[index] = old - eps
        down = f().item()
        p[index] = old
    return (up - down) / (2 * eps)


class GradientTest(unittest.TestCase):
    def check(self, model, batch, params, extra=None):
        loss = model(**batch)["loss"]
        grads = torch.autograd.grad(loss, list(params.values()))
        gen = torch.Generator().manual_seed(0)
        for (name, p), g in zip(params.items(), grads):
            picks = [tuple(int(torch.randint(0, s, (1,), generator=gen)) for s in p.shape) for _ in range(2)]
            if extra and name in extra:
                picks.append(extra[name])
            for index in picks:
                numeric = finite_difference(lambda: model(**batch)["loss"], p, index)
                self.assertAlmostEqual(g[index].item(), numeric, delta=1e-7 + 1e-6 * abs(numeric), msg=f"{name}{index}")

    def test_autograd_matches_finite_differences_in_float64(self):
        model = tiny_model(dtype=torch.float64, tied=False)
        cfg = model.cfg
        images = [noise_image(140, 84, 4), noise_image(56, 84, 5), noise_image(56, 56, 6)]
        batch = vl_batch(cfg, images, [[1, None, 2, 3], [None, 4, 5, None, 6]])
        batch["pixel_values"] = batch["pixel_values"].double()
        params = dict(model.named_parameters())
        names = ["model.visual.patch_embed.proj.weight", "model.visual.blocks.0.attn.qkv.weight",
                 "model.visual.blocks.1.attn.qkv.bias", "model.visual.blocks.0.norm1.weight",
                 "model.visual.blocks.1.mlp.gate_proj.bias", "model.visual.merger.ln_q.weight",
                 "model.visual.merger.mlp.0.weight", "model.language_model.layers.0.self_attn.q_proj.bias",
                 "model.language_model.layers.0.self_attn.k_proj.weight",
                 "model.language_model.layers.1.mlp.down_proj.weight", "model.language_model.norm.weight",
                 "model.language_model.embed_tokens.weight", "lm_head.weight"]
        self.check(model, batch, {n: params[n] for n in names},
                   extra={"model.language_model.embed_tokens.weight": (2, 7)})

    def test_lora_gradients_match_finite_differences(self):
        model = tiny_model("qwen2", dtype=torch.float64)
        adapter = lora_mod.Lora(model, 4, 8, ["q_proj", "down_proj"], b_std=0.1)
        ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
        batch = {"input_ids": ids, "labels": ids}
        self.check(model, batch, dict(zip([k for k in adapter.state_dict()], adapter.parameters())))


class LossAndPaddingTest(unittest.TestCase):
    def test_loss_is_the_mean_over_labelled_next_tokens(self):
        model = tiny_model("qwen2")
        ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
        labels = torch.tensor([[-100, 6, 7, 8], [-100, -100, 11, -100]])
        out = model(ids, labels=labels)
        logp = torch.log_softmax(out["logits"], -1)
        terms = [-logp[0, 0, 6], -logp[0, 1, 7], -logp[0, 2, 8], -logp[1, 1, 11]]
        self.assertAlmostEqual(out["loss"].item(), torch.stack(terms).mean().item(), places=5)

    def test_right_padding_changes_nothing_before_it(self):
        model = tiny_model()
        cfg = model.cfg
        one = vl_batch(cfg, [noise_image(84, 112)], [[1, None, 2, 3]])
        two = vl_batch(cfg, [noise_image(84, 112), noise_image(56, 56)], [[1, None, 2, 3], [4, None, 5, 6, 7, 8]])
        a, b = model(**one)["logits"][0], model(**two)["logits"][0, :one["input_ids"].shape[1]]
        self.assertTrue(torch.allclose(a, b, atol=1e-5))


    def test_left_padding_is_never_read(self):
        model = tiny_model()
        alone = model(torch.tensor([[5, 6, 7]]))["logits"][0]
        padded = model(torch.tensor([[0, 0, 5, 6, 7]]), torch.tensor([[0, 0, 1, 1, 1]]))["logits"][0, 2:]
        self.assertTrue(torch.allclose(alone, padded, atol=1e-5))

    def test_the_pad_token_row_of_the_embedding_gets_no_gradient(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(d, kind="qwen2", vocab=SMALL_VOCAB, tied=False)  # a tied head would give row 7 its gradient
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            cfg["pad_token_id"] = 7
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            model, _ = ref.load_model(d)
        ids = torch.tensor([[5, 7, 8, 9]])
        model(ids, labels=ids)["loss"].backward()
        grad = model.text_model.embed_tokens.weight.grad
        self.assertEqual(grad[7].abs().max().item(), 0.0)
        self.assertGreater(grad[8].abs().max().item(), 0.0)


class LoraTest(unittest.TestCase):
    def test_keys_targets_scaling_and_merge(self):
        model = tiny_model()
        ids = torch.tensor([[5, 6, 7, 8]])
        base = model(ids)["logits"]
        adapter = lora_mod.Lora(model, 4, 16, ["q_proj", "gate_proj"], rslora=True)
        self.assertEqual(adapter.scaling, 8.0)
        keys = list(adapter.state_dict())
        self.assertIn("base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight", keys)
        self.assertIn("base_model.model.model.visual.blocks.0.mlp.gate_proj.lora_B.weight", keys)  # as PEFT matches
        self.assertTrue(torch.equal(model(ids)["logits"], base))  # B = 0
        adapter.remove()
        regex = lora_mod.Lora(model, 2, 4, r"model\.layers\.\d+\.mlp\.gate_proj", key_layout="legacy", b_std=0.2)
        self.assertEqual(sorted(regex.state_dict())[0], "base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight")
        with_adapter = model(ids)["logits"]
        regex.merge()
        self.assertTrue(torch.allclose(model(ids)["logits"], with_adapter, atol=1e-5))
        self.assertFalse(torch.allclose(with_adapter, base, atol=1e-4))


class CommandLineTest(unittest.TestCase):
    def run_reference(self, *args, process=False):
        """run_reference.py as a program, or its main() in this process (the same code, without torch's start-up)."""
        if process:
            return subprocess.run([sys.executable, os.path.join(HERE, "run_reference.py"), *args],
                                  capture_output=True, text=True)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = run_reference.main(list(args))
        return subprocess.CompletedProcess(args, code, "", stderr.getvalue())

    def test_logits_loss_gradients_and_one_lora_step(self):
        with tempfile.TemporaryDirectory() as d:
            model = tiny.write(os.path.join(d, "m"), vocab=SMALL_VOCAB, layout="current")
            batch = vl_batch(model.cfg, [noise_image(140, 84)], [[1, None, 2, 3], [4, 5, 6]])
            inputs = os.path.join(d, "in.safetensors")
            safetensors_io.save(inputs, {k: v for k, v in batch.items()})
            out = os.path.join(d, "out.safetensors")
            grads = "visual.blocks.0.attn.qkv.weight,model.language_model.norm.weight"  # either layout
            r = self.run_reference(os.path.join(d, "m"), inputs, out, "--grads", grads, process=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            t = safetensors_io.load(out)
            expected = model(**batch)
            self.assertTrue(torch.allclose(t["logits"], expected["logits"], atol=1e-5))
            self.assertAlmostEqual(t["loss"].item(), expected["loss"].item(), places=5)
            self.assertEqual(list(t["grad.model.visual.blocks.0.attn.qkv.weight"].shape), [96, 32])
            self.assertIn("grad.model.language_model.norm.weight", t)

            r = self.run_reference(os.path.join(d, "m"), inputs, out, "--lora", "4,8,q_proj,v_proj", "--lora-b-std",
                                   "0.05", "--lr", "0.01", "--weight-decay", "0.1",
                                   "--save-adapter", os.path.join(d, "ad"))
            self.assertEqual(r.returncode, 0, r.stderr)
            t = safetensors_io.load(out)
            key = "base_model.model.model.language_model.layers.1.self_attn.v_proj.lora_A.weight"
            w, g = t[f"lora.{key}"], t[f"grad.{key}"]
            self.assertGreater(g.abs().min().item(), 0.0)
            # AdamW's first step: w (1 - lr wd) - lr g / (|g| + eps).
            step = w * (1 - 0.01 * 0.1) - 0.01 * g / (g.abs() + 1e-8)
            self.assertTrue(torch.allclose(t[f"updated.{key}"], step, atol=1e-6))
            again = os.path.join(d, "again.safetensors")
            r = self.run_reference(os.path.join(d, "m"), inputs, again, "--lora-init", os.path.join(d, "ad"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(torch.equal(safetensors_io.load(again)[f"grad.{key}"], g))

            r = self.run_reference(os.path.join(d, "m"), inputs, out, "--grads", "model.no.such.weight")
            self.assertEqual(r.returncode, 1)
            self.assertIn("model.no.such.weight is not a parameter", r.stderr)

    def test_default_checkpoint_keeps_qwens_token_ids(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, os.path.join(HERE, "make_tiny_checkpoint.py"), d], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            model, layout = ref.load_model(d)
        self.assertEqual(layout, "legacy")
        self.assertEqual(model.cfg.text.vocab_size, 151936)
        self.assertEqual(model.cfg.image_token_id, 151655)
        batch = vl_batch(model.cfg, [noise_image(56, 56)], [[151644, None, 872]])
        self.assertTrue(math.isfinite(model(**batch)["loss"].item()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
