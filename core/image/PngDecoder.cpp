// PNG through libpng. Its errors longjmp back to the setjmp in each call into it (the frames
// between hold nothing with a destructor); the file is read from memory by a callback that
// names truncation.
#include "core/image/ExifOrientation.h"
#include "core/image/ImageError.h"
#include "core/image/RawImage.h"

#include <cstdio>
#include <cstring>

#include <png.h>

namespace parallax {

namespace {

struct PngInput {
    const uint8_t* data = nullptr;
    size_t size = 0;
    size_t at = 0;
    bool truncated = false;
    char problem[256] = {};
};

void onPngError(png_structp png, png_const_charp message) {
    auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
    if (in->truncated)
        std::snprintf(in->problem, sizeof in->problem, "truncated PNG (the file ends after %zu bytes, inside a chunk)",
                      in->size);
    else
        std::snprintf(in->problem, sizeof in->problem, "corrupt PNG (%s)", message);
    png_longjmp(png, 1);
}

void onPngWarning(png_structp, png_const_charp) {}

void onPngRead(png_structp png, png_bytep out, size_t length) {
    auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
    if (length > in->size - in->at) {
        in->truncated = true;
        png_error(png, "premature end of file");
    }
    std::memcpy(out, in->data + in->at, length);
    in->at += length;
}

bool littleEndianHost() {
    const uint16_t one = 1;
    uint8_t first = 0;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

uint32_t bigEndian32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The orientation of the first eXIf chunk (PIL reads it before or after the image data); without
// one, that of an uncompressed XMP packet in iTXt. Walks the chunks with every length checked.
int pngOrientation(const uint8_t* data, size_t size) {
    static const char kXmpKey[] = "XML:com.adobe.xmp";
    int xmp = 1;
    for (size_t at = 8; at <= size && size - at >= 12;) {
        const uint32_t length = bigEndian32(data + at);
        const uint8_t* type = data + at + 4;
        const uint8_t* body = data + at + 8;
        if (length > size - at - 12) break;
        if (std::memcmp(type, "eXIf", 4) == 0) return exifOrientation(body, length);
        // iTXt: keyword, 0, compression flag, method, language, 0, translated keyword, 0, text.
        if (xmp == 1 && std::memcmp(type, "iTXt", 4) == 0 && length > sizeof kXmpKey + 1 &&
            std::memcmp(body, kXmpKey, sizeof kXmpKey) == 0 && body[sizeof kXmpKey] == 0)
            xmp = xmpOrientation(body + sizeof kXmpKey + 2, length - sizeof kXmpKey - 2);
        if (std::memcmp(type, "IEND", 4) == 0) break;
        at += size_t(length) + 12;
    }
    return xmp;
}

class PngReader {
public:
    PngReader(const uint8_t* data, size_t size, const std::string& file) : m_file(file) {
        m_input.data = data;
        m_input.size = size;
        m_png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &m_input, onPngError, onPngWarning);
        if (m_png) m_info = png_create_info_struct(m_png);
        if (!m_png || !m_info) {
            png_destroy_read_struct(m_png ? &m_png : nullptr, nullptr, nullptr);
            throw ImageError(m_file, "out of memory starting the PNG decoder");
        }
        png_set_read_fn(m_png, &m_input, onPngRead);
        // The pixel limit (checkDeclaredSize) is the one that counts; libpng's own would refuse
        // with a message of its own first.
        png_set_user_limits(m_png, 0x7fffffff, 0x7fffffff);
    }
    ~PngReader() { png_destroy_read_struct(&m_png, &m_info, nullptr); }
    PngReader(const PngReader&) = delete;
    PngReader& operator=(const PngReader&) = delete;

    void readHeader() {
        if (!guardedHeader()) throw ImageError(m_file, m_input.problem);
        width = png_get_image_width(m_png, m_info);
        height = png_get_image_height(m_png, m_info);
        bitDepth = png_get_bit_depth(m_png, m_info);
        colourType = png_get_color_type(m_png, m_info);
        transparency = png_get_valid(m_png, m_info, PNG_INFO_tRNS) != 0;
    }
    // Asks libpng for 8-bit samples (or 16-bit, native byte order) and the layout.
    SampleLayout configure(bool keep16, bool keepAlpha, int& bits) {
        const bool hasAlpha = (colourType & PNG_COLOR_MASK_ALPHA) != 0 || transparency;
        const bool gray = (colourType & PNG_COLOR_MASK_COLOR) == 0;
        bits = bitDepth == 16 && keep16 ? 16 : 8;
        const bool alpha = hasAlpha && keepAlpha;
        if (!guardedConfigure(bits == 16, alpha)) throw ImageError(m_file, m_input.problem);
        const SampleLayout layout = gray ? (alpha ? SampleLayout::GrayAlpha : SampleLayout::Gray)
                                         : (alpha ? SampleLayout::Rgba : SampleLayout::Rgb);
        if (png_get_channels(m_png, m_info) != layoutChannels(layout) || png_get_bit_depth(m_png, m_info) != bits ||
            png_get_rowbytes(m_png, m_info) != size_t(width) * size_t(layoutChannels(layout)) * size_t(bits / 8))
            throw ImageError(m_file, "corrupt PNG (an unexpected row layout after conversion)");
        return layout;
    }
    void readRows(png_bytep* rows) {
        if (!guardedRows(rows)) throw ImageError(m_file, m_input.problem);
    }

    uint32_t width = 0, height = 0;
    int bitDepth = 0, colourType = 0;
    bool transparency = false;

private:
    bool guardedHeader() {
        if (setjmp(png_jmpbuf(m_png))) return false;
        png_read_info(m_png, m_info);
        return true;
    }
    bool guardedConfigure(bool sixteen, bool alpha) {
        if (setjmp(png_jmpbuf(m_png))) return false;
        if (colourType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(m_png);
        if (colourType == PNG_COLOR_TYPE_GRAY && bitDepth < 8) png_set_expand_gray_1_2_4_to_8(m_png);
        if (alpha && transparency) png_set_tRNS_to_alpha(m_png);
        if (!alpha) png_set_strip_alpha(m_png);
        // libpng's strip keeps the high byte, as PIL reads 16-bit colour ("RGB;16B").
        if (bitDepth == 16 && !sixteen) png_set_strip_16(m_png);
        if (sixteen && littleEndianHost()) png_set_swap(m_png); // PNG's are big-endian
        png_set_interlace_handling(m_png);
        png_read_update_info(m_png, m_info);
        return true;
    }
    bool guardedRows(png_bytep* rows) {
        if (setjmp(png_jmpbuf(m_png))) return false;
        png_read_image(m_png, rows);
        png_read_end(m_png, nullptr);
        return true;
    }

    const std::string& m_file;
    PngInput m_input;
    png_structp m_png = nullptr;
    png_infop m_info = nullptr;
};

ImageInfo headerInfo(const PngReader& reader, const uint8_t* data, size_t size, const std::string& file,
                     const DecodeOptions& options) {
    checkDeclaredSize(reader.width, reader.height, options, file, ImageFormat::Png);
    ImageInfo info;
    info.format = ImageFormat::Png;
    info.storedWidth = static_cast<int>(reader.width);
    info.storedHeight = static_cast<int>(reader.height);
    info.bitDepth = reader.bitDepth == 16 ? 16 : 8;
    info.alpha = (reader.colourType & PNG_COLOR_MASK_ALPHA) != 0 || reader.transparency;
    const bool colour = (reader.colourType & PNG_COLOR_MASK_COLOR) != 0;
    info.storedChannels = (colour ? 3 : 1) + (info.alpha ? 1 : 0);
    info.orientation = pngOrientation(data, size);
    return info;
}

} // namespace

ImageInfo pngInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options) {
    PngReader reader(data, size, file);
    reader.readHeader();
    return headerInfo(reader, data, size, file, options);
}

RawImage decodePng(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                   ImageInfo& info) {
    PngReader reader(data, size, file);
    reader.readHeader();
    info = headerInfo(reader, data, size, file, options);
    RawImage raw;
    raw.width = static_cast<int>(reader.width);
    raw.height = static_cast<int>(reader.height);
    raw.layout = reader.configure(options.keep16, options.alpha == AlphaMode::OverWhite, raw.bits);
    const size_t rowSamples = size_t(raw.width) * size_t(layoutChannels(raw.layout));
    std::vector<png_bytep> rows(static_cast<size_t>(raw.height));
    if (raw.bits == 16) {
        raw.samples16.resize(rowSamples * rows.size());
        for (size_t y = 0; y < rows.size(); ++y) rows[y] = reinterpret_cast<png_bytep>(raw.samples16.data() + y * rowSamples);
    } else {
        raw.samples8.resize(rowSamples * rows.size());
        for (size_t y = 0; y < rows.size(); ++y) rows[y] = raw.samples8.data() + y * rowSamples;
    }
    reader.readRows(rows.data());
    return raw;
}

} // namespace parallax
