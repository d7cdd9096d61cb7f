#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <map>
#include <vector>

namespace parallax {

class RunListModel;
class RunStore;
class StoreWatcher;

// Gives a RunListModel the step each resumed run started from (its run_start's start_step), read
// on the store watcher's thread, so that the list can say "resumed from #3 at step 12". Rows are
// looked at when the list is reset, gains rows or a row's state or steps change; a run is read
// once its run_start is in (a step is recorded or the run ended), and only once. One read is in
// flight at a time; rows that change meanwhile are looked at again when it is back.
class ResumeStepReader : public QObject {
    Q_OBJECT
public:
    // Looks at every row of `runs` at once.
    ResumeStepReader(RunListModel* runs, StoreWatcher* watcher, QObject* parent = nullptr);

    // Reads the resumed runs of rows first..last whose step the list does not know yet.
    void readRows(int first, int last);
    bool isReading() const { return m_reading; }

    // What the store says of `ids`: start_step by run, 0 where not known (a run that ended before
    // its run_start).
    static std::map<int64_t, int64_t> read(const RunStore& store, const std::vector<int64_t>& ids);

signals:
    // The list was given the steps of `count` runs.
    void stepsRead(int count);
    void readFailed(const QString& message);

private:
    void finished();

    RunListModel* m_runs;
    QPointer<StoreWatcher> m_watcher;
    bool m_reading = false;
    bool m_readAgain = false;
};

} // namespace parallax
