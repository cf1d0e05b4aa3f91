"""Pillow's resize of deterministic noise images, the reference for AntialiasedResize's test.

Writes PNGs into the folder given: in_<name>.png and, per filter, out_<name>_<filter>.png. The
images are noise (every tap of the filter matters) at sizes whose ratios are neither whole nor
simple, both down and up, as the Wan pipelines resize a request's image (Lanczos for the VAE
condition, bicubic inside CLIP's processor).
"""
import os
import sys

import numpy as np
from PIL import Image

CASES = {
    # name: (input width, input height, output width, output height)
    "down": (97, 61, 40, 24),
    "up": (37, 23, 64, 48),
    "mixed": (50, 90, 72, 33),
}
FILTERS = {"lanczos": Image.LANCZOS, "bicubic": Image.BICUBIC}


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(12)
    for name, (w, h, ow, oh) in CASES.items():
        pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        image = Image.fromarray(pixels, "RGB")
        image.save(os.path.join(out, f"in_{name}.png"))
        for fname, f in FILTERS.items():
            image.resize((ow, oh), resample=f).save(os.path.join(out, f"out_{name}_{fname}.png"))
    print("Pillow", Image.__version__ if hasattr(Image, "__version__") else "?", "wrote", out)


if __name__ == "__main__":
    main(sys.argv[1])
