#pragma once

#include "core/spec/RunSpec.h"
#include "core/store/StoreTypes.h"

#include <QCoreApplication>
#include <QString>

#include <cstdint>
#include <optional>

namespace parallax {

// What a run was trained from and how, read from the spec it was started with: the base model
// (the folder of model.from, or the kind's preset) and the finetune mode, as the Runs and Compare
// pages show them, and whether parallax-cli export can write it as a published model's folder.
struct RunOrigin {
    Q_DECLARE_TR_FUNCTIONS(RunOrigin)
public:
    // The folder name of model.from ("Qwen2.5-VL-3B-Instruct"), or the kind and its preset
    // ("qwen2_5_vl tiny") for a run without one; "" when the spec cannot be read.
    QString baseModel;
    // model.from in full; for a run without a folder, "" (the spec's error where it has one).
    QString baseModelTip;
    // "full", "LoRA r 16", or "—" for a kind without [finetune]; "" when the spec cannot be read.
    QString mode;
    QString kind;           // model.kind as written
    QString from;           // model.from as written ("" for a preset)
    QString preset;         // model.preset; "" for a run started from model.from
    bool published = false; // a published architecture: has [finetune] and a form export writes
    bool lora = false;
    int64_t loraRank = 0;   // finetune.lora_r of a LoRA run
    QString specError;      // why the stored spec could not be read; "" when it was

    static RunOrigin of(const RunSpec& spec);
    // From the record's stored spec; a record without one gives an origin with every text empty.
    static RunOrigin of(const RunRecord& record);
    bool hasSpec() const { return !baseModel.isEmpty() || !specError.isEmpty(); }
};

// Whether the Runs page offers to export a run (Export…), and why not: runs of a published kind
// started from model.from, with a checkpoint, are written by parallax-cli export.
struct ModelExportCheck {
    Q_DECLARE_TR_FUNCTIONS(ModelExportCheck)
public:
    bool allowed = false;
    bool adapterOnly = false; // a LoRA run: its adapter alone can be written too
    QString why;              // why not; "" when allowed

    // `checkpoints`: how many the store records for the run; nullopt while not known yet.
    static ModelExportCheck of(const RunRecord& record, const RunOrigin& origin, std::optional<int64_t> checkpoints);
};

} // namespace parallax
