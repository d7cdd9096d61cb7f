#include "ui/pages/EstimatePanel.h"

#include "core/spec/FinetuneSummary.h"
#include "core/spec/ScheduleInfo.h"
#include "ui/models/SpecFormModel.h"
#include "ui/widgets/DeviceGridDiagram.h"
#include "ui/widgets/MemoryBar.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {
QString count(double n) {
    return QString::fromStdString(formatCount(n));
}
QString bytes(double n) {
    return QString::fromStdString(formatBytes(n));
}

// The training state of the most loaded device.
double mostLoaded(const Estimates& e) {
    double most = e.memory.total();
    for (const MemoryEstimate& stage : e.memory_per_stage) most = std::max(most, stage.total());
    return most;
}

} // namespace

EstimatePanel::EstimatePanel(SpecFormModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);

    auto* figures = new QGroupBox(tr("Estimates"), this);
    auto* form = new QFormLayout(figures);
    m_params = new QLabel(figures);
    m_flops = new QLabel(figures);
    m_tokens = new QLabel(figures);
    m_bubble = new QLabel(figures);
    m_bubble->setWordWrap(true);
    for (QLabel* l : {m_params, m_flops, m_tokens, m_bubble}) {
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        // A narrow side panel (a 1280-pixel window) wraps them rather than cutting them off.
        l->setWordWrap(true);
    }
    form->addRow(tr("Parameters"), m_params);
    form->addRow(tr("FLOPs / token"), m_flops);
    form->addRow(tr("Tokens / step"), m_tokens);
    form->addRow(tr("Pipeline bubble"), m_bubble);
    m_error = new QLabel(figures);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_error->hide();
    form->addRow(m_error);
    layout->addWidget(figures);

    auto* memory = new QGroupBox(tr("Memory per device"), this);
    auto* memoryLayout = new QVBoxLayout(memory);
    m_memoryTitle = new QLabel(memory);
    m_memoryTitle->setWordWrap(true);
    m_memory = new MemoryBar(memory);
    m_stages = new QLabel(memory);
    m_stages->setWordWrap(true);
    memoryLayout->addWidget(m_memoryTitle);
    memoryLayout->addWidget(m_memory);
    memoryLayout->addWidget(m_stages);
    m_finetune = new QLabel(memory);
    m_finetune->setObjectName(QStringLiteral("estimates.finetuneMemory"));
    m_finetune->setWordWrap(true);
    m_finetune->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_finetune->setToolTip(tr("The same model and layout trained three ways: frozen parts hold no gradient and no "
                              "optimizer state; LoRA trains only its adapters"));
    memoryLayout->addWidget(m_finetune);
    layout->addWidget(memory);

    auto* grid = new QGroupBox(tr("Ranks"), this);
    auto* gridLayout = new QVBoxLayout(grid);
    m_grid = new DeviceGridDiagram(grid);
    gridLayout->addWidget(m_grid);
    layout->addWidget(grid);
    layout->addStretch(1);

    connect(m_model, &SpecFormModel::validated, this, &EstimatePanel::refresh);
    refresh();
}

std::vector<int64_t> EstimatePanel::heldParameters(const RunSpec& spec, const Estimates& estimates) {
    // What a stage's weights estimate stores, at the bytes per parameter core/spec/Estimates.cpp
    // counts (fp32, or fp32 master + bf16 copy), before ZeRO-3 shards them.
    const double bytesPerParameter = spec.train.precision == Precision::Bf16 ? 6.0 : 4.0;
    const double shards = spec.parallel.zero >= 3 ? double(std::max<int64_t>(1, spec.parallel.dp)) : 1.0;
    std::vector<int64_t> out;
    for (const MemoryEstimate& stage : estimates.memory_per_stage)
        out.push_back(std::llround(stage.weights * shards / bytesPerParameter));
    return out;
}

QString EstimatePanel::parametersText() const {
    return m_params->text();
}

QString EstimatePanel::bubbleText() const {
    return m_bubble->text();
}

QString EstimatePanel::memoryTitleText() const {
    return m_memoryTitle->text();
}

QString EstimatePanel::describeParameters(const RunSpec& spec, const Estimates& estimates) const {
    const Estimates* e = &estimates;
    // The whole model, and what each rank holds of it where a pipeline or tensor parallelism splits
    // it: a run reports rank 0's share, which must read as the same figure, not a different one.
    QString params = tr("%1 whole model").arg(count(double(e->params)));
    if (e->trainable_params != e->params) params += tr(" (%1 trainable)").arg(count(double(e->trainable_params)));
    const int64_t tp = std::max<int64_t>(1, spec.parallel.tp);
    if (e->memory_per_stage.size() > 1 || tp > 1) {
        const std::vector<int64_t> perStage = heldParameters(spec, *e);
        QStringList held;
        for (size_t s = 0; s < perStage.size(); ++s) {
            const QString n = count(double(perStage[s]));
            held << (perStage.size() > 1 ? tr("stage %1: %2").arg(s).arg(n) : n);
        }
        params += QLatin1Char('\n') + (tp > 1 ? tr("each rank holds (1/%1 of the split layers) ").arg(tp)
                                             : tr("each rank holds "))
                  + held.join(QStringLiteral(", "));
    }
    return params;
}

QString EstimatePanel::bubbleDescription(const RunSpec& spec, const Estimates& e) const {
    const int64_t pp = std::max<int64_t>(1, spec.parallel.pp);
    if (pp == 1) return tr("none (no pipeline)");
    const QString formula = QString::fromStdString(
        bubbleFormula(spec.parallel.schedule, pp, spec.accumulation(), spec.parallel.virtual_stages));
    return tr("%1% of each step idle, theoretical: %2").arg(e.bubble * 100.0, 0, 'f', 1).arg(formula);
}

void EstimatePanel::refresh() {
    const RunSpec& spec = m_model->spec();
    m_grid->setLayout(spec.parallel.dp, spec.parallel.tp, spec.parallel.pp);
    const std::optional<Estimates>& e = m_model->estimates();
    m_error->setVisible(!e);
    if (!e) {
        m_error->setText(tr("No estimates: %1").arg(m_model->estimateError()));
        for (QLabel* l : {m_params, m_flops, m_tokens, m_bubble, m_stages, m_finetune}) l->clear();
        m_memory->setSegments({});
        m_memoryTitle->clear();
        return;
    }

    m_params->setText(describeParameters(spec, *e));
    m_params->setToolTip(tr("A run reports the parameters its rank 0 holds: pipeline stage 0, and its "
                            "tensor-parallel shard"));
    m_flops->setText(tr("%1 (training: forward + backward)").arg(count(e->flops_per_token)));
    m_tokens->setText(count(double(e->tokens_per_step)));

    const int64_t pp = std::max<int64_t>(1, spec.parallel.pp);
    m_bubble->setText(bubbleDescription(spec, *e));

    // The most loaded stage decides whether the layout fits.
    size_t worst = 0;
    for (size_t s = 1; s < e->memory_per_stage.size(); ++s)
        if (e->memory_per_stage[s].total() > e->memory_per_stage[worst].total()) worst = s;
    const MemoryEstimate& mem = e->memory;
    const QVector<QColor> colors = MemoryBar::partColors();
    QVector<MemoryBar::Segment> parts = {{tr("weights"), mem.weights, colors[0]},
                                         {tr("gradients"), mem.gradients, colors[1]},
                                         {tr("optimizer"), mem.optimizer, colors[2]},
                                         {tr("activations"), mem.activations, colors[3]},
                                         {tr("buffers"), mem.buffers, colors[4]}};
    if (mem.runtime > 0) parts.push_back({tr("runtime"), mem.runtime, colors[5]});
    m_memory->setSegments(parts);
    const bool cuda = spec.launch.device == Device::Cuda;
    const int64_t perNode = m_model->ranksPerNode();
    m_memory->setCapacity(m_model->deviceCapacityBytes(),
                          cuda ? tr("per GPU") : tr("RAM ÷ %n rank(s)", nullptr, int(perNode)));
    // What the figure covers. On a CPU the process's runtime and the heap's slack are in it, as the
    // step's resident peak holds them; on a GPU the step's figure is the allocator's, without the
    // CUDA context.
    const QString covers =
        cuda ? tr("Training state (weights, gradients, optimizer, activations, buffers), as the allocator's peak counts "
                  "it; each process adds the CUDA context and the runtime's own memory, measured per rank on the Live "
                  "page.")
             : tr("Training state (weights, gradients, optimizer, activations, buffers) and the process's runtime "
                  "(LibTorch, MPI, the heap's slack): a rank's resident peak, measured per rank on the Live page.");
    m_memoryTitle->setText((pp > 1 ? tr("Pipeline stage %1, the most loaded of %2.").arg(worst).arg(pp)
                                   : tr("Every rank holds the same.")) +
                           QLatin1Char(' ') + covers);
    if (pp > 1) {
        QStringList stages;
        for (size_t s = 0; s < e->memory_per_stage.size(); ++s)
            stages << tr("stage %1: %2").arg(s).arg(bytes(e->memory_per_stage[s].total()));
        m_stages->setText(stages.join(QStringLiteral(" · ")));
        m_stages->show();
    } else {
        m_stages->hide();
    }
    m_finetune->setText(finetuneMemoryText(spec));
    m_finetune->setVisible(!m_finetune->text().isEmpty());
}

QString EstimatePanel::finetuneMemoryText(const RunSpec& spec) {
    std::vector<FinetuneMemoryRow> rows;
    try {
        rows = finetuneMemoryRows(spec);
    } catch (const std::exception&) {
        return {}; // the estimate's own error is shown above
    }
    if (rows.empty()) return {};
    QStringList parts;
    for (const FinetuneMemoryRow& row : rows) {
        QString part = tr("%1: %2").arg(QString::fromStdString(row.label), bytes(mostLoaded(row.estimates)));
        if (row.current) part += tr(" (this spec)");
        parts << part;
    }
    return tr("Per device, by what trains: %1").arg(parts.join(QStringLiteral(" · ")));
}

} // namespace parallax
