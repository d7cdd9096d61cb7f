#pragma once

// A tiny Qwen2.5-VL fine-tune as a user would set it up, for the tests that train or show one
// without linking LibTorch (the CLI's and the console's): the tests/reference tiny checkpoint
// (untied, Qwen's whole vocabulary) with Qwen's real tokenizer.json beside it (the text_oracle
// fixture), and six conversations in one JSONL with PNG images drawn here: LLaVA, ShareGPT with two
// images, Qwen's image block under a system prompt, a multi-turn chat and text-only samples.

#include "tests/core/conversations/PngFile.h"
#include "tests/support/Process.h"
#include "tests/support/ReferenceScripts.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace parallax::testing {

// Makes the tests/reference tiny checkpoint (make_tiny_checkpoint.py with `flags`) at `folder` with
// Qwen's real tokenizer.json beside it. Returns why it could not, or "".
inline std::string makeTinyQwenFolder(const std::string& folder, const std::vector<std::string>& flags) {
    const std::string tokenizer = buildDir() + "/npm-oracle/qwen/tokenizer.json";
    if (!std::ifstream(tokenizer)) return "Qwen's tokenizer.json is installed by the text.oracle_install test";
    if (!referenceAvailable()) return std::string(kReferencePython) + " cannot import torch: apt-get install python3-torch";
    std::vector<std::string> command = {kReferencePython, referenceScript("make_tiny_checkpoint.py"), folder};
    command.insert(command.end(), flags.begin(), flags.end());
    const ProcessResult made = runProcess(command);
    if (made.exitCode != 0) return "make_tiny_checkpoint.py failed: " + made.output;
    std::filesystem::copy_file(tokenizer, folder + "/tokenizer.json");
    return {};
}

// The six conversations and their images, written in `root`; returns the JSONL's path.
inline std::string writeQwenConversations(const std::string& root) {
    writeRampPng(root + "/wide.png", 200, 145, 1);   // 35 visual tokens at 50176 pixels
    writeRampPng(root + "/tall.png", 60, 250, 2);    // 18
    writeRampPng(root + "/square.png", 100, 100, 3); // 16
    const std::string jsonl = root + "/chats.jsonl";
    std::ofstream(jsonl)
        << R"({"image": "wide.png", "conversations": [{"from": "human", "value": "<image>\nWhat is this?"}, {"from": "gpt", "value": "Colour ramps."}]})"
        << "\n"
        << R"({"messages": [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "Seven."}]})"
        << "\n"
        << R"({"messages": [{"role": "user", "content": "Compare <image> with <image>."}, {"role": "assistant", "content": "The first is wider."}], "images": ["wide.png", "tall.png"]})"
        << "\n"
        << R"({"messages": [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": [{"type": "image", "image": "tall.png"}, {"type": "text", "text": "Shape?"}]}, {"role": "assistant", "content": "Tall."}]})"
        << "\n"
        << R"({"messages": [{"role": "user", "content": "Count to three."}, {"role": "assistant", "content": "One, two, three."}, {"role": "user", "content": "And back?"}, {"role": "assistant", "content": "Three, two, one."}]})"
        << "\n"
        << R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "square.png"}}, {"type": "text", "text": "Which corner is brightest?"}]}, {"role": "assistant", "content": "The bottom right."}]})"
        << "\n";
    return jsonl;
}

struct QwenFinetuneData {
    std::string folder; // the model folder: config.json, model.safetensors, tokenizer.json
    std::string jsonl;  // the conversations; their images beside it
    std::string problem; // why it could not be made: the tests skip saying so

    // Makes both under `root` (an existing folder).
    explicit QwenFinetuneData(const std::string& root) {
        folder = root + "/Qwen2.5-VL-tiny";
        problem = makeTinyQwenFolder(folder, {"--untied"});
        if (problem.empty()) jsonl = writeQwenConversations(root);
    }
};

} // namespace parallax::testing
