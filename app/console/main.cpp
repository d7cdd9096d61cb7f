// parallax: the console. Opens the window on a store; with --spec, the New run page is filled
// from the file, ready to launch. Runs belong to their detached supervisors: closing the console
// stops none of them.
#include "core/store/RunStore.h"
#include "core/util/BuildId.h"
#include "ui/MainWindow.h"
#include "ui/pages/NewRunPage.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSettings>

#include <cstdio>

int main(int argc, char** argv) {
    // The command line is read before the window system is needed, so that --help works without
    // a display.
    QStringList arguments;
    for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Parallax: console for distributed training"));
    const QCommandLineOption helpOption({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help"));
    const QCommandLineOption versionOption(QStringLiteral("version"), QStringLiteral("Show the version"));
    const QCommandLineOption storeOption(
        QStringLiteral("store"),
        QStringLiteral("The run store (SQLite); default: the last one opened, else %1")
            .arg(QString::fromStdString(parallax::RunStore::defaultPath())),
        QStringLiteral("PATH"));
    const QCommandLineOption specOption(QStringLiteral("spec"),
                                        QStringLiteral("A run spec (TOML) to open on the New run page"),
                                        QStringLiteral("FILE"));
    parser.addOptions({helpOption, versionOption, storeOption, specOption});
    // A spec given on its own, as a file manager passes it.
    parser.addPositionalArgument(QStringLiteral("spec"), QStringLiteral("Same as --spec"), QStringLiteral("[SPEC]"));
    // Without an application object the parser cannot know the program's name.
    const QString help = parser.helpText().replace(QStringLiteral("<executable_name>"), QStringLiteral("parallax"));
    if (!parser.parse(arguments)) {
        std::fprintf(stderr, "parallax: %s\n%s", qPrintable(parser.errorText()), qPrintable(help));
        return 2;
    }
    if (parser.isSet(helpOption)) {
        std::printf("%s", qPrintable(help));
        return 0;
    }
    if (parser.isSet(versionOption)) {
        std::printf("%s\n", parallax::versionLine("parallax").c_str());
        return 0;
    }
    QString specFile = parser.value(specOption);
    if (specFile.isEmpty() && !parser.positionalArguments().isEmpty()) specFile = parser.positionalArguments().first();

    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Parallax"));
    QApplication::setOrganizationName(QStringLiteral("Parallax"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
    QApplication::setDesktopFileName(QStringLiteral("parallax"));

    QString store = parser.value(storeOption);
    if (store.isEmpty()) store = QSettings().value(QStringLiteral("store/path")).toString();
    if (store.isEmpty()) store = QString::fromStdString(parallax::RunStore::defaultPath());

    parallax::MainWindow window(store);
    if (!specFile.isEmpty()) {
        QString error;
        if (!window.newRunPage()->loadSpecFile(QFileInfo(specFile).absoluteFilePath(), &error))
            std::fprintf(stderr, "parallax: %s\n", qPrintable(error));
        window.showPage(parallax::MainWindow::NewRun);
    }
    window.show();
    return app.exec();
}
