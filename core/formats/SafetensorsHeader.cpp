#include "core/formats/SafetensorsHeader.h"

#include "core/formats/FormatError.h"
#include "core/formats/JsonFields.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace parallax {

namespace {

// The byte where `text` stops being well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF); npos when it is all well-formed.
size_t firstBadUtf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF; // the range of the second byte
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return i;
        }
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return std::string_view::npos;
}

std::string rangeText(uint64_t begin, uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// One tensor's entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, nothing else.
TensorInfo readTensor(JsonFields& json, std::string name) {
    TensorInfo t;
    t.name = std::move(name);
    const std::string& file = json.file();
    if (json.peek() != JsonReader::Type::Object)
        throw FormatError(file, t.name, "its entry is " + json.kindOfNext() + "; it must be an object with dtype, "
                                        "shape and data_offsets");
    bool haveDtype = false, haveShape = false, haveOffsets = false;
    json.members([&](const std::string& key) {
        std::string problem;
        if (key == "dtype") {
            if (haveDtype) throw FormatError(file, t.name, "\"dtype\" appears twice");
            haveDtype = true;
            if (json.peek() != JsonReader::Type::String)
                throw FormatError(file, t.name, "\"dtype\" is " + json.kindOfNext() + ", not a dtype name");
            const std::string text = json.string();
            const auto dtype = dtypeFromName(text);
            if (!dtype)
                throw FormatError(file, t.name, "unknown dtype " + quoteName(text) + " (the format's dtypes: " +
                                                    dtypeNameList() + ")");
            t.dtype = *dtype;
        } else if (key == "shape") {
            if (haveShape) throw FormatError(file, t.name, "\"shape\" appears twice");
            haveShape = true;
            if (json.peek() != JsonReader::Type::Array)
                throw FormatError(file, t.name, "\"shape\" is " + json.kindOfNext() + ", not a list of dimensions");
            json.items([&] {
                const auto dim = json.count(problem);
                if (!dim || *dim > uint64_t(std::numeric_limits<int64_t>::max()))
                    throw FormatError(file, t.name, "dimension " + std::to_string(t.shape.size()) + " of \"shape\" is " +
                                                        (dim ? "too large" : problem) +
                                                        "; dimensions are non-negative integers");
                t.shape.push_back(static_cast<int64_t>(*dim));
            });
        } else if (key == "data_offsets") {
            if (haveOffsets) throw FormatError(file, t.name, "\"data_offsets\" appears twice");
            haveOffsets = true;
            if (json.peek() != JsonReader::Type::Array)
                throw FormatError(file, t.name, "\"data_offsets\" is " + json.kindOfNext() + ", not [begin, end]");
            int n = 0;
            json.items([&] {
                const auto offset = json.count(problem);
                if (n >= 2) throw FormatError(file, t.name, "\"data_offsets\" has more than two numbers; it is [begin, end]");
                if (!offset)
                    throw FormatError(file, t.name, "\"data_offsets\" holds " + problem + " where a byte offset belongs");
                (n++ == 0 ? t.begin : t.end) = *offset;
            });
            if (n != 2) throw FormatError(file, t.name, "\"data_offsets\" has " + std::to_string(n) +
                                                            " numbers; it is [begin, end]");
        } else {
            throw FormatError(file, t.name, "unknown field " + quoteName(key) +
                                                " (a tensor has only dtype, shape and data_offsets)");
        }
    });
    if (!haveDtype || !haveShape || !haveOffsets)
        throw FormatError(file, t.name, std::string("its entry lacks \"") +
                                            (!haveDtype ? "dtype" : !haveShape ? "shape" : "data_offsets") + "\"");
    return t;
}

TensorMetadata readMetadata(JsonFields& json) {
    const std::string& file = json.file();
    if (json.peek() != JsonReader::Type::Object)
        throw FormatError(file, "\"__metadata__\" is " + json.kindOfNext() + "; it must map strings to strings");
    TensorMetadata metadata;
    json.members([&](const std::string& key) {
        if (json.peek() != JsonReader::Type::String)
            throw FormatError(file, "\"__metadata__\" entry " + quoteName(key) + " is " + json.kindOfNext() +
                                        "; its values must be strings");
        metadata.emplace_back(key, json.string());
    });
    std::vector<const std::string*> keys;
    for (const auto& entry : metadata) keys.push_back(&entry.first);
    if (const std::string* repeated = firstRepeatedName(std::move(keys)))
        throw FormatError(file, "\"__metadata__\" has the key " + quoteName(*repeated) + " twice");
    return metadata;
}

// Dtype, shape and offsets agree, and the bytes lie inside the data.
void checkTensor(const TensorInfo& t, uint64_t dataBytes, const std::string& file) {
    if (t.end < t.begin)
        throw FormatError(file, t.name, "data_offsets " + rangeText(t.begin, t.end) + " end before they begin");
    if (t.end > dataBytes)
        throw FormatError(file, t.name, "data_offsets " + rangeText(t.begin, t.end) +
                                            " run past the end of the file, whose data holds " +
                                            std::to_string(dataBytes) + " bytes (truncated?)");
    uint64_t bytes = 0;
    std::string problem;
    if (!tensorByteSize(t.dtype, t.shape, bytes, problem))
        throw FormatError(file, t.name, "shape " + shapeText(t.shape) + " of " + dtypeName(t.dtype) + ": " + problem);
    if (bytes != t.byteSize())
        throw FormatError(file, t.name, "shape " + shapeText(t.shape) + " of " + dtypeName(t.dtype) + " takes " +
                                            std::to_string(bytes) + " bytes, but data_offsets " +
                                            rangeText(t.begin, t.end) + " hold " + std::to_string(t.byteSize()));
}

void checkNamesUnique(const std::vector<TensorInfo>& tensors, const std::string& file) {
    std::vector<const std::string*> names;
    names.reserve(tensors.size());
    for (const TensorInfo& t : tensors) names.push_back(&t.name);
    if (const std::string* repeated = firstRepeatedName(std::move(names)))
        throw FormatError(file, *repeated, "appears twice in the header");
}

// Sorted by offset, the tensors cover the data from 0 to its end, each beginning where the last ends.
void checkContiguous(std::vector<TensorInfo>& tensors, uint64_t dataBytes, const std::string& file) {
    std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t next = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        if (t.begin < next)
            throw FormatError(file, t.name, "data_offsets " + rangeText(t.begin, t.end) + " overlap those of " +
                                                quoteName(tensors[i - 1].name) + ", " +
                                                rangeText(tensors[i - 1].begin, tensors[i - 1].end));
        if (t.begin > next)
            throw FormatError(file, t.name, "data_offsets " + rangeText(t.begin, t.end) + " leave bytes " +
                                                rangeText(next, t.begin) +
                                                " of the data to no tensor (a hole; the tensors must be contiguous)");
        next = t.end;
    }
    if (next != dataBytes)
        throw FormatError(file, "the tensors end at byte " + std::to_string(next) + " of the data, which holds " +
                                    std::to_string(dataBytes) + " bytes; the last tensor must end the file");
}

} // namespace

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

const std::string* firstRepeatedName(std::vector<const std::string*> names) {
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    for (size_t i = 1; i < names.size(); ++i)
        if (*names[i] == *names[i - 1]) return names[i];
    return nullptr;
}

int64_t TensorInfo::elementCount() const {
    int64_t n = 1;
    for (const int64_t d : shape) n *= d; // parseSafetensorsHeader checked that this cannot overflow
    return n;
}

bool tensorByteSize(Dtype dtype, const std::vector<int64_t>& shape, uint64_t& bytes, std::string& problem) {
    // Every dimension counted as at least 1, as contiguous strides are: they must fit in int64 too.
    int64_t extent = 1;
    bool empty = false;
    for (const int64_t d : shape) {
        if (d < 0) {
            problem = "a dimension is negative";
            return false;
        }
        empty = empty || d == 0;
        if (__builtin_mul_overflow(extent, std::max<int64_t>(d, 1), &extent)) {
            problem = "the dimensions multiply past 2^63 elements";
            return false;
        }
    }
    const uint64_t elements = empty ? 0 : static_cast<uint64_t>(extent);
    uint64_t bits = 0;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtypeBits(dtype)), &bits)) {
        problem = "the tensor's size in bits passes 2^64";
        return false;
    }
    if (bits % 8 != 0) {
        problem = std::to_string(elements) + " elements of " + std::to_string(dtypeBits(dtype)) +
                  " bits do not fill whole bytes";
        return false;
    }
    bytes = bits / 8;
    return true;
}

SafetensorsHeader parseSafetensorsHeader(std::string_view json, uint64_t dataBytes, const std::string& file) {
    JsonFields fields(json, file, "the header");
    if (fields.peek() != JsonReader::Type::Object) {
        const std::string kind = fields.kindOfNext();
        throw FormatError(file, kind == "not JSON" ? "the header is not JSON (is this a safetensors file?)"
                                                   : "the header is " + kind + ", not a JSON object of tensors");
    }
    SafetensorsHeader header;
    bool haveMetadata = false;
    fields.members([&](const std::string& key) {
        if (key == "__metadata__") {
            if (haveMetadata) throw FormatError(file, "\"__metadata__\" appears twice in the header");
            haveMetadata = true;
            header.metadata = readMetadata(fields);
        } else {
            header.tensors.push_back(readTensor(fields, key));
            checkTensor(header.tensors.back(), dataBytes, file);
        }
    });
    fields.end();
    // Checked once the JSON has been read through: a header of zeros fails at its first page.
    const size_t bad = firstBadUtf8(json);
    if (bad != std::string_view::npos)
        throw FormatError(file, "the header is not UTF-8 text (byte " + std::to_string(bad) + " of the header)");
    checkNamesUnique(header.tensors, file);
    checkContiguous(header.tensors, dataBytes, file);
    return header;
}

} // namespace parallax
