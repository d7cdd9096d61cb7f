#include "ui/widgets/DocumentDialog.h"

#include <QAbstractTextDocumentLayout>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace parallax {

namespace {
const QString kRoot = QStringLiteral(":/docs/");
constexpr int kPositionRole = Qt::UserRole; // where the heading's block starts in the document
}

DocumentDialog::DocumentDialog(const QString& name, QWidget* parent) : QDialog(parent) {
    setAttribute(Qt::WA_DeleteOnClose);
    auto* layout = new QVBoxLayout(this);
    auto* split = new QSplitter(this);
    m_contents = new QListWidget(split);
    m_contents->setObjectName(QStringLiteral("document.contents"));
    m_contents->setToolTip(tr("Contents: click a section to go to it"));
    m_browser = new QTextBrowser(split);
    split->addWidget(m_contents);
    split->addWidget(m_browser);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 700});
    connect(m_contents, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) { showSection(m_contents->row(item)); });
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
    layout->addWidget(split, 1);
    layout->addWidget(buttons);
    resize(1000, 680);
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
        listContents();
        return;
    }
    m_browser->setSource(QUrl(QStringLiteral("qrc") + kRoot + name), QTextDocument::MarkdownResource);
    listContents();
    // The document's first heading names it.
    const QString first = text.section(QLatin1Char('\n'), 0, 0);
    setWindowTitle(first.startsWith(QLatin1String("# ")) ? first.mid(2).trimmed() : name);
}

QUrl DocumentDialog::source() const { return m_browser->source(); }

void DocumentDialog::listContents() {
    m_contents->clear();
    for (QTextBlock block = m_browser->document()->begin(); block.isValid(); block = block.next()) {
        const int level = block.blockFormat().headingLevel();
        if (level != 2 && level != 3) continue;
        auto* item = new QListWidgetItem((level == 3 ? QStringLiteral("    ") : QString()) + block.text(), m_contents);
        item->setData(kPositionRole, block.position());
        item->setToolTip(block.text());
    }
    m_contents->setVisible(m_contents->count() > 1);
}

void DocumentDialog::showSection(int row) {
    const QListWidgetItem* item = m_contents->item(row);
    if (!item) return;
    QTextDocument* document = m_browser->document();
    const QTextBlock block = document->findBlock(item->data(kPositionRole).toInt());
    QTextCursor cursor(block);
    m_browser->setTextCursor(cursor);
    const QRectF at = document->documentLayout()->blockBoundingRect(block);
    m_browser->verticalScrollBar()->setValue(static_cast<int>(at.top()));
}

} // namespace parallax
