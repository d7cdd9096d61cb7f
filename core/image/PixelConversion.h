#pragma once

#include "core/image/Image.h"
#include "core/image/RawImage.h"

namespace parallax {

// A decoder's samples as 8-bit RGB, as PIL's convert("RGB") makes them: gray repeated in R, G and
// B; 16-bit samples cut to their high byte; alpha dropped or composited over white (AlphaMode);
// Adobe-inverted CMYK as R = K' - round((255 - C') * K' / 255) of the stored C' and K'.
Image toRgb8(const RawImage& raw, AlphaMode alpha);

// A 16-bit decoder output (raw.bits == 16) as 16-bit RGB, alpha as for toRgb8 on the 0..65535 scale.
Image16 toRgb16(const RawImage& raw, AlphaMode alpha);

} // namespace parallax
