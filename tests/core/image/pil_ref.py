#!/usr/bin/env python3
"""Pillow as the image tests' oracle: images loaded as the Hugging Face image processors load them
(PIL.Image.open, ImageOps.exif_transpose, convert("RGB")), resized with Image.resize(...,
Image.BICUBIC), normalized with their float32 arithmetic, and Qwen2-VL's smart_resize rule written
from its published definition. Each command writes raw samples to OUT and prints the sides.

  pil_ref.py decode IN OUT [white]          8-bit RGB; white: alpha composited over white
  pil_ref.py resize IN OUT WIDTH HEIGHT     decoded as above, then resized
  pil_ref.py resize-raw IN W H CHANNELS OUT WIDTH HEIGHT    raw 8-bit samples (1 or 3 channels)
  pil_ref.py lanczos-raw IN W H CHANNELS OUT WIDTH HEIGHT   the same with Image.LANCZOS
  pil_ref.py normalize IN W H OUT           raw RGB to float32 (little-endian), channels first, CLIP
  pil_ref.py smart-resize IN                lines "HEIGHT WIDTH FACTOR MIN_PIXELS MAX_PIXELS":
                                            prints "HEIGHT WIDTH" (or "error") for each
  pil_ref.py batch IN                       each line of IN one of the commands above, its arguments
                                            separated by tabs (one Python start for many images)
"""

import math
import struct
import sys

from PIL import Image, ImageOps

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def load(path, white=False):
    image = ImageOps.exif_transpose(Image.open(path))
    if not white:
        return image.convert("RGB")
    rgba = image.convert("RGBA")
    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.split()[3])
    return background


def write(image, out):
    with open(out, "wb") as f:
        f.write(image.tobytes())
    print(image.size[0], image.size[1])


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def normalize(raw, width, height, out):
    # transformers' rescale: float64 multiply, cast to float32; normalize: float32 (x - mean) / std.
    plane = width * height
    values = []
    for c in range(3):
        mean, std = f32(CLIP_MEAN[c]), f32(CLIP_STD[c])
        for i in range(plane):
            scaled = f32(raw[i * 3 + c] * (1 / 255))
            values.append(f32(f32(scaled - mean) / std))
    with open(out, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def smart_resize(height, width, factor, min_pixels, max_pixels):
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect ratio above 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def main(argv):
    command = argv[1]
    if command == "decode":
        write(load(argv[2], len(argv) > 4 and argv[4] == "white"), argv[3])
    elif command == "resize":
        write(load(argv[2]).resize((int(argv[4]), int(argv[5])), Image.BICUBIC), argv[3])
    elif command in ("resize-raw", "lanczos-raw"):
        width, height, channels = int(argv[3]), int(argv[4]), int(argv[5])
        with open(argv[2], "rb") as f:
            image = Image.frombytes("L" if channels == 1 else "RGB", (width, height), f.read())
        resample = Image.LANCZOS if command == "lanczos-raw" else Image.BICUBIC
        write(image.resize((int(argv[7]), int(argv[8])), resample), argv[6])
    elif command == "normalize":
        with open(argv[2], "rb") as f:
            normalize(f.read(), int(argv[3]), int(argv[4]), argv[5])
    elif command == "smart-resize":
        with open(argv[2]) as f:
            for line in f:
                try:
                    print(*smart_resize(*(int(a) for a in line.split())))
                except ValueError:
                    print("error")
    elif command == "batch":
        with open(argv[2]) as f:
            for line in f:
                main([argv[0]] + line.rstrip("\n").split("\t"))
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main(sys.argv)
