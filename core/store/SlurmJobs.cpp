#include "core/store/SlurmJobs.h"

namespace parallax {

void SlurmJobs::setSlurmJob(int64_t run, const SlurmJob& job) {
    m_c.execute("INSERT INTO slurm_jobs (run, job_id, mode, state, reason, nodes, queue_position, time_left_s, t) "
                "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT (run) DO UPDATE SET job_id = excluded.job_id, "
                "mode = excluded.mode, state = excluded.state, reason = excluded.reason, nodes = excluded.nodes, "
                "queue_position = excluded.queue_position, time_left_s = excluded.time_left_s, t = excluded.t",
                {run, job.job_id, choiceName(job.mode), job.state, job.reason, job.nodes, job.queue_position, job.time_left_s,
                 job.t > 0 ? job.t : nowSeconds()});
}

std::optional<SlurmJob> SlurmJobs::slurmJob(int64_t run) const {
    SqlStatement& s = m_c.get(
        "SELECT job_id, mode, state, reason, nodes, queue_position, time_left_s, t FROM slurm_jobs WHERE run = ?1");
    SqlStatement::Use use(s);
    s.bind(1, run);
    if (!s.step()) return std::nullopt;
    SlurmJob j;
    j.job_id = s.text(0);
    // A mode a newer version wrote reads as batch: a job that outlives its supervisor is the safe guess.
    j.mode = parseChoice<SlurmMode>(s.text(1)).value_or(SlurmMode::Batch);
    j.state = s.text(2);
    j.reason = s.text(3);
    j.nodes = s.text(4);
    j.queue_position = s.int64(5);
    j.time_left_s = s.int64(6);
    j.t = s.real(7);
    return j;
}

void SlurmJobs::deleteRunRows(int64_t run) { m_c.execute("DELETE FROM slurm_jobs WHERE run = ?1", {run}); }

} // namespace parallax
