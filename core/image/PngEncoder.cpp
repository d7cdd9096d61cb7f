// PNG through libpng. Its errors longjmp back to the setjmp in encodePng (the frames between hold
// nothing with a destructor); the bytes go to a vector through a write callback.
#include "core/image/PngEncoder.h"

#include "core/image/ImageError.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <png.h>

namespace parallax {

namespace {

struct PngOutput {
    std::vector<uint8_t> bytes;
    char problem[256] = {};
};

void onPngError(png_structp png, png_const_charp message) {
    auto* out = static_cast<PngOutput*>(png_get_error_ptr(png));
    std::snprintf(out->problem, sizeof out->problem, "libpng cannot encode it (%s)", message);
    png_longjmp(png, 1);
}

void onPngWarning(png_structp, png_const_charp) {}

void onPngWrite(png_structp png, png_bytep data, size_t length) {
    auto* out = static_cast<PngOutput*>(png_get_io_ptr(png));
    out->bytes.insert(out->bytes.end(), data, data + length);
}

void onPngFlush(png_structp) {}

} // namespace

std::vector<uint8_t> encodePng(const Image& rgb, const std::string& what) {
    if (rgb.width <= 0 || rgb.height <= 0 || rgb.channels != 3)
        throw ImageError(what, "cannot encode a " + std::to_string(rgb.width) + " x " + std::to_string(rgb.height) +
                                   " image of " + std::to_string(rgb.channels) + " channels as PNG (RGB, 3 channels)");
    if (rgb.samples.size() != rgb.rowSamples() * static_cast<size_t>(rgb.height))
        throw ImageError(what, "its " + std::to_string(rgb.samples.size()) + " samples do not fill " +
                                   std::to_string(rgb.width) + " x " + std::to_string(rgb.height) + " x 3");
    PngOutput out;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &out, onPngError, onPngWarning);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info) {
        png_destroy_write_struct(&png, nullptr);
        throw ImageError(what, "libpng could not start (out of memory)");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        throw ImageError(what, out.problem);
    }
    png_set_write_fn(png, &out, onPngWrite, onPngFlush);
    png_set_IHDR(png, info, static_cast<png_uint_32>(rgb.width), static_cast<png_uint_32>(rgb.height), 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < rgb.height; ++y) png_write_row(png, const_cast<png_bytep>(rgb.row(y)));
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return std::move(out.bytes);
}

void writePngFile(const Image& rgb, const std::string& path) {
    const std::vector<uint8_t> bytes = encodePng(rgb, path);
    const std::string partial = path + ".partial";
    {
        std::ofstream file(partial, std::ios::binary | std::ios::trunc);
        file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        file.close();
        if (!file) {
            std::error_code ignored;
            std::filesystem::remove(partial, ignored);
            throw ImageError(path, "cannot write " + partial + " (is the folder there and writable, the disk full?)");
        }
    }
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    if (error) {
        std::filesystem::remove(partial, error);
        throw ImageError(path, "cannot move " + partial + " over it: " + error.message());
    }
}

} // namespace parallax
