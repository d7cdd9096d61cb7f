#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// A conversation as a data file gives it, before tokenizing: messages of text and image parts, the
// images as paths (relative ones resolved against the file's folder).
struct ConversationPart {
    bool image = false;
    std::string text;  // a text part
    std::string path;  // an image part
};

struct ConversationMessage {
    std::string role; // system, user, assistant (LLaVA's human and gpt read as user and assistant)
    std::vector<ConversationPart> parts;
};

struct Conversation {
    std::vector<ConversationMessage> messages;
    std::string source; // "FILE:LINE" (JSONL) or "FILE: sample N" (JSON), for messages
    size_t imageCount() const;
};

// A data file that cannot be read: the message starts with the file (and line or sample) and says
// which field is wrong and what is expected.
class ConversationError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reads a JSON file (an array of samples), a JSONL file (one sample a line; blank lines skipped) or
// a folder of them (*.json and *.jsonl, by name; not its subfolders). A sample is one of:
//   LLaVA       {"image": "a.jpg" or [...], "conversations": [{"from": "human", "value": "<image>\n..."},
//               {"from": "gpt", "value": "..."}]}
//   ShareGPT / LLaMA-Factory
//               {"messages": [{"role": "user", "content": "<image>..."}, ...], "images": ["a.jpg"]}
//               (also "conversations" of from/value with "images")
//   OpenAI / Qwen blocks
//               {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "a.jpg"}},
//               {"type": "image", "image": "a.jpg"}, {"type": "text", "text": "..."}]}]}
// An "<image>" in text stands for the sample's next image; images a sample lists but does not place
// go before the text of its first user message. Image URLs must be files (file:// or a path);
// http(s) and data: URLs are refused. Throws ConversationError.
std::vector<Conversation> readConversations(const std::string& fileOrFolder);

} // namespace parallax
