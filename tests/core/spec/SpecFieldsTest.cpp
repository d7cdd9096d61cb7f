#include "core/spec/SpecFields.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <variant>

namespace parallax {
namespace {

// The form offers a choice's options from the field table: they must be the choice's names, in
// its order, or a new choice would be missing from the form (or a removed one offered).
TEST(SpecFieldInfo, TheOptionsOfAChoiceAreExactlyItsNames) {
    RunSpec spec;
    for (const SpecField& f : specFields(spec)) {
        auto* const* choice = std::get_if<ChoiceField*>(&f.ref);
        if (!choice || !f.info.offered()) continue;
        ASSERT_EQ(f.info.options.size(), (*choice)->names().size()) << f.path();
        for (size_t i = 0; i < f.info.options.size(); ++i) {
            EXPECT_EQ(f.info.options[i].value, (*choice)->names()[i]) << f.path();
            EXPECT_NE(std::string(f.info.options[i].label), "") << f.path();
        }
    }
}

// Every offered field has a label and an editor the form knows (not a list of numbers, not a map),
// and the default of an integer lies in its editor's range or among its options.
TEST(SpecFieldInfo, EveryOfferedFieldHasALabelAnEditorAndItsDefaultInRange) {
    RunSpec spec;
    size_t offered = 0;
    for (const SpecField& f : specFields(spec)) {
        if (!f.info.offered()) continue;
        ++offered;
        EXPECT_NE(std::string(f.info.label), "") << f.path();
        EXPECT_LE(f.info.minimum, f.info.maximum) << f.path();
        EXPECT_FALSE(std::holds_alternative<std::vector<int64_t>*>(f.ref)) << f.path() << ": no editor for a list of numbers";
        EXPECT_FALSE((std::holds_alternative<std::map<std::string, std::string>*>(f.ref))) << f.path() << ": no editor for a table";
        if (auto* const* n = std::get_if<int64_t*>(&f.ref)) {
            if (f.info.options.empty()) {
                EXPECT_GE(**n, f.info.minimum) << f.path();
                EXPECT_LE(**n, f.info.maximum) << f.path();
            } else {
                bool found = false;
                for (const FieldOption& o : f.info.options) found |= std::to_string(**n) == o.value;
                EXPECT_TRUE(found) << f.path() << ": its default is none of its options";
            }
        }
    }
    EXPECT_GE(offered, 60u) << "the form offers the fields a person sets";
    EXPECT_FALSE(specFieldInfo("train.beta1")->offered()) << "set in the spec file only";
    EXPECT_EQ(specFieldInfo("train.no_such_field"), nullptr);
}

TEST(SpecFieldInfo, WhetherAFieldMattersFollowsTheSpec) {
    RunSpec spec;
    const FieldInfo& imageSize = *specFieldInfo("model.image_size");
    const FieldInfo& visionDim = *specFieldInfo("model.vision_dim");
    const FieldInfo& partition = *specFieldInfo("launch.partition");
    const FieldInfo& hosts = *specFieldInfo("launch.hosts");
    const FieldInfo& minHosts = *specFieldInfo("launch.min_hosts");
    EXPECT_TRUE(fieldRelevant(*specFieldInfo("train.steps"), spec));
    EXPECT_FALSE(fieldRelevant(imageSize, spec));
    spec.model.kind = ModelKind::QwenImageVae;
    EXPECT_TRUE(fieldRelevant(imageSize, spec));
    EXPECT_FALSE(fieldRelevant(visionDim, spec));
    spec.model.kind = ModelKind::Qwen2_5_Vl;
    EXPECT_TRUE(fieldRelevant(visionDim, spec));

    EXPECT_FALSE(fieldRelevant(partition, spec));
    EXPECT_FALSE(fieldRelevant(hosts, spec));
    spec.launch.target = Target::Slurm;
    EXPECT_TRUE(fieldRelevant(partition, spec));
    spec.launch.target = Target::Hosts;
    EXPECT_TRUE(fieldRelevant(hosts, spec));
    spec.launch.cluster = "lab"; // the profile names the hosts
    EXPECT_FALSE(fieldRelevant(hosts, spec));
    EXPECT_FALSE(fieldRelevant(minHosts, spec));
    spec.launch.on_host_failure = OnHostFailure::Resume;
    EXPECT_TRUE(fieldRelevant(minHosts, spec));
}

} // namespace
} // namespace parallax
