#pragma once

#include "core/spec/Choice.h"

#include <string>
#include <vector>

namespace parallax {

// How the New run form offers each value of a closed choice, in the enum's order, one per name of
// choiceNames<E>() (both from the choice's one table in Choice.cpp). ModelKind's come from its
// table (ModelKinds.cpp).
template <class E>
const std::vector<std::string>& choiceLabels();
template <>
const std::vector<std::string>& choiceLabels<Schedule>();
template <>
const std::vector<std::string>& choiceLabels<Precision>();
template <>
const std::vector<std::string>& choiceLabels<Device>();
template <>
const std::vector<std::string>& choiceLabels<Target>();
template <>
const std::vector<std::string>& choiceLabels<DataKind>();
template <>
const std::vector<std::string>& choiceLabels<Bind>();
template <>
const std::vector<std::string>& choiceLabels<SlurmMode>();
template <>
const std::vector<std::string>& choiceLabels<OnHang>();
template <>
const std::vector<std::string>& choiceLabels<OnHostFailure>();
template <>
const std::vector<std::string>& choiceLabels<StageSplit>();
template <>
const std::vector<std::string>& choiceLabels<OnBadSample>();
template <>
const std::vector<std::string>& choiceLabels<FinetuneMode>();
template <>
const std::vector<std::string>& choiceLabels<OnTruncate>();

} // namespace parallax
