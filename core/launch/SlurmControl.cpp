#include "core/launch/SlurmControl.h"

namespace parallax {

namespace {

class SlurmCommands : public SlurmControl {
public:
    SlurmJobStatus query(const std::string& jobId, std::chrono::milliseconds timeout) override {
        return querySlurmJob(jobId, timeout);
    }
    std::string submit(const std::vector<std::string>& submit, const std::map<std::string, std::string>& env) override {
        return submitSlurmJob(submit, env);
    }
    std::string signal(const std::string& jobId, const std::string& signal) override {
        return signalSlurmJob(jobId, signal);
    }
    std::string cancel(const std::string& jobId) override { return cancelSlurmJob(jobId); }
};

} // namespace

SlurmControl& slurmCommands() {
    static SlurmCommands commands;
    return commands;
}

} // namespace parallax
