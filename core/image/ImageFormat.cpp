#include "core/image/ImageFormat.h"

#include "core/image/ImageError.h"

#include <cstring>

namespace parallax {

const char* imageFormatName(ImageFormat format) {
    switch (format) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Webp: return "WebP";
    }
    return "?";
}

namespace {

bool startsWith(const uint8_t* data, size_t size, const char* magic, size_t length, size_t at = 0) {
    return size >= at + length && std::memcmp(data + at, magic, length) == 0;
}

// Formats people meet that are not read, by their signatures.
const char* knownOtherFormat(const uint8_t* d, size_t n) {
    if (startsWith(d, n, "GIF87a", 6) || startsWith(d, n, "GIF89a", 6)) return "GIF";
    if (startsWith(d, n, "BM", 2)) return "BMP";
    if (startsWith(d, n, "II*\0", 4) || startsWith(d, n, "MM\0*", 4)) return "TIFF";
    if (startsWith(d, n, "\0\0\0\x0CjP  \r\n\x87\n", 12) || startsWith(d, n, "\xFF\x4F\xFF\x51", 4)) return "JPEG 2000";
    if (startsWith(d, n, "\xFF\x0A", 2)) return "JPEG XL";
    if (startsWith(d, n, "ftyp", 4, 4)) {
        if (startsWith(d, n, "avif", 4, 8) || startsWith(d, n, "avis", 4, 8)) return "AVIF";
        if (startsWith(d, n, "hei", 3, 8) || startsWith(d, n, "hev", 3, 8) || startsWith(d, n, "mif1", 4, 8) ||
            startsWith(d, n, "msf1", 4, 8))
            return "HEIF/HEIC";
        return "an ISO media file (MP4, MOV, HEIF)";
    }
    if (startsWith(d, n, "\0\0\1\0", 4)) return "ICO";
    if (startsWith(d, n, "8BPS", 4)) return "Photoshop (PSD)";
    if (startsWith(d, n, "%PDF", 4)) return "PDF";
    if (startsWith(d, n, "RIFF", 4)) return "a RIFF file that is not WebP";
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return "PNM (PGM/PPM/PBM/PAM)";
    return nullptr;
}

bool looksLikeText(const uint8_t* d, size_t n) {
    const size_t look = n < 512 ? n : 512;
    for (size_t i = 0; i < look; ++i) {
        const uint8_t c = d[i];
        if (c < 0x09 || (c > 0x0D && c < 0x20) || c == 0x7F) return false;
    }
    return look > 0;
}

std::string firstBytes(const uint8_t* d, size_t n) {
    static const char* hex = "0123456789abcdef";
    std::string text;
    for (size_t i = 0; i < n && i < 8; ++i) {
        if (i) text += ' ';
        text += hex[d[i] >> 4];
        text += hex[d[i] & 15];
    }
    return text;
}

} // namespace

ImageFormat sniffImageFormat(const uint8_t* data, size_t size, const std::string& file) {
    if (size == 0) throw ImageError(file, "empty file (0 bytes), not an image");
    if (startsWith(data, size, "\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
    if (startsWith(data, size, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::Png;
    if (startsWith(data, size, "RIFF", 4) && startsWith(data, size, "WEBP", 4, 8)) return ImageFormat::Webp;
    const std::string supported = "only JPEG, PNG and WebP images are read; convert it to one of them";
    if (const char* other = knownOtherFormat(data, size))
        throw ImageError(file, std::string(other) + " is not a supported image format (" + supported + ")");
    if (looksLikeText(data, size)) throw ImageError(file, "a text file, not an image (" + supported + ")");
    throw ImageError(file, "not a JPEG, PNG or WebP image (it starts with bytes " + firstBytes(data, size) + ")");
}

} // namespace parallax
