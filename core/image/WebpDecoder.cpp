// WebP through libwebp (still images) and libwebpdemux (EXIF and XMP chunks, animations).
#include "core/image/ExifOrientation.h"
#include "core/image/ImageError.h"
#include "core/image/RawImage.h"

#include <cstring>

#include <webp/decode.h>
#include <webp/demux.h>

namespace parallax {

namespace {

std::string statusProblem(VP8StatusCode status) {
    switch (status) {
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated WebP (not enough data)";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt WebP (bitstream error)";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported WebP (a feature libwebp does not read)";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory decoding WebP";
    case VP8_STATUS_INVALID_PARAM: return "corrupt WebP (invalid parameters)";
    default: return "corrupt WebP (decoder status " + std::to_string(static_cast<int>(status)) + ")";
    }
}

// The orientation of the EXIF chunk, or without one of the XMP chunk (as Pillow reads them). A
// file the demuxer cannot parse has none (decoding it then fails with its own reason).
int webpOrientation(const uint8_t* data, size_t size) {
    const WebPData whole = {data, size};
    WebPDemuxer* demux = WebPDemux(&whole);
    if (demux == nullptr) return 1;
    int orientation = 1;
    WebPChunkIterator chunk;
    if (WebPDemuxGetChunk(demux, "EXIF", 1, &chunk)) {
        orientation = exifOrientation(chunk.chunk.bytes, chunk.chunk.size);
        WebPDemuxReleaseChunkIterator(&chunk);
    } else if (WebPDemuxGetChunk(demux, "XMP ", 1, &chunk)) {
        orientation = xmpOrientation(chunk.chunk.bytes, chunk.chunk.size);
        WebPDemuxReleaseChunkIterator(&chunk);
    }
    WebPDemuxDelete(demux);
    return orientation;
}

// The first frame of an animation as it shows on the canvas (transparent black where the frame does
// not cover it), as Pillow's first frame.
void decodeFirstFrame(const uint8_t* data, size_t size, const std::string& file, RawImage& raw) {
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) throw ImageError(file, "the WebP library does not match its headers");
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    const WebPData whole = {data, size};
    WebPAnimDecoder* decoder = WebPAnimDecoderNew(&whole, &options);
    if (decoder == nullptr) throw ImageError(file, "corrupt animated WebP (its frames cannot be read)");
    uint8_t* canvas = nullptr;
    int timestamp = 0;
    WebPAnimInfo anim;
    const bool ok = WebPAnimDecoderGetInfo(decoder, &anim) && int(anim.canvas_width) == raw.width &&
                    int(anim.canvas_height) == raw.height && WebPAnimDecoderGetNext(decoder, &canvas, &timestamp);
    if (ok) raw.samples8.assign(canvas, canvas + size_t(raw.width) * size_t(raw.height) * 4);
    WebPAnimDecoderDelete(decoder);
    if (!ok) throw ImageError(file, "corrupt animated WebP (its first frame cannot be decoded)");
    raw.layout = SampleLayout::Rgba;
}

} // namespace

ImageInfo webpInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options) {
    WebPBitstreamFeatures features;
    const VP8StatusCode status = WebPGetFeatures(data, size, &features);
    if (status != VP8_STATUS_OK) throw ImageError(file, statusProblem(status));
    checkDeclaredSize(uint64_t(features.width), uint64_t(features.height), options, file, ImageFormat::Webp);
    ImageInfo info;
    info.format = ImageFormat::Webp;
    info.storedWidth = features.width;
    info.storedHeight = features.height;
    info.alpha = features.has_alpha != 0;
    info.storedChannels = info.alpha ? 4 : 3;
    info.animated = features.has_animation != 0;
    info.orientation = webpOrientation(data, size);
    return info;
}

RawImage decodeWebp(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                    ImageInfo& info) {
    info = webpInfo(data, size, file, options);
    RawImage raw;
    raw.width = info.storedWidth;
    raw.height = info.storedHeight;
    if (info.animated) {
        decodeFirstFrame(data, size, file, raw);
        return raw;
    }
    const bool alpha = info.alpha && options.alpha == AlphaMode::OverWhite;
    raw.layout = alpha ? SampleLayout::Rgba : SampleLayout::Rgb;
    const size_t stride = size_t(raw.width) * size_t(layoutChannels(raw.layout));
    raw.samples8.resize(stride * size_t(raw.height));
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) throw ImageError(file, "the WebP library does not match its headers");
    config.options.use_threads = 0;
    config.output.colorspace = alpha ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = raw.samples8.data();
    config.output.u.RGBA.stride = static_cast<int>(stride);
    config.output.u.RGBA.size = raw.samples8.size();
    const VP8StatusCode status = WebPDecode(data, size, &config);
    WebPFreeDecBuffer(&config.output);
    if (status != VP8_STATUS_OK) throw ImageError(file, statusProblem(status));
    return raw;
}

} // namespace parallax
