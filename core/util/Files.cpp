#include "core/util/Files.h"

#include "core/util/FileWriter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace parallax {

namespace {

std::string reason() {
    return errnoText(errno);
}

} // namespace

std::string errnoText(int err) {
    std::string text = std::strerror(err);
    // glibc capitalizes the first word ("No space left on device"); acronyms stay as they are.
    if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
        std::islower(static_cast<unsigned char>(text[1])))
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return text;
}

bool pathExists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool isRegularFile(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDirectory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int64_t fileSize(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return -1;
    return static_cast<int64_t>(st.st_size);
}

std::string joinPath(const std::string& folder, const std::string& name) {
    if (folder.empty()) return name;
    if (folder.back() == '/') return folder + name;
    return folder + "/" + name;
}

std::string baseName(const std::string& path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const auto slash = p.rfind('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string parentPath(const std::string& path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const auto slash = p.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : p.substr(0, slash);
}

std::vector<std::string> listDirectory(const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (!dir) throw FileError("cannot read the folder " + path + ": " + reason());
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

void createDirectories(const std::string& path) {
    if (path.empty() || isDirectory(path)) return;
    const std::string parent = parentPath(path);
    if (parent != path && parent != "." && parent != "/") createDirectories(parent);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        throw FileError("cannot create the folder " + path + ": " + reason());
}

void removeAll(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        for (const std::string& name : listDirectory(path)) removeAll(joinPath(path, name));
        if (::rmdir(path.c_str()) != 0) throw FileError("cannot remove " + path + ": " + reason());
    } else if (::unlink(path.c_str()) != 0) {
        throw FileError("cannot remove " + path + ": " + reason());
    }
}

void renamePath(const std::string& from, const std::string& to) {
    if (::rename(from.c_str(), to.c_str()) != 0)
        throw FileError("cannot rename " + from + " to " + to + ": " + reason());
}

void writeFileAtomic(const std::string& path, const std::string& contents) {
    // A folder cannot be replaced by a file: said before anything is written beside it.
    if (isDirectory(path)) throw FileError(path + " is a folder; give the path of a file in it");
    const std::string tmp = path + ".tmp";
    FileWriter out(tmp);
    out.write(contents.data(), contents.size());
    if (!out.finish()) {
        ::unlink(tmp.c_str()); // frees what a full disk took; `path` keeps its old contents
        throw FileError(out.describe(path));
    }
    try {
        renamePath(tmp, path);
    } catch (...) {
        ::unlink(tmp.c_str()); // nothing is left beside `path` when it cannot be replaced
        throw;
    }
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError("cannot read " + path + ": " + reason());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace parallax
