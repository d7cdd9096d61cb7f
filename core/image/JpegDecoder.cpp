// JPEG through libjpeg-turbo. libjpeg's default error handler exits the process: every call into
// it runs behind setjmp, and the error handler longjmps back with the message. The frames between
// (libjpeg's, the handlers below) hold nothing with a destructor, and buffers are allocated by the
// caller outside them.
#include "core/image/ExifOrientation.h"
#include "core/image/ImageError.h"
#include "core/image/RawImage.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include <jpeglib.h>
#include <jerror.h>

namespace parallax {

namespace {

// More scans than this is no real progressive JPEG but one made to take minutes (libjpeg-turbo's
// advice for untrusted files, as its TJFLAG_LIMITSCANS).
constexpr int kMaxScans = 500;

enum class Stage { Header, Start, Scanlines };

struct JpegErrors {
    jpeg_error_mgr pub; // first: libjpeg holds a jpeg_error_mgr*
    std::jmp_buf jump;
    Stage stage = Stage::Header;
    bool multiScan = false;
    bool eofSeen = false;
    char problem[JMSG_LENGTH_MAX + 128] = {};
};

JpegErrors& errorsOf(j_common_ptr cinfo) { return *reinterpret_cast<JpegErrors*>(cinfo->err); }

[[noreturn]] void fail(j_common_ptr cinfo, const char* problem) {
    JpegErrors& e = errorsOf(cinfo);
    std::snprintf(e.problem, sizeof e.problem, "%s", problem);
    std::longjmp(e.jump, 1);
}

void onError(j_common_ptr cinfo) {
    const int code = cinfo->err->msg_code;
    const bool unsupported = code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL;
    char message[JMSG_LENGTH_MAX] = {};
    (*cinfo->err->format_message)(cinfo, message);
    char problem[JMSG_LENGTH_MAX + 32] = {};
    std::snprintf(problem, sizeof problem, "%s JPEG (%s)", unsupported ? "unsupported" : "corrupt", message);
    fail(cinfo, problem);
}

// Warnings. Missing image data is an error here (PIL refuses truncated files too): libjpeg itself
// fills it with gray and goes on. Other damage it recovers from (extraneous bytes before a marker)
// is let through, as PIL lets it through.
void onMessage(j_common_ptr cinfo, int level) {
    if (level >= 0) return; // traces
    JpegErrors& e = errorsOf(cinfo);
    const int code = cinfo->err->msg_code;
    if (code == JWRN_HIT_MARKER)
        fail(cinfo, e.eofSeen ? "truncated JPEG (premature end of data segment: the file ends inside the image data)"
                              : "corrupt JPEG (premature end of data segment: a marker inside the image data)");
    if (code == JWRN_JPEG_EOF) {
        // A single-scan file whose data is complete may end without its EOI marker; one that ends in
        // its headers, or before the last scan of a progressive file, is cut short.
        e.eofSeen = true;
        const bool arithmetic = cinfo->is_decompressor && reinterpret_cast<j_decompress_ptr>(cinfo)->arith_code;
        if (e.stage == Stage::Header || (e.stage == Stage::Start && e.multiScan) || arithmetic)
            fail(cinfo, "truncated JPEG (premature end of file)");
    }
    ++cinfo->err->num_warnings;
}

void onProgress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (d->input_scan_number > kMaxScans) {
        JpegErrors& e = errorsOf(cinfo);
        std::snprintf(e.problem, sizeof e.problem, "corrupt JPEG (more than %d progressive scans)", kMaxScans);
        std::longjmp(e.jump, 1);
    }
}

class JpegReader {
public:
    JpegReader(const uint8_t* data, size_t size, const std::string& file) : m_data(data), m_size(size), m_file(file) {
        m_cinfo.err = jpeg_std_error(&m_errors.pub);
        m_errors.pub.error_exit = onError;
        m_errors.pub.emit_message = onMessage;
        m_progress.progress_monitor = onProgress;
        if (!guardedCreate()) throw ImageError(m_file, m_errors.problem);
        m_created = true;
        m_cinfo.progress = &m_progress;
    }
    ~JpegReader() {
        if (m_created) jpeg_destroy_decompress(&m_cinfo);
    }
    JpegReader(const JpegReader&) = delete;
    JpegReader& operator=(const JpegReader&) = delete;

    void readHeader() {
        if (!guardedHeader()) throw ImageError(m_file, m_errors.problem);
    }
    // Sets the output colour space and starts decompressing (progressive files are read whole here).
    SampleLayout start() {
        SampleLayout layout = SampleLayout::Rgb;
        switch (m_cinfo.num_components) {
        case 1: m_cinfo.out_color_space = JCS_GRAYSCALE; layout = SampleLayout::Gray; break;
        case 3: m_cinfo.out_color_space = JCS_RGB; break;
        case 4: m_cinfo.out_color_space = JCS_CMYK; layout = SampleLayout::InvertedCmyk; break;
        default:
            throw ImageError(m_file, "unsupported JPEG (" + std::to_string(m_cinfo.num_components) +
                                         " colour components; 1, 3 and 4 are read)");
        }
        m_errors.multiScan = jpeg_has_multiple_scans(&m_cinfo);
        if (!guardedStart()) throw ImageError(m_file, m_errors.problem);
        return layout;
    }
    void readRows(uint8_t* out, size_t stride) {
        if (!guardedRows(out, stride)) throw ImageError(m_file, m_errors.problem);
    }

    jpeg_decompress_struct& cinfo() { return m_cinfo; }

    int orientation() const {
        int xmp = 1;
        for (jpeg_saved_marker_ptr m = m_cinfo.marker_list; m != nullptr; m = m->next) {
            if (m->marker != JPEG_APP0 + 1) continue;
            if (m->data_length >= 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0)
                return exifOrientation(m->data, m->data_length); // the first EXIF block, as PIL
            static const char kXmp[] = "http://ns.adobe.com/xap/1.0/";
            if (xmp == 1 && m->data_length > sizeof kXmp && std::memcmp(m->data, kXmp, sizeof kXmp) == 0)
                xmp = xmpOrientation(m->data + sizeof kXmp, m->data_length - sizeof kXmp);
        }
        return xmp;
    }

private:
    bool guardedCreate() {
        if (setjmp(m_errors.jump)) return false;
        jpeg_create_decompress(&m_cinfo);
        return true;
    }
    bool guardedHeader() {
        if (setjmp(m_errors.jump)) return false;
        m_errors.stage = Stage::Header;
        jpeg_mem_src(&m_cinfo, m_data, static_cast<unsigned long>(m_size));
        jpeg_save_markers(&m_cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_read_header(&m_cinfo, TRUE);
        return true;
    }
    bool guardedStart() {
        if (setjmp(m_errors.jump)) return false;
        m_errors.stage = Stage::Start;
        jpeg_start_decompress(&m_cinfo);
        return true;
    }
    bool guardedRows(uint8_t* out, size_t stride) {
        if (setjmp(m_errors.jump)) return false;
        m_errors.stage = Stage::Scanlines;
        while (m_cinfo.output_scanline < m_cinfo.output_height) {
            JSAMPROW row = out + static_cast<size_t>(m_cinfo.output_scanline) * stride;
            if (jpeg_read_scanlines(&m_cinfo, &row, 1) != 1) {
                std::snprintf(m_errors.problem, sizeof m_errors.problem, "corrupt JPEG (no row %u)",
                              m_cinfo.output_scanline);
                return false;
            }
        }
        jpeg_finish_decompress(&m_cinfo);
        return true;
    }

    const uint8_t* m_data;
    size_t m_size;
    const std::string& m_file;
    jpeg_decompress_struct m_cinfo{};
    JpegErrors m_errors;
    jpeg_progress_mgr m_progress{};
    bool m_created = false;
};

ImageInfo headerInfo(JpegReader& reader, const std::string& file, const DecodeOptions& options) {
    jpeg_decompress_struct& c = reader.cinfo();
    checkDeclaredSize(c.image_width, c.image_height, options, file, ImageFormat::Jpeg);
    ImageInfo info;
    info.format = ImageFormat::Jpeg;
    info.storedWidth = static_cast<int>(c.image_width);
    info.storedHeight = static_cast<int>(c.image_height);
    info.storedChannels = c.num_components;
    info.bitDepth = 8;
    info.orientation = reader.orientation();
    return info;
}

} // namespace

ImageInfo jpegInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options) {
    JpegReader reader(data, size, file);
    reader.readHeader();
    return headerInfo(reader, file, options);
}

RawImage decodeJpeg(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                    ImageInfo& info) {
    JpegReader reader(data, size, file);
    reader.readHeader();
    info = headerInfo(reader, file, options);
    RawImage raw;
    raw.layout = reader.start();
    const jpeg_decompress_struct& c = reader.cinfo();
    raw.width = static_cast<int>(c.output_width);
    raw.height = static_cast<int>(c.output_height);
    const size_t stride = static_cast<size_t>(c.output_width) * static_cast<size_t>(c.output_components);
    raw.samples8.resize(stride * c.output_height);
    reader.readRows(raw.samples8.data(), stride);
    return raw;
}

} // namespace parallax
