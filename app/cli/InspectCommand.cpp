#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/TextTable.h"
#include "core/formats/Checkpoint.h"
#include "core/formats/FormatError.h"
#include "core/formats/ModelFolder.h"
#include "core/spec/Estimates.h"
#include "core/util/Files.h"

#include <array>
#include <iostream>

namespace parallax {

namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

std::string relativeTo(const std::string& path, const std::string& folder) {
    const std::string prefix = folder.back() == '/' ? folder : folder + "/";
    return path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

void printCheckpoint(const Checkpoint& c, const std::string& folder, bool summary, std::ostream& out) {
    out << "checkpoint:  " << relativeTo(c.source(), folder);
    if (c.sharded()) out << " (" << c.files().size() << " shards)";
    out << '\n';
    const double params = static_cast<double>(c.parameterCount());
    out << "tensors:     " << c.entries().size() << ", " << formatCount(params) << " parameters ("
        << c.parameterCount() << "), " << formatBytes(static_cast<double>(c.totalBytes())) << " (" << c.totalBytes()
        << " bytes)\n";
    struct Totals {
        int64_t tensors = 0, elements = 0;
        uint64_t bytes = 0;
    };
    std::array<Totals, kDtypeCount> byDtype{};
    for (const Checkpoint::Entry& e : c.entries()) {
        Totals& t = byDtype[static_cast<size_t>(e.tensor->dtype)];
        ++t.tensors;
        t.elements += e.tensor->elementCount();
        t.bytes += e.tensor->byteSize();
    }
    TextTable dtypes;
    dtypes.addColumn("DTYPE");
    dtypes.addColumn("TENSORS", TextTable::Align::Right);
    dtypes.addColumn("PARAMETERS", TextTable::Align::Right);
    dtypes.addColumn("BYTES", TextTable::Align::Right);
    for (int d = kDtypeCount - 1; d >= 0; --d)
        if (byDtype[d].tensors > 0)
            dtypes.addRow({dtypeName(static_cast<Dtype>(d)), std::to_string(byDtype[d].tensors),
                           std::to_string(byDtype[d].elements), std::to_string(byDtype[d].bytes)});
    dtypes.print(out);
    for (const std::string& w : c.warnings()) out << "warning: " << w << '\n';
    if (summary) return;
    TextTable tensors;
    tensors.addColumn("NAME");
    tensors.addColumn("DTYPE");
    tensors.addColumn("SHAPE");
    if (c.sharded()) tensors.addColumn("FILE");
    for (const Checkpoint::Entry& e : c.entries()) {
        std::vector<std::string> row = {e.tensor->name, dtypeName(e.tensor->dtype), shapeText(e.tensor->shape)};
        if (c.sharded()) row.push_back(baseName(e.file->path()));
        tensors.addRow(std::move(row));
    }
    out << '\n';
    tensors.print(out);
}

int inspect(const std::string& path, bool summary, std::ostream& out) {
    if (!isDirectory(path)) {
        printCheckpoint(Checkpoint::open(path), parentPath(path), summary, out);
        return ExitCode::Ok;
    }
    const ModelFolder model = readModelFolder(path);
    out << "folder:      " << path << '\n';
    if (!model.layout.empty()) {
        const std::string kind = describeModel(model);
        out << "model:       " << model.layout << (kind.empty() ? "" : ", " + kind) << '\n';
    }
    if (model.layout != "diffusers" || Checkpoint::present(path)) {
        printCheckpoint(Checkpoint::open(path), path, summary, out);
        return ExitCode::Ok;
    }
    // A diffusers pipeline: each component with weights is a checkpoint of its own.
    bool any = false;
    for (const ModelFolder::Component& component : model.components) {
        const std::string folder = joinPath(path, component.name);
        if (!isDirectory(folder) || !Checkpoint::present(folder)) continue;
        const ModelFolder sub = readModelFolder(folder);
        const std::string kind = describeModel(sub);
        out << "\ncomponent:   " << component.name << " (" << component.library << ", "
            << (kind.empty() ? component.className : kind) << ")\n";
        printCheckpoint(Checkpoint::open(folder), folder, summary, out);
        any = true;
    }
    if (!any)
        throw CliError(path + ": the pipeline's model_index.json lists no component folder with safetensors weights");
    return ExitCode::Ok;
}

} // namespace

int inspectCommand(const std::string& path, bool summary) {
    try {
        return inspect(path, summary, std::cout);
    } catch (const FormatError& e) {
        throw CliError(e.what());
    }
}

} // namespace parallax
