#include "ui/widgets/DocumentDialog.h"

#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFile>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace parallax {

namespace {
const QString kRoot = QStringLiteral(":/docs/");
}

DocumentDialog::DocumentDialog(const QString& name, QWidget* parent) : QDialog(parent) {
    setAttribute(Qt::WA_DeleteOnClose);
    auto* layout = new QVBoxLayout(this);
    m_browser = new QTextBrowser(this);
    m_browser->setOpenLinks(false);
    m_browser->setSearchPaths({kRoot});
    connect(m_browser, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() == QLatin1String("http") || url.scheme() == QLatin1String("https")) {
            QDesktopServices::openUrl(url);
            return;
        }
        // Another document of docs/, or a place in this one.
        const QString file = url.fileName();
        if (!file.isEmpty() && file.endsWith(QLatin1String(".md")) && QFile::exists(kRoot + file)) {
            openDocument(file);
            if (!url.fragment().isEmpty()) m_browser->scrollToAnchor(url.fragment());
        } else if (!url.fragment().isEmpty()) {
            m_browser->scrollToAnchor(url.fragment());
        }
    });
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton* back = buttons->addButton(tr("Back"), QDialogButtonBox::ActionRole);
    connect(back, &QPushButton::clicked, m_browser, &QTextBrowser::backward);
    connect(m_browser, &QTextBrowser::backwardAvailable, back, &QPushButton::setEnabled);
    back->setEnabled(false);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    layout->addWidget(m_browser, 1);
    layout->addWidget(buttons);
    resize(820, 640);
    openDocument(name);
}

QString DocumentDialog::documentText(const QString& name) {
    QFile f(kRoot + name);
    if (!f.open(QIODevice::ReadOnly)) return QString();
    return QString::fromUtf8(f.readAll());
}

void DocumentDialog::openDocument(const QString& name) {
    const QString text = documentText(name);
    if (text.isEmpty()) {
        m_browser->setPlainText(tr("%1 is not part of this build of the console.").arg(name));
        setWindowTitle(name);
        return;
    }
    m_browser->setSource(QUrl(QStringLiteral("qrc") + kRoot + name), QTextDocument::MarkdownResource);
    // The document's first heading names it.
    const QString first = text.section(QLatin1Char('\n'), 0, 0);
    setWindowTitle(first.startsWith(QLatin1String("# ")) ? first.mid(2).trimmed() : name);
}

QUrl DocumentDialog::source() const { return m_browser->source(); }

} // namespace parallax
