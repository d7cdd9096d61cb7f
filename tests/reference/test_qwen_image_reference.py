#!/usr/bin/python3
"""Checks of the reference Qwen-Image transformer itself: each test compares it against an independent way of
getting the same numbers (hand-built tensors, explicit formulas, a per-head second computation, finite
differences, the same weights in another folder layout).

Run: /usr/bin/python3 tests/reference/test_qwen_image_reference.py   (exits 77, skipped, without torch)
"""
import contextlib
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
    import torch.nn.functional as F
except ImportError:
    print("SKIP: /usr/bin/python3 cannot import torch; install Debian's python3-torch (packaging/deps.sh)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_tiny_qwen_image as tiny  # noqa: E402
import qwen_image as ref  # noqa: E402
import run_qwen_image_reference as runner  # noqa: E402
import safetensors_io  # noqa: E402

ROWS_3 = [-2, -1, 0]  # a 3 x 5 packed grid, centred
COLS_5 = [-3, -2, -1, 0, 1]
TEXT_START_3x5 = 2  # max(3 // 2, 5 // 2)


def batch(b=2, h=6, w=10, t=5, seed=1, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(b, t, dtype=torch.long)
    mask[0, t - 2:] = 0  # the first sample's last two tokens are padding
    return {"latents": torch.randn(b, 16, h, w, generator=g, dtype=dtype),
            "noise": torch.randn(b, 16, h, w, generator=g, dtype=dtype),
            "sigmas": torch.linspace(0.2, 0.9, b, dtype=dtype),
            "prompt_embeds": torch.randn(b, t, tiny.TINY["joint_attention_dim"], generator=g, dtype=dtype),
            "prompt_mask": mask}


def loss_of(model, inputs):
    return ref.flow_matching_loss(model, inputs["latents"], inputs["noise"], inputs["sigmas"],
                                  inputs["prompt_embeds"], inputs["prompt_mask"])


def max_diff(a, b):
    """The largest absolute difference (no relative slack, unlike torch.allclose's default)."""
    return (a - b).abs().max().item()


def hand_angles(axis_dims, position):
    """One token's angles from (frame, row, column), each axis i = 0..dim/2-1 at position * 10000^(-2i/dim)."""
    return [position[a] * 10000.0 ** (-2 * i / dim) for a, dim in enumerate(axis_dims) for i in range(dim // 2)]


# ---------------------------------------------------------------- a second computation, head by head

def naive_block(p, pre, img, txt, temb, mask, img_freqs, txt_freqs, hd):
    """The block with F.linear / F.layer_norm, each head's projection rows sliced out, rotary as a product with
    complex tables (S, hd/2), and each sample attending over the list of its kept keys."""
    def lin(name, x, rows=slice(None)):
        return F.linear(x, p[f"{pre}.{name}.weight"][rows], p[f"{pre}.{name}.bias"][rows])

    def norm(x):
        return F.layer_norm(x, x.shape[-1:], eps=1e-6)

    def rms(x, name):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * p[f"{pre}.attn.{name}.weight"]

    def rot(x, freqs):
        z = torch.view_as_complex(x.reshape(x.shape[0], -1, 2).contiguous())
        return torch.view_as_real(z * freqs).reshape(x.shape)

    d = img.shape[-1]
    mod_i, mod_t = lin("img_mod.1", F.silu(temb)), lin("txt_mod.1", F.silu(temb))
    piece = [lambda m, k=k: m[:, k * d:(k + 1) * d][:, None, :] for k in range(6)]  # shift, scale, gate, x2
    xi = norm(img) * (1 + piece[1](mod_i)) + piece[0](mod_i)
    xt = norm(txt) * (1 + piece[1](mod_t)) + piece[0](mod_t)
    att_i, att_t = [], []
    for b in range(img.shape[0]):
        keep = [j for j in range(txt.shape[1]) if mask[b, j]]
        heads = []
        for h in range(d // hd):
            r = slice(h * hd, (h + 1) * hd)
            tq = rot(rms(lin("attn.add_q_proj", xt[b], r), "norm_added_q"), txt_freqs)
            tk = rot(rms(lin("attn.add_k_proj", xt[b], r), "norm_added_k"), txt_freqs)
            iq = rot(rms(lin("attn.to_q", xi[b], r), "norm_q"), img_freqs)
            ik = rot(rms(lin("attn.to_k", xi[b], r), "norm_k"), img_freqs)
            q = torch.cat([tq, iq])
            k = torch.cat([tk[keep], ik])
            v = torch.cat([lin("attn.add_v_proj", xt[b], r)[keep], lin("attn.to_v", xi[b], r)])
            heads.append(torch.softmax(q @ k.t() / math.sqrt(hd), dim=-1) @ v)
        joint = torch.cat(heads, dim=-1)
        att_t.append(lin("attn.to_add_out", joint[:txt.shape[1]]))
        att_i.append(lin("attn.to_out.0", joint[txt.shape[1]:]))
    img = img + piece[2](mod_i) * torch.stack(att_i)
    txt = txt + piece[2](mod_t) * torch.stack(att_t)
    gelu = lambda x: F.gelu(x, approximate="tanh")  # noqa: E731
    xi = norm(img) * (1 + piece[4](mod_i)) + piece[3](mod_i)
    xt = norm(txt) * (1 + piece[4](mod_t)) + piece[3](mod_t)
    img = img + piece[5](mod_i) * lin("img_mlp.net.2", gelu(lin("img_mlp.net.0.proj", xi)))
    txt = txt + piece[5](mod_t) * lin("txt_mlp.net.2", gelu(lin("txt_mlp.net.0.proj", xt)))
    return img, txt


def naive_forward(model, hidden, text, mask, t, grid):
    """The whole transformer around naive_block, with the (separately checked) timestep features and angles."""
    p, cfg = model.params, model.cfg
    # complex64 tables as the published model builds them (torch.polar on fp32 angles), widened: its cos may
    # differ from torch.cos by one fp32 ulp, which moves outputs by about 2e-8
    img_freqs, txt_freqs = (torch.polar(torch.ones_like(a), a).to(torch.complex128)
                            for a in ref.rope_angles(cfg.axes_dims_rope, grid, text.shape[1]))
    e = "time_text_embed.timestep_embedder"
    temb = F.linear(F.silu(F.linear(ref.timestep_features(t).to(hidden.dtype), p[f"{e}.linear_1.weight"],
                                    p[f"{e}.linear_1.bias"])), p[f"{e}.linear_2.weight"], p[f"{e}.linear_2.bias"])
    txt = text / torch.sqrt((text * text).mean(-1, keepdim=True) + 1e-6) * p["txt_norm.weight"]
    txt = F.linear(txt, p["txt_in.weight"], p["txt_in.bias"])
    img = F.linear(hidden, p["img_in.weight"], p["img_in.bias"])
    for i in range(cfg.num_layers):
        img, txt = naive_block(p, f"transformer_blocks.{i}", img, txt, temb, mask, img_freqs, txt_freqs,
                               cfg.attention_head_dim)
    mod = F.linear(F.silu(temb), p["norm_out.linear.weight"], p["norm_out.linear.bias"])
    scale, shift = mod[:, :cfg.inner], mod[:, cfg.inner:]
    out = F.layer_norm(img, img.shape[-1:], eps=1e-6) * (1 + scale[:, None]) + shift[:, None]
    return F.linear(out, p["proj_out.weight"], p["proj_out.bias"])


# ---------------------------------------------------------------- tests

class LatentsTest(unittest.TestCase):
    def test_pack_order_by_hand_and_round_trip(self):
        b, c, h, w = 2, 3, 4, 6
        latents = torch.zeros(b, c, h, w)
        for i in range(b):
            for ch in range(c):
                for y in range(h):
                    for x in range(w):
                        latents[i, ch, y, x] = 1000 * i + 100 * ch + 10 * y + x
        packed = ref.pack_latents(latents)
        self.assertEqual(list(packed.shape), [2, 6, 12])
        self.assertEqual(packed[0, 0, :8].tolist(), [0, 1, 10, 11, 100, 101, 110, 111])
        self.assertEqual(packed[0, 4, :4].tolist(), [22, 23, 32, 33])  # patch row 1, column 1
        for i in range(b):
            for ch in range(c):
                for y in range(h):
                    for x in range(w):
                        token, feature = (y // 2) * (w // 2) + x // 2, ch * 4 + (y % 2) * 2 + x % 2
                        self.assertEqual(packed[i, token, feature].item(), latents[i, ch, y, x].item())
        self.assertTrue(torch.equal(ref.unpack_latents(packed, h, w), latents))
        with self.assertRaises(ref.InputError):
            ref.pack_latents(torch.zeros(1, 16, 5, 4))
        with self.assertRaises(ref.InputError):
            ref.unpack_latents(packed, 4, 8)


class EmbeddingTest(unittest.TestCase):
    def test_timestep_embedding_by_hand(self):
        t = [0.0, 0.25, 0.731, 1.0]
        features = ref.timestep_features(torch.tensor(t))
        self.assertEqual(list(features.shape), [4, 256])
        for row, ti in enumerate(t):
            for k in range(128):
                angle = 1000 * ti * math.exp(-math.log(10000) * k / 128)
                self.assertAlmostEqual(features[row, k].item(), math.cos(angle), delta=3e-4)
                self.assertAlmostEqual(features[row, 128 + k].item(), math.sin(angle), delta=3e-4)
        model = tiny.tiny_model(dtype=torch.float64)
        p, e = model.params, "time_text_embed.timestep_embedder"
        hidden = features.double() @ p[f"{e}.linear_1.weight"].t() + p[f"{e}.linear_1.bias"]
        hidden = hidden / (1 + torch.exp(-hidden))
        expected = hidden @ p[f"{e}.linear_2.weight"].t() + p[f"{e}.linear_2.bias"]
        self.assertLess(max_diff(model.time_embedding(torch.tensor(t)), expected), 1e-12)

    def test_rope_tables_on_a_3x5_grid(self):
        axes = tuple(tiny.TINY["axes_dims_rope"])
        image, text = ref.rope_angles(axes, (1, 3, 5), 4)
        self.assertEqual(list(image.shape), [15, 16])
        self.assertEqual(list(text.shape), [4, 16])
        for r in range(3):
            for c in range(5):
                expected = torch.tensor(hand_angles(axes, (0, ROWS_3[r], COLS_5[c])), dtype=torch.float64)
                self.assertTrue(torch.allclose(image[r * 5 + c].double(), expected, rtol=1e-6, atol=1e-7), (r, c))
        for j in range(4):
            pos = TEXT_START_3x5 + j
            expected = torch.tensor(hand_angles(axes, (pos, pos, pos)), dtype=torch.float64)
            self.assertTrue(torch.allclose(text[j].double(), expected, rtol=1e-6))
        _, tall = ref.rope_angles(axes, (1, 8, 3), 1)
        self.assertEqual(tall[0, 0].item(), 4.0)  # text starts at max(8 // 2, 3 // 2)
        with self.assertRaises(ref.InputError):
            ref.rope_angles(axes, (1, 8, 8), 4093)  # 4 + 4093 positions pass the published 4096

    def test_rope_tables_of_an_edit_sequence(self):
        # The image being made (3 x 5) at frame 0, a reference (2 x 8) after it at frame 1; the text starts
        # past the largest half side of both: max(3 // 2, 5 // 2, 2 // 2, 8 // 2) = 4.
        axes = tuple(tiny.TINY["axes_dims_rope"])
        image, text = ref.rope_angles(axes, [(1, 3, 5), (1, 2, 8)], 3)
        self.assertEqual(list(image.shape), [15 + 16, 16])
        made, _ = ref.rope_angles(axes, (1, 3, 5), 3)
        self.assertTrue(torch.equal(image[:15], made))
        for r, row in enumerate([-1, 0]):
            for c, col in enumerate(range(-4, 4)):
                expected = torch.tensor(hand_angles(axes, (1, row, col)), dtype=torch.float64)
                self.assertTrue(torch.allclose(image[15 + r * 8 + c].double(), expected, rtol=1e-6, atol=1e-7),
                                (r, c))
        for j in range(3):
            expected = torch.tensor(hand_angles(axes, (4 + j, 4 + j, 4 + j)), dtype=torch.float64)
            self.assertTrue(torch.allclose(text[j].double(), expected, rtol=1e-6))

    def test_rotation_is_complex_multiplication_of_adjacent_pairs(self):
        x = torch.randn(2, 3, 2, 8, dtype=torch.float64)
        angles = torch.randn(3, 4, dtype=torch.float64)
        z = torch.view_as_complex(x.reshape(2, 3, 2, 4, 2))
        expected = torch.view_as_real(z * torch.exp(1j * angles)[None, :, None, :]).reshape(x.shape)
        self.assertLess(max_diff(ref.rotate(x, angles), expected), 1e-14)


class NormsTest(unittest.TestCase):
    def test_norms_and_gelu_by_hand(self):
        rms = ref.rms_norm(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 2.0]))
        self.assertTrue(torch.allclose(rms, torch.tensor([3.0, 8.0]) / math.sqrt(12.5 + 1e-6)))
        ln = ref.layer_norm(torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64))  # mean 3, variance 3.5
        expected = torch.tensor([-2.0, -1.0, 0.0, 3.0], dtype=torch.float64) / math.sqrt(3.5 + 1e-6)
        self.assertTrue(torch.allclose(ln, expected, atol=1e-15))
        x = torch.linspace(-4, 4, 17, dtype=torch.float64)
        self.assertTrue(torch.allclose(ref.gelu_tanh(x), F.gelu(x, approximate="tanh"), atol=1e-15))


class MaskTest(unittest.TestCase):
    def run_model(self, model, text, mask):
        g = torch.Generator().manual_seed(5)
        hidden = torch.randn(1, 15, 64, generator=g, dtype=torch.float64)
        return model(hidden, text, mask, torch.tensor([0.4]), (1, 3, 5))["output"]

    def test_padded_text_tokens_change_nothing(self):
        model = tiny.tiny_model(dtype=torch.float64)
        text = torch.randn(1, 6, 48, dtype=torch.float64)
        alone = self.run_model(model, text[:, :4], torch.ones(1, 4, dtype=torch.long))
        mask = torch.tensor([[1, 1, 1, 1, 0, 0]])
        padded = self.run_model(model, text, mask)
        self.assertLess(max_diff(alone, padded), 1e-12)
        changed = text.clone()
        changed[:, 4:] = 100 * torch.randn(1, 2, 48, dtype=torch.float64)
        self.assertLess(max_diff(self.run_model(model, changed, mask), padded), 1e-12)
        holed = torch.tensor([[1, 0, 1, 1, 1, 1]])  # padding need not be at the end
        changed = text.clone()
        changed[:, 1] += 5.0
        self.assertLess(max_diff(self.run_model(model, changed, holed), self.run_model(model, text, holed)), 1e-12)
        self.assertGreater(max_diff(self.run_model(model, changed, mask), padded), 1e-2)  # a kept token counts


class BlockTest(unittest.TestCase):
    def test_one_block_against_a_per_head_computation(self):
        model = tiny.tiny_model(dtype=torch.float64)
        g = torch.Generator().manual_seed(3)
        img = torch.randn(2, 15, 64, generator=g, dtype=torch.float64)
        txt = torch.randn(2, 5, 64, generator=g, dtype=torch.float64)
        temb = torch.randn(2, 64, generator=g, dtype=torch.float64)
        mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
        img_ang = 3 * torch.randn(15, 16, generator=g, dtype=torch.float64)
        txt_ang = 3 * torch.randn(5, 16, generator=g, dtype=torch.float64)
        got = ref.block(model.params, "transformer_blocks.1", img, txt, temb, mask != 0, img_ang, txt_ang, 32)
        want = naive_block(model.params, "transformer_blocks.1", img, txt, temb, mask, torch.exp(1j * img_ang),
                           torch.exp(1j * txt_ang), 32)
        self.assertLess(max_diff(got[0], want[0]), 1e-12)
        self.assertLess(max_diff(got[1], want[1]), 1e-12)
        self.assertGreater((got[0] - img).abs().mean().item(), 0.1)

    def test_whole_model_against_the_per_head_computation(self):
        model = tiny.tiny_model(dtype=torch.float64)
        inputs = batch(dtype=torch.float64)
        out = loss_of(model, inputs)
        sigma = inputs["sigmas"][:, None, None, None]
        noisy = ref.pack_latents((1 - sigma) * inputs["latents"] + sigma * inputs["noise"])
        want = naive_forward(model, noisy, inputs["prompt_embeds"], inputs["prompt_mask"], inputs["sigmas"],
                             (1, 3, 5))
        self.assertLess(max_diff(out["output"], want), 1e-6)
        target = ref.pack_latents(inputs["noise"] - inputs["latents"])
        self.assertTrue(torch.equal(out["target"], target))
        self.assertAlmostEqual(out["loss"].item(), ((want - target) ** 2).sum().item() / want.numel(), delta=1e-6)
        self.assertTrue(0.3 < out["output"].std().item() < 3)  # tiny weights keep outputs of order one


    def test_edit_sequence_against_the_per_head_computation(self):
        # Two reference images of other sizes after x_t: the prediction is the per-head model's on the whole
        # sequence, read at x_t's 15 tokens; the references change it, and the loss is over those tokens alone.
        model = tiny.tiny_model(dtype=torch.float64)
        inputs = batch(dtype=torch.float64)
        g = torch.Generator().manual_seed(9)
        refs = [torch.randn(2, 16, 4, 8, generator=g, dtype=torch.float64),
                torch.randn(2, 16, 6, 2, generator=g, dtype=torch.float64)]
        out = ref.flow_matching_loss(model, inputs["latents"], inputs["noise"], inputs["sigmas"],
                                     inputs["prompt_embeds"], inputs["prompt_mask"], refs)
        sigma = inputs["sigmas"][:, None, None, None]
        noisy = ref.pack_latents((1 - sigma) * inputs["latents"] + sigma * inputs["noise"])
        sequence = torch.cat([noisy] + [ref.pack_latents(r) for r in refs], dim=1)
        want = naive_forward(model, sequence, inputs["prompt_embeds"], inputs["prompt_mask"], inputs["sigmas"],
                             [(1, 3, 5), (1, 2, 4), (1, 3, 1)])[:, :15]
        self.assertEqual(list(out["output"].shape), [2, 15, 64])
        self.assertLess(max_diff(out["output"], want), 1e-6)
        target = ref.pack_latents(inputs["noise"] - inputs["latents"])
        self.assertAlmostEqual(out["loss"].item(), ((want - target) ** 2).mean().item(), delta=1e-6)
        plain = loss_of(model, inputs)["output"]
        self.assertGreater(max_diff(out["output"], plain), 1e-3)


class GradientTest(unittest.TestCase):
    def test_gradients_against_finite_differences(self):
        model = tiny.tiny_model(dtype=torch.float64)
        inputs = batch(b=2, h=4, w=6, t=3, dtype=torch.float64)
        names = ["proj_out.bias", "norm_out.linear.weight", "transformer_blocks.0.attn.to_q.weight",
                 "transformer_blocks.1.attn.norm_added_k.weight", "transformer_blocks.0.txt_mod.1.weight",
                 "transformer_blocks.1.img_mlp.net.0.proj.bias", "txt_norm.weight",
                 "time_text_embed.timestep_embedder.linear_1.weight"]
        model.requires_grad(names)
        loss_of(model, inputs)["loss"].backward()
        g = torch.Generator().manual_seed(7)
        for name in names:
            p = model.params[name]
            for _ in range(2):
                i = torch.randint(p.numel(), (1,), generator=g).item()
                flat = p.data.view(-1)
                with torch.no_grad():
                    flat[i] += 1e-6
                    up = loss_of(model, inputs)["loss"].item()
                    flat[i] -= 2e-6
                    down = loss_of(model, inputs)["loss"].item()
                    flat[i] += 1e-6
                numeric, analytic = (up - down) / 2e-6, p.grad.view(-1)[i].item()
                self.assertAlmostEqual(analytic, numeric, delta=1e-7 + 1e-6 * abs(numeric), msg=f"{name}[{i}]")
            self.assertGreater(p.grad.abs().max().item(), 0.0, name)


class FolderTest(unittest.TestCase):
    def test_single_sharded_pipeline_and_bf16_folders_load_the_same_weights(self):
        with tempfile.TemporaryDirectory() as d:
            drawn = tiny.write(os.path.join(d, "one"))
            tiny.write(os.path.join(d, "shards"), max_shard_size=100_000)
            tiny.write(os.path.join(d, "pipe"), pipeline=True)
            tiny.write(os.path.join(d, "bf16"), dtype="BF16")
            with open(os.path.join(d, "shards", ref.WEIGHTS_INDEX)) as f:
                shards = set(json.load(f)["weight_map"].values())
            self.assertGreater(len(shards), 2)
            self.assertIn("diffusion_pytorch_model-00001-of-", sorted(shards)[0])
            with open(os.path.join(d, "pipe", "model_index.json")) as f:
                self.assertEqual(json.load(f)["_class_name"], "QwenImagePipeline")
            self.assertTrue(os.path.isfile(os.path.join(d, "pipe", "transformer", ref.WEIGHTS_FILE)))
            with open(os.path.join(d, "one", "config.json")) as f:
                config = json.load(f)
            models = {name: ref.load_model(os.path.join(d, name)) for name in ("one", "shards", "pipe", "bf16")}
        self.assertEqual(config["_class_name"], "QwenImageTransformer2DModel")
        self.assertEqual(models["one"].cfg, models["pipe"].cfg)
        for name, t in drawn.params.items():
            for kind in ("one", "shards", "pipe"):
                self.assertTrue(torch.equal(models[kind].params[name], t), (kind, name))
            self.assertTrue(torch.equal(models["bf16"].params[name], t.bfloat16().float()), name)

    def test_missing_misshaped_and_unknown_tensors_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(d, max_shard_size=100_000)
            with open(os.path.join(d, ref.WEIGHTS_INDEX)) as f:
                index = json.load(f)
            name = "transformer_blocks.1.attn.norm_added_q.weight"
            shard = os.path.join(d, index["weight_map"][name])
            tensors = safetensors_io.load(shard)
            tensors[name] = torch.ones(2, 16)  # the same bytes, so that the index's total_size still holds
            safetensors_io.save(shard, tensors)
            with self.assertRaisesRegex(ref.ConfigError, rf"{os.path.basename(shard)}: {name} has shape \[2, 16\]"):
                ref.load_model(d)
            del tensors[name]
            safetensors_io.save(shard, tensors)
            del index["weight_map"][name]
            index["metadata"]["total_size"] -= 32 * 4  # the tensor as drawn
            with open(os.path.join(d, ref.WEIGHTS_INDEX), "w") as f:
                json.dump(index, f)
            with self.assertRaisesRegex(ref.ConfigError, rf"index.json: tensor {name} is missing"):
                ref.load_model(d)
        with tempfile.TemporaryDirectory() as d:
            tiny.write(d)
            tensors = safetensors_io.load(os.path.join(d, ref.WEIGHTS_FILE))
            tensors["guidance_embedder.linear_1.weight"] = torch.zeros(2, 2)
            safetensors_io.save(os.path.join(d, ref.WEIGHTS_FILE), tensors)
            with self.assertRaisesRegex(ref.ConfigError, "not parameters of .*guidance_embedder"):
                ref.load_model(d)

    def test_zero_cond_t_modulates_only_the_reference_tokens_at_timestep_zero(self):
        """Edit-2511's zero_cond_t: with a reference image the prediction changes; without one it is the
        plain model's. With every sigma 0 the two embeddings agree, and so do the models."""
        cfg = ref.parse_config(dict(tiny.config(), zero_cond_t=True))
        self.assertTrue(cfg.zero_cond_t)
        params = tiny.draw(cfg, 0)
        zero = ref.QwenImageTransformer(cfg, params).to(torch.float64)
        plain = ref.QwenImageTransformer(ref.parse_config(tiny.config()), params).to(torch.float64)
        g = torch.Generator().manual_seed(3)
        lat, noise = (torch.randn(2, 16, 6, 10, generator=g, dtype=torch.float64) for _ in range(2))
        states = torch.randn(2, 5, 48, generator=g, dtype=torch.float64)
        mask = torch.ones(2, 5)
        refs = [torch.randn(2, 16, 4, 4, generator=g, dtype=torch.float64)]

        def out(model, sigmas, references=()):
            return ref.flow_matching_loss(model, lat, noise, sigmas, states, mask, references)["output"]
        sigmas = torch.tensor([0.4, 0.9], dtype=torch.float64)
        self.assertTrue(torch.equal(out(zero, sigmas), out(plain, sigmas)))
        self.assertGreater((out(zero, sigmas, refs) - out(plain, sigmas, refs)).abs().max().item(), 1e-3)
        zeros = torch.zeros(2, dtype=torch.float64)
        self.assertTrue(torch.allclose(out(zero, zeros, refs), out(plain, zeros, refs), rtol=0, atol=1e-12))
        with self.assertRaisesRegex(ref.ConfigError, "zero_cond_t must be true or false"):
            ref.parse_config(dict(tiny.config(), zero_cond_t=1))

    def test_config_fields_are_checked(self):
        with self.assertRaisesRegex(ref.ConfigError, "guidance_embeds true is not covered"):
            ref.parse_config(dict(tiny.config(), guidance_embeds=True))
        with self.assertRaisesRegex(ref.ConfigError, "must sum to attention_head_dim 32"):
            ref.parse_config(dict(tiny.config(), axes_dims_rope=[8, 12, 14]))
        with self.assertRaisesRegex(ref.ConfigError, "_class_name is 'FluxTransformer2DModel'"):
            ref.parse_config(dict(tiny.config(), _class_name="FluxTransformer2DModel"))
        published = {"_class_name": "QwenImageTransformer2DModel", "attention_head_dim": 128, "guidance_embeds": False,
                     "axes_dims_rope": [16, 56, 56], "in_channels": 64, "joint_attention_dim": 3584,
                     "num_attention_heads": 24, "num_layers": 60, "out_channels": 16, "patch_size": 2,
                     "pooled_projection_dim": 768}
        cfg = ref.parse_config(published)
        self.assertEqual((cfg.inner, cfg.out_features), (3072, 64))
        self.assertEqual(sum(math.prod(s) for s in ref.parameter_shapes(cfg).values()), 20_430_401_088)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "model_index.json"), "w") as f:
                f.write("{}")
            with self.assertRaisesRegex(ref.ConfigError, "without transformer/config.json"):
                ref.load_model(d)


class CommandLineTest(unittest.TestCase):
    def run_main(self, *args):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = runner.main(list(args))
        return code, stderr.getvalue()

    def test_outputs_gradients_and_an_odd_grid(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(os.path.join(d, "m"), pipeline=True)
            inputs = batch(b=2, h=6, w=10, t=5)  # a 3 x 5 packed grid
            path, out = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
            safetensors_io.save(path, inputs)
            grads = "proj_out.weight,transformer_blocks.0.attn.add_k_proj.bias"
            r = subprocess.run([sys.executable, os.path.join(HERE, "run_qwen_image_reference.py"),
                                os.path.join(d, "m"), path, out, "--grads", grads], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            t = safetensors_io.load(out)
        shapes = {k: list(v.shape) for k, v in t.items()}
        self.assertEqual(shapes, {"output": [2, 15, 64], "target": [2, 15, 64], "loss": [], "temb": [2, 64],
                                  "image_freqs": [15, 16, 2], "text_freqs": [5, 16, 2],
                                  "grad.proj_out.weight": [64, 64],
                                  "grad.transformer_blocks.0.attn.add_k_proj.bias": [64]})
        self.assertTrue(all(v.dtype == torch.float32 for v in t.values()))
        model = tiny.tiny_model()
        model.requires_grad(["proj_out.weight"])
        expected = loss_of(model, inputs)
        expected["loss"].backward()
        self.assertLess(max_diff(t["output"], expected["output"]), 1e-6)
        self.assertAlmostEqual(t["loss"].item(), expected["loss"].item(), places=5)
        self.assertLess(max_diff(t["grad.proj_out.weight"], model.params["proj_out.weight"].grad), 1e-6)
        axes = tiny.TINY["axes_dims_rope"]
        angles = torch.tensor([hand_angles(axes, (0, r, c)) for r in ROWS_3 for c in COLS_5], dtype=torch.float64)
        self.assertTrue(torch.allclose(t["image_freqs"][..., 0].double(), angles.cos(), atol=1e-6))
        self.assertTrue(torch.allclose(t["image_freqs"][..., 1].double(), angles.sin(), atol=1e-6))
        text = torch.tensor([hand_angles(axes, (j + TEXT_START_3x5,) * 3) for j in range(5)], dtype=torch.float64)
        self.assertTrue(torch.allclose(t["text_freqs"][..., 1].double(), text.sin(), atol=1e-6))

    def test_bad_inputs_exit_1_naming_them(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(os.path.join(d, "m"))
            path, out = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
            inputs = batch(b=1, h=4, w=4, t=2)
            safetensors_io.save(path, inputs)
            code, err = self.run_main(os.path.join(d, "m"), path, out, "--grads", "proj_out.nope", "--dtype",
                                      "float64")
            self.assertEqual((code, "--grads: not parameters of QwenImageTransformer2DModel: proj_out.nope" in err),
                             (1, True), err)
            safetensors_io.save(path, {k: v for k, v in inputs.items() if k != "prompt_mask"})
            code, err = self.run_main(os.path.join(d, "m"), path, out)
            self.assertEqual((code, "missing tensors ['prompt_mask']" in err), (1, True), err)
            safetensors_io.save(path, dict(inputs, prompt_mask=torch.tensor([[1, 2]])))
            code, err = self.run_main(os.path.join(d, "m"), path, out)
            self.assertEqual((code, "prompt_mask holds values other than 0 and 1" in err), (1, True), err)
            safetensors_io.save(path, dict(inputs, latents=torch.zeros(1, 8, 4, 4), noise=torch.zeros(1, 8, 4, 4)))
            code, err = self.run_main(os.path.join(d, "m"), path, out)
            self.assertEqual((code, "latents have 8 channels" in err), (1, True), err)
            code, err = self.run_main(os.path.join(d, "nowhere"), path, out)
            self.assertEqual((code, "nowhere: neither config.json" in err), (1, True), err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
