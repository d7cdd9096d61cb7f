#include "tests/core/image/ImageTools.h"

#include "tests/support/Process.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <unistd.h>
#include <zlib.h>

#ifndef PARALLAX_CONVERT
#define PARALLAX_CONVERT ""
#endif
#ifndef PARALLAX_EXIFTOOL
#define PARALLAX_EXIFTOOL ""
#endif
#ifndef PARALLAX_PIL_PYTHON
#define PARALLAX_PIL_PYTHON ""
#endif
#ifndef PARALLAX_PIL_REF
#define PARALLAX_PIL_REF ""
#endif

namespace parallax::testing {

bool haveConvert() { return !std::string(PARALLAX_CONVERT).empty(); }
bool haveExiftool() { return !std::string(PARALLAX_EXIFTOOL).empty(); }
bool havePil() { return !std::string(PARALLAX_PIL_PYTHON).empty(); }

namespace {

// A file of this process's own in the temporary folder, removed at destruction.
class ScratchFile {
public:
    explicit ScratchFile(const char* suffix) {
        const char* tmp = std::getenv("TMPDIR");
        m_path = std::string(tmp && *tmp ? tmp : "/tmp") + "/parallax-image-XXXXXX" + suffix;
        std::vector<char> name(m_path.begin(), m_path.end());
        name.push_back('\0');
        const int fd = ::mkstemps(name.data(), static_cast<int>(std::string(suffix).size()));
        if (fd >= 0) ::close(fd);
        m_path = name.data();
    }
    ~ScratchFile() { ::unlink(m_path.c_str()); }
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
};

uint16_t clamp16(double v) { return static_cast<uint16_t>(v < 0 ? 0 : (v > 65535 ? 65535 : std::lround(v))); }

// The first two integers of the last line of `text` that has two: a tool's "width height".
bool sidesOf(const std::string& text, int& width, int& height) {
    std::istringstream lines(text);
    std::string line;
    bool found = false;
    while (std::getline(lines, line)) {
        int w = 0, h = 0;
        if (std::sscanf(line.c_str(), "%d %d", &w, &h) == 2) {
            width = w;
            height = h;
            found = true;
        }
    }
    return found;
}

template <class Sample>
Pixels<Sample> rawRgb(const std::string& bytes, int width, int height, bool bigEndian16) {
    Pixels<Sample> image;
    image.width = width;
    image.height = height;
    image.channels = 3;
    const size_t count = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
    if (bytes.size() != count * sizeof(Sample)) {
        ADD_FAILURE() << "a reference of " << width << " x " << height << " has " << bytes.size() << " bytes";
        return {};
    }
    image.samples.resize(count);
    for (size_t i = 0; i < count; ++i) {
        if (sizeof(Sample) == 1) {
            image.samples[i] = static_cast<Sample>(static_cast<uint8_t>(bytes[i]));
        } else {
            const auto hi = static_cast<uint8_t>(bytes[2 * i]), lo = static_cast<uint8_t>(bytes[2 * i + 1]);
            image.samples[i] = static_cast<Sample>(bigEndian16 ? (hi << 8 | lo) : (lo << 8 | hi));
        }
    }
    return image;
}

template <class Sample>
PixelDiff compare(const Pixels<Sample>& a, const Pixels<Sample>& b) {
    PixelDiff d;
    if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.samples.size() != b.samples.size())
        return d;
    d.max = 0;
    double sum = 0;
    for (size_t i = 0; i < a.samples.size(); ++i) {
        const int diff = std::abs(int(a.samples[i]) - int(b.samples[i]));
        d.max = std::max(d.max, diff);
        sum += diff;
    }
    d.mean = a.samples.empty() ? 0 : sum / static_cast<double>(a.samples.size());
    return d;
}

} // namespace

Image16 testPicture(int width, int height, int channels, uint32_t seed, int levels) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> noise(-1500, 1500);
    Image16 p;
    p.width = width;
    p.height = height;
    p.channels = channels;
    p.samples.resize(static_cast<size_t>(width) * height * channels);
    const double wx = std::max(width - 1, 1), hy = std::max(height - 1, 1);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            double r = 65535.0 * x / wx, g = 65535.0 * y / hy;
            double b = 32767.5 + 32767.5 * std::sin((x + 2 * y) * 0.21 + seed);
            if ((x / 5 + y / 7) % 5 == 0) r = (x + y) % 2 ? 65535 : 0; // hard edges
            r += noise(rng);
            g += noise(rng);
            b += noise(rng);
            double a = x < width / 3 ? 0.0 : (x >= 2 * width / 3 ? 65535.0 : 65535.0 * (x - width / 3) / (width / 3 + 1));
            if (levels > 0) {
                const double step = 65535.0 / (levels - 1);
                for (double* v : {&r, &g, &b}) *v = std::round(std::clamp(*v, 0.0, 65535.0) / step) * step;
                a = a >= 32768 ? 65535 : 0;
            }
            uint16_t* s = p.row(y) + static_cast<size_t>(x) * channels;
            const uint16_t gray = clamp16(0.3 * r + 0.55 * g + 0.15 * b);
            switch (channels) {
            case 1: s[0] = gray; break;
            case 2: s[0] = gray; s[1] = clamp16(a); break;
            default:
                s[0] = clamp16(r);
                s[1] = clamp16(g);
                s[2] = clamp16(b);
                if (channels == 4) s[3] = clamp16(a);
            }
        }
    }
    return p;
}

Image eightBit(const Image16& picture) {
    Image out;
    out.width = picture.width;
    out.height = picture.height;
    out.channels = picture.channels;
    out.samples.resize(picture.samples.size());
    for (size_t i = 0; i < picture.samples.size(); ++i) out.samples[i] = static_cast<uint8_t>(picture.samples[i] >> 8);
    return out;
}

void writePam(const std::string& path, const Image16& picture, int bits) {
    static const char* tuples[] = {"", "GRAYSCALE", "GRAYSCALE_ALPHA", "RGB", "RGB_ALPHA"};
    std::string data = "P7\nWIDTH " + std::to_string(picture.width) + "\nHEIGHT " + std::to_string(picture.height) +
                       "\nDEPTH " + std::to_string(picture.channels) + "\nMAXVAL " + (bits == 16 ? "65535" : "255") +
                       "\nTUPLTYPE " + tuples[picture.channels] + "\nENDHDR\n";
    for (uint16_t v : picture.samples) {
        if (bits == 16) data += static_cast<char>(v >> 8);
        data += static_cast<char>(bits == 16 ? (v & 0xFF) : (v >> 8));
    }
    writeFileBytes(path, data);
}

bool runTool(const std::vector<std::string>& argv) {
    const ProcessResult r = runProcess(argv);
    if (r.exitCode == 0) return true;
    std::string line;
    for (const std::string& a : argv) line += a + " ";
    ADD_FAILURE() << line << "exited with " << r.exitCode << ":\n" << r.output;
    return false;
}

bool convert(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {PARALLAX_CONVERT};
    argv.insert(argv.end(), args.begin(), args.end());
    return runTool(argv);
}

std::string makeImage(const std::string& folder, const std::string& name, const Image16& picture, int bits,
                      std::vector<std::string> args) {
    const std::string pam = folder + "/" + name + ".pam";
    writePam(pam, picture, bits);
    const std::string out = folder + "/" + name;
    std::string format;
    if (!args.empty() && !args.back().empty() && args.back().back() == ':') {
        format = args.back();
        args.pop_back();
    }
    args.insert(args.begin(), pam);
    args.push_back(format + out);
    convert(args);
    return out;
}

bool setOrientation(const std::string& path, int orientation) { return setOrientations({{path, orientation}}); }

bool setOrientations(const std::vector<std::pair<std::string, int>>& files) {
    std::vector<std::string> argv = {PARALLAX_EXIFTOOL};
    for (const auto& [path, orientation] : files) {
        if (argv.size() > 1) argv.push_back("-execute");
        argv.insert(argv.end(), {"-Orientation=" + std::to_string(orientation), path});
    }
    argv.insert(argv.end(), {"-common_args", "-q", "-n", "-overwrite_original"});
    return runTool(argv);
}

namespace {

template <class Sample>
Pixels<Sample> magick(const std::string& path, int depth) {
    const ScratchFile raw(".rgb"), sides(".txt");
    if (!convert({path + "[0]", "-auto-orient", "-alpha", "off", "-depth", std::to_string(depth), "-endian", "MSB",
                  "-write", "rgb:" + raw.path(), "-format", "%w %h", "info:" + sides.path()}))
        return {};
    int width = 0, height = 0;
    if (!sidesOf(readFile(sides.path()), width, height)) ADD_FAILURE() << "no sides from convert for " << path;
    return rawRgb<Sample>(readFile(raw.path()), width, height, true);
}

// pil_ref.py's commands (each its arguments) in one run of Python: the sides each printed, in order.
std::vector<std::pair<int, int>> pilBatch(const std::vector<std::vector<std::string>>& commands) {
    const ScratchFile list(".txt");
    std::string lines;
    for (const auto& command : commands) {
        for (size_t i = 0; i < command.size(); ++i) lines += (i ? "\t" : "") + command[i];
        lines += "\n";
    }
    writeFileBytes(list.path(), lines);
    const ProcessResult r = runProcess({PARALLAX_PIL_PYTHON, "-W", "ignore", PARALLAX_PIL_REF, "batch", list.path()});
    std::vector<std::pair<int, int>> sides;
    std::istringstream out(r.output);
    std::string line;
    while (std::getline(out, line)) {
        int w = 0, h = 0;
        if (std::sscanf(line.c_str(), "%d %d", &w, &h) == 2) sides.emplace_back(w, h);
    }
    if (r.exitCode != 0 || sides.size() != commands.size()) {
        ADD_FAILURE() << "pil_ref.py failed:\n" << r.output;
        sides.resize(commands.size());
    }
    return sides;
}

} // namespace

Image magickRgb(const std::string& path) { return magick<uint8_t>(path, 8); }
Image16 magickRgb16(const std::string& path) { return magick<uint16_t>(path, 16); }

std::vector<Image> pilRgbAll(const std::vector<std::string>& paths, bool overWhite) {
    std::vector<std::unique_ptr<ScratchFile>> raws;
    std::vector<std::vector<std::string>> commands;
    for (const std::string& path : paths) {
        raws.push_back(std::make_unique<ScratchFile>(".rgb"));
        commands.push_back({"decode", path, raws.back()->path()});
        if (overWhite) commands.back().push_back("white");
    }
    const std::vector<std::pair<int, int>> sides = pilBatch(commands);
    std::vector<Image> images;
    for (size_t i = 0; i < paths.size(); ++i)
        images.push_back(rawRgb<uint8_t>(readFile(raws[i]->path()), sides[i].first, sides[i].second, true));
    return images;
}

Image pilRgb(const std::string& path, bool overWhite) { return pilRgbAll({path}, overWhite).front(); }

std::vector<Image> pilResizeAll(const std::vector<ResizeJob>& jobs, bool lanczos) {
    std::vector<std::unique_ptr<ScratchFile>> files;
    std::vector<std::vector<std::string>> commands;
    for (const ResizeJob& job : jobs) {
        files.push_back(std::make_unique<ScratchFile>(".in"));
        const std::string in = files.back()->path();
        writeFileBytes(in, std::string(job.image->samples.begin(), job.image->samples.end()));
        files.push_back(std::make_unique<ScratchFile>(".out"));
        commands.push_back({lanczos ? "lanczos-raw" : "resize-raw", in, std::to_string(job.image->width), std::to_string(job.image->height),
                            std::to_string(job.image->channels), files.back()->path(), std::to_string(job.width),
                            std::to_string(job.height)});
    }
    const std::vector<std::pair<int, int>> sides = pilBatch(commands);
    std::vector<Image> images;
    for (size_t i = 0; i < jobs.size(); ++i) {
        Image result;
        result.width = sides[i].first;
        result.height = sides[i].second;
        result.channels = jobs[i].image->channels;
        const std::string bytes = readFile(files[2 * i + 1]->path());
        result.samples.assign(bytes.begin(), bytes.end());
        images.push_back(std::move(result));
    }
    return images;
}

Image pilResize(const Image& image, int width, int height) { return pilResizeAll({{&image, width, height}}).front(); }

PixelDiff compareImages(const Image& a, const Image& b) { return compare(a, b); }
PixelDiff compareImages(const Image16& a, const Image16& b) { return compare(a, b); }

std::string bigEndian(uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

namespace {

uint32_t crcOf(const char* data, size_t size) {
    return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(size)));
}

} // namespace

std::string pngChunk(const std::string& type, const std::string& body) {
    const std::string typed = type + body;
    return bigEndian(static_cast<uint32_t>(body.size())) + typed + bigEndian(crcOf(typed.data(), typed.size()));
}

void fixPngCrcs(std::string& png) {
    for (size_t at = 8; at + 12 <= png.size();) {
        const auto* p = reinterpret_cast<const uint8_t*>(png.data() + at);
        const uint32_t length = uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
        if (length > png.size() - at - 12) return;
        png.replace(at + 8 + length, 4, bigEndian(crcOf(png.data() + at + 4, size_t(length) + 4)));
        at += size_t(length) + 12;
    }
}

void writeFileBytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) ADD_FAILURE() << "cannot write " << path;
}

} // namespace parallax::testing
