#include "core/spec/Choice.h"

#include "core/spec/ChoiceLabels.h"

#include <iterator>
#include <stdexcept>

namespace parallax {

// ModelKind's names are its table's (core/spec/ModelKinds.cpp).

namespace {

// A value of a closed choice: its name in TOML files and how the New run form offers it.
struct Named {
    const char* name;
    const char* label;
};

// Each choice once, in the enum's order: a new value is a row here and its enum value (and
// kChoiceCount, against which the rows are counted at compile time).
template <class E>
struct Table;
template <>
struct Table<Schedule> {
    static constexpr Named rows[] = {{"gpipe", "GPipe"}, {"1f1b", "1F1B"}, {"interleaved", "interleaved 1F1B"}, {"zb1", "zero bubble (ZB-H1)"}};
};
template <>
struct Table<Precision> {
    static constexpr Named rows[] = {{"fp32", "fp32"}, {"bf16", "bf16 (cuda)"}};
};
template <>
struct Table<Device> {
    static constexpr Named rows[] = {{"cpu", "CPU"}, {"cuda", "CUDA GPU"}};
};
template <>
struct Table<Target> {
    static constexpr Named rows[] = {{"local", "this machine"}, {"hosts", "hosts (mpirun --host)"}, {"slurm", "Slurm (srun)"}};
};
template <>
struct Table<DataKind> {
    static constexpr Named rows[] = {{"synthetic", "synthetic (generated)"},
        {"fashion-mnist", "fashion-mnist (IDX files)"},
        {"text", "text (file or folder of .txt)"},
        {"image-folder", "image-folder (class subfolders of images)"},
        {"conversations", "conversations (chats with images: LLaVA, ShareGPT, messages)"},
        {"latents", "latents (VAE latents and prompt states, safetensors shards)"}};
};
template <>
struct Table<Bind> {
    static constexpr Named rows[] = {{"none", "nothing"}, {"core", "cores"}, {"socket", "sockets"}};
};
template <>
struct Table<SlurmMode> {
    static constexpr Named rows[] = {{"srun", "srun (ends with the supervisor)"}, {"batch", "sbatch (outlives the supervisor)"}};
};
template <>
struct Table<OnHang> {
    static constexpr Named rows[] = {{"wait", "name it and wait"}, {"fail", "fail the run after the timeout"}};
};
template <>
struct Table<OnHostFailure> {
    static constexpr Named rows[] = {{"fail", "fail the run"}, {"resume", "resume on the hosts left"}};
};
template <>
struct Table<StageSplit> {
    static constexpr Named rows[] = {{"flops", "by FLOPs"}, {"profile", "by measured time (probe first)"}};
};
template <>
struct Table<OnBadSample> {
    static constexpr Named rows[] = {{"fail", "fail the run, naming it"}, {"skip", "skip it and count it"}};
};
template <>
struct Table<FinetuneMode> {
    static constexpr Named rows[] = {{"full", "full (every weight not frozen)"}, {"lora", "LoRA adapters"}};
};
template <>
struct Table<OnTruncate> {
    static constexpr Named rows[] = {{"drop", "drop the sample and count it"}, {"fail", "refuse the run"}};
};

template <class E>
const std::vector<std::string>& namesOf() {
    static_assert(std::size(Table<E>::rows) == kChoiceCount<E>, "a choice's table has a row per value of its enum");
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Named& n : Table<E>::rows) v.push_back(n.name);
        return v;
    }();
    return names;
}

template <class E>
const std::vector<std::string>& labelsOf() {
    static const std::vector<std::string> labels = [] {
        std::vector<std::string> v;
        for (const Named& n : Table<E>::rows) v.push_back(n.label);
        return v;
    }();
    return labels;
}

} // namespace

template <>
const std::vector<std::string>& choiceNames<Schedule>() {
    return namesOf<Schedule>();
}
template <>
const std::vector<std::string>& choiceLabels<Schedule>() {
    return labelsOf<Schedule>();
}
template <>
const std::vector<std::string>& choiceNames<Precision>() {
    return namesOf<Precision>();
}
template <>
const std::vector<std::string>& choiceLabels<Precision>() {
    return labelsOf<Precision>();
}
template <>
const std::vector<std::string>& choiceNames<Device>() {
    return namesOf<Device>();
}
template <>
const std::vector<std::string>& choiceLabels<Device>() {
    return labelsOf<Device>();
}
template <>
const std::vector<std::string>& choiceNames<Target>() {
    return namesOf<Target>();
}
template <>
const std::vector<std::string>& choiceLabels<Target>() {
    return labelsOf<Target>();
}
template <>
const std::vector<std::string>& choiceNames<DataKind>() {
    return namesOf<DataKind>();
}
template <>
const std::vector<std::string>& choiceLabels<DataKind>() {
    return labelsOf<DataKind>();
}
template <>
const std::vector<std::string>& choiceNames<Bind>() {
    return namesOf<Bind>();
}
template <>
const std::vector<std::string>& choiceLabels<Bind>() {
    return labelsOf<Bind>();
}
template <>
const std::vector<std::string>& choiceNames<SlurmMode>() {
    return namesOf<SlurmMode>();
}
template <>
const std::vector<std::string>& choiceLabels<SlurmMode>() {
    return labelsOf<SlurmMode>();
}
template <>
const std::vector<std::string>& choiceNames<OnHang>() {
    return namesOf<OnHang>();
}
template <>
const std::vector<std::string>& choiceLabels<OnHang>() {
    return labelsOf<OnHang>();
}
template <>
const std::vector<std::string>& choiceNames<OnHostFailure>() {
    return namesOf<OnHostFailure>();
}
template <>
const std::vector<std::string>& choiceLabels<OnHostFailure>() {
    return labelsOf<OnHostFailure>();
}
template <>
const std::vector<std::string>& choiceNames<StageSplit>() {
    return namesOf<StageSplit>();
}
template <>
const std::vector<std::string>& choiceLabels<StageSplit>() {
    return labelsOf<StageSplit>();
}
template <>
const std::vector<std::string>& choiceNames<OnBadSample>() {
    return namesOf<OnBadSample>();
}
template <>
const std::vector<std::string>& choiceLabels<OnBadSample>() {
    return labelsOf<OnBadSample>();
}
template <>
const std::vector<std::string>& choiceNames<FinetuneMode>() {
    return namesOf<FinetuneMode>();
}
template <>
const std::vector<std::string>& choiceLabels<FinetuneMode>() {
    return labelsOf<FinetuneMode>();
}
template <>
const std::vector<std::string>& choiceNames<OnTruncate>() {
    return namesOf<OnTruncate>();
}
template <>
const std::vector<std::string>& choiceLabels<OnTruncate>() {
    return labelsOf<OnTruncate>();
}

void ChoiceField::setName(const std::string& name) {
    m_index = -1;
    m_unknown.clear();
    for (size_t i = 0; i < m_names->size(); ++i)
        if ((*m_names)[i] == name) m_index = static_cast<int>(i);
    if (m_index < 0) m_unknown = name;
}

void throwUnknownChoice(const std::string& name, const std::vector<std::string>& names) {
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
    throw std::invalid_argument("\"" + name + "\" is none of " + list);
}

} // namespace parallax
