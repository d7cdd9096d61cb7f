#include "ui/models/SummaryModel.h"

#include "core/spec/Estimates.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunOrigin.h"

#include <QFont>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

// An index of a cell of this table; views also ask about the root, which has no data.
bool isCell(const QAbstractItemModel* model, const QModelIndex& index) {
    return index.isValid() && index.model() == model && !index.parent().isValid() && index.row() < model->rowCount() &&
           index.column() < model->columnCount();
}

} // namespace

SummaryModel::SummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

SummaryModel::Figures SummaryModel::figuresOf(const CompareRun& run, double now) {
    Figures f;
    const RunRecord& r = run.record;
    std::vector<double> throughput, mfu;
    // A continued run's figures cover its lineage: the steps of the runs it continues, then its own.
    for (const std::vector<StepEvent>* rows : {&run.earlier, &run.metrics}) {
        for (size_t i = 0; i < rows->size(); ++i) {
            const StepEvent& e = (*rows)[i];
            if (std::isfinite(e.loss) && (!f.bestLoss || e.loss < *f.bestLoss)) f.bestLoss = e.loss;
            // The first step pays for allocation and warm-up; it would drag the median of short runs.
            if (i == 0 && rows->size() > 1) continue;
            if (e.tokens_per_s > 0) throughput.push_back(e.tokens_per_s);
            if (e.mfu > 0) mfu.push_back(e.mfu);
        }
    }
    if (!run.metrics.empty()) f.finalLoss = run.metrics.back().loss;
    else f.finalLoss = r.last_loss;
    if (!f.bestLoss) f.bestLoss = f.finalLoss;
    f.tokensPerSecond = medianOf(throughput);
    if (!f.tokensPerSecond) f.tokensPerSecond = r.tokens_per_s;
    f.mfu = medianOf(mfu);
    if (!f.mfu) f.mfu = r.mfu;
    if (run.report) {
        double sum = 0;
        int gpus = 0;
        for (const RunReport::Device& d : run.report->devices) {
            if (d.device < 0 || !d.utilMean) continue;
            sum += *d.utilMean;
            ++gpus;
            if (!f.gpuDetail.isEmpty()) f.gpuDetail += QLatin1Char('\n');
            f.gpuDetail += tr("rank %1 (%2, GPU %3): %4% mean, %5% lowest")
                               .arg(d.rank)
                               .arg(QString::fromStdString(d.host))
                               .arg(d.device)
                               .arg(*d.utilMean, 0, 'f', 1)
                               .arg(d.utilMin.value_or(0.0), 0, 'f', 0);
        }
        if (gpus > 0) f.gpuUtilization = sum / gpus;
        f.bubble = run.report->bubbleMedian;
        f.bubbleTheory = run.report->bubbleTheory;
    }
    if (run.spec) {
        const RunOrigin origin = RunOrigin::of(*run.spec);
        f.baseModel = origin.baseModel;
        f.baseModelTip = origin.baseModelTip;
        f.finetune = origin.mode;
    } else {
        f.baseModelTip = run.specError;
    }
    if (run.spec) {
        f.pipelined = run.spec->parallel.pp > 1;
        f.onGpu = run.spec->launch.device == Device::Cuda;
        if (!f.pipelined) f.bubble.reset(), f.bubbleTheory.reset();
        if (!f.onGpu) f.gpuUtilization.reset();
    }
    if (r.started_at > 0)
        f.duration = run.earlierSeconds + std::max(0.0, (r.ended_at > 0 ? r.ended_at : now) - r.started_at);
    f.steps = (run.metrics.empty() ? std::max<int64_t>(-1, r.last_step) : run.metrics.back().step) + 1;
    f.stepsTotal = r.steps_total;
    f.rankParams = r.params;
    // The same whole-model figure the New run form shows; rank 0's own share stays beside it.
    f.params = r.params;
    if (run.spec) {
        try {
            f.params = estimate(*run.spec).params;
        } catch (const std::invalid_argument&) {
            // A spec the estimate cannot resolve: rank 0's count is all there is, labelled as such.
        }
    }
    return f;
}

void SummaryModel::setRuns(const std::vector<CompareRun>& runs, double now) {
    beginResetModel();
    m_titles.clear();
    m_figures.clear();
    for (const CompareRun& run : runs) {
        m_titles << run.title();
        m_figures.push_back(figuresOf(run, now));
    }
    endResetModel();
}

std::optional<double> SummaryModel::number(int figure, int run) const {
    const Figures& f = m_figures[size_t(run)];
    switch (figure) {
    case FinalLoss: return f.finalLoss;
    case BestLoss: return f.bestLoss;
    case TokensPerSecond: return f.tokensPerSecond;
    case Mfu: return f.mfu;
    case GpuUtilization: return f.gpuUtilization;
    case PipelineBubble: return f.bubble;
    case Duration: return f.duration;
    case Steps: return double(f.steps);
    case Parameters: return f.params > 0 ? std::optional<double>(double(f.params)) : std::nullopt;
    default: return std::nullopt;
    }
}

int SummaryModel::bestRun(int figure) const {
    const bool lower = figure == FinalLoss || figure == BestLoss || figure == PipelineBubble;
    const bool higher = figure == TokensPerSecond || figure == Mfu || figure == GpuUtilization;
    if ((!lower && !higher) || m_figures.size() < 2) return -1;
    int best = -1;
    for (int i = 0; i < int(m_figures.size()); ++i) {
        const std::optional<double> v = number(figure, i);
        if (!v || !std::isfinite(*v)) continue;
        if (best < 0 || (lower ? *v < *number(figure, best) : *v > *number(figure, best))) best = i;
    }
    return best;
}

int SummaryModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : FigureCount;
}

int SummaryModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_figures.size());
}

QVariant SummaryModel::data(const QModelIndex& index, int role) const {
    if (!isCell(this, index)) return {};
    const int figure = index.row();
    const Figures& f = m_figures[size_t(index.column())];
    if (role == Qt::FontRole) {
        if (bestRun(figure) != index.column()) return {};
        QFont bold;
        bold.setBold(true);
        return bold;
    }
    if (role == Qt::TextAlignmentRole)
        return figure == BaseModel || figure == Finetune ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                         : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) {
        if (figure == BaseModel && !f.baseModelTip.isEmpty()) return f.baseModelTip;
        if (figure == GpuUtilization && !f.gpuDetail.isEmpty()) return f.gpuDetail;
        if (figure == Parameters && f.rankParams > 0 && f.rankParams != f.params)
            return tr("The whole model; rank 0 reported holding %1 (its pipeline stage and tensor-parallel shard)")
                .arg(QString::fromStdString(formatCount(double(f.rankParams))));
        if (figure == PipelineBubble && f.bubble)
            return tr("Idle share of the pipeline window, median over the steps with recorded spans");
        return {};
    }
    if (role != Qt::DisplayRole) return {};
    const std::optional<double> v = number(figure, index.column());
    switch (figure) {
    case BaseModel: return f.baseModel;
    case Finetune: return f.finetune;
    case FinalLoss:
    case BestLoss: return v ? QString::number(*v, 'g', 5) : QString();
    case TokensPerSecond: return v ? QString::number(*v, 'f', 0) : QString();
    case Mfu: return v ? QStringLiteral("%1%").arg(*v * 100.0, 0, 'f', 2) : QString();
    case GpuUtilization:
        if (!f.onGpu) return tr("n/a (CPU)");
        return v ? QStringLiteral("%1%").arg(*v, 0, 'f', 1) : QString();
    case PipelineBubble:
        if (!f.pipelined) return tr("no pipeline");
        if (!v) return QString();
        if (f.bubbleTheory)
            return tr("%1% (theory %2%)").arg(*v * 100.0, 0, 'f', 1).arg(*f.bubbleTheory * 100.0, 0, 'f', 1);
        return QStringLiteral("%1%").arg(*v * 100.0, 0, 'f', 1);
    case Duration: return v ? RunListModel::formatDuration(*v) : QString();
    case Steps: return f.stepsTotal > 0 ? QStringLiteral("%1 / %2").arg(f.steps).arg(f.stepsTotal) : QString::number(f.steps);
    case Parameters:
        if (!v) return QString();
        if (f.rankParams > 0 && f.rankParams != f.params)
            return tr("%1 (rank 0: %2)")
                .arg(QString::fromStdString(formatCount(*v)), QString::fromStdString(formatCount(double(f.rankParams))));
        return QString::fromStdString(formatCount(*v));
    default: return {};
    }
}

QVariant SummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    // A run's column title elides in a narrow window; its tooltip has it whole.
    if (role != Qt::DisplayRole && !(role == Qt::ToolTipRole && orientation == Qt::Horizontal)) return {};
    if (orientation == Qt::Horizontal) return section >= 0 && section < m_titles.size() ? m_titles[section] : QVariant();
    static const char* names[] = {QT_TR_NOOP("Base model"), QT_TR_NOOP("Finetune"), QT_TR_NOOP("Final loss"),
                                  QT_TR_NOOP("Best loss"), QT_TR_NOOP("Tokens/s (median)"), QT_TR_NOOP("MFU (median)"),
                                  QT_TR_NOOP("GPU utilization (mean)"), QT_TR_NOOP("Pipeline bubble (median)"),
                                  QT_TR_NOOP("Duration"), QT_TR_NOOP("Steps"), QT_TR_NOOP("Parameters")};
    static_assert(sizeof(names) / sizeof(names[0]) == FigureCount, "a name per row");
    return section >= 0 && section < FigureCount ? tr(names[section]) : QVariant();
}

} // namespace parallax
