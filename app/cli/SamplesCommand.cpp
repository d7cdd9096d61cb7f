#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/TextTable.h"
#include "core/util/Base64.h"
#include "core/util/FileWriter.h"
#include "core/util/Files.h"

#include <filesystem>
#include <iostream>

namespace parallax {

namespace {

// sample_s000040_i01.png: sorts by step, then index.
std::string sampleFileName(const SampleEvent& e) {
    char name[64];
    std::snprintf(name, sizeof name, "sample_s%06lld_i%02lld.png", static_cast<long long>(e.step),
                  static_cast<long long>(e.index));
    return name;
}

} // namespace

int samplesCommand(const std::string& storePath, const SamplesCommandOptions& o) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, o.run);
    std::vector<SampleEvent> rows;
    for (const SampleEvent& e : store.events<SampleEvent>(r.id))
        if (!o.step || e.step == *o.step) rows.push_back(e);
    if (rows.empty()) {
        std::cerr << "run " << r.id << " has no samples" << (o.step ? " at step " + std::to_string(*o.step) : "")
                  << " (samples.every in its spec draws them; qwen_image runs only)" << std::endl;
        return o.step ? 1 : 0;
    }
    if (!o.out.empty()) std::filesystem::create_directories(o.out);
    using A = TextTable::Align;
    TextTable t;
    for (const char* h : {"STEP", "INDEX", "SEED", "SIZE", "STEPS", "MS"}) t.addColumn(h, A::Right);
    t.addColumn(o.out.empty() ? "PROMPT" : "FILE");
    for (const SampleEvent& e : rows) {
        std::string last = e.prompt;
        if (!o.out.empty()) {
            const auto png = base64Decode(e.png);
            if (!png)
                throw CliError("run " + std::to_string(r.id) + ": the sample of step " + std::to_string(e.step) +
                               ", index " + std::to_string(e.index) + " is damaged in the store (not base64)");
            last = joinPath(o.out, sampleFileName(e));
            FileWriter file(last);
            file.write(png->data(), png->size());
            if (!file.finish()) throw CliError(file.describe("a sample"));
        }
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.0f", e.ms);
        t.addRow({std::to_string(e.step), std::to_string(e.index), std::to_string(e.seed),
                  std::to_string(e.width) + " x " + std::to_string(e.height), std::to_string(e.steps), ms, last});
    }
    t.print(std::cout);
    return 0;
}

} // namespace parallax
