#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// The closed choices of a spec. Each has one table of its TOML names (Choice.cpp), indexed by the
// enum's value; code compares enums, and names appear only where a spec is read or written and in
// messages.
enum class ModelKind { Gpt, Qwen2_5_Vl, Qwen2, QwenImage, QwenImageVae };
enum class Schedule { GPipe, OneFOneB, Interleaved, ZeroBubble };
enum class Precision { Fp32, Bf16 };
enum class Device { Cpu, Cuda };
enum class Target { Local, Hosts, Slurm };
enum class DataKind { Synthetic, FashionMnist, Text, ImageFolder, Conversations, Latents };
enum class Bind { None, Core, Socket };
enum class SlurmMode { Srun, Batch };
enum class OnHang { Wait, Fail };
enum class OnHostFailure { Fail, Resume };
enum class StageSplit { Flops, Profile };
enum class OnBadSample { Fail, Skip };
enum class FinetuneMode { Full, Lora };
enum class OnTruncate { Drop, Fail };

// How many values each choice has. A table that mirrors one of these enums (its names and labels,
// a kind's row, a builder) is checked against it at compile time: a value added here without its
// row, or a row without its value, does not build.
template <class E>
inline constexpr size_t kChoiceCount = 0;
template <> inline constexpr size_t kChoiceCount<ModelKind> = 5;
template <> inline constexpr size_t kChoiceCount<Schedule> = 4;
template <> inline constexpr size_t kChoiceCount<Precision> = 2;
template <> inline constexpr size_t kChoiceCount<Device> = 2;
template <> inline constexpr size_t kChoiceCount<Target> = 3;
template <> inline constexpr size_t kChoiceCount<DataKind> = 6;
template <> inline constexpr size_t kChoiceCount<Bind> = 3;
template <> inline constexpr size_t kChoiceCount<SlurmMode> = 2;
template <> inline constexpr size_t kChoiceCount<OnHang> = 2;
template <> inline constexpr size_t kChoiceCount<OnHostFailure> = 2;
template <> inline constexpr size_t kChoiceCount<StageSplit> = 2;
template <> inline constexpr size_t kChoiceCount<OnBadSample> = 2;
template <> inline constexpr size_t kChoiceCount<FinetuneMode> = 2;
template <> inline constexpr size_t kChoiceCount<OnTruncate> = 2;

template <class E>
const std::vector<std::string>& choiceNames();
template <>
const std::vector<std::string>& choiceNames<ModelKind>();
template <>
const std::vector<std::string>& choiceNames<Schedule>();
template <>
const std::vector<std::string>& choiceNames<Precision>();
template <>
const std::vector<std::string>& choiceNames<Device>();
template <>
const std::vector<std::string>& choiceNames<Target>();
template <>
const std::vector<std::string>& choiceNames<DataKind>();
template <>
const std::vector<std::string>& choiceNames<Bind>();
template <>
const std::vector<std::string>& choiceNames<SlurmMode>();
template <>
const std::vector<std::string>& choiceNames<OnHang>();
template <>
const std::vector<std::string>& choiceNames<OnHostFailure>();
template <>
const std::vector<std::string>& choiceNames<StageSplit>();
template <>
const std::vector<std::string>& choiceNames<OnBadSample>();
template <>
const std::vector<std::string>& choiceNames<FinetuneMode>();
template <>
const std::vector<std::string>& choiceNames<OnTruncate>();

template <class E>
const std::string& choiceName(E value) {
    return choiceNames<E>()[static_cast<size_t>(value)];
}

// The value a name stands for; nullopt for a name that is none of the choice's.
template <class E>
std::optional<E> parseChoice(const std::string& name) {
    const std::vector<std::string>& names = choiceNames<E>();
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return static_cast<E>(i);
    return std::nullopt;
}

// A spec field holding a closed choice, as the field table sees it: read and written by name. A
// name that is none of the choice's is kept as it was read (a spec may hold anything until it is
// validated), so that the validator can name it and suggest the nearest one; it equals no value.
class ChoiceField {
public:
    bool known() const { return m_index >= 0; }
    const std::string& name() const { return known() ? (*m_names)[static_cast<size_t>(m_index)] : m_unknown; }
    void setName(const std::string& name);
    const std::vector<std::string>& names() const { return *m_names; }

    friend bool operator==(const ChoiceField& a, const ChoiceField& b) {
        return a.m_names == b.m_names && a.m_index == b.m_index && (a.known() || a.m_unknown == b.m_unknown);
    }
    friend bool operator!=(const ChoiceField& a, const ChoiceField& b) { return !(a == b); }

protected:
    ChoiceField(const std::vector<std::string>& names, int index) : m_names(&names), m_index(index) {}

    const std::vector<std::string>* m_names;
    int m_index;
    std::string m_unknown;
};

template <class E>
class Choice : public ChoiceField {
public:
    Choice(E value) : ChoiceField(choiceNames<E>(), static_cast<int>(value)) {}
    static Choice named(const std::string& name) {
        Choice c(E{});
        c.setName(name);
        return c;
    }
    Choice& operator=(E value) {
        m_index = static_cast<int>(value);
        m_unknown.clear();
        return *this;
    }
    // The value of a known choice; a spec that passed validation holds only known ones. Throws
    // std::invalid_argument with the unknown name otherwise.
    E value() const;

    friend bool operator==(const Choice& c, E v) { return c.m_index == static_cast<int>(v); }
    friend bool operator==(E v, const Choice& c) { return c == v; }
    friend bool operator!=(const Choice& c, E v) { return !(c == v); }
    friend bool operator!=(E v, const Choice& c) { return !(c == v); }
};

[[noreturn]] void throwUnknownChoice(const std::string& name, const std::vector<std::string>& names);

template <class E>
E Choice<E>::value() const {
    if (!known()) throwUnknownChoice(m_unknown, *m_names);
    return static_cast<E>(m_index);
}

} // namespace parallax
