#include "ui/pages/SpecIssuesPanel.h"

#include "ui/models/SpecFormModel.h"

#include <QLabel>
#include <QListWidget>
#include <QVBoxLayout>

namespace parallax {

namespace {

const QColor kErrorColor(0xc6, 0x28, 0x28);
const QColor kWarningColor(0xb2, 0x6a, 0x00);

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

SpecIssuesPanel::SpecIssuesPanel(QWidget* parent) : QGroupBox(tr("Issues"), parent) {
    auto* layout = new QVBoxLayout(this);
    m_summary = new QLabel(this);
    m_list = new QListWidget(this);
    m_list->setWordWrap(true);
    m_list->setMinimumHeight(90);
    layout->addWidget(m_summary);
    layout->addWidget(m_list);
    connect(m_list, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { emit fieldActivated(item->data(Qt::UserRole).toString()); });
    connect(m_list, &QListWidget::itemClicked, m_list, &QListWidget::itemActivated);
}

void SpecIssuesPanel::showIssues(const SpecFormModel& model, const std::function<bool(const QString& path)>& hasField,
                                 const std::vector<SpecIssue>& more) {
    std::vector<SpecIssue> issues = model.issues();
    issues.insert(issues.end(), more.begin(), more.end());
    int errors = 0;
    int warnings = 0;
    m_list->clear();
    for (const bool warning : {false, true}) {
        for (size_t i = 0; i < issues.size(); ++i) {
            const SpecIssue& issue = issues[i];
            if (issue.warning != warning) continue;
            (warning ? warnings : errors) += 1;
            QString text = q(issue.message).contains(q(issue.field)) ? q(issue.message)
                                                                      : q(issue.field) + QStringLiteral(": ") + q(issue.message);
            const QString cause = i < model.issues().size() ? model.causeOf(i) : QString();
            if (!cause.isEmpty()) text += tr(" (since %1 was changed)").arg(cause);
            auto* item = new QListWidgetItem(text, m_list);
            item->setData(Qt::UserRole, q(issue.field));
            item->setForeground(warning ? kWarningColor : kErrorColor);
            item->setToolTip(hasField(q(issue.field)) ? tr("Click to go to the field")
                                                      : tr("No field in the form: edit the spec file"));
        }
    }
    if (errors == 0 && warnings == 0) m_summary->setText(tr("No issues: ready to launch."));
    else m_summary->setText(tr("%1 error(s), %2 warning(s)").arg(errors).arg(warnings));
}

} // namespace parallax
