#include "core/spec/SpecFields.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace parallax {
namespace {

std::string readReference() {
    const char* source = std::getenv("PARALLAX_SOURCE_DIR");
    const std::string root = source && *source ? source : PARALLAX_TEST_SOURCE_DIR;
    std::ifstream in(root + "/docs/spec.md");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// docs/spec.md documents every field under its section's heading.
TEST(SpecReference, DocumentsEveryField) {
    const std::string doc = readReference();
    ASSERT_FALSE(doc.empty()) << "docs/spec.md is missing";
    RunSpec spec;
    for (const SpecField& field : specFields(spec)) {
        const std::string section = field.section;
        const std::string heading = section.empty() ? "## `name`" : "## `[" + section + "]`";
        const size_t start = doc.find(heading);
        ASSERT_NE(start, std::string::npos) << heading << " is missing";
        const size_t end = doc.find("\n## ", start + heading.size());
        const std::string part = doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
        EXPECT_NE(part.find("`" + std::string(field.key) + "`"), std::string::npos)
            << field.path() << " is not documented under " << heading;
    }
}

} // namespace
} // namespace parallax
