#pragma once

#include "ui/models/CompareRun.h"

#include <QAbstractTableModel>
#include <QStringList>

#include <optional>
#include <vector>

namespace parallax {

// The headline figures of several runs side by side: one row per figure, one column per run, the
// best value of each row in bold. The first rows say what each run trained: its base model and
// finetune mode (RunOrigin).
class SummaryModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Figure {
        BaseModel,
        Finetune,
        FinalLoss,
        BestLoss,
        TokensPerSecond,
        Mfu,
        GpuUtilization,
        PipelineBubble,
        Duration,
        Steps,
        Parameters,
        FigureCount
    };

    struct Figures {
        QString baseModel;    // the folder of model.from, or the preset
        QString baseModelTip; // model.from in full, or why the spec cannot be read
        QString finetune;     // "full", "LoRA r 16", "—"
        std::optional<double> finalLoss;
        std::optional<double> bestLoss;
        std::optional<double> tokensPerSecond; // median over steps, the first step (warm-up) left out
        std::optional<double> mfu;             // median likewise, fraction
        std::optional<double> gpuUtilization;  // %, mean over the run's GPUs of their mean (same steps)
        QString gpuDetail;                     // per GPU, for the tooltip
        std::optional<double> bubble;          // fraction, median over the steps with spans
        std::optional<double> bubbleTheory;    // fraction, the schedule's
        std::optional<double> duration;        // seconds
        int64_t steps = 0;                     // steps done (the last step + 1)
        int64_t stepsTotal = 0;
        int64_t params = 0;     // the whole model, estimated from the spec as the form shows it
        int64_t rankParams = 0; // what rank 0 reported holding (its pipeline stage and tensor-parallel shard)
        // A figure the run cannot have, said as such ("no pipeline", "n/a (CPU)") and never scored:
        // known from its spec.
        bool pipelined = true; // parallel.pp > 1
        bool onGpu = true;     // launch.device = "cuda"
    };

    explicit SummaryModel(QObject* parent = nullptr);

    void setRuns(const std::vector<CompareRun>& runs, double now);
    static Figures figuresOf(const CompareRun& run, double now);
    const std::vector<Figures>& figures() const { return m_figures; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::optional<double> number(int figure, int run) const;
    int bestRun(int figure) const; // -1 when no run has the figure or it has no "better" direction

    QStringList m_titles;
    std::vector<Figures> m_figures;
};

} // namespace parallax
