// Host lists written into a spec and the profile launch.cluster names: hosts counted as hosts, not
// entries; an excluded host excluded however often it is named; a profile named by a name or by the
// path of its .toml file, never any other file; and a list of a million bad entries reported in a
// few lines.
#include "core/spec/ClusterProfile.h"
#include "core/spec/HostListChecks.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

namespace fs = std::filesystem;

const char* kResume = "name = \"h\"\n[train]\ncheckpoint_every = 10\n[launch]\ntarget = \"hosts\"\n"
                      "on_host_failure = \"resume\"\n";

TEST(HostListChecks, OneHostListedTwiceIsOneHost) {
    const RunSpec spec = parseSpec(std::string(kResume) + "hosts = [\"h:1\", \"h:1\"]\nmin_hosts = 2\n", "twice.toml");
    EXPECT_EQ(distinctHostCount(spec.launch), 1);
    const std::vector<SpecIssue> issues = validateSpec(spec);
    EXPECT_TRUE(hasIssue(issues, "launch.min_hosts", "launch.min_hosts = 2 but launch.hosts names 1 host(s)", false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "launch.hosts",
                         "launch.hosts[1] = \"h:1\" names h again (as launch.hosts[0] does); list each host once "
                         "with all its slots, e.g. \"h:2\"",
                         false))
        << describe(issues);

    // Hosts left out do not count towards min_hosts either.
    const RunSpec excluded =
        parseSpec(std::string(kResume) + "hosts = [\"a:1\", \"b:1\"]\nexclude_hosts = [\"b\"]\nmin_hosts = 2\n");
    EXPECT_TRUE(hasIssue(validateSpec(excluded), "launch.min_hosts", "names 1 host(s) besides launch.exclude_hosts",
                         false))
        << describe(validateSpec(excluded));
    const RunSpec two = parseSpec(std::string(kResume) + "hosts = [\"a:1\", \"b:1\"]\nmin_hosts = 2\n");
    EXPECT_FALSE(hasErrors(validateSpec(two))) << describe(validateSpec(two));
}

TEST(HostListChecks, AHostExcludedTwiceIsExcludedOnce) {
    const RunSpec spec = parseSpec(
        "name = \"x\"\n[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\", \"b:1\"]\nexclude_hosts = [\"b\", \"b\"]\n");
    const std::vector<SpecIssue> issues = validateSpec(spec);
    EXPECT_FALSE(hasErrors(issues)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "launch.exclude_hosts", "names \"b\" more than once; once is enough", true))
        << describe(issues);
    EXPECT_EQ(resolveHosts(spec).hosts, (std::vector<std::string>{"a:1"}));
    RunSpec missing = spec;
    missing.launch.exclude_hosts = {"c", "c"};
    try {
        resolveHosts(missing);
        FAIL() << "a host that is not listed was excluded";
    } catch (const SpecError& e) {
        EXPECT_EQ(std::string(e.what()), "launch.exclude_hosts names \"c\", which is not among the hosts of launch.hosts");
    }
}

TEST(HostListChecks, AMillionBadEntriesAreAFewIssues) {
    RunSpec spec = parseSpec("name = \"many\"\n[launch]\ntarget = \"hosts\"\n");
    spec.launch.hosts.assign(800000, "bad");
    spec.launch.hosts.push_back("ok:1");
    spec.launch.hosts.push_back("ok:1");
    spec.launch.exclude_hosts.assign(800000, "gone");
    const std::vector<SpecIssue> issues = validateSpec(spec);
    EXPECT_LE(issues.size(), 4 * (kMostEntryIssues + 1) + 4) << issues.size();
    EXPECT_TRUE(hasIssue(issues, "launch.hosts", "launch.hosts: 799990 more entries that are not \"name:slots\" "
                                                 "(800000 in all; the first 10 are listed above)",
                         false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "launch.hosts", "launch.hosts[800001] = \"ok:1\" names ok again", false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "launch.exclude_hosts", "names \"gone\", which is not in launch.hosts", false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "launch.exclude_hosts", "799989 more hosts named again (799999 in all", true))
        << describe(issues);
    EXPECT_LT(formatIssues(issues).size(), 20000u);
}

TEST(HostListChecks, IssuesArePrintedUpToALimitAndCounted) {
    std::vector<SpecIssue> issues;
    for (int i = 0; i < 1000; ++i) issues.push_back({"f", "f: error " + std::to_string(i), false});
    for (int i = 0; i < 3; ++i) issues.push_back({"g", "g: warning " + std::to_string(i), true});
    const std::string text = formatIssues(issues);
    EXPECT_NE(text.find("f: error 49\n"), std::string::npos);
    EXPECT_EQ(text.find("f: error 50\n"), std::string::npos);
    EXPECT_NE(text.find("... and 950 more errors (1000 in all; the first 50 are listed)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("warning: g: warning 2\n"), std::string::npos) << "warnings have a limit of their own";
}

class ProfileFolder : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/parallax-profiles-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        ::setenv("PARALLAX_CLUSTERS", m_dir.c_str(), 1);
    }
    void TearDown() override {
        ::unsetenv("PARALLAX_CLUSTERS");
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    std::string errorOf(const std::string& cluster) {
        try {
            findClusterProfile(cluster);
        } catch (const SpecError& e) {
            return e.what();
        }
        return "";
    }
    fs::path m_dir;
};

TEST_F(ProfileFolder, AClusterPathMustBeAProfileFile) {
    // Not read at all: the path is no .toml file.
    const std::string passwd = errorOf("../../../../etc/passwd");
    EXPECT_EQ(passwd.rfind("launch.cluster = \"../../../../etc/passwd\" is a path, but not of a cluster profile", 0), 0u)
        << passwd;
    EXPECT_NE(passwd.find("write the profile's name"), std::string::npos) << passwd;
    RunSpec spec = parseSpec("name = \"c\"\n[launch]\ntarget = \"hosts\"\ncluster = \"../../../../etc/passwd\"\n");
    EXPECT_TRUE(hasIssue(validateSpec(spec), "launch.cluster", "is a path, but not of a cluster profile", false))
        << describe(validateSpec(spec));

    // A .toml file that is no profile, a folder, a missing file: each named as launch.cluster's.
    std::ofstream(m_dir / "notes.toml") << "title = \"notes\"\n";
    const std::string notes = errorOf((m_dir / "notes.toml").string());
    EXPECT_EQ(notes.rfind("launch.cluster = \"" + (m_dir / "notes.toml").string() + "\": " + (m_dir / "notes.toml").string(), 0),
              0u)
        << notes;
    fs::create_directory(m_dir / "dir.toml");
    EXPECT_NE(errorOf((m_dir / "dir.toml").string()).find("\": is not a file at"), std::string::npos);
    EXPECT_NE(errorOf((m_dir / "none.toml").string()).find("\": there is no file at"), std::string::npos);

    // A profile found by name whose file is wrong names launch.cluster and the file.
    std::ofstream(m_dir / "lab.toml") << "hosts = [\"a:1\", \"a:2\"]\n";
    const std::string lab = errorOf("lab");
    EXPECT_EQ(lab.rfind("launch.cluster = \"lab\": " + (m_dir / "lab.toml").string() + ": hosts[1] names a again", 0), 0u)
        << lab;
    std::ofstream(m_dir / "lab.toml") << "hosts = [\"a:1\", \"b:2\"]\n";
    EXPECT_EQ(findClusterProfile("lab").hosts.size(), 2u);
    EXPECT_EQ(findClusterProfile((m_dir / "lab.toml").string()).hosts.size(), 2u);
}

} // namespace
} // namespace parallax
