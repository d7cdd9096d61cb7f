#pragma once

#include <QGroupBox>
#include <QString>

#include <functional>
#include <vector>

class QLabel;
class QListWidget;

namespace parallax {

class SpecFormModel;
struct SpecIssue;

// The New run form's list of the spec's issues: errors, then warnings, each with the edit that
// brought it about, and a line that counts them. Clicking one asks for its field.
class SpecIssuesPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit SpecIssuesPanel(QWidget* parent = nullptr);

    // The issues of `model`'s last validation, then `more` (what the form found on disk: a dataset's
    // cache); `hasField` says whether the form has a field to go to for a path.
    void showIssues(const SpecFormModel& model, const std::function<bool(const QString& path)>& hasField,
                    const std::vector<SpecIssue>& more = {});

signals:
    void fieldActivated(const QString& path);

private:
    QLabel* m_summary;
    QListWidget* m_list;
};

} // namespace parallax
