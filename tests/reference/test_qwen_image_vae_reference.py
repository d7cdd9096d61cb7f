#!/usr/bin/python3
"""Checks of the reference Qwen-Image VAE itself: each test compares it against an independent way of getting
the same numbers (sums of per-frame 2D convolutions, loops over windows and pixels, the published chunk-by-chunk
evaluation with its caches, finite differences, the same weights in another folder layout).

Run: /usr/bin/python3 tests/reference/test_qwen_image_vae_reference.py   (exits 77, skipped, without torch)
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
import make_tiny_qwen_image  # noqa: E402
import make_tiny_qwen_image_vae as tiny  # noqa: E402
import qwen_image  # noqa: E402
import qwen_image_vae as ref  # noqa: E402
import run_qwen_image_vae as runner  # noqa: E402
import safetensors_io  # noqa: E402

PUBLISHED = {"_class_name": "AutoencoderKLQwenImage", "attn_scales": [], "base_dim": 96, "dim_mult": [1, 2, 4, 4],
             "dropout": 0.0, "num_res_blocks": 2, "temperal_downsample": [False, True, True], "z_dim": 16,
             "latents_mean": [0.0] * 16, "latents_std": [1.0] * 16}


def max_diff(a, b):
    return (a - b).abs().max().item()


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def tap_sum_conv(x, w, b, spatial_padding):
    """A causal convolution as the sum over its temporal taps of 2D convolutions: output frame t takes tap k from
    input frame t - (kt - 1) + k, nothing from frames before the first."""
    kt = w.shape[2]
    frames = []
    for t in range(x.shape[2]):
        out = b[None, :, None, None].expand(x.shape[0], -1, x.shape[3] + 2 * spatial_padding - w.shape[3] + 1,
                                            x.shape[4] + 2 * spatial_padding - w.shape[4] + 1)
        for k in range(kt):
            source = t - (kt - 1) + k
            if source >= 0:
                out = out + F.conv2d(x[:, :, source], w[:, :, k], padding=spatial_padding)
        frames.append(out)
    return torch.stack(frames, dim=2)


class Streaming:
    """The published evaluation of a video: the encoder on frame 0, then on four frames at a time; the decoder on
    one latent frame at a time. Each causal 3 x 3 x 3 convolution is handed the last two frames of its input so
    far (zeros in front only for the frames it has not got); a temporal downsampling passes its first chunk and
    later prepends the last frame of its previous chunk; a temporal upsampling passes its first input without a
    time convolution and treats the next as preceded by two zero frames."""

    def __init__(self, model):
        self.p, self.cfg, self.memory = model.params, model.cfg, {}

    def conv3(self, name, x):
        past = self.memory.get(name, x[:, :, :0])
        seen = torch.cat([past, x], dim=2)
        self.memory[name] = seen[:, :, -2:]
        return F.conv3d(F.pad(seen, (1, 1, 1, 1, 2 - past.shape[2], 0)), self.p[f"{name}.weight"],
                        self.p[f"{name}.bias"])

    def residual(self, name, x):
        p = self.p
        short = x
        if f"{name}.conv_shortcut.weight" in p:
            short = F.conv3d(x, p[f"{name}.conv_shortcut.weight"], p[f"{name}.conv_shortcut.bias"])
        h = self.conv3(f"{name}.conv1", F.silu(ref.rms_norm(x, p[f"{name}.norm1.gamma"])))
        return self.conv3(f"{name}.conv2", F.silu(ref.rms_norm(h, p[f"{name}.norm2.gamma"]))) + short

    def mid(self, name, x):
        x = self.residual(f"{name}.resnets.0", x)
        return self.residual(f"{name}.resnets.1", ref.attention_block(self.p, f"{name}.attentions.0", x))

    def down(self, name, x, temporal):
        w, b = self.p[f"{name}.resample.1.weight"], self.p[f"{name}.resample.1.bias"]
        y = torch.stack([F.conv2d(F.pad(x[:, :, t], (0, 1, 0, 1)), w, b, stride=2) for t in range(x.shape[2])], 2)
        if not temporal:
            return y
        past = self.memory.get(name)
        self.memory[name] = y[:, :, -1:]
        if past is None:
            return y
        return F.conv3d(torch.cat([past, y], 2), self.p[f"{name}.time_conv.weight"], self.p[f"{name}.time_conv.bias"],
                        stride=(2, 1, 1))

    def up(self, name, x, temporal):
        if temporal and name not in self.memory:
            self.memory[name] = torch.zeros_like(x[:, :, :1]).repeat(1, 1, 2, 1, 1)  # what the next one follows
        elif temporal:
            seen = torch.cat([self.memory[name], x], 2)
            self.memory[name] = seen[:, :, -2:]
            y = F.conv3d(seen, self.p[f"{name}.time_conv.weight"], self.p[f"{name}.time_conv.bias"])
            x = torch.stack([y[:, :x.shape[1]], y[:, x.shape[1]:]], dim=3).flatten(2, 3)
        w, b = self.p[f"{name}.resample.1.weight"], self.p[f"{name}.resample.1.bias"]
        return torch.stack([F.conv2d(F.interpolate(x[:, :, t], scale_factor=2.0, mode="nearest-exact"), w, b,
                                     padding=1) for t in range(x.shape[2])], 2)

    def encoder(self, x):
        x = self.conv3("encoder.conv_in", x)
        for i, (kind, _, temporal) in enumerate(ref.encoder_layout(self.cfg)[0]):
            name = f"encoder.down_blocks.{i}"
            x = self.residual(name, x) if kind == "residual" else self.down(name, x, temporal)
        x = self.mid("encoder.mid_block", x)
        return self.conv3("encoder.conv_out", F.silu(ref.rms_norm(x, self.p["encoder.norm_out.gamma"])))

    def decoder(self, x):
        x = self.mid("decoder.mid_block", self.conv3("decoder.conv_in", x))
        for i, (_, _, upsampling) in enumerate(ref.decoder_layout(self.cfg)[0]):
            for j in range(self.cfg.num_res_blocks + 1):
                x = self.residual(f"decoder.up_blocks.{i}.resnets.{j}", x)
            if upsampling is not None:
                x = self.up(f"decoder.up_blocks.{i}.upsamplers.0", x, upsampling)
        return self.conv3("decoder.conv_out", F.silu(ref.rms_norm(x, self.p["decoder.norm_out.gamma"])))

    def encode(self, video):
        chunks = [video[:, :, :1]] + [video[:, :, i:i + 4] for i in range(1, video.shape[2], 4)]
        out = torch.cat([self.encoder(chunk) for chunk in chunks], dim=2)
        return F.conv3d(out, self.p["quant_conv.weight"], self.p["quant_conv.bias"]).chunk(2, dim=1)

    def decode(self, z):
        x = F.conv3d(z, self.p["post_quant_conv.weight"], self.p["post_quant_conv.bias"])
        return torch.cat([self.decoder(x[:, :, t:t + 1]) for t in range(x.shape[2])], dim=2).clamp(-1, 1)


# ---------------------------------------------------------------- tests

class LayersTest(unittest.TestCase):
    def test_causal_conv_is_a_sum_of_earlier_frames(self):
        w, b = randn(3, 4, 3, 3, 3, seed=1), randn(3, seed=2)
        for frames in (1, 4):
            x = randn(2, 4, frames, 5, 6, seed=frames)
            got = ref.causal_conv3d(x, w, b, (1, 1, 1))
            self.assertEqual(list(got.shape), [2, 3, frames, 5, 6])
            self.assertLess(max_diff(got, tap_sum_conv(x, w, b, 1)), 1e-12)
        one = ref.causal_conv3d(x[:, :, :1], w, b, (1, 1, 1))  # one frame: only the last tap meets data
        self.assertLess(max_diff(one[:, :, 0], F.conv2d(x[:, :, 0], w[:, :, 2], b, padding=1)), 1e-12)
        wt = randn(4, 4, 3, 1, 1, seed=3)
        self.assertLess(max_diff(ref.causal_conv3d(x, wt, b[:1].repeat(4), (1, 0, 0)),
                                 tap_sum_conv(x, wt, b[:1].repeat(4), 0)), 1e-12)

    def test_rms_norm_by_hand(self):
        x = torch.tensor([3.0, 4.0], dtype=torch.float64).view(1, 2, 1, 1, 1)
        gamma = torch.tensor([1.0, 2.0], dtype=torch.float64).view(2, 1, 1, 1)
        got = ref.rms_norm(x, gamma).flatten().tolist()
        self.assertAlmostEqual(got[0], 3 / 5 * math.sqrt(2), places=14)
        self.assertAlmostEqual(got[1], 4 / 5 * math.sqrt(2) * 2, places=14)
        x, gamma = randn(2, 5, 3, 4, 2, seed=4), 1 + randn(5, 1, 1, 1, seed=5)
        x[1, :, 2, 3, 1] = 0  # a zero vector stays zero (the norm is floored, no division by zero)
        got = ref.rms_norm(x, gamma)
        for b in range(2):
            for t in range(3):
                for i in range(4):
                    for j in range(2):
                        v = x[b, :, t, i, j]
                        norm = max(math.sqrt(sum(e * e for e in v.tolist())), 1e-12)
                        want = v / norm * math.sqrt(5) * gamma.flatten()
                        self.assertLess(max_diff(got[b, :, t, i, j], want), 1e-13)
        low = ref.rms_norm(x.bfloat16(), gamma.bfloat16())  # half precision normalises in fp32
        self.assertEqual(low.dtype, torch.bfloat16)
        self.assertLess(max_diff(low.double(), got), 0.05)

    def test_attention_against_pixel_loops(self):
        model = tiny.tiny_model(dtype=torch.float64)
        name, c = "decoder.mid_block.attentions.0", 32
        p = model.params
        x = randn(2, c, 2, 3, 4, seed=6)
        got = ref.attention_block(p, name, x)
        wq = p[f"{name}.to_qkv.weight"].view(3 * c, c)
        bq = p[f"{name}.to_qkv.bias"]
        wo, bo = p[f"{name}.proj.weight"].view(c, c), p[f"{name}.proj.bias"]
        gamma = p[f"{name}.norm.gamma"].flatten()
        for b in range(2):
            for t in range(2):
                pixels = [x[b, :, t, i, j] for i in range(3) for j in range(4)]
                normed = [v / v.norm() * math.sqrt(c) * gamma for v in pixels]
                q, k, v = zip(*((wq @ n + bq).split(c) for n in normed))
                for index, qi in enumerate(q):
                    scores = torch.stack([qi.dot(kj) / math.sqrt(c) for kj in k])
                    weights = torch.exp(scores - scores.max())
                    mixed = sum(wj * vj for wj, vj in zip(weights / weights.sum(), v))
                    want = pixels[index] + wo @ mixed + bo
                    self.assertLess(max_diff(got[b, :, t, index // 4, index % 4], want), 1e-12)

    def test_downsample_against_windows(self):
        model = tiny.tiny_model(dtype=torch.float64)
        name, p = "encoder.down_blocks.3", model.params
        x = randn(1, 16, 5, 6, 5, seed=7)
        got = ref.downsample(p, name, x, True)
        self.assertEqual(list(got.shape), [1, 16, 3, 3, 2])  # frames 1 + 4 -> 1 + 2; 6 x 5 -> 3 x 2
        w, b = p[f"{name}.resample.1.weight"], p[f"{name}.resample.1.bias"]
        spatial = torch.zeros(1, 16, 5, 3, 2, dtype=torch.float64)
        for t in range(5):
            padded = torch.zeros(16, 7, 6, dtype=torch.float64)
            padded[:, :6, :5] = x[0, :, t]  # one zero row below, one zero column right
            for i in range(3):
                for j in range(2):
                    window = padded[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                    spatial[0, :, t, i, j] = (w * window).sum(dim=(1, 2, 3)) + b
        self.assertLess(max_diff(ref.downsample(p, name, x, False), spatial), 1e-12)
        tw, tb = p[f"{name}.time_conv.weight"][:, :, :, 0, 0], p[f"{name}.time_conv.bias"]
        self.assertLess(max_diff(got[:, :, 0], spatial[:, :, 0]), 1e-12)  # frame 0 as it is
        for m in (1, 2):
            window = spatial[0, :, 2 * m - 2:2 * m + 1]  # frames (0, 1, 2), then (2, 3, 4)
            want = torch.einsum("ock,ckhw->ohw", tw, window) + tb[:, None, None]
            self.assertLess(max_diff(got[0, :, m], want), 1e-12)
        with self.assertRaisesRegex(ref.InputError, "4 frames reach a temporal downsampling"):
            ref.downsample(p, name, x[:, :, :4], True)

    def test_upsample_by_hand(self):
        model = tiny.tiny_model(dtype=torch.float64)
        name, p, c = "decoder.up_blocks.0.upsamplers.0", model.params, 32
        x = randn(1, c, 3, 2, 3, seed=8)
        got = ref.upsample(p, name, x, True)
        self.assertEqual(list(got.shape), [1, c // 2, 5, 4, 6])  # frames 1 + 2 -> 1 + 4
        tw, tb = p[f"{name}.time_conv.weight"][:, :, :, 0, 0], p[f"{name}.time_conv.bias"][:, None, None]
        mixed1 = torch.einsum("oc,chw->ohw", tw[:, :, 2], x[0, :, 1]) + tb  # frame 0 is never seen
        mixed2 = torch.einsum("oc,chw->ohw", tw[:, :, 1], x[0, :, 1]) + torch.einsum(
            "oc,chw->ohw", tw[:, :, 2], x[0, :, 2]) + tb
        frames = [x[0, :, 0], mixed1[:c], mixed1[c:], mixed2[:c], mixed2[c:]]
        w, b = p[f"{name}.resample.1.weight"], p[f"{name}.resample.1.bias"]
        for t, frame in enumerate(frames):
            big = frame.repeat_interleave(2, 1).repeat_interleave(2, 2)
            self.assertLess(max_diff(got[0, :, t], F.conv2d(big[None], w, b, padding=1)[0]), 1e-12)
        self.assertLess(max_diff(ref.upsample(p, name, x[:, :, :1], True), got[:, :, :1]), 1e-12)


class VideoTest(unittest.TestCase):
    def test_whole_sequence_equals_the_published_chunks(self):
        model = tiny.tiny_model(dtype=torch.float64)
        video = torch.tanh(randn(1, 3, 9, 16, 24, seed=9))
        mean, logvar = model.encode(video)
        self.assertEqual(list(mean.shape), [1, 16, 3, 2, 3])
        s_mean, s_logvar = Streaming(model).encode(video)
        self.assertLess(max_diff(mean, s_mean), 1e-12)
        self.assertLess(max_diff(logvar, s_logvar.clamp(-30, 20)), 1e-12)
        z = randn(2, 16, 3, 2, 3, seed=10)
        images = model.decode_raw(z)
        self.assertEqual(list(images.shape), [2, 3, 9, 16, 24])
        self.assertLess(max_diff(images, Streaming(model).decode(z)), 1e-12)

    def test_frames_depend_on_earlier_frames_only(self):
        model = tiny.tiny_model(dtype=torch.float64)
        video = torch.tanh(randn(1, 3, 9, 8, 8, seed=11))
        changed = video.clone()
        changed[:, :, 5:] += 0.5
        before, after = model.encode(video)[0], model.encode(changed)[0]
        self.assertLess(max_diff(before[:, :, :2], after[:, :, :2]), 1e-14)  # latent frame k sees frames <= 4k
        self.assertGreater(max_diff(before[:, :, 2], after[:, :, 2]), 1e-3)
        self.assertLess(max_diff(model.encode(video[:, :, :1])[0], before[:, :, :1]), 1e-14)
        z = randn(1, 16, 3, 1, 1, seed=12)
        moved = z.clone()
        moved[:, :, 2] += 1
        self.assertLess(max_diff(model.decode_raw(z)[:, :, :5], model.decode_raw(moved)[:, :, :5]), 1e-14)
        self.assertGreater(max_diff(model.decode_raw(z)[:, :, 5:], model.decode_raw(moved)[:, :, 5:]), 1e-3)


class ModelTest(unittest.TestCase):
    def test_one_frame_shapes_and_round_trip(self):
        model = tiny.tiny_model()
        for h, w in ((16, 24), (40, 56)):
            images = torch.tanh(randn(2, 3, h, w, seed=h).float())
            mean, logvar = model.encode(images)
            self.assertEqual(list(mean.shape), [2, 16, h // 8, w // 8])
            self.assertEqual(list(logvar.shape), [2, 16, h // 8, w // 8])
            as_video = model.encode(images[:, :, None])
            self.assertTrue(torch.equal(as_video[0][:, :, 0], mean))
            latents = model.normalize(mean)
            decoded = model.decode(latents)
            self.assertEqual(list(decoded.shape), [2, 3, h, w])
            self.assertTrue(torch.isfinite(decoded).all() and torch.isfinite(logvar).all())
            self.assertTrue(decoded.abs().max().item() <= 1.0)
            self.assertLess((decoded.abs() == 1).float().mean().item(), 0.1)  # the tiny weights stay unclamped
            self.assertTrue(0.1 < decoded.std().item() < 1 and 0.1 < latents.std().item() < 3)

    def test_normalisation_by_hand_and_its_inverse(self):
        model = tiny.tiny_model()
        cfg = model.cfg
        self.assertGreater(max(abs(m) for m in cfg.latents_mean), 0.3)
        self.assertGreater(max(cfg.latents_std) - min(cfg.latents_std), 1.0)
        mean = randn(2, 16, 3, 4, seed=13).float()
        latents = model.normalize(mean)
        for c in range(16):
            want = (mean[:, c].double() - cfg.latents_mean[c]) / cfg.latents_std[c]
            self.assertLess(max_diff(latents[:, c].double(), want), 1e-5)
        self.assertLess(max_diff(model.denormalize(latents), mean), 1e-5)
        self.assertTrue(torch.equal(model.decode(latents), model.decode_raw(model.denormalize(latents))))
        self.assertLess(max_diff(model.decode(latents), model.decode_raw(mean)), 1e-5)

    def test_logvar_is_clamped_to_the_posterior_range(self):
        model = tiny.tiny_model()
        images = torch.tanh(randn(1, 3, 8, 8, seed=22).float())
        for shift, bound in ((60.0, 20.0), (-60.0, -30.0)):
            model.params["quant_conv.bias"][16:] += shift
            mean, logvar = model.encode(images)
            model.params["quant_conv.bias"][16:] -= shift
            self.assertTrue(torch.equal(logvar, torch.full_like(logvar, bound)), bound)
            self.assertTrue(torch.equal(mean, model.encode(images)[0]))

    def test_bad_shapes_are_refused(self):
        model = tiny.tiny_model()
        with self.assertRaisesRegex(ref.InputError, "multiples of 8"):
            model.encode(torch.zeros(1, 3, 20, 16))
        with self.assertRaisesRegex(ref.InputError, "3 frames: the encoder takes 1 \\+ 4k"):
            model.encode(torch.zeros(1, 3, 3, 16, 16))
        with self.assertRaisesRegex(ref.InputError, "with 16 channels"):
            model.decode_raw(torch.zeros(1, 4, 2, 2))
        with self.assertRaisesRegex(ref.InputError, "latents \\[1, 4, 2, 2\\] do not have the 16 channels"):
            model.decode(torch.zeros(1, 4, 2, 2))

    def test_gradients_against_finite_differences(self):
        model = tiny.tiny_model(dtype=torch.float64)
        video, z = torch.tanh(randn(1, 3, 5, 16, 16, seed=14)), randn(1, 16, 2, 2, 2, seed=15)
        weights = [randn(1, 16, 2, 2, 2, seed=16), randn(1, 16, 2, 2, 2, seed=17), randn(1, 3, 5, 16, 16, seed=18)]

        def objective():
            mean, logvar = model.encode(video)
            terms = (model.normalize(mean), logvar, model.decode(z))
            return sum((w * t).sum() for w, t in zip(weights, terms))

        names = ["encoder.conv_in.weight", "encoder.down_blocks.5.time_conv.weight", "quant_conv.bias",
                 "encoder.mid_block.attentions.0.to_qkv.weight", "decoder.up_blocks.1.upsamplers.0.time_conv.bias",
                 "decoder.norm_out.gamma"]
        model.requires_grad(names)
        objective().backward()
        g = torch.Generator().manual_seed(19)
        for name in names:
            p = model.params[name]
            i = torch.randint(p.numel(), (1,), generator=g).item()
            flat = p.data.view(-1)
            with torch.no_grad():
                flat[i] += 1e-6
                up = objective().item()
                flat[i] -= 2e-6
                down = objective().item()
                flat[i] += 1e-6
            numeric, analytic = (up - down) / 2e-6, p.grad.view(-1)[i].item()
            self.assertAlmostEqual(analytic, numeric, delta=1e-6 + 1e-5 * abs(numeric), msg=f"{name}[{i}]")
            self.assertGreater(p.grad.abs().max().item(), 0.0, name)


class FolderTest(unittest.TestCase):
    def test_single_sharded_pipeline_and_bf16_folders_load_the_same_weights(self):
        with tempfile.TemporaryDirectory() as d:
            drawn = tiny.write(os.path.join(d, "one"))
            tiny.write(os.path.join(d, "shards"), max_shard_size=300_000)
            make_tiny_qwen_image.write(os.path.join(d, "pipe"), pipeline=True, layers=1)
            tiny.write(os.path.join(d, "pipe"), pipeline=True)
            tiny.write(os.path.join(d, "bf16"), dtype="BF16")
            with open(os.path.join(d, "shards", qwen_image.WEIGHTS_INDEX)) as f:
                self.assertGreater(len(set(json.load(f)["weight_map"].values())), 2)
            with open(os.path.join(d, "pipe", "model_index.json")) as f:
                index = json.load(f)
            self.assertEqual((index["_class_name"], index["vae"], index["transformer"]),
                             ("QwenImagePipeline", ["diffusers", "AutoencoderKLQwenImage"],
                              ["diffusers", "QwenImageTransformer2DModel"]))
            self.assertEqual(qwen_image.load_model(os.path.join(d, "pipe")).cfg.num_layers, 1)
            with open(os.path.join(d, "one", "config.json")) as f:
                config = json.load(f)
            models = {name: ref.load_vae(os.path.join(d, name)) for name in ("one", "shards", "pipe", "bf16")}
        self.assertEqual(config["_class_name"], "AutoencoderKLQwenImage")
        self.assertEqual(models["one"].cfg, models["pipe"].cfg)
        self.assertEqual(len(drawn.params), 146)
        for name, t in drawn.params.items():
            for kind in ("one", "shards", "pipe"):
                self.assertTrue(torch.equal(models[kind].params[name], t), (kind, name))
            self.assertTrue(torch.equal(models["bf16"].params[name], t.bfloat16().float()), name)

    def test_missing_misshaped_and_unknown_tensors_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(d)
            path = os.path.join(d, qwen_image.WEIGHTS_FILE)
            tensors = safetensors_io.load(path)
            name = "decoder.up_blocks.0.upsamplers.0.time_conv.weight"
            tensors[name] = torch.zeros(32, 64, 3, 1, 1)
            safetensors_io.save(path, tensors)
            with self.assertRaisesRegex(ref.ConfigError, rf"{qwen_image.WEIGHTS_FILE}: {name} has shape "
                                                         r"\[32, 64, 3, 1, 1\], the config asks for \[64, 32, 3, 1, 1\]"):
                ref.load_vae(d)
            del tensors[name]
            safetensors_io.save(path, tensors)
            with self.assertRaisesRegex(ref.ConfigError, rf"{qwen_image.WEIGHTS_FILE}: tensor {name} is missing"):
                ref.load_vae(d)
        with tempfile.TemporaryDirectory() as d:
            tiny.write(d)
            path = os.path.join(d, qwen_image.WEIGHTS_FILE)
            tensors = safetensors_io.load(path)
            tensors["encoder.down_blocks.1.time_conv.weight"] = torch.zeros(8, 8, 3, 1, 1)
            safetensors_io.save(path, tensors)
            with self.assertRaisesRegex(ref.ConfigError, "not parameters of AutoencoderKLQwenImage: "
                                                         "encoder.down_blocks.1.time_conv.weight"):
                ref.load_vae(d)

    def test_config_fields_are_checked(self):
        good = tiny.config()
        for change, message in (({"attn_scales": [1.0]}, "attn_scales \\[1.0\\] is not covered"),
                                ({"latents_mean": [0.0] * 15}, "latents_mean must be a list of 16"),
                                ({"latents_std": [1.0] * 15 + [0.0]}, "latents_std must be positive"),
                                ({"temperal_downsample": [True, True]}, "temperal_downsample has 2 entries"),
                                ({"_class_name": "AutoencoderKLWan"}, "_class_name is 'AutoencoderKLWan'"),
                                ({"base_dim": 0}, "base_dim must be a positive integer")):
            with self.assertRaisesRegex(ref.ConfigError, message):
                ref.parse_config(dict(good, **change))
        with self.assertRaisesRegex(ref.ConfigError, "latents_mean is missing"):
            ref.parse_config({k: v for k, v in good.items() if k != "latents_mean"})
        shapes = ref.parameter_shapes(ref.parse_config(PUBLISHED))
        self.assertEqual((len(shapes), sum(math.prod(s) for s in shapes.values())), (194, 126_892_531))
        for name, shape in (("encoder.down_blocks.10.conv2.weight", (384, 384, 3, 3, 3)),
                            ("encoder.down_blocks.5.time_conv.bias", (192,)),
                            ("decoder.up_blocks.0.resnets.2.conv2.bias", (384,)),
                            ("decoder.up_blocks.0.upsamplers.0.time_conv.weight", (768, 384, 3, 1, 1)),
                            ("decoder.up_blocks.1.resnets.0.conv_shortcut.weight", (384, 192, 1, 1, 1)),
                            ("decoder.up_blocks.2.upsamplers.0.resample.1.weight", (96, 192, 3, 3)),
                            ("encoder.mid_block.attentions.0.norm.gamma", (384, 1, 1))):
            self.assertEqual(shapes[name], shape, name)
        self.assertNotIn("encoder.down_blocks.2.time_conv.weight", shapes)  # the first downsampling is 2D
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "model_index.json"), "w") as f:
                f.write("{}")
            with self.assertRaisesRegex(ref.ConfigError, "without vae/config.json"):
                ref.load_vae(d)


class CommandLineTest(unittest.TestCase):
    def run_main(self, *args):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = runner.main(list(args))
        return code, stderr.getvalue()

    def test_encode_and_decode_files(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(os.path.join(d, "m"), pipeline=True)
            images = torch.tanh(randn(2, 3, 16, 24, seed=20)).float()
            noise = randn(2, 16, 2, 3, seed=21).float()
            path, out = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
            safetensors_io.save(path, {"images": images, "noise": noise})
            grads = "encoder.conv_in.weight,encoder.down_blocks.3.time_conv.weight,decoder.conv_out.bias"
            r = subprocess.run([sys.executable, os.path.join(HERE, "run_qwen_image_vae.py"), os.path.join(d, "m"),
                                path, out, "--grads", grads], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            enc = safetensors_io.load(out)
            safetensors_io.save(path, {"latents": enc["latents"]})
            self.assertEqual(self.run_main(os.path.join(d, "m"), path, out, "--decode", "--grads",
                                           "decoder.conv_out.bias"), (0, ""))
            dec = safetensors_io.load(out)
        self.assertEqual({k: list(v.shape) for k, v in enc.items()},
                         {"mean": [2, 16, 2, 3], "logvar": [2, 16, 2, 3], "latents": [2, 16, 2, 3],
                          "sample": [2, 16, 2, 3], "sample_latents": [2, 16, 2, 3],
                          "grad.encoder.conv_in.weight": [8, 3, 3, 3, 3],
                          "grad.encoder.down_blocks.3.time_conv.weight": [16, 16, 3, 1, 1],
                          "grad.decoder.conv_out.bias": [3]})
        self.assertEqual({k: list(v.shape) for k, v in dec.items()},
                         {"images": [2, 3, 16, 24], "grad.decoder.conv_out.bias": [3]})
        model = tiny.tiny_model()
        model.requires_grad(["encoder.conv_in.weight"])
        mean, logvar = model.encode(images)
        latents = model.normalize(mean)
        sample = mean + torch.exp(0.5 * logvar) * noise
        (mean.sum() + logvar.sum() + latents.sum() + sample.sum() + model.normalize(sample).sum()).backward()
        self.assertLess(max_diff(enc["latents"], latents), 1e-6)
        self.assertLess(max_diff(enc["sample_latents"], model.normalize(sample)), 1e-6)
        self.assertGreater(max_diff(enc["sample"], enc["mean"]), 1e-3)
        self.assertEqual(enc["grad.encoder.down_blocks.3.time_conv.weight"].abs().max().item(), 0.0)  # one frame
        self.assertEqual(enc["grad.decoder.conv_out.bias"].abs().max().item(), 0.0)
        want = model.params["encoder.conv_in.weight"].grad
        self.assertLess(max_diff(enc["grad.encoder.conv_in.weight"], want), 1e-4 * want.abs().max().item())
        self.assertGreater(want.abs().max().item(), 1.0)
        self.assertLess(max_diff(dec["images"], model.decode(enc["latents"])), 1e-6)
        unclamped = (dec["images"].abs() < 1).sum(dim=(0, 2, 3)).float()
        self.assertTrue(torch.equal(dec["grad.decoder.conv_out.bias"], unclamped))

    def test_bad_inputs_exit_1_naming_them(self):
        with tempfile.TemporaryDirectory() as d:
            tiny.write(os.path.join(d, "m"))
            path, out = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
            safetensors_io.save(path, {"images": torch.zeros(1, 3, 16, 16)})
            code, err = self.run_main(os.path.join(d, "m"), path, out, "--grads", "encoder.nope")
            self.assertEqual((code, "--grads: not parameters of AutoencoderKLQwenImage: encoder.nope" in err),
                             (1, True), err)
            code, err = self.run_main(os.path.join(d, "m"), path, out, "--decode")
            self.assertEqual((code, "unknown tensors ['images']" in err), (1, True), err)
            safetensors_io.save(path, {"images": torch.zeros(1, 3, 16, 20)})
            code, err = self.run_main(os.path.join(d, "m"), path, out)
            self.assertEqual((code, "both sides must be multiples of 8" in err), (1, True), err)
            safetensors_io.save(path, {"images": torch.zeros(1, 3, 16, 16), "noise": torch.zeros(1, 16, 3, 2)})
            code, err = self.run_main(os.path.join(d, "m"), path, out)
            self.assertEqual((code, "noise [1, 16, 3, 2] must be shaped as the latents" in err), (1, True), err)
            safetensors_io.save(path, {"latents": torch.zeros(1, 16, 2, 2, dtype=torch.int32)})
            code, err = self.run_main(os.path.join(d, "m"), path, out, "--decode")
            self.assertEqual((code, "latents must be floating point" in err), (1, True), err)
            code, err = self.run_main(os.path.join(d, "nowhere"), path, out)
            self.assertEqual((code, "nowhere: neither config.json" in err), (1, True), err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
