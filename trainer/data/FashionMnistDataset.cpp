#include "trainer/data/FashionMnistDataset.h"

#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace parallax {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803; // unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801; // unsigned bytes, 1 dimension
constexpr int64_t kClasses = 10;

std::string hex(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

// One gzip file read sequentially, every failure reported against its path with `fix` appended.
class GzipReader {
public:
    GzipReader(std::string path, std::string fix) : m_path(std::move(path)), m_fix(std::move(fix)) {
        if (!isRegularFile(m_path))
            fail("not found; install dataset-fashion-mnist (packaging/deps.sh) or set data.path to a folder "
                 "holding the Fashion-MNIST .gz files");
        m_file = gzopen(m_path.c_str(), "rb");
        if (!m_file) fail("cannot be opened (" + std::string(std::strerror(errno)) + ")");
        gzbuffer(m_file, 1 << 17);
    }
    ~GzipReader() {
        if (m_file) gzclose(m_file);
    }
    GzipReader(const GzipReader&) = delete;
    GzipReader& operator=(const GzipReader&) = delete;

    [[noreturn]] void fail(const std::string& what) const {
        throw DataError(m_path + ": " + what + (m_fix.empty() ? "" : "; " + m_fix));
    }

    // Reads up to n bytes; returns how many there were. A corrupt stream throws; a truncated one
    // (zlib's Z_BUF_ERROR) just ends early and the caller reports the shortfall.
    int64_t read(uint8_t* out, int64_t n) {
        int64_t total = 0;
        while (total < n) {
            const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - total, 1 << 20));
            const int got = gzread(m_file, out + total, chunk);
            if (total == 0 && !m_checkedFormat) {
                m_checkedFormat = true;
                if (gzdirect(m_file)) fail("is not gzip-compressed (the file is corrupt)");
            }
            if (got < 0) {
                int code = 0;
                std::string message = gzerror(m_file, &code);
                // zlib prefixes its message with the path, which fail() adds already.
                if (message.rfind(m_path + ": ", 0) == 0) message = message.substr(m_path.size() + 2);
                fail("the compressed data is corrupt (" + message + ")");
            }
            if (got == 0) break;
            total += got;
        }
        return total;
    }

    uint32_t bigEndian32(const uint8_t* p) const {
        return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
    }

    // Reads the header of `words` 32-bit big-endian words.
    std::vector<uint32_t> header(int64_t words) {
        std::vector<uint8_t> raw(static_cast<size_t>(4 * words));
        const int64_t got = read(raw.data(), 4 * words);
        if (got < 4 * words)
            fail("expected a " + std::to_string(4 * words) + "-byte IDX header, found " + std::to_string(got) +
                 " bytes; the file is truncated");
        std::vector<uint32_t> values;
        for (int64_t i = 0; i < words; ++i) values.push_back(bigEndian32(raw.data() + 4 * i));
        return values;
    }

    // Reads exactly n payload bytes; `what` names them in messages ("image bytes").
    std::vector<uint8_t> payload(int64_t n, const std::string& what) {
        std::vector<uint8_t> data(static_cast<size_t>(n));
        const int64_t got = read(data.data(), n);
        if (got < n)
            fail("expected " + std::to_string(n) + " " + what + ", found " + std::to_string(got) +
                 "; the file is truncated");
        uint8_t extra = 0;
        if (read(&extra, 1) > 0) fail("holds more than the " + std::to_string(n) + " " + what + " its header announces");
        return data;
    }

private:
    std::string m_path;
    std::string m_fix;
    gzFile m_file = nullptr;
    bool m_checkedFormat = false;
};

} // namespace

const std::vector<std::string>& FashionMnistDataset::classNames() {
    static const std::vector<std::string> names = {"t-shirt", "trouser", "pullover", "dress", "coat",
                                                   "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};
    return names;
}

FashionMnistDataset::FashionMnistDataset(const std::string& folder, const std::string& split, const ModelDims& dims,
                                         uint64_t seed)
    : m_folder(folder.empty() ? kDefaultFolder : folder), m_split(split), m_dims(dims), m_seed(seed) {
    if (split != "train" && split != "t10k")
        throw DataError("fashion-mnist split \"" + split + "\" is unknown; use train or t10k");
    requireImageModel(dims, "fashion-mnist");
    const std::string fix = folder.empty() ? "reinstall dataset-fashion-mnist"
                                           : "replace it with an intact copy (dataset-fashion-mnist has one)";
    const std::string imagesPath = joinPath(m_folder, split + "-images-idx3-ubyte.gz");
    const std::string labelsPath = joinPath(m_folder, split + "-labels-idx1-ubyte.gz");

    GzipReader images(imagesPath, fix);
    const std::vector<uint32_t> ih = images.header(4);
    if (ih[0] != kImagesMagic)
        images.fail("magic number " + hex(ih[0]) + ", expected " + hex(kImagesMagic) +
                    " (IDX unsigned-byte images); the file is corrupt or not an image file");
    if (ih[2] != kSide || ih[3] != kSide)
        images.fail("images are " + std::to_string(ih[2]) + "x" + std::to_string(ih[3]) + ", expected 28x28");
    const int64_t count = ih[1];
    if (count == 0) images.fail("holds no images");
    m_pixels = images.payload(count * kSide * kSide, "image bytes");

    GzipReader labels(labelsPath, fix);
    const std::vector<uint32_t> lh = labels.header(2);
    if (lh[0] != kLabelsMagic)
        labels.fail("magic number " + hex(lh[0]) + ", expected " + hex(kLabelsMagic) +
                    " (IDX unsigned-byte labels); the file is corrupt or not a label file");
    if (static_cast<int64_t>(lh[1]) != count)
        labels.fail("holds " + std::to_string(lh[1]) + " labels but " + imagesPath + " holds " + std::to_string(count) +
                    " images");
    m_labels = labels.payload(count, "label bytes");
    for (size_t i = 0; i < m_labels.size(); ++i)
        if (m_labels[i] >= kClasses)
            labels.fail("label " + std::to_string(m_labels[i]) + " of image " + std::to_string(i) +
                        " is outside 0..9; the file is corrupt");

}

torch::Tensor FashionMnistDataset::rawImage(int64_t index) const {
    if (index < 0 || index >= size())
        throw DataError("fashion-mnist: sample index " + std::to_string(index) + " is outside 0.." +
                        std::to_string(size() - 1));
    const uint8_t* p = m_pixels.data() + index * kSide * kSide;
    return torch::from_blob(const_cast<uint8_t*>(p), {1, kSide, kSide}, torch::kUInt8).to(torch::kFloat32);
}

Batch FashionMnistDataset::makeBatch(const std::vector<int64_t>& indices, int64_t step) const {
    requireIndices(indices, size(), "fashion-mnist " + m_split);
    std::vector<torch::Tensor> images;
    images.reserve(indices.size());
    for (int64_t i : indices) // (1, 28, 28) in [-1, 1]
        images.push_back(fitImage(imageValues(rawImage(i) / 255.0), m_dims.channels, m_dims.image_size));
    return imageBatch(images, indices, step, m_seed, m_dims);
}

std::string FashionMnistDataset::describe() const {
    return "fashion-mnist " + m_split + ": " + std::to_string(size()) + " images from " + m_folder;
}

} // namespace parallax
