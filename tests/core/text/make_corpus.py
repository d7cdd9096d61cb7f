#!/usr/bin/env python3
"""Writes the tokenizer test corpus: lines of text that stress a byte-level BPE tokenizer.

    make_corpus.py OUT                 the test corpus (about 12,000 lines, ~1.5 MB)
    make_corpus.py OUT --bench BYTES   mixed prose, code and CJK text for the throughput benchmark

The output depends on nothing but this file (a fixed seed), so every machine gets the same bytes.
Lines are separated by LF and may hold anything else: CR, NUL, other controls, invalid UTF-8.

Kept out on purpose, where the tokenizers disagree among themselves and not with Parallax alone:
characters assigned after Unicode 14 (PCRE2 10.42 and ICU 72 know Unicode 14 and 15; Node's ICU
knows later ones, and classifies them as letters where PCRE2 sees unassigned code points), and an
apostrophe before U+017F LONG S (PCRE2 folds case as Unicode does and takes "'ſ" for the contraction
"'s" under (?i:); tokenizers.js folds ASCII only).
"""
import random
import sys
import unicodedata

SEED = 20240611

ENGLISH = """the of and to in is you that it he was for on are as with his they at be this have from or one had
by word but not what all were we when your can said there use an each which she do how their if will up other
about out many then them these so some her would make like him into time has look two more write go see number
no way could people my than first water been call who oil its now find long down day did get come made may part
over new sound take only little work know place year live me back give most very after thing our just name good
sentence man think say great where help through much before line right too mean old any same tell boy follow came
want show also around form three small set put end does another well large must big even such because turn here
why ask went men read need land different home us move try kind hand picture again change off play spell air away
animal house point page letter mother answer found study still learn should America world gradient tensor shard
checkpoint pipeline tokenizer parallel optimizer Transformer attention embedding""".split()

CHINESE = ("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发"
           "天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知模型训练数据并行梯度")

JAPANESE = ["今日は良い天気ですね。", "東京へ行きました", "ありがとうございます！", "カタカナのテキスト", "ｶﾀｶﾅ半角",
            "日本語の文章を分割する", "モデルを学習させる。", "「引用」と『二重引用』", "ー・ヽヾゝゞ", "㍻㌔㍉"]

KOREAN = ["안녕하세요", "한국어 텍스트", "모델 학습", "데이터를 나누다", "감사합니다!"]

CODE = [
    "def forward(self, x: torch.Tensor) -> torch.Tensor:",
    "    return self.proj(F.gelu(self.fc(x)))  # MLP",
    "\tfor (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "#include <vector>\nint main() {}",
    "const add = (a, b) => a + b; console.log(`sum=${add(1, 2)}`);",
    "fn main() { let v: Vec<u32> = (0..10).map(|x| x * x).collect(); println!(\"{:?}\", v); }",
    "SELECT id, name FROM runs WHERE state = 'failed' ORDER BY id DESC LIMIT 10;",
    "<div class=\"row\"><span>&nbsp;&lt;tag&gt;</span></div>",
    "if [ -z \"$HOME\" ]; then echo \"no home\" >&2; exit 1; fi",
    "func (s *Server) Handle(w http.ResponseWriter, r *http.Request) error { return nil }",
    "x = {'a': [1, 2, 3], \"b\": (4.5e-3, -0x1F, 0b1010)}",
    "template <typename T> T max(T a, T b) { return a > b ? a : b; }",
    "    raise ValueError(f\"bad value: {value!r}\")",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f**=6;g//=7;h>>=8;i<<=9;j&=k|l^m",
    "// TODO(me): don't forget it's O(n^2) -- fix   ",
    "matrix[i][j] = (i == j) ? 1.0f : 0.0f;",
    "@decorator\nclass Foo(Base):\n    pass",
]

EMOJI = ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🧑🏻‍💻", "🏳️‍🌈", "❤️", "❤", "🇯🇵", "🇺🇸🇫🇷", "🇩🇪", "1️⃣", "#️⃣",
         "👩‍❤️‍💋‍👨", "🐈‍⬛", "✊🏿", "🤷‍♀️", "©️", "™", "🫠", "🦀", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"]

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|image_pad|>", "<|vision_start|>", "<|vision_end|>",
            "<|video_pad|>", "<|object_ref_start|>", "<|box_end|>", "<tool_call>", "</tool_call>", "<think>",
            "<|fim_prefix|>", "<|repo_name|>"]
NEAR_SPECIALS = ["<|im_start|", "<|im_start", "|im_start|>", "<|IM_START|>", "< |im_end|>", "<|endoftext||>",
                 "<<|im_end|>>", "<|image_pad|><|image_pad|>", "<|im_st<|im_end|>art|>", "<think >"]

CONTRACTIONS = ["'s", "'S", "'t", "'T", "'re", "'Re", "'rE", "'RE", "'ve", "'Ve", "'vE", "'VE", "'m", "'M",
                "'ll", "'Ll", "'lL", "'LL", "'d", "'D", "’s", "''s", "'", "'x", "'ss", "'lll", "'dd"]

SPACES = [" ", "  ", "\t", "\t\t", "\u00a0", "\u3000", "\u2002", "\u2003", "\u2009", "\u200a", "\u202f",
          "\u205f", "\u1680", "\u2028", "\u2029", "\u0085", "\u000b", "\u000c", "\r", "\r\r", " \r", "\ufeff",
          "\u200b", "\u200d", "\u180e", " " * 7, " " * 33, "\t \t \u00a0 "]

# Pieces whose NFC differs from themselves, and NFC text that stays.
NFD_PIECES = ["e\u0301", "A\u030a", "a\u0323\u0302", "a\u0302\u0323", "o\u0308\u0304", "\u212b", "\u2126", "\u1e9b\u0323",
              "\u1100\u1161\u11a8", "\u1112\u1161\u11ab", "\u0915\u093c", "\u0958", "\u0627\u0653", "<\u0338", "=\u0338",
              "\u0301start", "Cafe\u0301 na\u0308ive", "\u00c5ngstr\u00f6m", "\u0390", "\u1f00\u0345", "\u0e40\u0e01",
              "\u304b\u3099", "\u30cf\u309a", "\u0041\u030a\u0301", "\ufb2a", "\u2adc", "\U0001d15e", "\u0f73"]

SCRIPTS = ["Привет, мир! Это тест.", "Γειά σου Κόσμε", "مرحبا بالعالم، هذا اختبار", "שלום עולם", "สวัสดีชาวโลก",
           "नमस्ते दुनिया", "Բարեւ աշխարհ", "გამარჯობა", "𝐀𝐁𝐂 𝑥𝑦𝑧 𝟏𝟐𝟑", "ᏣᎳᎩ", "∀x∈ℝ: x²≥0 ∑∫√∞≈≠",
           "½ ¾ ⅓ Ⅻ ① ⑴ ²³ ٣٤٥ ۱۲۳ १२३ 一二三", "€£¥₹₩₿ $100", "┌─┬─┐ │ ╳ │", "Tiếng Việt có dấu", "Ωμέγα ΣΊΣΥΦΟΣ"]

INVALID = [b"\xff", b"\xfe\xff", b"\xc0\x80", b"\xc1\xbf", b"\xe2\x82", b"\xe2\x28\xa1", b"\xed\xa0\x80",
           b"\xed\xbf\xbf", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80",
           b"\x80", b"\x80\x80\xbf", b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\xc3", b"\xc3\x28", b"\xe4\xb8",
           b"\xef\xbb", b"\xa0\xa1", b"\xdf", b"\xef\xbf\xbe", b"\x00", b"\x01\x02\x1b[0m"]


def pick(rng, items):
    return items[rng.randrange(len(items))]


def english_word(rng):
    word = pick(rng, ENGLISH) if rng.random() < 0.9 else "".join(
        pick(rng, "bcdfghklmnprstvz") + pick(rng, "aeiou") for _ in range(rng.randint(1, 5)))
    style = rng.random()
    if style < 0.1:
        return word.capitalize()
    if style < 0.13:
        return word.upper()
    return word


def english(rng, words=None):
    out = []
    for _ in range(words or rng.randint(3, 25)):
        w = english_word(rng)
        r = rng.random()
        if r < 0.06:
            w += pick(rng, CONTRACTIONS)
        elif r < 0.12:
            w += pick(rng, [",", ".", ";", ":", "!", "?", "...", "--", ")", "\"", "'"])
        elif r < 0.15:
            w = str(rng.randint(0, 10 ** rng.randint(1, 8)))
        out.append(w)
    return " ".join(out)


def chinese(rng, n=None):
    s = "".join(pick(rng, CHINESE) if rng.random() < 0.85 else chr(rng.randint(0x4E00, 0x9FA5))
                for _ in range(n or rng.randint(4, 40)))
    cut = rng.randint(0, len(s))
    return s[:cut] + pick(rng, ["，", "。", "！", "？", "、", "「", "」", "（", "）", ""]) + s[cut:]


def digits(rng, length):
    return "".join(pick(rng, "0123456789") for _ in range(length))


def assigned_char(rng, low, high):
    while True:
        c = chr(rng.randint(low, high))
        if unicodedata.category(c) not in ("Cn", "Cs", "Co") and c not in "\n\u017f":
            return c


def random_unicode(rng):
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0xDFF), (0xE00, 0xEFF),
              (0x1100, 0x11FF), (0x1E00, 0x1FFF), (0x2000, 0x2BFF), (0x3000, 0x30FF), (0x3400, 0x4DBF),
              (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFFFD), (0x10000, 0x1034F), (0x1D400, 0x1D7FF),
              (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x20000, 0x2A6DF)]
    return "".join(assigned_char(rng, *pick(rng, ranges)) for _ in range(rng.randint(1, 30)))


def nfd_line(rng):
    base = pick(rng, [english(rng), pick(rng, SCRIPTS), pick(rng, KOREAN), pick(rng, JAPANESE), random_unicode(rng)])
    form = pick(rng, ["NFD", "NFKD", "NFC"])
    text = unicodedata.normalize(form, base)
    pieces = [text] + [pick(rng, NFD_PIECES) for _ in range(rng.randint(1, 4))]
    rng.shuffle(pieces)
    return "".join(pieces)


def special_line(rng):
    parts = []
    for _ in range(rng.randint(2, 8)):
        r = rng.random()
        if r < 0.35:
            parts.append(pick(rng, SPECIALS))
        elif r < 0.45:
            parts.append(pick(rng, NEAR_SPECIALS))
        elif r < 0.6:
            parts.append(pick(rng, SPACES))
        else:
            parts.append(pick(rng, [english(rng, rng.randint(1, 4)), chinese(rng, 3), "user\n"[:4], "assistant",
                                    "\u0338", pick(rng, EMOJI), pick(rng, CODE)[:20]]))
    joiner = pick(rng, ["", " ", ""])
    return joiner.join(parts)


def digit_line(rng, length):
    pieces = [digits(rng, length), pick(rng, ["", " ", "x", ".", ",", "-", "abc", "年", "\u00a0"]),
              digits(rng, rng.randint(1, 12)), pick(rng, ["", "%", "px", "1st", "3.14159", "1,000,000", "１２３４５",
                                                          "٠١٢٣٤٥٦٧٨٩", "v2.0.1", "0x" + digits(rng, 8)])]
    rng.shuffle(pieces)
    return "".join(pieces)


def contraction_line(rng):
    words = []
    for _ in range(rng.randint(2, 10)):
        w = english_word(rng) if rng.random() < 0.8 else pick(rng, ["", " ", "I", "we", "they", "ITS", "x", "42"])
        words.append(w + pick(rng, CONTRACTIONS) + pick(rng, ["", "", "s", "a", " ", "'", "!"]))
    return pick(rng, [" ", "", "  "]).join(words)


def whitespace_line(rng):
    parts = []
    for _ in range(rng.randint(2, 10)):
        parts.append(pick(rng, SPACES) * rng.randint(1, 4))
        parts.append(pick(rng, [english(rng, 2), "x", "世界", "123", "!?", "", pick(rng, EMOJI)]))
    if rng.random() < 0.4:
        parts.append(" " * rng.randint(1, 9))      # trailing spaces
    if rng.random() < 0.3:
        parts.append("\r")                          # a CRLF line, its LF cut off
    return "".join(parts)


def long_line(rng):
    kind = rng.randrange(8)
    n = rng.randint(100, 5000)
    if kind == 0:
        return pick(rng, ["a", "ab", "xyz", "é", "ß"]) * (n // 2)
    if kind == 1:
        return "Donaudampfschifffahrtsgesellschaftskapitän" * rng.randint(2, 30)
    if kind == 2:
        return chinese(rng, n // 3)
    if kind == 3:
        return "".join(pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(n)) + "=="
    if kind == 4:
        return pick(rng, ["=", "-", "*", "#", "~", ".", "!?", "😀", "👍🏽"]) * (n // 4)
    if kind == 5:
        return pick(rng, SPACES) * (n // 4) + pick(rng, ["x", "", "\r"])
    if kind == 6:
        return "https://example.com/" + "/".join(english_word(rng) for _ in range(n // 40)) + "?q=" + digits(rng, 30)
    return digits(rng, n)


def emoji_line(rng):
    parts = [pick(rng, EMOJI) for _ in range(rng.randint(1, 8))]
    if rng.random() < 0.5:
        parts.insert(rng.randint(0, len(parts)), english(rng, rng.randint(1, 5)))
    return pick(rng, ["", " ", "\u200d"]).join(parts)


def invalid_line(rng):
    out = bytearray()
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.45:
            out += pick(rng, INVALID)
        elif r < 0.55:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        else:
            out += pick(rng, [english(rng, 3), chinese(rng, 4), pick(rng, EMOJI), pick(rng, SPECIALS)]).encode()
    return bytes(out).replace(b"\n", b"\\n")


def text_line(rng, index):
    """The index-th line of the test corpus."""
    makers = [
        lambda: english(rng),
        lambda: chinese(rng),
        lambda: pick(rng, JAPANESE) + pick(rng, ["", " ", "、"]) + pick(rng, JAPANESE),
        lambda: pick(rng, KOREAN) + " " + "".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(rng.randint(1, 9))),
        lambda: pick(rng, CODE),
        lambda: emoji_line(rng),
        lambda: digit_line(rng, 1 + index % 40),
        lambda: contraction_line(rng),
        lambda: whitespace_line(rng),
        lambda: special_line(rng),
        lambda: nfd_line(rng),
        lambda: pick(rng, SCRIPTS) + " " + english(rng, 3),
        lambda: random_unicode(rng),
        lambda: long_line(rng),
        lambda: invalid_line(rng),
    ]
    if index % 4 == 3:  # mixed: a few makers' output on one line
        parts = [makers[rng.randrange(len(makers) - 2)]() for _ in range(rng.randint(2, 4))]
        line = pick(rng, [" ", "", "\t", "  "]).join(p if isinstance(p, str) else p.decode("utf-8", "replace")
                                                       for p in parts)
    else:
        line = makers[index % len(makers)]()
    data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    data = data.replace(b"\n", b" ")
    return data.replace("'\u017f".encode(), b"'s")


def corpus(path):
    rng = random.Random(SEED)
    lines = [text_line(rng, i) for i in range(12000)]
    # Every digit-run length, every contraction spelling and every space on its own line too.
    lines += [digits(rng, n).encode() for n in range(1, 65)]
    lines += [("I" + c + " it" + c + " " + c).encode() for c in CONTRACTIONS]
    lines += [("a" + s + "b" + s).encode() for s in SPACES]
    lines += [s.encode() for s in SPECIALS + NEAR_SPECIALS + EMOJI + NFD_PIECES]
    lines += [b"", b" ", b"\r", b"\t", b"\x00"]
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return len(lines)


def bench_text(path, size):
    """Prose (most of it), code, Chinese, Japanese and emoji, like a mixed pre-training shard."""
    rng = random.Random(SEED + 1)
    out = []
    total = 0
    while total < size:
        r = rng.random()
        if r < 0.6:
            line = english(rng, rng.randint(20, 80))
        elif r < 0.8:
            line = "\n".join(pick(rng, CODE) for _ in range(rng.randint(3, 10)))
        elif r < 0.9:
            line = chinese(rng, rng.randint(20, 120))
        elif r < 0.95:
            line = " ".join(pick(rng, JAPANESE) for _ in range(rng.randint(2, 6)))
        else:
            line = english(rng, 10) + " " + emoji_line(rng) + " " + pick(rng, SCRIPTS)
        data = line.encode()
        out.append(data)
        total += len(data) + 1
    with open(path, "wb") as f:
        f.write(b"\n".join(out) + b"\n")
    return len(out)


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--bench":
        n = bench_text(sys.argv[1], int(sys.argv[3]))
    elif len(sys.argv) == 2:
        n = corpus(sys.argv[1])
    else:
        sys.exit(__doc__)
    print(f"{sys.argv[1]}: {n} lines")


if __name__ == "__main__":
    main()
