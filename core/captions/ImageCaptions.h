#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// One image and its caption, as a dataset gives them (paths resolved against the file's folder).
struct CaptionSample {
    std::string image;
    std::string prompt;
    std::vector<std::string> edit_images; // Qwen-Image-Edit's reference images; empty for text-to-image
    std::string source;                   // "FILE:LINE", "FILE: row N" or "FILE: sample N", for messages
};

// A dataset that cannot be read: the message starts with the file (and line, row or sample), says
// which field is wrong and what is expected.
class CaptionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The image-caption pairs of `path`, in the dataset's order:
//   DiffSynth-Studio's metadata: metadata.csv (a header row naming `image` and `prompt`, optional
//     `edit_image`; quoted fields as RFC 4180), metadata.json (an array of objects) or .jsonl (an
//     object a line) with "image", "prompt" and optional "edit_image" (a path or a list of paths);
//   a folder holding one of those (metadata.csv, .json or .jsonl, in that order of preference);
//   a folder of images (.jpg, .jpeg, .png, .webp) each with a caption in a same-name .txt beside
//     it (a.jpg and a.txt), by name; an image without one is an error naming it;
//   a conversation file (.json or .jsonl as the conversation datasets read them) whose samples hold
//     one image and an answer: the first answer is the caption.
// Every image must exist. Throws CaptionError.
std::vector<CaptionSample> readImageCaptions(const std::string& path);

} // namespace parallax
