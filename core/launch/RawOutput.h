#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// A run's raw output: every byte its launcher printed, kept beside the store as the spool of rows
// the store has not taken (OutputRouter) and the record `import` and `show` read again. The
// supervisor writes it gzip-compressed, as output.log.gz; a run under sbatch has Slurm write a
// plain output.log. Offsets into it are always those of the uncompressed bytes.
//
// The supervisor's output comes in segments (retention.output_segment_mb): output.log.gz is the
// first, then output.1.log.gz, output.2.log.gz... in order, each a gzip stream of its own whose
// header comment says the offset it starts at ("parallax-output from=N"). Together they are one
// stream of bytes; the oldest may have been removed once their rows were stored
// (retention.output_keep_mb), and the stream then starts at the first segment left.

// The first raw output file of the run folder `runDir`: the oldest segment the supervisor wrote
// (output.log.gz, or output.N.log.gz once older ones were removed), else output.log (Slurm's, or
// one of a run before compression); empty when it has none.
std::string rawOutputFile(const std::string& runDir);
// The same, naming output.log.gz when the folder has none (what the supervisor writes).
std::string rawOutputPath(const std::string& runDir);
// The file name the supervisor writes (its first segment).
constexpr char kCompressedOutputName[] = "output.log.gz";

// Segment `index` of the supervisor's output in `runDir`: output.log.gz (0), output.<index>.log.gz.
std::string rawOutputSegmentPath(const std::string& runDir, int index);
// The segment index a file name stands for (output.log.gz: 0, output.3.log.gz: 3); -1 for any other.
int rawOutputSegmentIndex(const std::string& fileName);
struct RawOutputSegmentFile {
    int index = 0;
    std::string path;
};
// The segments present in `runDir`, oldest first (none for a folder of a plain output.log).
std::vector<RawOutputSegmentFile> rawOutputSegments(const std::string& runDir);
// The uncompressed offset a segment starts at, from its gzip header (0 for segment 0 and for a file
// that does not say); -1 when the file cannot be read or holds no header yet.
int64_t rawOutputSegmentStart(const std::string& path);

// Writes the raw output through gzip (deflate level 1, about 1 % of a core at a thousand ranks'
// output) into a file the caller owns. Each flush() makes everything written so far readable from
// the file (a sync flush): what a crash leaves is a gzip stream that ends after the last flush,
// which RawOutputReader reads to that point. finish() ends the stream with its trailer. A failure
// returns false with errno set, and every later call fails.
//
// With segments (setSegments), a flush() after which the current segment holds `segmentBytes` or
// more compressed bytes finishes that segment's stream and opens the next one (readable by its
// owner only), whose header says the offset it starts at. The first file stays the caller's; the
// writer closes those it opened.
class RawOutputWriter {
public:
    explicit RawOutputWriter(std::FILE* file);
    ~RawOutputWriter();
    RawOutputWriter(const RawOutputWriter&) = delete;
    RawOutputWriter& operator=(const RawOutputWriter&) = delete;

    // One segment written: bytes [from, to) of the stream (`to` grows while it is the current one),
    // `compressed` bytes in its file.
    struct Segment {
        int index = 0;
        std::string path;
        int64_t from = 0;
        int64_t to = 0;
        int64_t compressed = 0;
    };
    // `file` (as given to the constructor) is segment 0 of `runDir`; 0 bytes: one file, no segments.
    void setSegments(std::string runDir, int64_t segmentBytes);

    bool write(const char* data, size_t size);
    bool flush();
    bool finish();
    int64_t bytesIn() const { return m_in; }   // uncompressed bytes written
    int64_t bytesOut() const { return m_out; } // compressed bytes handed to the files
    // The segments not yet removed, oldest first; the last is the one being written.
    const std::vector<Segment>& segments() const { return m_segments; }
    // The oldest segment's file was removed (never the current one): it is no longer listed.
    void forgetOldestSegment();

private:
    bool deflateSome(int mode);
    bool startNextSegment();
    struct State;
    std::unique_ptr<State> m_state;
    std::FILE* m_file;
    std::FILE* m_owned = nullptr; // a later segment's file, opened here
    std::string m_runDir;
    int64_t m_segmentBytes = 0;
    std::vector<Segment> m_segments;
    bool m_failed = false;
    bool m_finished = false;
    int64_t m_in = 0, m_out = 0;
};

// Reads a raw output file from its start, gzip or plain alike, as uncompressed bytes. A gzip
// stream cut short (the supervisor died between flushes) reads to where it was cut; a damaged one
// stops with error() saying where. A segment (output.log.gz, output.N.log.gz) is read on into the
// segments after it, as one stream; position() starts at the offset of the first one read.
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
    // Reads on to the stream's offset `offset`; false when the stream ends first, or when it
    // stands past `offset` already (the segments before position() were removed): it stays there.
    bool seek(int64_t offset);
    int64_t position() const { return m_position; }
    const std::string& error() const { return m_error; }

private:
    bool nextSegment();
    void open(const std::string& path);
    void* m_gz = nullptr;
    std::string m_path;
    std::string m_dir;      // segments: the run folder...
    int m_segment = -1;     // ...and the segment being read; -1: a single file
    int64_t m_position = 0;
    std::string m_error;
};

// The whole uncompressed content of a raw output file (for tests and small files).
std::string readRawOutput(const std::string& path);

} // namespace parallax
