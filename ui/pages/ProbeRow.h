#pragma once

#include <QString>
#include <QWidget>

class QLabel;
class QPushButton;
class QVBoxLayout;

namespace parallax {

class ProbeCommand;

// A row of the New run form that asks a probe command (fit, advise, balance): its button (the
// action, or Stop while the command runs), "Use" (shown when the answer offers a change to the
// form) and a status line (progress, the answer, a failure).
class ProbeRow : public QWidget {
    Q_OBJECT
public:
    ProbeRow(const QString& action, const QString& tip, QWidget* parent = nullptr);

    QPushButton* button() const { return m_button; }
    QPushButton* useButton() const { return m_use; }
    QLabel* status() const { return m_status; }
    // The row's layout, for what the answer shows beneath it (a table).
    QVBoxLayout* rows() const { return m_rows; }

    // The command's progress and failure in the status line; on failure the button says the action again.
    void follow(ProbeCommand* command);
    // Stops the command if it runs (true), saying so in the status line.
    bool stop(ProbeCommand* command);
    // The command started: the button says `stop`, the status line `status`, no "Use".
    void showStarted(const QString& stop, const QString& status);
    // The command answered: the button says the action again.
    void showAnswered();
    void showStatus(const QString& text);
    // "Use" with `text`, shown or not.
    void offer(const QString& text, bool shown);

private:
    QString m_action;
    QVBoxLayout* m_rows;
    QPushButton* m_button;
    QPushButton* m_use;
    QLabel* m_status;
};

} // namespace parallax
