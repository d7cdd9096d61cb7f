#include "trainer/cache/QwenImageTextEncoder.h"

#include "core/image/BicubicResize.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelDims.h"
#include "core/util/Files.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageTokens.h"

#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

std::string part(const std::string& pipelineFolder, const std::string& name, const std::string& needs) {
    const std::string folder = joinPath(pipelineFolder, name);
    if (!isRegularFile(joinPath(folder, needs)))
        throw std::invalid_argument(pipelineFolder + ": Qwen-Image's text encoder needs " + name + "/" + needs +
                                    " (a diffusers pipeline folder: model_index.json, text_encoder/, tokenizer/, "
                                    "transformer/, vae/)");
    return folder;
}

// tokenizer/ in either form Tokenizer::load reads: tokenizer.json, or a Qwen2Tokenizer's vocab.json,
// merges.txt and tokenizer_config.json (as Qwen-Image's published folders ship it).
Tokenizer tokenizerOf(const std::string& pipelineFolder) {
    const std::string folder = joinPath(pipelineFolder, "tokenizer");
    if (!isDirectory(folder))
        throw std::invalid_argument(pipelineFolder + ": Qwen-Image's text encoder needs tokenizer/ (tokenizer.json, or "
                                    "vocab.json, merges.txt and tokenizer_config.json; a diffusers pipeline folder: "
                                    "model_index.json, text_encoder/, tokenizer/, transformer/, vae/)");
    return Tokenizer::load(folder);
}

QwenImageRule ruleOf(const ModelDims& dims) {
    QwenImageRule rule;
    rule.patch = dims.patch;
    rule.merge = dims.vision_merge;
    rule.temporal = dims.vision_temporal;
    rule.resize.factor = dims.patch * dims.vision_merge;
    return rule;
}

ModelDims textEncoderDims(const std::string& pipelineFolder) {
    ModelSpec spec;
    spec.kind = ModelKind::Qwen2_5_Vl;
    spec.from = part(pipelineFolder, "text_encoder", "config.json");
    return resolveModel(spec);
}

} // namespace

QwenImageTextEncoder::QwenImageTextEncoder(const std::string& pipelineFolder, torch::Device device,
                                           torch::ScalarType dtype)
    : m_pipeline(qwenImagePipelineOf(pipelineFolder)), m_device(device), m_dtype(dtype) {
    m_prompt = std::make_unique<QwenImagePrompt>(tokenizerOf(pipelineFolder), qwenImagePromptTemplate(m_pipeline));
    const std::string folder = part(pipelineFolder, "text_encoder", "config.json");
    const ModelDims dims = textEncoderDims(pipelineFolder);
    m_width = dims.dim;
    m_model = constructModel(dims);
    loadPublishedWeights(*m_model, folder);
    takeModel(folder);
}

QwenImageTextEncoder::QwenImageTextEncoder(std::shared_ptr<Model> model, Tokenizer tokenizer, torch::Device device,
                                           torch::ScalarType dtype, const std::string& source)
    : m_model(std::move(model)), m_device(device), m_dtype(dtype) {
    m_prompt = std::make_unique<QwenImagePrompt>(std::move(tokenizer), qwenImagePromptTemplate());
    m_width = m_model->dims().dim;
    takeModel(source);
}

void QwenImageTextEncoder::takeModel(const std::string& source) {
    m_model->eval();
    m_model->to(m_device, m_dtype);
    for (torch::Tensor& p : m_model->parameters()) p.set_requires_grad(false); // frozen wherever it runs
    for (const std::shared_ptr<Unit>& unit : m_model->units()) {
        if (auto embed = std::dynamic_pointer_cast<QwenEmbedding>(unit)) m_embed = embed;
        else if (auto head = std::dynamic_pointer_cast<QwenHead>(unit)) m_head = head;
        else if (m_embed && !m_head) m_layers.push_back(unit); // the decoder layers, between the two
        else if (!m_embed) m_vision.push_back(unit);           // the tower and merger, before them
    }
    if (!m_embed || !m_head || m_layers.empty())
        throw std::logic_error(source + ": the model has no Qwen language model to encode prompts with");
}

torch::Tensor QwenImageTextEncoder::encode(const std::string& prompt) const {
    const std::vector<int32_t> ids = m_prompt->ids(prompt);
    if (static_cast<int64_t>(ids.size()) <= m_prompt->format().drop) return torch::zeros({0, m_width});
    torch::InferenceMode inference;
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0).to(m_device);
    return encodeIds(tokens).to(torch::kCPU, torch::kFloat32).clone();
}

torch::Tensor QwenImageTextEncoder::encodeIds(const torch::Tensor& ids) const {
    const int64_t drop = m_prompt->format().drop;
    if (ids.dim() != 2 || ids.size(0) != 1 || ids.size(1) <= drop)
        throw std::invalid_argument("the text encoder takes one prompt's ids, (1, n) with n past the template's " +
                                    std::to_string(drop) + " tokens");
    Batch batch;
    batch.tokens = ids;
    batch.labels = torch::full_like(batch.tokens, -100); // the tokens are the input as they are (no next-token shift)
    return run(batch);
}

torch::Tensor QwenImageTextEncoder::run(const Batch& batch) const {
    const int64_t drop = m_prompt->format().drop;
    Activation x;
    if (batch.pixel_values.defined())
        for (const std::shared_ptr<Unit>& unit : m_vision) x = unit->forward(x, batch); // -> image features (N, C)
    x = m_embed->forward(x, batch);
    for (const std::shared_ptr<Unit>& layer : m_layers) x = layer->forward(x, batch);
    const torch::Tensor states = m_head->norm->forward(x.at(0)).squeeze(0); // (T, C)
    return states.narrow(0, drop, states.size(0) - drop);
}

QwenImageRows QwenImageTextEncoder::conditionRows(const Image& rgb) const {
    if (m_prompt->format().condition_pixels <= 0)
        throw std::invalid_argument(std::string("a ") + qwenImagePipelineClass(m_pipeline) +
                                    " folder encodes no reference image; edit_image needs a QwenImageEditPipeline or "
                                    "QwenImageEditPlusPipeline folder (model_index.json's _class_name)");
    return editConditionRows(rgb, m_prompt->format(), ruleOf(m_model->dims()));
}

torch::Tensor QwenImageTextEncoder::encodeIds(const torch::Tensor& ids, const torch::Tensor& pixelValues,
                                              const torch::Tensor& imageGrid) const {
    if (!pixelValues.defined() || pixelValues.size(0) == 0) return encodeIds(ids);
    Batch batch;
    batch.tokens = ids;
    batch.labels = torch::full_like(batch.tokens, -100);
    batch.sample_index = {0};
    batch.image_grid = imageGrid;
    batch.positions = findImageTokens(ids.to(torch::kCPU), {}, imageGrid, m_model->dims(), {0}).positions.to(ids.device());
    batch.pixel_values = pixelValues;
    return run(batch);
}

torch::Tensor QwenImageTextEncoder::encodeEdit(const std::string& prompt, const std::vector<Image>& references) const {
    ConditionRows rows;
    std::vector<int64_t> pads;
    for (const Image& image : references) pads.push_back(rows.add(conditionRows(image), m_model->dims().vision_merge));
    const std::vector<int32_t> ids = m_prompt->ids(prompt, pads);
    torch::InferenceMode inference;
    const torch::Tensor tokens =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0).to(m_device);
    if (references.empty()) return encodeIds(tokens).to(torch::kCPU, torch::kFloat32).clone();
    return encodeIds(tokens, rows.pixelValues().to(m_device, m_dtype), rows.imageGrid())
        .to(torch::kCPU, torch::kFloat32)
        .clone();
}

std::pair<torch::Tensor, torch::Tensor> QwenImageTextEncoder::encodeBatch(const std::vector<std::string>& prompts) const {
    std::vector<torch::Tensor> each;
    int64_t longest = 0;
    for (const std::string& p : prompts) {
        each.push_back(encode(p));
        longest = std::max(longest, each.back().size(0));
    }
    const int64_t n = static_cast<int64_t>(prompts.size());
    torch::Tensor states = torch::zeros({n, longest, m_width});
    torch::Tensor mask = torch::zeros({n, longest}, torch::kBool);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = each[static_cast<size_t>(i)].size(0);
        states[i].narrow(0, 0, t).copy_(each[static_cast<size_t>(i)]);
        mask[i].narrow(0, 0, t).fill_(true);
    }
    return {states, mask};
}

std::unique_ptr<QwenImagePrompt> qwenImagePromptOf(const std::string& pipelineFolder) {
    return std::make_unique<QwenImagePrompt>(tokenizerOf(pipelineFolder),
                                             qwenImagePromptTemplate(qwenImagePipelineOf(pipelineFolder)));
}

int64_t ConditionRows::add(const QwenImageRows& rows, int64_t merge) {
    values.insert(values.end(), rows.values.begin(), rows.values.end());
    grid.insert(grid.end(), {rows.frames, rows.rows, rows.columns});
    rowValues = rows.rowValues;
    patchRows += rows.patchRows();
    return rows.patchRows() / (merge * merge);
}

torch::Tensor ConditionRows::pixelValues() const {
    return torch::tensor(values, torch::kFloat32).view({patchRows, rowValues});
}

torch::Tensor ConditionRows::imageGrid() const { return torch::tensor(grid, torch::kInt64).view({-1, 3}); }

QwenImageRule textEncoderImageRule(const std::string& pipelineFolder) { return ruleOf(textEncoderDims(pipelineFolder)); }

QwenImageRows editConditionRows(const Image& rgb, const QwenImagePromptTemplate& format, const QwenImageRule& rule) {
    const ImageSides sides = editConditionSides(rgb.height, rgb.width, format.condition_pixels);
    return qwenImageRows(resizeLanczos(rgb, static_cast<int>(sides.width), static_cast<int>(sides.height)), rule);
}

ImageSides editConditionSides(int64_t height, int64_t width, int64_t area) {
    // diffusers' calculate_dimensions: Python's round() halves to even, as nearbyint does.
    const double ratio = static_cast<double>(width) / static_cast<double>(height);
    const double w = std::sqrt(static_cast<double>(area) * ratio);
    const double h = w / ratio;
    return {static_cast<int64_t>(std::nearbyint(h / 32.0)) * 32, static_cast<int64_t>(std::nearbyint(w / 32.0)) * 32};
}

} // namespace parallax
