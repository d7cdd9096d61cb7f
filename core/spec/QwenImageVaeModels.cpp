#include "core/spec/QwenImageVaeModels.h"

#include <string>

namespace parallax {

namespace {

const std::vector<int64_t> kKernel = {3, 3, 3}; // a causal 3D convolution's (kt, kh, kw)
const std::vector<int64_t> kPoint = {1, 1, 1};

// The encoder's down_blocks in order: a residual block (in, out) or a downsampling (channels, temporal).
struct DownStep {
    bool residual;
    int64_t in, out;
    bool temporal;
};

std::vector<DownStep> encoderSteps(const QwenImageVaeConfig& c) {
    std::vector<DownStep> steps;
    int64_t channels = c.base_dim;
    for (size_t stage = 0; stage < c.dim_mult.size(); ++stage) {
        const int64_t out = c.stageChannels(stage);
        for (int64_t i = 0; i < c.num_res_blocks; ++i) {
            steps.push_back({true, channels, out, false});
            channels = out;
        }
        if (stage + 1 < c.dim_mult.size()) steps.push_back({false, channels, channels, c.temperal_downsample[stage]});
    }
    return steps;
}

// The decoder's up_blocks: stage i reads `in` (half its nominal width after an upsampling), writes
// `out`, and upsamples (temporally too, or not) except after the last stage.
struct UpStage {
    int64_t in, out;
    bool upsamples, temporal;
};

std::vector<UpStage> decoderStages(const QwenImageVaeConfig& c) {
    const size_t n = c.dim_mult.size();
    std::vector<int64_t> dims = {c.base_dim * c.dim_mult.back()};
    for (size_t i = n; i-- > 0;) dims.push_back(c.base_dim * c.dim_mult[i]);
    std::vector<UpStage> stages;
    for (size_t i = 0; i < n; ++i) {
        const bool upsamples = i + 1 < n;
        // The decoder upsamples in time where the encoder downsampled, in reverse order.
        const bool temporal = upsamples && c.temperal_downsample[n - 2 - i];
        stages.push_back({i > 0 ? dims[i] / 2 : dims[i], dims[i + 1], upsamples, temporal});
    }
    return stages;
}

class TensorList {
public:
    void conv(const std::string& name, int64_t in, int64_t out, const std::vector<int64_t>& kernel) {
        std::vector<int64_t> shape = {out, in};
        shape.insert(shape.end(), kernel.begin(), kernel.end());
        add(name + ".weight", shape);
        add(name + ".bias", {out});
    }
    void residual(const std::string& name, int64_t in, int64_t out) {
        add(name + ".norm1.gamma", {in, 1, 1, 1});
        conv(name + ".conv1", in, out, kKernel);
        add(name + ".norm2.gamma", {out, 1, 1, 1});
        conv(name + ".conv2", out, out, kKernel);
        if (in != out) conv(name + ".conv_shortcut", in, out, kPoint);
    }
    void mid(const std::string& name, int64_t c) {
        add(name + ".attentions.0.norm.gamma", {c, 1, 1});
        conv(name + ".attentions.0.to_qkv", c, 3 * c, {1, 1});
        conv(name + ".attentions.0.proj", c, c, {1, 1});
        residual(name + ".resnets.0", c, c);
        residual(name + ".resnets.1", c, c);
    }
    void add(const std::string& name, std::vector<int64_t> shape) {
        ModelTensor t;
        t.name = name;
        t.shape = std::move(shape);
        tensors.push_back(std::move(t));
    }
    std::vector<ModelTensor> tensors;
};

// Multiply-adds of the convolutions and attention of one image, in the worker's order of passes.
class MacCount {
public:
    MacCount(int64_t h, int64_t w) : m_positions(double(h) * double(w)) {}
    void conv(int64_t in, int64_t out, int64_t taps) {
        total += m_positions * double(out) * double(in) * double(taps);
        kept += 5.0 * m_positions * double(out);
    }
    void residual(int64_t in, int64_t out) {
        conv(in, out, 9);
        conv(out, out, 9);
        if (in != out) conv(in, out, 1);
    }
    void mid(int64_t c) {
        residual(c, c);
        conv(c, 3 * c, 1);
        total += 2.0 * m_positions * m_positions * double(c); // scores and the weighted sum
        kept += m_positions * m_positions + 4.0 * m_positions * double(c);
        conv(c, c, 1);
        residual(c, c);
    }
    void scale(double factor) { m_positions *= factor; }
    double total = 0, kept = 0;

private:
    double m_positions;
};

} // namespace

std::vector<ModelTensor> qwenImageVaeTensors(const QwenImageVaeConfig& c) {
    TensorList l;
    const int64_t z = c.z_dim;
    l.conv("encoder.conv_in", c.input_channels, c.base_dim, kKernel);
    const std::vector<DownStep> steps = encoderSteps(c);
    for (size_t i = 0; i < steps.size(); ++i) {
        const std::string name = "encoder.down_blocks." + std::to_string(i);
        const DownStep& s = steps[i];
        if (s.residual) {
            l.residual(name, s.in, s.out);
            continue;
        }
        l.conv(name + ".resample.1", s.in, s.in, {3, 3});
        if (s.temporal) l.conv(name + ".time_conv", s.in, s.in, {3, 1, 1});
    }
    const int64_t deepest = c.stageChannels(c.dim_mult.size() - 1);
    l.mid("encoder.mid_block", deepest);
    l.add("encoder.norm_out.gamma", {deepest, 1, 1, 1});
    l.conv("encoder.conv_out", deepest, 2 * z, kKernel);
    l.conv("quant_conv", 2 * z, 2 * z, kPoint);
    l.conv("post_quant_conv", z, z, kPoint);
    const std::vector<UpStage> stages = decoderStages(c);
    l.conv("decoder.conv_in", z, stages.front().in, kKernel);
    l.mid("decoder.mid_block", stages.front().in);
    for (size_t i = 0; i < stages.size(); ++i) {
        const UpStage& s = stages[i];
        const std::string name = "decoder.up_blocks." + std::to_string(i);
        for (int64_t j = 0; j <= c.num_res_blocks; ++j)
            l.residual(name + ".resnets." + std::to_string(j), j == 0 ? s.in : s.out, s.out);
        if (!s.upsamples) continue;
        if (s.temporal) l.conv(name + ".upsamplers.0.time_conv", s.out, 2 * s.out, {3, 1, 1});
        l.conv(name + ".upsamplers.0.resample.1", s.out, s.out / 2, {3, 3});
    }
    l.add("decoder.norm_out.gamma", {stages.back().out, 1, 1, 1});
    l.conv("decoder.conv_out", stages.back().out, c.input_channels, kKernel);
    return l.tensors;
}

VaeFlops qwenImageVaeForwardFlops(const QwenImageVaeConfig& c, int64_t height, int64_t width) {
    const int64_t z = c.z_dim;
    MacCount enc(height, width);
    enc.conv(c.input_channels, c.base_dim, 9);
    for (const DownStep& s : encoderSteps(c)) {
        if (s.residual) {
            enc.residual(s.in, s.out);
            continue;
        }
        enc.scale(0.25); // the stride-2 convolution writes a quarter of the positions
        enc.conv(s.in, s.in, 9);
    }
    const int64_t deepest = c.stageChannels(c.dim_mult.size() - 1);
    enc.mid(deepest);
    enc.conv(deepest, 2 * z, 9);
    enc.conv(2 * z, 2 * z, 1);

    const int64_t ratio = c.spatialRatio();
    MacCount dec(height / ratio, width / ratio);
    dec.conv(z, z, 1);
    const std::vector<UpStage> stages = decoderStages(c);
    dec.conv(z, stages.front().in, 9);
    dec.mid(stages.front().in);
    for (const UpStage& s : stages) {
        for (int64_t j = 0; j <= c.num_res_blocks; ++j) dec.residual(j == 0 ? s.in : s.out, s.out);
        if (!s.upsamples) continue;
        dec.scale(4.0); // nearest 2 x, then the 3 x 3 convolution at the new size
        dec.conv(s.out, s.out / 2, 9);
    }
    dec.conv(stages.back().out, c.input_channels, 9);
    return {2.0 * enc.total, 2.0 * dec.total, enc.kept + dec.kept};
}

QwenImageVaeConfig qwenImageVaeConfigOf(const ModelDims& d) {
    QwenImageVaeConfig c;
    c.base_dim = d.dim;
    c.num_res_blocks = d.layers;
    c.z_dim = d.z_dim;
    c.input_channels = d.channels;
    c.latents_mean.assign(static_cast<size_t>(d.z_dim), 0.0);
    c.latents_std.assign(static_cast<size_t>(d.z_dim), 1.0);
    return c;
}

namespace {

ModelDims vae(int64_t baseDim, int64_t resBlocks, int64_t imageSide) {
    ModelDims d;
    d.kind = ModelKind::QwenImageVae;
    d.dim = baseDim;
    d.layers = resBlocks;
    d.heads = 1;
    d.image_size = imageSide;
    d.channels = 3;
    d.patch = QwenImageVaeConfig().spatialRatio();
    d.z_dim = 16;
    return d;
}

} // namespace

std::vector<ModelPreset> qwenImageVaePresets() { return {{"tiny", vae(8, 1, 32)}, {"published", vae(96, 2, 256)}}; }

std::vector<UnitEstimate> qwenImageVaeUnits(const ModelDims& d) {
    const QwenImageVaeConfig c = qwenImageVaeConfigOf(d);
    UnitEstimate u;
    for (const ModelTensor& t : qwenImageVaeTensors(c)) u.replicated += t.elements();
    const VaeFlops f = qwenImageVaeForwardFlops(c, d.image_size, d.image_size);
    u.flops = f.encoder + f.decoder;
    u.actReplicated = f.activations;
    const double side = double(d.image_size), latent = side / double(c.spatialRatio());
    u.input = double(d.channels) * side * side + double(d.z_dim) * latent * latent; // the images and the noise
    return {u};
}

} // namespace parallax
