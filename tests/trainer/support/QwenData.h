#pragma once

// What the qwen2_5_vl run tests share: the tests/reference tiny checkpoint (untied, Qwen's whole
// vocabulary) with Qwen's real tokenizer.json beside it, and a JSONL of four conversations with
// PNG images of odd sizes (LLaVA, ShareGPT with two images and two turns, a system prompt with
// Qwen's image block, text only). Made once per test process.

#include "tests/core/conversations/PngFile.h"
#include "tests/support/Process.h"
#include "tests/support/QwenFinetuneData.h"
#include "tests/trainer/support/ReferencePython.h"
#include "tests/trainer/support/SpecText.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace parallax::testing {

// The folder and the data, made once for every test of the binary.
class QwenData {
public:
    std::string images; // the folder of a.png, b.png, c.png

    static QwenData& get() {
        static QwenData data;
        return data;
    }
    std::string problem; // why the data could not be made: the tests skip saying so
    std::string folder, jsonl;

    // The same tiny model with lm_head tied to embed_tokens (as the 3B), made on first use; empty
    // with `problem` set when it could not be made.
    const std::string& tiedFolder() {
        if (!m_tied.empty() || !problem.empty()) return m_tied;
        const std::string tied = m_dir.path() + "/qwen-tied";
        problem = makeTinyQwenFolder(tied, {});
        if (!problem.empty()) return m_tied;
        m_tied = tied;
        return m_tied;
    }

private:
    QwenData() {
        folder = m_dir.path() + "/qwen";
        problem = makeTinyQwenFolder(folder, {"--untied"});
        if (!problem.empty()) return;
        images = m_dir.path();
        writeRampPng(m_dir.path() + "/a.png", 200, 145, 1);
        writeRampPng(m_dir.path() + "/b.png", 115, 90, 2);
        writeRampPng(m_dir.path() + "/c.png", 60, 250, 3);
        jsonl = m_dir.path() + "/chats.jsonl";
        std::ofstream out(jsonl);
        out << R"({"image": "a.png", "conversations": [{"from": "human", "value": "<image>\nWhat is this?"}, {"from": "gpt", "value": "Colour ramps."}]})"
            << "\n"
            << R"({"messages": [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "Seven."}]})"
            << "\n"
            << R"({"messages": [{"role": "user", "content": "Compare <image> with <image>."}, {"role": "assistant", "content": "The first is wider."}, {"role": "user", "content": "And taller?"}, {"role": "assistant", "content": "The second."}], "images": ["b.png", "c.png"]})"
            << "\n"
            << R"({"messages": [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": [{"type": "image", "image": "c.png"}, {"type": "text", "text": "Shape?"}]}, {"role": "assistant", "content": "Tall."}]})"
            << "\n";
    }
    TempDir m_dir;
    std::string m_tied;
};

// One process, three steps of 4 samples (micro-batch 1) on QwenData from its folder (or `folder`):
// a full fine-tune of the language model (the tower and merger frozen, as [finetune] defaults) or
// LoRA r 4.
inline TinySpec qwenConversationSpec(bool lora, const std::string& folder = "") {
    const QwenData& data = QwenData::get();
    TinySpec s;
    s.kind = "qwen2_5_vl";
    s.extraModel = "from = \"" + (folder.empty() ? data.folder : folder) + "\"\nseq_len = 160";
    s.data = "conversations";
    s.extraData = "path = \"" + data.jsonl + "\"\nmax_pixels = 50176\nshuffle = false";
    s.finetune = lora ? "mode = \"lora\"\nlora_r = 4\nlora_alpha = 8" : "mode = \"full\"";
    s.steps = 3;
    s.globalBatch = 4;
    s.microBatch = 1;
    return s;
}

} // namespace parallax::testing
