#pragma once

#include "core/text/Tokenizer.h"

#include <gtest/gtest.h>

namespace parallax::testing {

// Two tokenizers hold the same added tokens, flags and all, in the same order.
inline void expectSameAddedTokens(const Tokenizer& a, const Tokenizer& b) {
    ASSERT_EQ(a.addedTokens().size(), b.addedTokens().size());
    for (size_t i = 0; i < a.addedTokens().size(); ++i) {
        const AddedToken &x = a.addedTokens()[i], &y = b.addedTokens()[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.content, y.content);
        EXPECT_EQ(x.special, y.special) << x.content;
        EXPECT_EQ(x.normalized, y.normalized) << x.content;
        EXPECT_EQ(x.lstrip, y.lstrip) << x.content;
        EXPECT_EQ(x.rstrip, y.rstrip) << x.content;
        EXPECT_EQ(x.single_word, y.single_word) << x.content;
    }
}

} // namespace parallax::testing
