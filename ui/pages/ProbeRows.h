#pragma once

#include "ui/pages/SpecForm.h"

#include <QObject>
#include <QString>
#include <QVector>

#include <string>
#include <vector>

class QTableView;

namespace parallax {

class AdviseRunner;
class BalanceRunner;
class FitRunner;
class LayoutAdviceModel;
class ProbeRow;
class SpecDocument;
class SpecFormModel;
struct LayoutAdviceRow;

// The New run form's rows that answer with probe runs of the spec as the form has it, each a
// ProbeRow over its runner in ui/models: "Find the largest micro-batch" (FitRunner) beneath the
// micro-batch, "Balance the stages by measured time" (BalanceRunner) beneath the stage split while
// there is a pipeline, "Try the top 3 layouts" (AdviseRunner, with its table) at the end of the
// layout. Each answer's "Use" puts it into the form.
class ProbeRows : public QObject {
    Q_OBJECT
public:
    explicit ProbeRows(SpecDocument* document, QObject* parent = nullptr);

    // Where the rows go in the form.
    std::vector<SpecForm::Placement> placements() const;

    FitRunner* fitRunner() const { return m_fit; }
    ProbeRow* fitRow() const { return m_fitRow; }
    BalanceRunner* balanceRunner() const { return m_balance; }
    ProbeRow* balanceRow() const { return m_balanceRow; }
    AdviseRunner* adviseRunner() const { return m_advise; }
    LayoutAdviceModel* adviceModel() const { return m_adviceModel; }
    ProbeRow* adviceRow() const { return m_adviceRow; }

private:
    void buildFitRow();
    void startOrStopFit();
    void showFitResult();
    void buildBalanceRow();
    void startOrStopBalance();
    void showBalanceResult();
    void buildAdviceRow();
    void startOrStopAdvice();
    void showAdvice(const QVector<LayoutAdviceRow>& rows);
    // A spec file of the form as it is, for a probe command; empty (the reason shown in `row`)
    // when the spec has errors or cannot be written.
    QString probeSpecFile(ProbeRow* row);

    SpecDocument* m_document;
    SpecFormModel* m_model;

    FitRunner* m_fit = nullptr;
    ProbeRow* m_fitRow = nullptr;
    struct FitAnswer {
        qint64 largest = 0;
        qint64 largestWithCheckpointing = 0;
        double peak = 0;
        double peakWithCheckpointing = 0;
        bool known = false;
    } m_fitAnswer;

    BalanceRunner* m_balance = nullptr;
    ProbeRow* m_balanceRow = nullptr;
    // The balance probe's answer and the spec it was found for (stageBalanceKey).
    struct BalanceAnswer {
        QVector<qint64> layersBefore, layers;
        QVector<double> msBefore, ms;
        std::string key;
        bool known = false;
    } m_balanceAnswer;
    std::string m_balanceStartedKey;

    AdviseRunner* m_advise = nullptr;
    LayoutAdviceModel* m_adviceModel = nullptr;
    ProbeRow* m_adviceRow = nullptr;
    QTableView* m_adviceView = nullptr;
};

} // namespace parallax
