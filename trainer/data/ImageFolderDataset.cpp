#include "trainer/data/ImageFolderDataset.h"

#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"

#if PARALLAX_WITH_IMAGE_DECODERS
#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#endif

#include <algorithm>
#include <cctype>
#include <fstream>

namespace parallax {

namespace {

struct NetpbmHeader {
    int64_t channels = 0; // 1 (P5) or 3 (P6)
    int64_t width = 0;
    int64_t height = 0;
    int64_t maxval = 0;
};

// What a file's extension says it is: a Netpbm image read here, an image the decoders read (JPEG,
// PNG, WebP), or no image.
enum class FileKind { None, Netpbm, Decoded };

FileKind fileKind(const std::string& name) {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot == 0) return FileKind::None;
    std::string ext = name.substr(dot);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext == ".pgm" || ext == ".ppm") return FileKind::Netpbm;
    if (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".webp") return FileKind::Decoded;
    return FileKind::None;
}

#if PARALLAX_WITH_IMAGE_DECODERS
constexpr const char* kFormats = ".png, .jpg, .webp, .pgm or .ppm";
#else
constexpr const char* kFormats = ".pgm or .ppm";
#endif

// Reads the next header number, skipping whitespace and # comments.
int64_t headerNumber(std::istream& in, const std::string& path, const char* what) {
    int c = in.get();
    while (c != EOF && (std::isspace(c) || c == '#')) {
        if (c == '#')
            while (c != EOF && c != '\n') c = in.get();
        c = in.get();
    }
    int64_t value = 0;
    bool any = false;
    while (c != EOF && std::isdigit(c)) {
        value = value * 10 + (c - '0');
        any = true;
        if (value > (1 << 24)) break;
        c = in.get();
    }
    if (!any || value <= 0 || value > (1 << 24))
        throw DataError(path + ": the Netpbm header has no valid " + what + "; the file is not a binary PGM/PPM image");
    // Exactly one whitespace byte separates the header from the pixels; `c` consumed it.
    return value;
}

NetpbmHeader readHeader(std::istream& in, const std::string& path) {
    char magic[2] = {0, 0};
    in.read(magic, 2);
    NetpbmHeader h;
    if (in.gcount() == 2 && magic[0] == 'P' && magic[1] == '5') h.channels = 1;
    else if (in.gcount() == 2 && magic[0] == 'P' && magic[1] == '6') h.channels = 3;
    else throw DataError(path + ": not a binary PGM (P5) or PPM (P6) image; convert it, e.g. with ImageMagick");
    h.width = headerNumber(in, path, "width");
    h.height = headerNumber(in, path, "height");
    h.maxval = headerNumber(in, path, "maximum value");
    if (h.maxval > 65535) throw DataError(path + ": maximum value " + std::to_string(h.maxval) + " is above 65535");
    return h;
}

} // namespace

ImageFolderDataset::ImageFolderDataset(const std::string& folder, const ModelDims& dims, uint64_t seed)
    : m_folder(folder), m_dims(dims), m_seed(seed) {
    requireImageModel(dims, "image-folder");
    if (folder.empty())
        throw DataError("data.path is empty; data.kind = \"image-folder\" needs a folder of class subfolders");
    if (!isDirectory(folder))
        throw DataError(folder + ": not found or not a folder; set data.path to a folder of class subfolders "
                                 "holding " + kFormats + " images");
    int64_t unreadable = 0; // images of a format this build has no decoder for
    for (const std::string& className : listDirectory(folder)) {
        const std::string dir = joinPath(folder, className);
        if (!isDirectory(dir)) continue;
        std::vector<std::string> images;
        for (const std::string& name : listDirectory(dir)) {
            const std::string path = joinPath(dir, name);
            if (fileKind(name) == FileKind::None || !isRegularFile(path)) continue;
#if !PARALLAX_WITH_IMAGE_DECODERS
            if (fileKind(name) == FileKind::Decoded) {
                ++unreadable;
                continue;
            }
#endif
            images.push_back(path);
        }
        if (images.empty()) continue;
        const int64_t label = static_cast<int64_t>(m_classes.size());
        m_classes.push_back(className);
        for (const std::string& path : images) {
            checkHeader(path);
            m_files.push_back(path);
            m_labels.push_back(label);
        }
    }
    if (m_files.empty() && unreadable > 0)
        throw DataError(folder + ": its " + std::to_string(unreadable) + " images are PNG, JPEG or WebP, which this "
                        "build cannot read (built without libjpeg, libpng and libwebp: packaging/deps.sh installs "
                        "them); rebuild, or convert them to binary PGM/PPM");
    if (m_files.empty())
        throw DataError(folder + ": no " + kFormats + " images in class subfolders; expected " + folder +
                        "/<class>/<image>.png");
}

void ImageFolderDataset::checkHeader(const std::string& path) {
    if (fileKind(path) == FileKind::Netpbm) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw DataError(path + ": cannot be opened for reading");
        readHeader(in, path);
        return;
    }
#if PARALLAX_WITH_IMAGE_DECODERS
    try {
        readImageInfoFile(path);
    } catch (const ImageError& e) {
        throw DataError(std::string(e.what()) + "; replace the image or take it out of the folder");
    }
#endif
}

torch::Tensor ImageFolderDataset::readImage(int64_t index) const {
    const std::string& path = m_files.at(static_cast<size_t>(index));
#if PARALLAX_WITH_IMAGE_DECODERS
    if (fileKind(path) == FileKind::Decoded) {
        Image rgb;
        try {
            rgb = decodeImageFile(path).rgb;
        } catch (const ImageError& e) {
            throw DataError(std::string(e.what()) + "; replace the image or take it out of the folder");
        }
        const torch::Tensor pixels =
            torch::from_blob(rgb.samples.data(), {rgb.height, rgb.width, rgb.channels}, torch::kUInt8);
        return pixels.permute({2, 0, 1}).to(torch::kFloat32).div(255.0).contiguous(); // (3, h, w)
    }
#endif
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot be opened for reading");
    const NetpbmHeader h = readHeader(in, path);
    const int64_t bytesPerValue = h.maxval > 255 ? 2 : 1;
    const int64_t values = h.width * h.height * h.channels;
    std::vector<uint8_t> raw(static_cast<size_t>(values * bytesPerValue));
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    if (in.gcount() != static_cast<std::streamsize>(raw.size()))
        throw DataError(path + ": expected " + std::to_string(raw.size()) + " pixel bytes, found " +
                        std::to_string(in.gcount()) + "; the file is truncated");
    torch::Tensor pixels = torch::empty({values}, torch::kFloat32);
    float* out = pixels.data_ptr<float>();
    for (int64_t i = 0; i < values; ++i) {
        const int64_t v = bytesPerValue == 2 ? (int64_t(raw[2 * i]) << 8) | raw[2 * i + 1] : raw[i];
        out[i] = static_cast<float>(v) / static_cast<float>(h.maxval);
    }
    return pixels.view({h.height, h.width, h.channels}).permute({2, 0, 1}).contiguous(); // (c, h, w)
}

Batch ImageFolderDataset::makeBatch(const std::vector<int64_t>& indices, int64_t step) const {
    requireIndices(indices, size(), m_folder);
    std::vector<torch::Tensor> images;
    images.reserve(indices.size());
    for (int64_t i : indices) images.push_back(fitImage(imageValues(readImage(i)), m_dims.channels, m_dims.image_size));
    return imageBatch(images, indices, step, m_seed, m_dims);
}

std::string ImageFolderDataset::describe() const {
    return "image-folder: " + std::to_string(size()) + " images in " + std::to_string(m_classes.size()) +
           " classes from " + m_folder;
}

} // namespace parallax
