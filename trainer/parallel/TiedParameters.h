#pragma once

#include "trainer/comm/ProcessGroups.h"
#include "trainer/models/Model.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace parallax {

// The parameters a model ties (Model::ties(): a head tied to the token embedding) stay two
// parameters, each where its unit runs, in buckets of their own (BucketOptions::alone), so that
// every data-parallel rank holds the same slice of both. After a step's reductions each copy's
// reduced gradient and its source's are added together, over the pipeline group where the first
// and the last stage hold them apart: both then take the same update from the same state and stay
// equal, as one weight would. A gradient norm counts the pair once (Bucket::tiedCopy).
class TiedParameters {
public:
    // The tied parameters that train, to be given buckets of their own: on the whole model, before
    // pipeline placement. Throws std::invalid_argument when a copy trains and its source does not,
    // or the other way (they are one weight).
    static std::set<std::string> trained(const Model& model);

    // The pairs of `trained` this rank holds one or both of, in `buckets`. Throws when the two lie
    // on stages that are not a pipeline's only two (the validator allows pp <= 2 with ties).
    TiedParameters(const std::vector<Model::Tie>& ties, const std::set<std::string>& trained, GradBuckets& buckets,
                   const ProcessGroups& groups);

    bool empty() const { return m_pairs.empty(); }
    // After GradientReducer::finishStep(), before the gradient norm and the optimizer.
    void addGradients(const GradientReducer& reducer);

private:
    struct Pair {
        int source = -1, copy = -1; // bucket indices; -1 where the other pipeline stage holds it
    };
    std::vector<Pair> m_pairs;
    std::shared_ptr<Communicator> m_pp;
};

} // namespace parallax
