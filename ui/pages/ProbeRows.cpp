#include "ui/pages/ProbeRows.h"

#include "core/spec/Estimates.h"
#include "core/spec/LayoutLabel.h"
#include "core/spec/MicroBatchRules.h"
#include "core/spec/StageBalanceKey.h"
#include "ui/models/BalanceRunner.h"
#include "ui/models/FitRunner.h"
#include "ui/models/LayoutAdvice.h"
#include "ui/models/SpecDocument.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/ProbeRow.h"

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace parallax {

namespace {

constexpr double kGiB = 1073741824.0;
// Not a spec field: "Balance the stages by measured time", shown with a pipeline.
const QString kStageBalanceKey = QStringLiteral("console.stage_balance");

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString splitText(const QVector<qint64>& layers) {
    QStringList parts;
    for (qint64 n : layers) parts << QString::number(n);
    return QStringLiteral("[") + parts.join(QStringLiteral(", ")) + QStringLiteral("]");
}

QString stageTimesText(const QVector<double>& ms) {
    QStringList parts;
    for (double v : ms) parts << QLocale().toString(v, 'f', 0);
    return parts.join(QStringLiteral(" / ")) + QStringLiteral(" ms");
}

bool hasPipeline(const RunSpec& s) {
    return s.parallel.pp > 1;
}

// The memory limit a probe is measured against: a GPU's is the one the estimates use; on a CPU the
// command divides this machine's among the ranks (0).
double probeMemoryLimit(const SpecFormModel& model) {
    return model.spec().launch.device == Device::Cuda ? model.cudaMemoryGiB() * kGiB : 0.0;
}

} // namespace

ProbeRows::ProbeRows(SpecDocument* document, QObject* parent)
    : QObject(parent), m_document(document), m_model(document->model()) {
    buildFitRow();
    buildBalanceRow();
    buildAdviceRow();
}

std::vector<SpecForm::Placement> ProbeRows::placements() const {
    return {{QStringLiteral("train.micro_batch"), m_fitRow, {}, nullptr},
            {QStringLiteral("parallel.stage_split"), m_balanceRow, kStageBalanceKey, &hasPipeline},
            {QStringLiteral("parallel"), m_adviceRow, {}, nullptr}};
}

QString ProbeRows::probeSpecFile(ProbeRow* row) {
    QString error;
    const QString path = m_model->hasErrors() ? QString() : m_document->writeLaunchSpec(&error);
    if (path.isEmpty())
        row->showStatus(m_model->hasErrors() ? tr("Fix the spec's errors first: the probes run it as it is") : error);
    return path;
}

// ---- fit ------------------------------------------------------------------------------------

void ProbeRows::buildFitRow() {
    m_fitRow = new ProbeRow(tr("Find the largest micro-batch"),
                            tr("Short probe runs of this spec on its target (parallax-cli fit): micro-batch 1, 2, 4, "
                               "... then bisection, with and without activation checkpointing, each probe's peak "
                               "memory measured"));
    m_fitRow->status()->setObjectName(QStringLiteral("fit.status"));
    m_fit = new FitRunner(this);
    connect(m_fitRow->button(), &QPushButton::clicked, this, &ProbeRows::startOrStopFit);
    m_fitRow->follow(m_fit);
    connect(m_fit, &FitRunner::finished, this, [this](const FitRunner::Result& r) {
        m_fitRow->showAnswered();
        m_fitAnswer = FitAnswer{};
        m_fitAnswer.known = true;
        m_fitAnswer.largest = r.largest;
        m_fitAnswer.largestWithCheckpointing = r.largestWithCheckpointing;
        if (const FitRunner::Probe* p = r.probe(false, r.largest)) m_fitAnswer.peak = p->peakBytes;
        if (const FitRunner::Probe* p = r.probe(true, r.largestWithCheckpointing))
            m_fitAnswer.peakWithCheckpointing = p->peakBytes;
        showFitResult();
    });
    connect(m_fitRow->useButton(), &QPushButton::clicked, this, [this] {
        const bool checkpointing = m_model->spec().train.activation_checkpointing;
        const qint64 size = checkpointing ? m_fitAnswer.largestWithCheckpointing : m_fitAnswer.largest;
        if (size <= 0) return;
        // The global batch is the optimizer's and stays: the largest micro-batch up to the one that
        // fits that divides each replica's share, the rest as accumulation.
        m_model->edit(QStringLiteral("train.micro_batch"),
                      [size](RunSpec& s) { s.train.micro_batch = usableMicroBatch(s, size); });
    });
    // The answer is about the spec it was found for; "Use" follows the form's checkpointing.
    connect(m_model, &SpecFormModel::specEdited, this, [this] { showFitResult(); });
}

void ProbeRows::startOrStopFit() {
    if (m_fitRow->stop(m_fit)) return;
    const QString specPath = probeSpecFile(m_fitRow);
    if (specPath.isEmpty()) return;
    FitRunner::Options options;
    options.maxMicroBatch = largestUsefulMicroBatch(m_model->spec());
    options.memoryLimitBytes = probeMemoryLimit(*m_model);
    m_fit->setStorePath(m_document->storePath());
    m_fitAnswer = FitAnswer{};
    m_fitRow->showStarted(tr("Stop fit"), tr("Starting the probes…"));
    m_fit->start(specPath, options);
}

void ProbeRows::showFitResult() {
    if (!m_fitAnswer.known) return;
    const auto part = [](qint64 size, double peak) {
        return size > 0 ? tr("%1 (peak %2)").arg(size).arg(q(formatBytes(peak))) : tr("none fits");
    };
    m_fitRow->showStatus(tr("Largest micro-batch: %1 without activation checkpointing, %2 with it")
                             .arg(part(m_fitAnswer.largest, m_fitAnswer.peak),
                                  part(m_fitAnswer.largestWithCheckpointing, m_fitAnswer.peakWithCheckpointing)));
    const RunSpec& s = m_model->spec();
    const qint64 fits = s.train.activation_checkpointing ? m_fitAnswer.largestWithCheckpointing : m_fitAnswer.largest;
    const int64_t size = fits > 0 ? usableMicroBatch(s, fits) : 0;
    m_fitRow->offer(tr("Use %1").arg(size), size > 0 && size != s.train.micro_batch);
}

// ---- balance --------------------------------------------------------------------------------

void ProbeRows::buildBalanceRow() {
    m_balanceRow = new ProbeRow(tr("Balance the stages by measured time"),
                                tr("A short probe run of this spec on its target (parallax-cli balance): every unit's "
                                   "forward and backward timed on its stage, then the split of the blocks whose "
                                   "slowest stage is fastest"));
    m_balanceRow->status()->setObjectName(QStringLiteral("balance.status"));
    m_balance = new BalanceRunner(this);
    connect(m_balanceRow->button(), &QPushButton::clicked, this, &ProbeRows::startOrStopBalance);
    m_balanceRow->follow(m_balance);
    connect(m_balance, &BalanceRunner::finished, this, [this](const BalanceRunner::Result& r) {
        m_balanceRow->showAnswered();
        m_balanceAnswer = BalanceAnswer{};
        m_balanceAnswer.known = true;
        m_balanceAnswer.key = m_balanceStartedKey;
        m_balanceAnswer.layersBefore = r.layersBefore();
        m_balanceAnswer.layers = r.layers();
        for (const BalanceRunner::Stage& stage : r.stages) {
            m_balanceAnswer.msBefore.push_back(stage.msBefore);
            m_balanceAnswer.ms.push_back(stage.ms);
        }
        showBalanceResult();
    });
    connect(m_balanceRow->useButton(), &QPushButton::clicked, this, [this] {
        if (!m_balanceAnswer.known || m_balanceAnswer.key != stageBalanceKey(m_model->spec())) return;
        const std::vector<int64_t> layers(m_balanceAnswer.layers.begin(), m_balanceAnswer.layers.end());
        m_model->edit(QStringLiteral("parallel.stage_layers"), [layers](RunSpec& s) {
            s.parallel.stage_layers = layers;
            s.parallel.stage_split = StageSplit::Profile;
        });
    });
    connect(m_model, &SpecFormModel::specEdited, this, [this] { showBalanceResult(); });
}

void ProbeRows::startOrStopBalance() {
    if (m_balanceRow->stop(m_balance)) return;
    const QString specPath = probeSpecFile(m_balanceRow);
    if (specPath.isEmpty()) return;
    m_balanceStartedKey = stageBalanceKey(m_model->spec());
    m_balance->setStorePath(m_document->storePath());
    m_balanceAnswer = BalanceAnswer{};
    m_balanceRow->showStarted(tr("Stop balance"), tr("Starting the probe…"));
    m_balance->start(specPath);
}

void ProbeRows::showBalanceResult() {
    if (!m_balanceAnswer.known) return;
    const BalanceAnswer& a = m_balanceAnswer;
    const RunSpec& s = m_model->spec();
    if (a.key != stageBalanceKey(s)) {
        // Measured for another model, layout or micro-batch: of no use to this one.
        m_balanceRow->status()->setText(tr("The split measured before (%1) was for another model, layout or "
                                           "micro-batch; balance again").arg(splitText(a.layers)));
        m_balanceRow->useButton()->hide();
        return;
    }
    double slowestBefore = 0, slowest = 0;
    for (double v : a.msBefore) slowestBefore = std::max(slowestBefore, v);
    for (double v : a.ms) slowest = std::max(slowest, v);
    const QVector<qint64> inForm(s.parallel.stage_layers.begin(), s.parallel.stage_layers.end());
    QString text = tr("Slowest stage %1 ms with %2 blocks, %3 ms balanced with %4 (forward + backward of one "
                      "micro-batch, measured)\nEach stage: %5 now, %6 balanced")
                       .arg(QLocale().toString(slowestBefore, 'f', 0), splitText(a.layersBefore),
                            QLocale().toString(slowest, 'f', 0), splitText(a.layers), stageTimesText(a.msBefore),
                            stageTimesText(a.ms));
    if (a.layers == a.layersBefore)
        text += QChar('\n') + tr("The spec's split is already the one whose slowest stage is fastest.");
    else if (inForm == a.layers)
        text += QChar('\n') + tr("The form splits the stages this way now (parallel.stage_layers).");
    m_balanceRow->showStatus(text);
    m_balanceRow->offer(tr("Use %1").arg(splitText(a.layers)), inForm != a.layers && a.layers != a.layersBefore);
}

// ---- advice ---------------------------------------------------------------------------------

void ProbeRows::buildAdviceRow() {
    m_adviceRow = new ProbeRow(tr("Try the top 3 layouts"),
                               tr("Every dp × tp × pp × ZeRO of the spec's processes ranked by a step-time model "
                                  "calibrated on them, and the three best of different shapes run side by side "
                                  "(parallax-cli advise)"));
    m_adviceModel = new LayoutAdviceModel(this);
    m_adviceView = new QTableView(m_adviceRow);
    m_adviceView->setModel(m_adviceModel);
    m_adviceView->verticalHeader()->hide();
    m_adviceView->horizontalHeader()->setStretchLastSection(true);
    m_adviceView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_adviceView->setMinimumHeight(160);
    m_adviceView->hide();
    m_adviceRow->rows()->addWidget(m_adviceView);

    m_advise = new AdviseRunner(this);
    connect(m_adviceRow->button(), &QPushButton::clicked, this, &ProbeRows::startOrStopAdvice);
    m_adviceRow->follow(m_advise);
    connect(m_advise, &AdviseRunner::finished, this, &ProbeRows::showAdvice);
    connect(m_adviceRow->useButton(), &QPushButton::clicked, this, [this] {
        const std::optional<LayoutAdviceRow> best = m_adviceModel->best();
        if (!best) return;
        const QString label = best->label;
        m_model->edit(QStringLiteral("parallel.dp"), [label](RunSpec& s) {
            if (applyLayoutLabel(label, s)) s.train.micro_batch = usableMicroBatch(s, s.train.micro_batch);
        });
        m_adviceRow->useButton()->hide();
    });
}

void ProbeRows::showAdvice(const QVector<LayoutAdviceRow>& rows) {
    m_adviceRow->showAnswered();
    m_adviceModel->setRows(rows);
    m_adviceView->show();
    const std::optional<LayoutAdviceRow> best = m_adviceModel->best();
    m_adviceRow->status()->setText(best ? tr("Fastest measured: %1 at %2 tokens/s")
                                              .arg(best->label, QLocale().toString(best->tokensPerS, 'f', 0))
                                        : tr("No layout could be measured; the table says why"));
    m_adviceRow->offer(best ? tr("Use %1").arg(best->label) : QString(),
                       best && best->label != q(layoutLabel(m_model->spec().parallel)));
}

void ProbeRows::startOrStopAdvice() {
    if (m_adviceRow->stop(m_advise)) return;
    const QString specPath = probeSpecFile(m_adviceRow);
    if (specPath.isEmpty()) return;
    const RunSpec& spec = m_model->spec();
    m_advise->setStorePath(m_document->storePath());
    m_adviceRow->showStarted(tr("Stop"), tr("Calibrating on the spec's %1 processes…").arg(spec.processCount()));
    m_advise->start(specPath, spec.processCount(), 3, probeMemoryLimit(*m_model));
}

} // namespace parallax
