#!/usr/bin/python3
"""Qwen2-VL / Qwen2.5-VL image preprocessing as the published image processor (Qwen2VLImageProcessor, PIL
backend) does it, written from its mathematics:

  smart resize  both sides to multiples of patch x merge (28), the area within [min_pixels, max_pixels], the aspect
                kept as near as can be
  resize        Pillow's bicubic (Pillow itself), on the 8-bit RGB image
  rescale       x * (1/255) computed in float64, then float32
  normalize     (x - mean) / std in float32, CLIP's mean and std
  patches       one image is repeated to fill the temporal patch (2 frames); rows are (frame, merged row, merged
                column, row within the unit, column within the unit), each row the values (channel, frame,
                y, x) of one 14 x 14 patch: 3 x 2 x 14 x 14 = 1176 values
  grid_thw      (frames / temporal patch, height / 14, width / 14)

The torchvision backend of newer transformers resizes on tensors and fuses rescale and normalize; its
pixels differ from these by resize rounding. Compare against the PIL backend.

  image_processor.py IMAGE... -o OUT.safetensors [--min-pixels N] [--max-pixels N]
      writes pixel_values (F32) and image_grid_thw (I64) of the images in order, as one batch.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
from PIL import Image, ImageOps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 1280


def smart_resize(height, width, factor=28, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS):
    """(height, width), both multiples of factor (at least one factor), area within [min_pixels, max_pixels].

    As current releases define it: images under 28 pixels on a side are enlarged (older releases refused
    them), and a side scaled down never falls below one factor."""
    if height < 1 or width < 1:
        raise ValueError(f"an image of {width}x{height} has no pixels")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"an image of {width}x{height} has an aspect ratio above 200")
    h = round(height / factor) * factor
    w = round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def to_rgb(image):
    """RGB as the processor converts images it is handed: transparency composited over white."""
    if image.mode == "RGB":
        return image
    rgba = image.convert("RGBA")
    return Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255)), rgba).convert("RGB")


def load_image(path):
    """An image file as the published loader opens one: EXIF orientation applied, then plain RGB."""
    with Image.open(path) as image:
        return ImageOps.exif_transpose(image).convert("RGB")


def normalized(image, height, width, mean=CLIP_MEAN, std=CLIP_STD):
    """(C, H, W) float32: resized with Pillow's bicubic, rescaled, normalized."""
    resized = np.asarray(to_rgb(image).resize((width, height), resample=Image.BICUBIC, reducing_gap=None))
    scaled = (resized.astype(np.float64) * (1 / 255)).astype(np.float32)
    out = (scaled - np.array(mean, dtype=np.float32)) / np.array(std, dtype=np.float32)
    return out.transpose(2, 0, 1)


def patchify(frames, patch=14, temporal=2, merge=2):
    """(T, C, H, W) -> (rows, C * temporal * patch * patch), (grid_t, grid_h, grid_w)."""
    if frames.shape[0] % temporal:
        frames = np.concatenate([frames] + [frames[-1:]] * (temporal - frames.shape[0] % temporal))
    t, c, height, width = frames.shape
    gt, gh, gw = t // temporal, height // patch, width // patch
    x = frames.reshape(gt, temporal, c, gh // merge, merge, patch, gw // merge, merge, patch)
    # axes: 0 frame group, 1 frame, 2 channel, 3 merged row, 4 row in unit, 5 y, 6 merged col, 7 col in unit, 8 x
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, c * temporal * patch * patch), (gt, gh, gw)


def unpatchify(rows, grid, channels=3, patch=14, temporal=2, merge=2):
    """The inverse of patchify: (rows, values) and (t, h, w) -> (t * temporal, C, h * patch, w * patch)."""
    gt, gh, gw = grid
    x = np.asarray(rows).reshape(gt, gh // merge, gw // merge, merge, merge, channels, temporal, patch, patch)
    # back to: frame group, frame, channel, merged row, row in unit, y, merged col, col in unit, x
    x = x.transpose(0, 6, 5, 1, 3, 7, 2, 4, 8)
    return x.reshape(gt * temporal, channels, gh * patch, gw * patch)


def preprocess_image(image, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch=14, temporal=2, merge=2):
    """One PIL image -> (rows (N, 1176) float32, (t, h, w))."""
    height, width = smart_resize(image.height, image.width, patch * merge, min_pixels, max_pixels)
    frames = normalized(image, height, width)[None]
    return patchify(frames, patch, temporal, merge)


def preprocess(images, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS):
    """A batch of PIL images -> pixel_values (float32 tensor), image_grid_thw (int64 tensor), in order."""
    rows, grids = [], []
    for image in images:
        r, g = preprocess_image(image, min_pixels, max_pixels)
        rows.append(r)
        grids.append(g)
    return torch.from_numpy(np.concatenate(rows)), torch.tensor(grids, dtype=torch.int64)


def expand_image_pads(ids, grid_thw, image_token_id, merge=2):
    """Token ids with one <|image_pad|> per image -> one per merged unit (t*h*w / merge^2), as the processor
    expands the text; images are taken in order across the whole list of samples."""
    grids, image, out = grid_thw.tolist(), 0, []
    for sample in ids:
        expanded = []
        for token in sample:
            if token == image_token_id:
                if image >= len(grids):
                    raise ValueError(f"more <|image_pad|> tokens than the {len(grids)} images")
                t, h, w = grids[image]
                expanded.extend([image_token_id] * (t * h * w // merge ** 2))
                image += 1
            else:
                expanded.append(token)
        out.append(expanded)
    if image != len(grids):
        raise ValueError(f"{len(grids)} images but {image} <|image_pad|> tokens")
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("images", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--min-pixels", type=int, default=MIN_PIXELS)
    parser.add_argument("--max-pixels", type=int, default=MAX_PIXELS)
    args = parser.parse_args(argv)
    images = []
    for path in args.images:
        try:
            images.append(load_image(path))
            smart_resize(images[-1].height, images[-1].width, 28, args.min_pixels, args.max_pixels)
        except (OSError, ValueError) as e:
            sys.stderr.write(f"image_processor: {path}: {e}\n")
            return 1
    pixels, grid = preprocess(images, args.min_pixels, args.max_pixels)
    safetensors_io.save(args.output, {"pixel_values": pixels, "image_grid_thw": grid})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
