#pragma once

#include "core/spec/CheckedMath.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// Concrete dimensions of a model: a preset with the spec's explicit fields applied.
// The architecture each kind builds from these numbers is described in docs/models.md; the
// parameter and FLOP estimates (Estimates.h) and the trainer's models follow that page exactly.
struct ModelDims {
    ModelKind kind = ModelKind::Gpt;
    int64_t layers = 0;        // transformer blocks (the language model's for qwen2_5_vl)
    int64_t dim = 0;
    int64_t heads = 0;
    int64_t ffn = 0;
    int64_t vocab = 0;
    int64_t seq_len = 0;       // gpt: context length; qwen_image: prompt states per sample
    int64_t image_size = 0;    // image kinds: square images (qwen_image: latents) of this side
    int64_t channels = 0;
    int64_t patch = 0;
    int64_t vision_layers = 0; // qwen2_5_vl's tower
    int64_t vision_dim = 0;
    int64_t vision_heads = 0;
    int64_t vision_ffn = 0;    // the config's intermediate_size
    // A latent model's image tokens at one batch's real grid (buckets, Edit's reference images):
    // imageTokens() when set; 0, the square image_size's.
    int64_t shape_image_tokens = 0;

    // Published architectures (qwen2, qwen2_5_vl), as their config.json names them.
    int64_t kv_heads = 0;           // num_key_value_heads (grouped-query attention)
    bool tie_embeddings = false;    // tie_word_embeddings: the head reuses the token embedding
    double rope_theta = 0;
    double rms_eps = 0;             // rms_norm_eps of the language model (the tower's is 1e-6)
    int64_t max_positions = 0;      // max_position_embeddings
    std::vector<int64_t> mrope_section; // rotary pairs of the t, h, w position streams (qwen_image: frame, row, column)
    int64_t text_dim = 0;           // qwen_image: joint_attention_dim, the width of the text encoder's states
    int64_t z_dim = 0;              // qwen_image_vae: latent channels (16, what qwen_image reads)
    // qwen_image: zero_cond_t (Qwen-Image-Edit-2511): the image stream's modulation of the reference
    // images' tokens reads the embedding of timestep 0, not the batch's.
    bool zero_cond_t = false;
    int64_t vision_merge = 0;       // spatial_merge_size: merge x merge patches make one token
    int64_t vision_temporal = 0;    // temporal_patch_size: frames per patch (an image is repeated)
    int64_t vision_window = 0;      // window_size in pixels of the window-attention blocks
    std::vector<int64_t> vision_full_attention; // fullatt_block_indexes
    // The pixels of one image the estimates count (data.max_pixels; see resolveModel(RunSpec)).
    int64_t image_pixels = 0;
    struct Tokens {
        int64_t image_pad = -1, vision_start = -1, vision_end = -1, eos = -1;
    } tokens;

    // Clamped to the int64 range rather than overflowing, for dimensions not yet validated.
    int64_t headDim() const { return heads > 0 ? dim / heads : 0; }
    int64_t imageTokens() const {
        if (shape_image_tokens > 0) return shape_image_tokens;
        return patch > 0 ? saturatingMul(image_size / patch, image_size / patch) : 0;
    }
    int64_t patchValues() const { return saturatingMul(saturatingMul(channels, patch), patch); }
    int64_t kvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
    // qwen2_5_vl: patches of one image at image_pixels (the most smart resizing keeps), and the
    // tokens they merge into.
    int64_t visionPatches() const;
    int64_t visualTokens() const;
    // Positions one sample occupies in the (joint) sequence of the main transformer.
    int64_t sequenceLength() const;
    // Tokens counted for throughput: gpt the trained text positions, qwen_image image+text tokens.
    int64_t tokensPerSample() const;
};

// model.seq_len of a model from a folder (model.from) when the spec sets none.
constexpr int64_t kFolderSeqLen = 2048;

// The names of the presets of a kind, smallest first.
std::vector<std::string> modelPresets(ModelKind kind);

// Throws std::invalid_argument naming the field ("model.kind", "model.preset") when unknown. With
// model.from, the sizes come from the folder's config.json (ModelConfigFile.h): a missing or
// unreadable config, a kind or an explicit dimension that disagrees with it is such an error, its
// message starting with the field ("model.from = ...", "model.layers = 24 disagrees ...").
ModelDims resolveModel(const ModelSpec& spec);
// The same, with what the data section adds to the model's counts: the pixels of an image the
// estimates assume (data.max_pixels, the most an image takes).
ModelDims resolveModel(const RunSpec& spec);

// The dimensions a model of this kind uses, by field ("model.layers", ...; image fields for the image
// kinds, vision fields for qwen2_5_vl), in file order.
std::vector<std::pair<const char*, int64_t>> modelDimensionFields(const ModelDims& dims);

} // namespace parallax
