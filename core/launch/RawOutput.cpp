#include "core/launch/RawOutput.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
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

} // namespace

std::string rawOutputFile(const std::string& runDir) {
    if (runDir.empty()) return {};
    const std::string compressed = runDir + "/" + kCompressedOutputName;
    if (isFile(compressed)) return compressed;
    const std::string plain = runDir + "/output.log";
    return isFile(plain) ? plain : std::string();
}

std::string rawOutputPath(const std::string& runDir) {
    const std::string found = rawOutputFile(runDir);
    return found.empty() ? runDir + "/" + kCompressedOutputName : found;
}

struct RawOutputWriter::State {
    z_stream z{};
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

RawOutputReader::RawOutputReader(const std::string& path) : m_path(path) {
    // gzopen reads a file that is not gzip as it is ("transparent"): Slurm's plain output.log too.
    m_gz = gzopen(path.c_str(), "rb");
    if (!m_gz) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno ? errno : ENOMEM));
    gzbuffer(static_cast<gzFile>(m_gz), 1 << 20);
}

RawOutputReader::~RawOutputReader() {
    if (m_gz) gzclose_r(static_cast<gzFile>(m_gz));
}

size_t RawOutputReader::read(char* into, size_t size) {
    if (!m_error.empty() || size == 0) return 0;
    // More may have been written since zlib last met the file's end (it reads ahead): read on from
    // where the stream stopped.
    gzclearerr(static_cast<gzFile>(m_gz));
    const int got = gzread(static_cast<gzFile>(m_gz), into, static_cast<unsigned>(std::min<size_t>(size, 1u << 30)));
    if (got > 0) {
        m_position += got;
        return static_cast<size_t>(got);
    }
    int code = Z_OK;
    const char* what = gzerror(static_cast<gzFile>(m_gz), &code);
    // A stream cut after a sync flush ends here: the supervisor stopped before its trailer.
    if (got < 0 && code != Z_BUF_ERROR)
        m_error = m_path + " is damaged after " + std::to_string(m_position) + " bytes: " + (what ? what : "?");
    return 0;
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
