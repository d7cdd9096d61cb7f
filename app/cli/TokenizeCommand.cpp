#include "app/cli/CliError.h"
#include "app/cli/Commands.h"

#include <cstdint>
#include <cstdio>
#include <iostream>

#if PARALLAX_WITH_TEXT
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"

#include <cerrno>
#include <cstdlib>
#endif

namespace parallax {

#if PARALLAX_WITH_TEXT

namespace {

void writeOut(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
        throw CliError("standard output could not be written");
}

// "12 7 151643" -> ids; CliError naming the line and the word that is not an id.
std::vector<int32_t> parseIds(const std::string& line, int64_t lineNumber) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < line.size()) {
        if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
            ++i;
            continue;
        }
        const size_t end = line.find_first_of(" \t\r", i);
        const std::string word = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
        char* rest = nullptr;
        errno = 0;
        const long long id = std::strtoll(word.c_str(), &rest, 10);
        if (word.empty() || *rest != '\0' || errno == ERANGE || id < 0 || id > INT32_MAX)
            throw CliError("line " + std::to_string(lineNumber) + " of standard input: \"" + word +
                           "\" is not a token id (--decode reads ids separated by spaces)");
        ids.push_back(static_cast<int32_t>(id));
        i += word.size();
    }
    return ids;
}

} // namespace

int tokenizeCommand(const TokenizeCommandOptions& o) {
    Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::load(o.tokenizer);
        } catch (const TokenizerError& e) {
            throw CliError(e.what());
        }
    }();
    std::ios::sync_with_stdio(false);
    std::string line, out;
    std::vector<int32_t> ids;
    int64_t lineNumber = 0;
    // Lines end at LF only: a CR stays in the line, as do NUL and invalid UTF-8.
    while (std::getline(std::cin, line)) {
        ++lineNumber;
        out.clear();
        if (o.decode) {
            try {
                out = tokenizer.decode(parseIds(line, lineNumber));
            } catch (const TokenizerError& e) {
                throw CliError("line " + std::to_string(lineNumber) + " of standard input: " + e.what());
            }
        } else {
            ids.clear();
            tokenizer.encode(line, ids, nullptr);
            for (size_t i = 0; i < ids.size(); ++i) {
                if (i)
                    out += ' ';
                out += std::to_string(ids[i]);
            }
        }
        out += '\n';
        writeOut(out);
    }
    if (std::fflush(stdout) != 0)
        throw CliError("standard output could not be written");
    return ExitCode::Ok;
}

#else

int tokenizeCommand(const TokenizeCommandOptions&) {
    throw CliError("this parallax-cli was built without PCRE2 and ICU, which the tokenizer needs; install "
                   "libpcre2-dev and libicu-dev (packaging/deps.sh) and build it again");
}

#endif

} // namespace parallax
