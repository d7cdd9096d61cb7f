#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/data/BatchEncoder.h"
#include "trainer/models/Model.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// Samples indexed 0..size()-1, turned into batches for one model kind. Every value of a sample
// depends only on (seed, index) and, for the noise drawn for it, on the step: any split of a global batch
// over ranks and micro-batches sees the same numbers.
class Dataset {
public:
    virtual ~Dataset() = default;
    virtual int64_t size() const = 0;
    // CPU tensors; the trainer moves them to its device.
    virtual Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const = 0;
    // One line for logs and the console: "fashion-mnist train, 60000 images from /usr/share/...".
    virtual std::string describe() const = 0;
    // One id per sample where only samples of one id may share a micro-batch (latents of one size:
    // an aspect bucket); empty when any may (DistributedSampler::setGroups).
    virtual std::vector<int64_t> sampleGroups() const { return {}; }
    // The text of sample `index`'s prompt where the dataset holds it (a latent cache made from
    // captions); empty otherwise. What a run's samples are captioned with.
    virtual std::string promptText(int64_t /*index*/) const { return {}; }
    // Where part of every batch is made inside the step (an image-caption dataset without its latent
    // cache: the images and prompts go through the frozen VAE and text encoder there), the line a run
    // logs once about it; empty (the default) where makeBatch gives what the model reads.
    virtual std::string stepEncodingNote() const { return {}; }
    // That part's encoder, on `device` with its networks in `dtype` (loads them); null where
    // stepEncodingNote() is empty. Every batch of the dataset goes through its encode() before the model.
    virtual std::unique_ptr<BatchEncoder> makeStepEncoder(torch::Device /*device*/, torch::ScalarType /*dtype*/) const {
        return nullptr;
    }
};

// The dataset of `data.kind` shaped for `dims`. `modelFolder` (model.from) holds the tokenizer
// conversations are read with. Throws DataError naming the field or file.
// `verify` false: a dataset read through a cache checked elsewhere opens the cache without checking
// it against the dataset's files (every rank but one of a run: the one that checks tells the others).
std::unique_ptr<Dataset> makeDataset(const DataSpec& data, const ModelDims& dims, uint64_t seed,
                                     const std::string& modelFolder = {}, bool verify = true);

} // namespace parallax
