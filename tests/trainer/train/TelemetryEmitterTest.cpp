// A rank's stdout failing must neither end the rank nor garble what the supervisor reads: a reader
// gone raises no SIGPIPE, a non-blocking stdout loses no part of a line, and a line cut by a write
// error is ended so that the next one arrives whole.

#include "trainer/train/TelemetryEmitter.h"

#include "core/telemetry/TelemetryCodec.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace parallax;

namespace {

std::vector<std::string> linesOf(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string messageOf(const std::string& line) {
    const DecodedLine d = decodeLine(line);
    const auto* log = d.kind == DecodedLine::Kind::Event ? std::get_if<LogEvent>(&d.event) : nullptr;
    return log ? log->message : "<not a log event: " + line + ">";
}

TEST(TelemetryEmitter, AReaderGoneRaisesNoSignalAndLeavesTheMaskAsItWas) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ::close(fds[0]);
    // The default action ends this process, which is what a rank would suffer.
    auto* previous = std::signal(SIGPIPE, SIG_DFL);
    {
        TelemetryEmitter out(0, fds[1]);
        out.info("nobody reads this");
        out.info("nor this");
    }
    std::signal(SIGPIPE, previous);
    ::close(fds[1]);
    sigset_t pending, mask;
    sigpending(&pending);
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "the SIGPIPE of the write was taken back";
    EXPECT_FALSE(sigismember(&mask, SIGPIPE)) << "the thread's mask is restored";
}

TEST(TelemetryEmitter, ANonBlockingStdoutLosesNoPartOfALine) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK), 0);
    std::string received;
    std::thread reader([&] {
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(fds[0], buf, sizeof buf);
            if (n <= 0) break;
            received.append(buf, static_cast<size_t>(n));
            std::this_thread::sleep_for(std::chrono::microseconds(200)); // slower than the writer
        }
    });
    constexpr int kLines = 40;
    const std::string payload(20000, 'x'); // each line is more than a pipe's buffer holds at once
    {
        TelemetryEmitter out(0, fds[1]);
        for (int i = 0; i < kLines; ++i) out.info(std::to_string(i) + payload);
    }
    ::close(fds[1]);
    reader.join();
    ::close(fds[0]);
    const auto lines = linesOf(received);
    ASSERT_EQ(lines.size(), static_cast<size_t>(kLines));
    for (int i = 0; i < kLines; ++i) EXPECT_EQ(messageOf(lines[static_cast<size_t>(i)]), std::to_string(i) + payload);
}

TEST(TelemetryEmitter, ALineCutByAWriteErrorIsEndedBeforeTheNext) {
    char path[] = "/tmp/parallax-emitter-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::unlink(path);
    // A file-size limit cuts the first line after 100 bytes (EFBIG, as a full disk would with ENOSPC).
    rlimit saved{};
    ::getrlimit(RLIMIT_FSIZE, &saved);
    auto* previous = std::signal(SIGXFSZ, SIG_IGN);
    TelemetryEmitter out(0, fd);
    rlimit small = saved;
    small.rlim_cur = 100;
    ::setrlimit(RLIMIT_FSIZE, &small);
    out.info(std::string(300, 'a'));
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous);
    out.info("the next line");
    out.info("and another");

    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0;)
        text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    const auto lines = linesOf(text);
    ASSERT_EQ(lines.size(), 3u) << text;
    EXPECT_EQ(lines[0].size(), 100u) << "the cut line ends where the write failed";
    EXPECT_NE(decodeLine(lines[0]).kind, DecodedLine::Kind::Event);
    EXPECT_EQ(messageOf(lines[1]), "the next line");
    EXPECT_EQ(messageOf(lines[2]), "and another");
}

} // namespace
