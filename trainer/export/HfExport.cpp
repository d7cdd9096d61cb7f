#include "trainer/export/HfExport.h"
#include "trainer/export/VaeExport.h"

#include "core/formats/CheckpointWriter.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"
#include "core/util/Files.h"
#include "trainer/finetune/AdapterFolder.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/train/Checkpoint.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace parallax {

namespace fs = std::filesystem;

namespace {

// What a published folder holds beside its weights, copied as they are.
const char* const kSideFiles[] = {"config.json",          "generation_config.json", "tokenizer.json",
                                  "tokenizer_config.json", "vocab.json",             "merges.txt",
                                  "special_tokens_map.json", "added_tokens.json",    "chat_template.json",
                                  "chat_template.jinja",  "preprocessor_config.json", "video_preprocessor_config.json"};

std::string readText(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot be read");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void requireEmptyOut(const std::string& out) {
    std::error_code ec;
    if (fs::exists(out, ec) && (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)))
        throw std::runtime_error(out + " already holds files; export writes a new folder (name another, or remove it)");
    fs::create_directories(out, ec);
    if (ec) throw std::runtime_error(out + ": cannot be created: " + ec.message());
}

} // namespace

HfExportResult exportHfFolder(const HfExportOptions& o, const std::function<void(const std::string&)>& progress) {
    auto say = [&progress](const std::string& line) {
        if (progress) progress(line);
    };
    const std::string specPath = joinPath(o.run, "spec.toml");
    const RunSpec spec = parseSpec(readText(specPath), specPath);
    const ModelDims dims = resolveModel(spec);
    const bool vae = reconstructsImages(modelKindInfo(dims.kind));
    if (!vae && !publishedModel(modelKindInfo(dims.kind)))
        throw std::runtime_error(o.run + ": model.kind = \"" + choiceName(dims.kind) +
                                 "\" has no published form to export; export writes runs of " +
                                 modelKindNames(publishedModel) + " and of \"qwen_image_vae\"");
    if (!vae && spec.model.from.empty())
        throw std::runtime_error(o.run + ": the run started from a preset, so there is no config.json or tokenizer to "
                                 "copy; export writes runs started from model.from");
    const CheckpointReader reader(o.checkpoint.empty() ? joinPath(o.run, "checkpoints") : o.checkpoint);
    reader.requireCompatible(dims);
    say("checkpoint " + reader.dir() + " (step " + std::to_string(reader.meta().step) + ")");
    requireEmptyOut(o.out);
    if (vae) return exportVaeFolder(o, spec, dims, reader, say);
    HfExportResult result;
    result.checkpoint = reader.dir();
    result.diffusers = readsLatents(modelKindInfo(dims.kind));
    if (o.adapterOnly && isRegularFile(joinPath(reader.dir(), "adapter/adapter_config.json"))) {
        // PEFT's folder, and for a diffusers model the same adapter as diffusers and ComfyUI load it.
        for (const char* name : {"adapter_config.json", "adapter_model.safetensors", kDiffusersLoraFile, kComfyUiLoraFile}) {
            const std::string from = joinPath(joinPath(reader.dir(), "adapter"), name);
            if (isRegularFile(from)) fs::copy_file(from, joinPath(o.out, name));
        }
        result.adapter = true;
        say("copied the LoRA adapter of " + reader.dir());
        return result;
    }

    // The model's structure gives each checkpoint name its published name; its LoRA layers, the
    // adapters. A checkpoint holds what trained: the frozen parts come from the folder the run began with.
    const std::shared_ptr<Model> model = constructModel(dims);
    say("reading the frozen weights from " + spec.model.from);
    loadPublishedWeights(*model, spec.model.from);
    const AppliedFinetune finetune = applyFinetune(*model, finetuneOf(spec, dims), spec.train.seed);
    const auto params = model->named_parameters();
    const FullTensor full = [&reader, &params](const std::string& name) {
        return reader.has(name, "param") ? reader.full(name, "param") : params[name].detach();
    };
    std::map<std::string, torch::Tensor> merged;
    if (finetune.lora()) {
        merged = mergedWeights(finetune, full);
        say("merged " + std::to_string(merged.size()) + " LoRA adapters (scale " + std::to_string(finetune.scale) + ")");
    }
    std::vector<torch::Tensor> keep;
    std::vector<TensorData> tensors;
    result.merged = static_cast<int64_t>(merged.size());
    std::set<std::string> tiedCopies; // the folder's config says tie_word_embeddings: its source is stored
    for (const Model::Tie& t : model->ties()) tiedCopies.insert(t.copy);
    for (int64_t u = 0; u < model->unitCount(); ++u) {
        const std::shared_ptr<Unit> unit = model->unit(u);
        for (const auto& item : unit->named_parameters()) {
            const std::string& local = item.key();
            if (local.find("lora_A.") != std::string::npos || local.find("lora_B.") != std::string::npos) continue;
            const std::string name = "units." + std::to_string(u) + "." + local;
            if (tiedCopies.count(name)) continue;
            const auto m = merged.find(name);
            torch::Tensor t = (m != merged.end() ? m->second : full(name)).contiguous();
            keep.push_back(o.bf16 ? t.to(torch::kBFloat16).contiguous() : t);
            tensors.push_back({unit->publishedName(local), o.bf16 ? Dtype::BF16 : Dtype::F32, keep.back().sizes().vec(),
                               keep.back().data_ptr()});
        }
    }
    CheckpointWriteOptions write;
    write.maxShardBytes = o.maxShardBytes;
    // The kind's own file name: model.safetensors, diffusion_pytorch_model.safetensors.
    const std::string weightsFile = modelKindInfo(dims.kind).weights_file;
    write.prefix = weightsFile.substr(0, weightsFile.size() - std::string(".safetensors").size());
    const WrittenCheckpoint written = writeCheckpoint(o.out, tensors, write);
    result.tensors = static_cast<int64_t>(tensors.size());
    result.bytes = written.totalSize;
    say("wrote " + std::to_string(tensors.size()) + " tensors (" + std::to_string(written.totalSize) + " bytes) in " +
        std::to_string(written.files.size()) + " file(s)");
    // A diffusers pipeline's transformer/ holds the config of what was trained.
    const std::string part = modelPartFolder(spec.model.from);
    for (const char* name : kSideFiles) {
        const std::string from = joinPath(part, name);
        if (!isRegularFile(from)) continue;
        fs::copy_file(from, joinPath(o.out, name), fs::copy_options::overwrite_existing);
        result.copied.push_back(name);
    }
    if (!isRegularFile(joinPath(o.out, "config.json")))
        throw std::runtime_error(part + " has no config.json to copy (model.from)");
    say("copied " + std::to_string(result.copied.size()) + " files from " + part);
    return result;
}

} // namespace parallax
