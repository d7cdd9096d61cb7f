#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace parallax {

// Writes one file with write(2), checking every call, then fsync(2) and close(2), where a full disk
// or a failing file server may show only then. Made for producers that cannot take an error midway:
// LibTorch's archive writer aborts the process when its sink reports a short write (an exception
// thrown from a destructor, or its "unexpected pos" check). So after the first error nothing more
// reaches the file, but write() goes on accepting and counting bytes until the producer is done,
// and the caller reads the error afterwards, with how far the file got.
class FileWriter {
public:
    // Creates or truncates `path`; an error is kept (ok() is false), not thrown.
    explicit FileWriter(const std::string& path);
    ~FileWriter(); // closes without syncing when finish() was not called
    FileWriter(const FileWriter&) = delete;
    FileWriter& operator=(const FileWriter&) = delete;

    // Returns `size` whatever happened, for sinks that must not see a short write.
    size_t write(const void* data, size_t size);
    // fsync, then close. False when this or anything before failed.
    bool finish();

    bool ok() const { return m_errno == 0; }
    const std::string& path() const { return m_path; }
    int64_t bytesWritten() const { return m_written; } // that reached the file
    int64_t bytesOffered() const { return m_offered; } // handed to write()
    // The first error's text, e.g. "no space left on device"; "" while ok().
    std::string reason() const;
    // "<reason> writing <what> (<path>): <n> of <m> bytes written", or with "creating" when the file
    // could not be opened, or "…, fsync failed" when every byte was written but not synced.
    std::string describe(const std::string& what) const;

private:
    enum class Call { None, Open, Write, Sync, Close };
    void fail(Call call);
    std::string m_path;
    int m_fd = -1;
    int m_errno = 0;
    Call m_failed = Call::None;
    int64_t m_written = 0;
    int64_t m_offered = 0;
};

} // namespace parallax
