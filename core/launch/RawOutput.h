#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace parallax {

// A run's raw output: every byte its launcher printed, kept beside the store as the spool of rows
// the store has not taken (OutputRouter) and the record `import` and `show` read again. The
// supervisor writes it gzip-compressed, as output.log.gz; a run under sbatch has Slurm write a
// plain output.log. Offsets into it are always those of the uncompressed bytes.

// The raw output file of the run folder `runDir`: output.log.gz where the supervisor wrote one,
// else output.log (Slurm's, or one of a run before compression); empty when it has neither.
std::string rawOutputFile(const std::string& runDir);
// The same, naming output.log.gz when the folder has neither (what the supervisor writes).
std::string rawOutputPath(const std::string& runDir);
// The file name the supervisor writes.
constexpr char kCompressedOutputName[] = "output.log.gz";

// Writes the raw output through gzip (deflate level 1, about 1 % of a core at a thousand ranks'
// output) into a file the caller owns. Each flush() makes everything written so far readable from
// the file (a sync flush): what a crash leaves is a gzip stream that ends after the last flush,
// which RawOutputReader reads to that point. finish() ends the stream with its trailer. A failure
// returns false with errno set, and every later call fails.
class RawOutputWriter {
public:
    explicit RawOutputWriter(std::FILE* file);
    ~RawOutputWriter();
    RawOutputWriter(const RawOutputWriter&) = delete;
    RawOutputWriter& operator=(const RawOutputWriter&) = delete;

    bool write(const char* data, size_t size);
    bool flush();
    bool finish();
    int64_t bytesIn() const { return m_in; }   // uncompressed bytes written
    int64_t bytesOut() const { return m_out; } // compressed bytes handed to the file

private:
    bool deflateSome(int mode);
    struct State;
    std::unique_ptr<State> m_state;
    std::FILE* m_file;
    bool m_failed = false;
    bool m_finished = false;
    int64_t m_in = 0, m_out = 0;
};

// Reads a raw output file from its start, gzip or plain alike, as uncompressed bytes. A gzip
// stream cut short (the supervisor died between flushes) reads to where it was cut; a damaged one
// stops with error() saying where.
class RawOutputReader {
public:
    explicit RawOutputReader(const std::string& path); // throws std::runtime_error when it cannot open
    ~RawOutputReader();
    RawOutputReader(const RawOutputReader&) = delete;
    RawOutputReader& operator=(const RawOutputReader&) = delete;

    // Up to `size` bytes; 0 at the end (or at an error). After the end, a later read goes on with
    // what the writer has added since (the file of a run still going).
    size_t read(char* into, size_t size);
    // Reads past `bytes` bytes; false when the file ends first.
    bool skip(int64_t bytes);
    int64_t position() const { return m_position; }
    const std::string& error() const { return m_error; }

private:
    void* m_gz;
    std::string m_path;
    int64_t m_position = 0;
    std::string m_error;
};

// The whole uncompressed content of a raw output file (for tests and small files).
std::string readRawOutput(const std::string& path);

} // namespace parallax
