// parallax: the console. Opens the window on a store; with --spec, the New run page is filled
// from the file, ready to launch. Runs belong to their detached supervisors: closing the console
// stops none of them.
#include "core/store/RunStore.h"
#include "ui/MainWindow.h"
#include "ui/pages/NewRunPage.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSettings>

#include <cstdio>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Parallax"));
    QApplication::setOrganizationName(QStringLiteral("Parallax"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
    QApplication::setDesktopFileName(QStringLiteral("parallax"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Console for distributed training"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption storeOption(
        QStringLiteral("store"),
        QStringLiteral("The run store (SQLite); default: the last one opened, else %1")
            .arg(QString::fromStdString(parallax::RunStore::defaultPath())),
        QStringLiteral("PATH"));
    const QCommandLineOption specOption(QStringLiteral("spec"),
                                        QStringLiteral("A run spec (TOML) to open on the New run page"),
                                        QStringLiteral("FILE"));
    parser.addOption(storeOption);
    parser.addOption(specOption);
    parser.process(app);

    QString store = parser.value(storeOption);
    if (store.isEmpty()) store = QSettings().value(QStringLiteral("store/path")).toString();
    if (store.isEmpty()) store = QString::fromStdString(parallax::RunStore::defaultPath());

    parallax::MainWindow window(store);
    if (parser.isSet(specOption)) {
        const QString spec = parser.value(specOption);
        QString error;
        if (!window.newRunPage()->loadSpecFile(QFileInfo(spec).absoluteFilePath(), &error))
            std::fprintf(stderr, "parallax: %s\n", qPrintable(error));
        window.showPage(parallax::MainWindow::NewRun);
    }
    window.show();
    return app.exec();
}
