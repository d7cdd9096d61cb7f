#include "core/spec/Choice.h"

#include <stdexcept>

namespace parallax {

// ModelKind's names are its table's (core/spec/ModelKinds.cpp).

template <>
const std::vector<std::string>& choiceNames<Schedule>() {
    static const std::vector<std::string> names = {"gpipe", "1f1b", "interleaved", "zb1"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<Precision>() {
    static const std::vector<std::string> names = {"fp32", "bf16"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<Device>() {
    static const std::vector<std::string> names = {"cpu", "cuda"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<Target>() {
    static const std::vector<std::string> names = {"local", "hosts", "slurm"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<DataKind>() {
    static const std::vector<std::string> names = {"synthetic", "fashion-mnist", "text", "image-folder"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<Bind>() {
    static const std::vector<std::string> names = {"none", "core", "socket"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<SlurmMode>() {
    static const std::vector<std::string> names = {"srun", "batch"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<OnHang>() {
    static const std::vector<std::string> names = {"wait", "fail"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<OnHostFailure>() {
    static const std::vector<std::string> names = {"fail", "resume"};
    return names;
}

template <>
const std::vector<std::string>& choiceNames<StageSplit>() {
    static const std::vector<std::string> names = {"flops", "profile"};
    return names;
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
