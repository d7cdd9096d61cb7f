#pragma once

#include "core/launch/LauncherFailureParser.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace parallax {

enum class OutputStream { Stdout, Stderr };
const char* streamName(OutputStream s); // "stdout" | "stderr"

// How the launcher marks which rank printed a line.
enum class LauncherFormat {
    OpenMpi, // mpirun --tag-output: "[1,3]<stdout>:payload" (<stderr>, <stddiag> too)
    Slurm,   // srun --label: "  3: payload"
};

struct DemuxedLine {
    int rank = -1;                     // -1: the launcher's own output
    OutputStream stream = OutputStream::Stdout;
    std::string_view payload;          // valid during the sink call only
};

// Splits the launcher's output into per-rank lines and watches its own lines for a failure report.
//
// OpenMPI forwards a rank's output in chunks of at most ~4 KiB and tags each chunk, not each line:
// a long line arrives as "[1,1]<stdout>:part1[1,0]<stdout>:other line\n" ... "[1,1]<stdout>:part2\n",
// interleaved with other ranks' chunks, and a rank that writes half a line and pauses does the
// same. So a tag in the middle of a launcher line ends the previous rank's chunk, which is kept per
// (rank, stream) until the newline that completes it arrives.
class OutputDemux {
public:
    using Sink = std::function<void(const DemuxedLine&)>;
    static constexpr size_t kMaxLine = 16 * 1024 * 1024; // a rank line beyond this is cut

    explicit OutputDemux(LauncherFormat format) : m_format(format) {}

    // One complete line of the launcher's stdout or stderr pipe, without its newline.
    void feed(OutputStream pipe, std::string_view line, const Sink& sink);
    // The launcher's output ended: emits rank lines left incomplete and closes the failure parser.
    void finish(const Sink& sink);

    // The first failure the launcher reported, if any.
    const std::optional<LauncherFailure>& failure() const { return m_failures.failure(); }
    LauncherFormat format() const { return m_format; }

    // One whole line in isolation (no chunk reassembly): its rank, stream and payload.
    static DemuxedLine parseLine(LauncherFormat format, OutputStream pipe, std::string_view line);

    struct Tag {
        int rank = -1;
        OutputStream stream = OutputStream::Stdout;
        size_t length = 0; // bytes of the tag itself
    };
    // "[1,3]<stdout>:" at the start of `text`.
    static std::optional<Tag> parseOpenMpiTag(std::string_view text);
    // "  3: " at the start of `text`.
    static std::optional<Tag> parseSlurmLabel(std::string_view text);

private:
    void feedOpenMpi(OutputStream pipe, std::string_view line, const Sink& sink);
    void deliver(int rank, OutputStream stream, std::string_view payload, const Sink& sink);

    LauncherFormat m_format;
    LauncherFailureParser m_failures;
    std::map<std::pair<int, int>, std::string> m_partial; // (rank, stream) -> chunks of an unfinished line
    std::string m_joined;
};

} // namespace parallax
