#pragma once

#include "core/image/Image.h"

#include <cstddef>
#include <cstdint>

namespace parallax {

// The Orientation tag (0x0112) of IFD0 of an EXIF block: a TIFF structure, with or without the
// "Exif\0\0" prefix JPEG's APP1 segment puts before it. 1 when the block or the tag is absent,
// unreadable, or outside 1 to 8. Every offset is checked against `size`.
int exifOrientation(const uint8_t* data, size_t size);

// The orientation an XMP packet gives (tiff:Orientation="N" or <tiff:Orientation>N<), which PIL
// uses where EXIF has none; 1 when it gives none or one outside 1 to 8.
int xmpOrientation(const uint8_t* data, size_t size);

// Orientations 5 to 8 turn the image a quarter: its width and height swap.
inline bool orientationSwapsSides(int orientation) { return orientation >= 5 && orientation <= 8; }

// The pixels as EXIF orientation `orientation` says they are shown, as PIL's
// ImageOps.exif_transpose turns them: 2 mirror left-right, 3 turn 180 degrees, 4 mirror top-bottom,
// 5 transpose, 6 turn 90 degrees clockwise, 7 transverse, 8 turn 90 degrees anticlockwise.
// Orientation 1 (or any other value) returns the pixels as they are.
template <class Sample>
Pixels<Sample> orientPixels(Pixels<Sample> pixels, int orientation);

} // namespace parallax
