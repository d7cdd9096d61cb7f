#include "ui/pages/ProbeRow.h"

#include "ui/models/ProbeCommand.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace parallax {

ProbeRow::ProbeRow(const QString& action, const QString& tip, QWidget* parent) : QWidget(parent), m_action(action) {
    m_rows = new QVBoxLayout(this);
    m_rows->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    m_button = new QPushButton(action, this);
    m_button->setToolTip(tip);
    m_use = new QPushButton(this);
    m_use->hide();
    buttons->addWidget(m_button);
    buttons->addWidget(m_use);
    buttons->addStretch(1);
    m_rows->addLayout(buttons);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->hide();
    m_rows->addWidget(m_status);
}

void ProbeRow::follow(ProbeCommand* command) {
    connect(command, &ProbeCommand::progress, this, &ProbeRow::showStatus);
    connect(command, &ProbeCommand::failed, this, [this](const QString& message) {
        m_button->setText(m_action);
        showStatus(message);
    });
}

bool ProbeRow::stop(ProbeCommand* command) {
    if (!command->isRunning()) return false;
    command->stop();
    m_status->setText(tr("Stopping the probe under way…"));
    return true;
}

void ProbeRow::showStarted(const QString& stop, const QString& status) {
    m_use->hide();
    m_button->setText(stop);
    showStatus(status);
}

void ProbeRow::showAnswered() {
    m_button->setText(m_action);
}

void ProbeRow::showStatus(const QString& text) {
    m_status->setText(text);
    m_status->show();
}

void ProbeRow::offer(const QString& text, bool shown) {
    m_use->setText(text);
    m_use->setVisible(shown);
}

} // namespace parallax
