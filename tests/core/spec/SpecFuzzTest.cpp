// Random and extreme specs through the reader, the validator (with and without a machine) and the
// estimates: none may crash, hang or take a second. A failure prints the spec's text.
#include "core/spec/Estimates.h"
#include "core/spec/LauncherOptions.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <type_traits>
#include <variant>

namespace parallax {
namespace {

constexpr int kSpecs = 5000;
constexpr double kMostSeconds = 1.0;

class SpecGenerator {
public:
    explicit SpecGenerator(uint64_t seed) : m_rng(seed) {}

    // The TOML text of one spec: either a valid spec with a few fields changed (so that the later
    // checks, the machine's and the estimates, see extreme values too), or every field random.
    std::string next() {
        RunSpec base;
        base.parallel.dp = 2;
        std::map<std::string, std::string> values; // path -> TOML value text
        for (SpecField& f : specFields(base)) {
            const std::string text = fieldValueText(f.ref);
            if (!text.empty()) values[f.path()] = text; // "" is an unset optional
        }
        const bool mutateOnly = coin(0.5);
        const size_t changes = mutateOnly ? 1 + below(3) : values.size();
        for (size_t i = 0; i < changes; ++i) {
            const std::vector<std::string>& paths = specFieldPaths();
            const std::string& path = paths[mutateOnly ? below(paths.size()) : i % paths.size()];
            if (!mutateOnly && coin(0.3)) {
                values.erase(path);
                continue;
            }
            values[path] = valueFor(path);
        }
        if (coin(0.1)) values["train.stpes"] = integer();
        if (coin(0.05)) values["paralel.dp"] = integer();
        return render(values);
    }

private:
    std::mt19937_64 m_rng;

    bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(m_rng) < p; }
    size_t below(size_t n) { return static_cast<size_t>(m_rng() % n); }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }

    std::string integer() {
        static const std::vector<int64_t> extremes = {
            std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 1, -(int64_t(1) << 62), -1000, -2,
            -1, 0, 1, 2, 3, 4, 6, 7, 8, 12, 16, 50, 64, 255, 256, 1000, 1023, 1024, 4096, 65536,
            (int64_t(1) << 14) + 1, (int64_t(1) << 20) - 3, int64_t(1) << 20, (int64_t(1) << 20) + 1, int64_t(1) << 24,
            (int64_t(1) << 31) - 1, int64_t(1) << 32, int64_t(1) << 40, 4611686018427387904, 999999999999999989,
            std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::max()};
        if (coin(0.7)) return std::to_string(pick(extremes));
        if (coin(0.5)) return std::to_string(static_cast<int64_t>(m_rng() % 100000));
        return std::to_string(static_cast<int64_t>(m_rng()));
    }

    std::string floating() {
        static const std::vector<std::string> special = {"nan", "-nan", "inf", "-inf", "0.0", "-0.0", "1e-320",
                                                         "1e-300", "1e300", "1.7976931348623157e308", "-1.0", "0.5",
                                                         "0.999999999", "1.0", "25.0", "3e-4", "65536.5"};
        if (coin(0.7)) return pick(special);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", std::ldexp(std::uniform_real_distribution<double>(-1, 1)(m_rng),
                                                             static_cast<int>(below(200)) - 100));
        std::string text = buf;
        if (text.find_first_of(".en") == std::string::npos) text += ".0";
        return text;
    }

    static std::string quoted(const std::string& s) {
        std::string out = "\"";
        for (unsigned char c : s) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
        return out + "\"";
    }

    std::string string() {
        static const std::vector<std::string> words = {
            "gpt", "mmdit", "qwen2_5_vl", "qwen_image", "qwen_image_vae", "tiny", "small", "base", "1b", "custom", "synthetic", "fashion-mnist", "text",
            "image-folder", "fp32", "bf16", "gpipe", "1f1b", "interleaved", "local", "hosts", "slurm", "cpu", "cuda",
            "none", "core", "socket", "", " ", "gtp", "x", "/", "/no/such/path", "/etc/hostname", "/proc", ".",
            "my run", "-lead", "02:00:00", "1-00:00:00", "99:99", "9999999999:00", "18446744073709551615",
            "18446744073709551616", "naïve ☃", std::string(300, 'a'), std::string("nul\0byte", 8)};
        return quoted(pick(words));
    }

    std::string launcherWord() {
        if (coin(0.4)) {
            const auto& table = coin(0.5) ? mpirunOptions() : srunOptions();
            const LauncherOption& o = pick(table);
            std::string word = (coin(0.8) ? "--" : "-") + std::string(o.name);
            if (coin(0.2)) word += "=" + std::string(coin(0.5) ? "1" : "");
            return quoted(word);
        }
        static const std::vector<std::string> words = {
            "--mca", "plm_rsh_agent", "orte_fork_agent", "btl", "self,tcp", "-x", "LD_PRELOAD=/x.so", "LD_PRELOAD",
            ":", "--", "-", "hostname", "-np", "4", "-lu", "-n4", "--part=gpu", "--gpu", "--export=ALL,LD_AUDIT=/a",
            "-c", "--bogus", "-z", "=", "--=", "---"};
        return quoted(pick(words));
    }

    std::string array(const std::string& kind) {
        const size_t n = coin(0.05) ? 200 + below(800) : below(6);
        std::string out = "[";
        for (size_t i = 0; i < n; ++i) {
            if (i) out += ", ";
            if (kind == "int") out += coin(0.5) ? std::to_string(1 + below(4)) : integer();
            else if (kind == "hosts") out += quoted(pick(std::vector<std::string>{"a:1", "b:8", "c:999999", "d:0", "e",
                                                                                  ":", "f:-1", "g:1234567", "h:08"}));
            else out += launcherWord();
        }
        return out + "]";
    }

    // Any TOML value at all: the reader must refuse a wrong type with an error, not crash.
    std::string anything() {
        switch (below(7)) {
        case 0: return integer();
        case 1: return floating();
        case 2: return string();
        case 3: return coin(0.5) ? "true" : "false";
        case 4: return "[" + integer() + ", " + string() + "]";
        case 5: return "{ a = " + integer() + " }";
        default: return "1979-05-27T07:32:00Z";
        }
    }

    std::string valueFor(const std::string& path) {
        if (coin(0.05)) return anything();
        RunSpec probe;
        for (SpecField& f : specFields(probe)) {
            if (f.path() != path) continue;
            return std::visit(
                [&](auto* ref) -> std::string {
                    using T = std::remove_pointer_t<decltype(ref)>;
                    if constexpr (std::is_same_v<T, std::string>) return string();
                    else if constexpr (std::is_same_v<T, bool>) return coin(0.5) ? "true" : "false";
                    else if constexpr (std::is_same_v<T, double>) return coin(0.85) ? floating() : integer();
                    else if constexpr (std::is_same_v<T, uint64_t>) return coin(0.8) ? integer() : string();
                    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return array("int");
                    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
                        return array(path == "launch.hosts" ? "hosts" : "args");
                    else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>)
                        return "{ " + std::string(coin(0.5) ? "LD_PRELOAD" : "OMP_NUM_THREADS") + " = " + string() +
                               (coin(0.3) ? ", \"1BAD\" = \"x\"" : "") + " }";
                    else return integer(); // int64_t, optional<int64_t>
                },
                f.ref);
        }
        return anything();
    }

    static std::string render(const std::map<std::string, std::string>& values) {
        std::map<std::string, std::string> sections; // section -> "key = value" lines
        std::string top;
        for (const auto& [path, value] : values) {
            const size_t dot = path.find('.');
            if (dot == std::string::npos) top += path + " = " + value + "\n";
            else sections[path.substr(0, dot)] += path.substr(dot + 1) + " = " + value + "\n";
        }
        std::string out = top;
        for (const auto& [section, lines] : sections) out += "\n[" + section + "]\n" + lines;
        return out;
    }
};

TEST(SpecFuzz, NoSpecCrashesHangsOrTakesASecond) {
    SpecGenerator generator(20240917);
    MachineInfo small;
    small.cores = 2;
    small.ram_bytes = int64_t(8) << 30;
    MachineInfo withGpu = small;
    withGpu.gpu_memory_bytes = int64_t(80) << 30;
    const MachineInfo unknown;

    int parsed = 0, valid = 0, estimated = 0;
    double slowest = 0;
    for (int i = 0; i < kSpecs; ++i) {
        const std::string text = generator.next();
        const auto start = std::chrono::steady_clock::now();
        bool ok = false;
        try {
            std::vector<SpecIssue> unknownKeys;
            const RunSpec spec = parseSpec(text, "fuzz.toml", unknownKeys);
            ++parsed;
            const std::vector<SpecIssue> issues = validateSpec(spec);
            valid += hasErrors(issues) ? 0 : 1;
            for (const MachineInfo& m : {small, withGpu, unknown}) validateSpec(spec, m);
            formatIssues(issues);
            try {
                const Estimates e = estimate(spec);
                formatBytes(e.memory.total());
                formatCount(e.flops_per_token);
                ++estimated;
            } catch (const std::invalid_argument&) {
                // A model or layout the estimates cannot use: the validator says why.
            }
            parseSpec(toToml(spec), "written.toml");
            ok = true;
        } catch (const SpecError&) {
            ok = true; // a wrong type or bad TOML, reported with its line
        } catch (const std::exception& e) {
            ADD_FAILURE() << "unexpected exception " << e.what() << " for spec #" << i << ":\n" << text;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        slowest = std::max(slowest, seconds);
        ASSERT_LT(seconds, kMostSeconds) << "spec #" << i << " took " << seconds << " s:\n" << text;
        ASSERT_TRUE(ok);
    }
    // The generator reaches every stage: some specs read, some validate, some are estimated.
    EXPECT_GT(parsed, kSpecs / 4);
    EXPECT_GT(valid, kSpecs / 50);
    EXPECT_GT(estimated, kSpecs / 10);
    std::printf("%d specs: %d read, %d without errors, %d estimated; slowest %.3f s\n", kSpecs, parsed, valid,
                estimated, slowest);
}

} // namespace
} // namespace parallax
