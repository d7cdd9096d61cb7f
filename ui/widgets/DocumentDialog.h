#pragma once

#include <QDialog>
#include <QString>
#include <QUrl>

class QListWidget;
class QTextBrowser;

namespace parallax {

// A document of docs/ (the user guide, the spec reference), rendered from its Markdown, with its
// contents (the section and subsection headings) beside it: a click brings that heading to the top.
// The documents are compiled into the console (:/docs), so an installed console shows the ones of
// its own version without a browser or a network; links between them open in the same dialog,
// links elsewhere in the desktop's browser.
class DocumentDialog : public QDialog {
    Q_OBJECT
public:
    // `name`: a file of docs/, e.g. "guide.md".
    explicit DocumentDialog(const QString& name, QWidget* parent = nullptr);

    void openDocument(const QString& name);
    QUrl source() const;
    QTextBrowser* browser() const { return m_browser; }
    QListWidget* contents() const { return m_contents; }
    // Brings the contents' entry `row` to the top of the view.
    void showSection(int row);
    // The document's Markdown as compiled in; empty when there is no such document.
    static QString documentText(const QString& name);

private:
    void listContents();

    QTextBrowser* m_browser = nullptr;
    QListWidget* m_contents = nullptr;
};

} // namespace parallax
