#include "core/image/ImageDecoder.h"

#include "core/image/ExifOrientation.h"
#include "core/image/ImageError.h"
#include "core/image/PixelConversion.h"
#include "core/image/RawImage.h"
#include "core/util/Files.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace parallax {

void checkDeclaredSize(uint64_t width, uint64_t height, const DecodeOptions& options, const std::string& file,
                       ImageFormat format) {
    const std::string sides = std::to_string(width) + " x " + std::to_string(height);
    if (width == 0 || height == 0)
        throw ImageError(file, std::string("corrupt ") + imageFormatName(format) + " (it declares " + sides + " pixels)");
    // Both sides fit in 32 bits in every format read, so the product cannot overflow.
    const uint64_t pixels = width * height;
    if (pixels > options.maxPixels)
        throw ImageError(file, std::string(imageFormatName(format)) + " of " + sides + " = " + std::to_string(pixels) +
                                   " pixels, more than the " + std::to_string(options.maxPixels) +
                                   " an image may have (a decompression bomb, or a picture to scale down before "
                                   "training)");
}

namespace {

RawImage decodeRaw(ImageFormat format, const uint8_t* data, size_t size, const std::string& file,
                   const DecodeOptions& options, ImageInfo& info) {
    switch (format) {
    case ImageFormat::Jpeg: return decodeJpeg(data, size, file, options, info);
    case ImageFormat::Png: return decodePng(data, size, file, options, info);
    case ImageFormat::Webp: return decodeWebp(data, size, file, options, info);
    }
    throw ImageError(file, "unknown image format");
}

void setShownSides(ImageInfo& info) {
    const bool swap = orientationSwapsSides(info.orientation);
    info.width = swap ? info.storedHeight : info.storedWidth;
    info.height = swap ? info.storedWidth : info.storedHeight;
}

} // namespace

DecodedImage decodeImage(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options) {
    const ImageFormat format = sniffImageFormat(data, size, file);
    DecodedImage out;
    RawImage raw = decodeRaw(format, data, size, file, options, out.info);
    setShownSides(out.info);
    if (raw.bits == 8 && raw.layout == SampleLayout::Rgb) {
        out.rgb.width = raw.width;
        out.rgb.height = raw.height;
        out.rgb.channels = 3;
        out.rgb.samples = std::move(raw.samples8);
    } else {
        out.rgb = toRgb8(raw, options.alpha);
    }
    out.rgb = orientPixels(std::move(out.rgb), out.info.orientation);
    if (raw.bits == 16 && options.keep16) out.rgb16 = orientPixels(toRgb16(raw, options.alpha), out.info.orientation);
    return out;
}

ImageInfo readImageInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options) {
    ImageInfo info;
    switch (sniffImageFormat(data, size, file)) {
    case ImageFormat::Jpeg: info = jpegInfo(data, size, file, options); break;
    case ImageFormat::Png: info = pngInfo(data, size, file, options); break;
    case ImageFormat::Webp: info = webpInfo(data, size, file, options); break;
    }
    setShownSides(info);
    return info;
}

std::vector<uint8_t> readImageBytes(const std::string& path) {
    // O_NONBLOCK: a FIFO named like an image must not block the open (it is refused below).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw ImageError(path, err == ENOENT ? std::string("no such file") : "cannot be opened (" + errnoText(err) + ")");
    }
    struct stat st {};
    std::vector<uint8_t> bytes;
    std::string problem;
    if (::fstat(fd, &st) != 0) problem = "cannot be read (" + errnoText(errno) + ")";
    else if (!S_ISREG(st.st_mode)) problem = S_ISDIR(st.st_mode) ? "a folder, not an image file" : "not a regular file";
    else if (uint64_t(st.st_size) > kMaxImageFileBytes)
        problem = "the file has " + std::to_string(st.st_size) + " bytes, more than the " +
                  std::to_string(kMaxImageFileBytes) + " an image file may have";
    if (problem.empty()) {
        bytes.resize(static_cast<size_t>(st.st_size));
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                problem = "cannot be read (" + errnoText(errno) + ")";
                break;
            }
            if (n == 0) {
                bytes.resize(done); // shrank while read: what is there is decoded, and judged
                break;
            }
            done += static_cast<size_t>(n);
        }
    }
    ::close(fd);
    if (!problem.empty()) throw ImageError(path, problem);
    return bytes;
}

DecodedImage decodeImageFile(const std::string& path, const DecodeOptions& options) {
    const std::vector<uint8_t> bytes = readImageBytes(path);
    return decodeImage(bytes.data(), bytes.size(), path, options);
}

ImageInfo readImageInfoFile(const std::string& path, const DecodeOptions& options) {
    const std::vector<uint8_t> bytes = readImageBytes(path);
    return readImageInfo(bytes.data(), bytes.size(), path, options);
}

} // namespace parallax
