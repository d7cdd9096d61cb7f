#include "core/text/QwenChat.h"
#include "core/text/TokenizerError.h"
#include "tests/core/text/LabelledRuns.h"
#include "tests/core/text/TinyTokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace parallax;
using parallax::testing::TinyTokenizer;
using parallax::testing::labelledRuns;

namespace {

Tokenizer chatTokenizer() {
    TinyTokenizer t;
    t.merges = {{"a", "t"}, {"c", "at"}, {" ", "cat"}};
    for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                          "<|image_pad|>", "<|video_pad|>"})
        t.add(s);
    return t.make();
}

std::vector<ChatMessage> conversation() {
    ChatMessage question{"user", {ChatPart::image(4), ChatPart::textPart("What is this?")}};
    return {question, ChatMessage::text("assistant", "A cat."), ChatMessage::text("user", "And its colour?"),
            ChatMessage::text("assistant", "Black and white.")};
}

TEST(QwenChat, WritesChatMLWithTheDefaultSystemAndImagePads) {
    const Tokenizer tok = chatTokenizer();
    const QwenChatTemplate chat(tok);
    const ChatEncoding e = chat.encode(conversation());
    const std::string expected =
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|image_pad|><|image_pad|><|image_pad|><|vision_end|>"
        "What is this?<|im_end|>\n"
        "<|im_start|>assistant\nA cat.<|im_end|>\n"
        "<|im_start|>user\nAnd its colour?<|im_end|>\n"
        "<|im_start|>assistant\nBlack and white.<|im_end|>\n";
    EXPECT_EQ(e.text, expected);
    EXPECT_EQ(tok.decode(e.ids), expected);
    EXPECT_EQ(e.ids, tok.encode(expected)) << "the whole text encoded at once";
    EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), *tok.tokenId("<|image_pad|>")), 4);
    EXPECT_EQ(labelledRuns(tok, e), (std::vector<std::string>{"A cat.<|im_end|>", "Black and white.<|im_end|>"}));
    EXPECT_EQ(e.assistant.size(), e.ids.size());
}

TEST(QwenChat, SystemPromptVisionIdsAndGenerationPrompt) {
    const Tokenizer tok = chatTokenizer();
    const QwenChatTemplate chat(tok);
    std::vector<ChatMessage> m = {ChatMessage::text("system", "Be brief."),
                                  {"user", {ChatPart::image(1), ChatPart::video(2), ChatPart::textPart("Same?")}}};
    ChatOptions o;
    o.add_generation_prompt = true;
    o.add_vision_id = true;
    EXPECT_EQ(chat.render(m, o),
              "<|im_start|>system\nBe brief.<|im_end|>\n"
              "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>"
              "Video 1: <|vision_start|><|video_pad|><|video_pad|><|vision_end|>Same?<|im_end|>\n"
              "<|im_start|>assistant\n");
    const ChatEncoding e = chat.encode(m, o);
    EXPECT_TRUE(labelledRuns(tok, e).empty()) << "no answer, nothing labelled";
    o.default_system.clear();
    EXPECT_EQ(chat.render({ChatMessage::text("user", "hi")}, o), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

// Parts are NFC-normalized together (a combining mark that opens a part composes with the part
// before), so that the labels stay on the answer's own tokens.
TEST(QwenChat, NormalizesAcrossPartsAndKeepsLabelsInPlace) {
    const Tokenizer tok = chatTokenizer();
    const QwenChatTemplate chat(tok);
    std::vector<ChatMessage> m = {ChatMessage::text("user", "Cafe\xCC\x81?"),
                                  {"assistant", {ChatPart::textPart("Cafe"), ChatPart::textPart("\xCC\x81 au lait")}},
                                  ChatMessage::text("assistant", "the cat \xF0\x9F\x98\x80\xFF")};
    const ChatEncoding e = chat.encode(m);
    EXPECT_NE(e.text.find("Caf\xC3\xA9 au lait<|im_end|>"), std::string::npos) << e.text;
    EXPECT_EQ(tok.decode(e.ids), e.text);
    EXPECT_EQ(labelledRuns(tok, e), (std::vector<std::string>{"Caf\xC3\xA9 au lait<|im_end|>",
                                                          "the cat \xF0\x9F\x98\x80\xEF\xBF\xBD<|im_end|>"}));
}

TEST(QwenChat, RefusesWhatItCannotWrite) {
    const QwenChatTemplate chat(chatTokenizer());
    EXPECT_THROW(chat.encode({ChatMessage::text("", "x")}), std::invalid_argument);
    EXPECT_THROW(chat.encode({ChatMessage::text("user\nassistant", "x")}), std::invalid_argument);
    EXPECT_THROW(chat.encode({{"user", {ChatPart::image(0)}}}), std::invalid_argument);
    EXPECT_THROW(chat.encode({{"user", {ChatPart::image(int64_t{1} << 40)}}}), std::invalid_argument);
    try {
        QwenChatTemplate plain(TinyTokenizer{}.make());
        FAIL() << "a tokenizer without <|im_start|> took the Qwen template";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("<|im_start|>"), std::string::npos) << e.what();
    }
}

} // namespace
