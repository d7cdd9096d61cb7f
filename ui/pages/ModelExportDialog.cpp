#include "ui/pages/ModelExportDialog.h"

#include "ui/widgets/FileDialogs.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

namespace parallax {

ModelExportDialog::ModelExportDialog(const ModelExportRequest& request, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Export run #%1 %2").arg(request.runId).arg(request.runName));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    auto* folderRow = new QHBoxLayout;
    m_folder = new QLineEdit(request.suggestedFolder, this);
    m_folder->setToolTip(tr("A new folder, or an empty one"));
    m_folder->setMinimumWidth(m_folder->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 48);
    auto* browse = new QPushButton(tr("Browse…"), this);
    folderRow->addWidget(m_folder, 1);
    folderRow->addWidget(browse);
    form->addRow(tr("Folder:"), folderRow);
    m_merged = new QRadioButton(request.lora ? tr("Merged model (full folder, LoRA merged)") : tr("Model (full folder)"), this);
    m_merged->setToolTip(tr("A folder that transformers' or diffusers' from_pretrained loads, with the config and "
                            "tokenizer files of model.from"));
    m_adapter = new QRadioButton(tr("Adapter only"), this);
    m_adapter->setEnabled(request.lora);
    m_adapter->setToolTip(request.lora ? tr("The LoRA adapter alone, as PEFT loads it (for qwen_image also as "
                                            "diffusers and ComfyUI load it)")
                                       : tr("The run trained every weight (finetune.mode = \"full\"): it has no adapter"));
    m_merged->setChecked(true);
    auto* what = new QVBoxLayout;
    what->addWidget(m_merged);
    what->addWidget(m_adapter);
    form->addRow(tr("Write:"), what);
    layout->addLayout(form);
    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_problem->hide();
    layout->addWidget(m_problem);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &ModelExportDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ModelExportDialog::reject);
    connect(browse, &QPushButton::clicked, this, &ModelExportDialog::browse);
    connect(m_folder, &QLineEdit::textChanged, m_problem, &QLabel::hide);
}

ModelExportChoice ModelExportDialog::choice() const {
    ModelExportChoice c;
    // A relative name is taken in the home folder, as "~/name" is.
    QString typed = m_folder->text().trimmed();
    if (typed == QLatin1String("~") || typed.startsWith(QLatin1String("~/"))) typed = typed.mid(typed.size() > 1 ? 2 : 1);
    if (!typed.isEmpty()) c.folder = QDir::cleanPath(QDir::home().absoluteFilePath(typed));
    c.content = m_adapter->isChecked() ? ModelExportRunner::Content::AdapterOnly : ModelExportRunner::Content::Merged;
    return c;
}

void ModelExportDialog::accept() {
    const QString problem = ModelExportRunner::folderProblem(choice().folder);
    if (!problem.isEmpty()) {
        m_problem->setText(problem);
        m_problem->show();
        return;
    }
    QDialog::accept();
}

void ModelExportDialog::browse() {
    const QString start = QFileInfo(choice().folder).absolutePath();
    const QString folder = FileDialogs::existingDirectory(this, tr("Folder to export to"), start);
    if (!folder.isEmpty()) m_folder->setText(folder);
}

std::optional<ModelExportChoice> ModelExportDialog::ask(QWidget* parent, const ModelExportRequest& request) {
    ModelExportDialog dialog(request, parent);
    if (dialog.exec() != QDialog::Accepted) return std::nullopt;
    return dialog.choice();
}

} // namespace parallax
