#include "bench/memory/VlBenchFolder.h"

#include "core/formats/SafetensorsWriter.h"
#include "core/image/PngEncoder.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace parallax {

namespace {

const char* const kConfig = R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
  "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652, "vision_end_token_id": 151653,
  "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu",
  "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
  "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_sliding_window": false,
  "vision_config": {"depth": 8, "hidden_size": 640, "num_heads": 10, "intermediate_size": 1728,
                    "out_hidden_size": 896, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                    "window_size": 112, "fullatt_block_indexes": [3, 7], "hidden_act": "silu", "in_chans": 3},
  "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}
}
)";

bool endsWith(const std::string& s, const char* tail) {
    const size_t n = std::strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// bf16 values: norm scales 1, biases 0, the rest uniform in [-0.03, 0.03] from a linear congruence.
std::vector<uint16_t> values(const ModelTensor& t, uint64_t& state) {
    std::vector<uint16_t> out(static_cast<size_t>(t.elements()));
    const bool scale = t.shape.size() == 1 && (t.name.find("norm") != std::string::npos || endsWith(t.name, "ln_q.weight"));
    const bool bias = endsWith(t.name, ".bias");
    for (uint16_t& v : out) {
        float f = scale ? 1.0f : 0.0f;
        if (!scale && !bias) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            f = (static_cast<float>(state >> 40) / static_cast<float>(1ULL << 24) - 0.5f) * 0.06f;
        }
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        v = static_cast<uint16_t>(bits >> 16);
    }
    return out;
}

void writeDataset(const std::string& root, const std::string& jsonl) {
    Image picture;
    picture.width = picture.height = 448;
    picture.channels = 3;
    picture.samples.resize(448 * 448 * 3);
    for (int y = 0; y < 448; ++y)
        for (int x = 0; x < 448; ++x)
            for (int c = 0; c < 3; ++c)
                picture.samples[(static_cast<size_t>(y) * 448 + x) * 3 + c] =
                    static_cast<uint8_t>(c == 0 ? x / 2 : c == 1 ? y / 2 : (x ^ y) & 255);
    writePngFile(picture, root + "/picture.png");
    std::string answer;
    for (int i = 0; i < 40; ++i) answer += "Gradients run across the picture and a checked pattern lies over them. ";
    std::ofstream out(jsonl);
    for (const char* question : {"Describe the picture.", "What patterns do you see?"})
        out << R"({"messages": [{"role": "user", "content": "<image>)" << question
            << R"("}, {"role": "assistant", "content": ")" << answer << R"("}], "images": ["picture.png"]})" << "\n";
}

} // namespace

VlBenchFolder makeVlBenchFolder(const std::string& root, const std::string& tokenizer) {
    VlBenchFolder out;
    if (!std::ifstream(tokenizer)) {
        out.problem = tokenizer + " is missing (ctest -R text.oracle_install installs Qwen's tokenizer.json)";
        return out;
    }
    out.folder = root + "/qwen2_5_vl-0.5b";
    std::filesystem::create_directories(out.folder);
    std::ofstream(out.folder + "/config.json") << kConfig;
    std::filesystem::copy_file(tokenizer, out.folder + "/tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
    const ModelDims dims = resolveModel(parseSpec("[model]\nkind = \"qwen2_5_vl\"\nfrom = \"" + out.folder + "\"\n"));
    std::vector<ModelTensor> tensors = modelKindInfo(dims.kind).tensors(dims);
    std::vector<std::vector<uint16_t>> held;
    std::vector<TensorData> data;
    uint64_t state = 1234;
    for (const ModelTensor& t : tensors) {
        if (t.tiedCopy()) continue;
        held.push_back(values(t, state));
        data.push_back({t.name, Dtype::BF16, t.shape, held.back().data()});
    }
    writeSafetensors(out.folder + "/model.safetensors", data);
    out.jsonl = root + "/chats.jsonl";
    writeDataset(root, out.jsonl);
    return out;
}

} // namespace parallax
