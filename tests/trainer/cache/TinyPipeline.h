#pragma once

// A tiny Qwen-Image pipeline folder made by the references of tests/reference: tokenizer/ (Qwen's
// real tokenizer.json), text_encoder/ (the tiny Qwen2.5-VL, untied as Qwen2.5-VL-7B, transformers 5's
// config shape and names), transformer/ (its text width that encoder's 64) and vae/, with
// model_index.json listing them. `problem` says why it could not be made: the tests skip saying so.

#include "tests/support/Process.h"
#include "core/util/Files.h"
#include "tests/support/ReferenceScripts.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace parallax::testing {

inline std::string oracleTokenizer() { return buildDir() + "/npm-oracle/qwen/tokenizer.json"; }

class TinyPipeline {
public:
    std::string problem;
    std::string path;

    TinyPipeline() {
        if (!std::ifstream(oracleTokenizer())) {
            problem = "Qwen's tokenizer.json is installed by the text.oracle_install test";
            return;
        }
        if (!referenceAvailable()) {
            problem = std::string(kReferencePython) + " cannot import torch: apt-get install python3-torch";
            return;
        }
        path = m_tmp.path() + "/pipeline";
        std::filesystem::create_directories(path + "/tokenizer");
        std::filesystem::copy_file(oracleTokenizer(), path + "/tokenizer/tokenizer.json");
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"make_tiny_qwen_image.py", path, "--pipeline", "--joint-dim", "64"},
              {"make_tiny_qwen_image_vae.py", path, "--pipeline"},
              {"make_tiny_checkpoint.py", path + "/text_encoder", "--config-shape", "nested", "--layout", "current",
               "--untied"}}) {
            std::vector<std::string> argv = {kReferencePython, referenceScript(args[0])};
            argv.insert(argv.end(), args.begin() + 1, args.end());
            const ProcessResult made = runProcess(argv);
            if (made.exitCode != 0) {
                problem = args[0] + " failed: " + made.output;
                return;
            }
        }
    }
    const std::string& tmp() const { return m_tmp.path(); }

private:
    TempDir m_tmp;
};

// Rewrites the _class_name of `folder`'s model_index.json: which pipeline (text to image, Edit,
// Edit Plus) the folder is.
inline void setPipelineClass(const std::string& folder, const char* className) {
    nlohmann::json index = nlohmann::json::parse(readFile(folder + "/model_index.json"));
    index["_class_name"] = className;
    std::ofstream(folder + "/model_index.json") << index.dump(2);
}

// The one pipeline of a test process, made on first use and shared by its tests.
inline TinyPipeline& sharedTinyPipeline() {
    static TinyPipeline p;
    return p;
}

} // namespace parallax::testing
