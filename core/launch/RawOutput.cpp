#include "core/launch/RawOutput.h"

#include "core/launch/PrivateFile.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <stdexcept>
#include <sys/stat.h>
#include <vector>

namespace parallax {

namespace {

bool isFile(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

constexpr size_t kOutChunk = 1 << 16;
constexpr char kSegmentComment[] = "parallax-output from=";

std::string folderOf(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string fileNameOf(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

std::string rawOutputSegmentPath(const std::string& runDir, int index) {
    return runDir + "/" + (index == 0 ? std::string(kCompressedOutputName) : "output." + std::to_string(index) + ".log.gz");
}

int rawOutputSegmentIndex(const std::string& fileName) {
    if (fileName == kCompressedOutputName) return 0;
    const std::string head = "output.", tail = ".log.gz";
    if (fileName.size() <= head.size() + tail.size() || fileName.compare(0, head.size(), head) != 0 ||
        fileName.compare(fileName.size() - tail.size(), tail.size(), tail) != 0)
        return -1;
    const std::string digits = fileName.substr(head.size(), fileName.size() - head.size() - tail.size());
    if (digits.size() > 9 || digits[0] == '0' ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::atoi(digits.c_str());
}

std::vector<RawOutputSegmentFile> rawOutputSegments(const std::string& runDir) {
    std::vector<RawOutputSegmentFile> found;
    DIR* dir = runDir.empty() ? nullptr : ::opendir(runDir.c_str());
    if (!dir) return found;
    while (const dirent* entry = ::readdir(dir)) {
        const int index = rawOutputSegmentIndex(entry->d_name);
        const std::string path = runDir + "/" + entry->d_name;
        if (index >= 0 && isFile(path)) found.push_back({index, path});
    }
    ::closedir(dir);
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    return found;
}

int64_t rawOutputSegmentStart(const std::string& path) {
    if (rawOutputSegmentIndex(fileNameOf(path)) == 0) return 0;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return -1;
    unsigned char head[512];
    const size_t got = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
    if (got < 10) return -1;
    if (head[0] != 0x1f || head[1] != 0x8b) return 0; // not gzip: a plain file starts the stream
    const unsigned flags = head[3];
    size_t at = 10;
    if (flags & 4) at += 2 + (head[10] | (head[11] << 8)); // FEXTRA
    if (flags & 8) // FNAME
        while (at < got && head[at++] != 0) {}
    if (!(flags & 16)) return 0; // no comment: a gzip file of another writer
    const std::string comment(reinterpret_cast<const char*>(head) + std::min(at, got),
                              strnlen(reinterpret_cast<const char*>(head) + std::min(at, got), got - std::min(at, got)));
    if (comment.rfind(kSegmentComment, 0) != 0) return 0;
    return std::atoll(comment.c_str() + std::strlen(kSegmentComment));
}

std::string rawOutputFile(const std::string& runDir) {
    if (runDir.empty()) return {};
    const std::vector<RawOutputSegmentFile> segments = rawOutputSegments(runDir);
    if (!segments.empty()) return segments.front().path;
    const std::string plain = runDir + "/output.log";
    return isFile(plain) ? plain : std::string();
}

std::string rawOutputPath(const std::string& runDir) {
    const std::string found = rawOutputFile(runDir);
    return found.empty() ? runDir + "/" + kCompressedOutputName : found;
}

struct RawOutputWriter::State {
    z_stream z{};
    gz_header header{};
    std::string comment; // the header's, while deflate writes it
    std::vector<unsigned char> out = std::vector<unsigned char>(kOutChunk);
    bool open = false;
};

RawOutputWriter::RawOutputWriter(std::FILE* file) : m_state(std::make_unique<State>()), m_file(file) {
    // windowBits 15 + 16: a gzip header and trailer; level 1: the output of a thousand ranks in
    // about 1 % of a core, a tenth of its size.
    if (deflateInit2(&m_state->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        m_failed = true;
        errno = ENOMEM;
        return;
    }
    m_state->open = true;
}

RawOutputWriter::~RawOutputWriter() {
    if (m_state->open) deflateEnd(&m_state->z);
    if (m_owned) std::fclose(m_owned);
}

void RawOutputWriter::setSegments(std::string runDir, int64_t segmentBytes) {
    m_runDir = std::move(runDir);
    m_segmentBytes = segmentBytes;
    m_segments.clear();
    m_segments.push_back({0, rawOutputSegmentPath(m_runDir, 0), 0, m_in, m_out});
}

void RawOutputWriter::forgetOldestSegment() {
    if (m_segments.size() > 1) m_segments.erase(m_segments.begin());
}

// The current segment is finished (its gzip trailer written); the next one starts at m_in with a
// header that says so, written out at once so that a reader finds where it starts.
bool RawOutputWriter::startNextSegment() {
    m_state->z.avail_in = 0;
    if (!deflateSome(Z_FINISH)) return false;
    if (std::fflush(m_file) != 0) {
        m_failed = true;
        return false;
    }
    Segment next;
    next.index = m_segments.back().index + 1;
    next.path = rawOutputSegmentPath(m_runDir, next.index);
    next.from = next.to = m_in;
    std::FILE* file = nullptr;
    try {
        file = createPrivateFile(next.path);
    } catch (const std::exception&) {
        if (errno == 0) errno = EIO;
        m_failed = true;
        return false;
    }
    if (m_owned) std::fclose(m_owned);
    m_owned = m_file = file;
    m_segments.push_back(next);
    deflateReset(&m_state->z);
    m_state->comment = kSegmentComment + std::to_string(m_in);
    m_state->header = gz_header{};
    m_state->header.os = 3; // Unix
    m_state->header.comment = reinterpret_cast<Bytef*>(m_state->comment.data());
    deflateSetHeader(&m_state->z, &m_state->header);
    return deflateSome(Z_SYNC_FLUSH) && std::fflush(m_file) == 0;
}

bool RawOutputWriter::deflateSome(int mode) {
    z_stream& z = m_state->z;
    for (;;) {
        z.next_out = m_state->out.data();
        z.avail_out = static_cast<uInt>(m_state->out.size());
        const int rc = deflate(&z, mode);
        if (rc == Z_STREAM_ERROR) {
            m_failed = true;
            errno = EINVAL;
            return false;
        }
        const size_t produced = m_state->out.size() - z.avail_out;
        if (produced > 0 && std::fwrite(m_state->out.data(), 1, produced, m_file) != produced) {
            m_failed = true;
            return false;
        }
        m_out += static_cast<int64_t>(produced);
        if (!m_segments.empty()) m_segments.back().compressed += static_cast<int64_t>(produced);
        // Done when deflate left room: it has taken all the input and said all it had.
        if (z.avail_out != 0 && (mode != Z_FINISH || rc == Z_STREAM_END)) return true;
    }
}

bool RawOutputWriter::write(const char* data, size_t size) {
    if (m_failed || m_finished) return false;
    z_stream& z = m_state->z;
    while (size > 0) {
        const uInt piece = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
        z.avail_in = piece;
        if (!deflateSome(Z_NO_FLUSH)) return false;
        data += piece;
        size -= piece;
        m_in += piece;
        if (!m_segments.empty()) m_segments.back().to = m_in;
    }
    return true;
}

bool RawOutputWriter::flush() {
    if (m_failed || m_finished) return !m_failed;
    m_state->z.avail_in = 0;
    if (!deflateSome(Z_SYNC_FLUSH)) return false;
    if (std::fflush(m_file) != 0) {
        m_failed = true;
        return false;
    }
    if (m_segmentBytes > 0 && !m_segments.empty() && m_segments.back().compressed >= m_segmentBytes &&
        m_segments.back().to > m_segments.back().from)
        return startNextSegment();
    return true;
}

bool RawOutputWriter::finish() {
    if (m_failed) return false;
    if (m_finished) return true;
    m_state->z.avail_in = 0;
    if (!deflateSome(Z_FINISH)) return false;
    m_finished = true;
    if (std::fflush(m_file) != 0) {
        m_failed = true;
        return false;
    }
    return true;
}

RawOutputReader::RawOutputReader(const std::string& path) {
    const int index = rawOutputSegmentIndex(fileNameOf(path));
    if (index >= 0) {
        m_dir = folderOf(path);
        m_segment = index;
        m_position = std::max<int64_t>(0, rawOutputSegmentStart(path));
    }
    open(path);
}

void RawOutputReader::open(const std::string& path) {
    // gzopen reads a file that is not gzip as it is ("transparent"): Slurm's plain output.log too.
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno ? errno : ENOMEM));
    gzbuffer(gz, 1 << 20);
    if (m_gz) gzclose_r(static_cast<gzFile>(m_gz));
    m_gz = gz;
    m_path = path;
}

RawOutputReader::~RawOutputReader() {
    if (m_gz) gzclose_r(static_cast<gzFile>(m_gz));
}

// At the end of a segment: once the next one exists this one is complete (the writer finishes a
// segment before it makes the next), so what it still holds is read first, then the next is opened.
bool RawOutputReader::nextSegment() {
    if (m_segment < 0) return false;
    const std::string next = rawOutputSegmentPath(m_dir, m_segment + 1);
    if (!isFile(next)) return false;
    try {
        open(next);
    } catch (const std::exception& e) {
        m_error = e.what();
        return false;
    }
    ++m_segment;
    return true;
}

size_t RawOutputReader::read(char* into, size_t size) {
    if (!m_error.empty() || size == 0) return 0;
    for (int attempt = 0;; ++attempt) {
        // More may have been written since zlib last met the file's end (it reads ahead): read on
        // from where the stream stopped.
        gzclearerr(static_cast<gzFile>(m_gz));
        const int got = gzread(static_cast<gzFile>(m_gz), into, static_cast<unsigned>(std::min<size_t>(size, 1u << 30)));
        if (got > 0) {
            m_position += got;
            return static_cast<size_t>(got);
        }
        int code = Z_OK;
        const char* what = gzerror(static_cast<gzFile>(m_gz), &code);
        // A stream cut after a sync flush ends here: the supervisor stopped before its trailer.
        if (got < 0 && code != Z_BUF_ERROR) {
            m_error = m_path + " is damaged after " + std::to_string(m_position) + " bytes: " + (what ? what : "?");
            return 0;
        }
        // The segment's end, read once more after the next one was seen: on into the next one.
        if (attempt == 0 && m_segment >= 0 && isFile(rawOutputSegmentPath(m_dir, m_segment + 1))) continue;
        if (attempt == 1 && nextSegment()) {
            attempt = -1;
            continue;
        }
        return 0;
    }
}

bool RawOutputReader::seek(int64_t offset) {
    if (offset < m_position) return false; // the output before position() was removed, or is read
    return skip(offset - m_position);
}

bool RawOutputReader::skip(int64_t bytes) {
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(bytes, 1 << 20)));
    while (bytes > 0) {
        const size_t got = read(buf.data(), static_cast<size_t>(std::min<int64_t>(bytes, int64_t(buf.size()))));
        if (got == 0) return false;
        bytes -= static_cast<int64_t>(got);
    }
    return true;
}

std::string readRawOutput(const std::string& path) {
    RawOutputReader reader(path);
    std::string text;
    std::vector<char> buf(1 << 16);
    for (size_t got; (got = reader.read(buf.data(), buf.size())) > 0;) text.append(buf.data(), got);
    if (!reader.error().empty()) throw std::runtime_error(reader.error());
    return text;
}

} // namespace parallax
