#pragma once

#include <gtest/gtest.h>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax::test {

// A fresh folder for one test, removed afterwards. POSIX calls rather than std::filesystem, for
// the reason trainer/data/DatasetUtils.h gives.
class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/parallax-" + info->test_suite_name() + "-" +
                              info->name() + "-XXXXXX";
        std::vector<char> buffer(pattern.begin(), pattern.end());
        buffer.push_back('\0');
        if (!::mkdtemp(buffer.data())) throw std::runtime_error("cannot create a folder like " + pattern);
        m_path = buffer.data();
    }
    ~TempDir() { ::nftw(m_path.c_str(), &removeEntry, 16, FTW_DEPTH | FTW_PHYS); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return m_path; }
    std::string file(const std::string& name) const { return m_path + "/" + name; }

    // Writes `bytes` to `name`, creating the folders on its way.
    void write(const std::string& name, const std::string& bytes) const {
        for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1))
            ::mkdir(file(name.substr(0, slash)).c_str(), 0755);
        std::ofstream out(file(name), std::ios::binary);
        out << bytes;
    }

private:
    static int removeEntry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

    std::string m_path;
};

} // namespace parallax::test
