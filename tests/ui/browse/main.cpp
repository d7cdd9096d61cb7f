#include <QApplication>

#include <gtest/gtest.h>

// Widget tests need a QApplication; without a display they render offscreen.
int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    // Settings of the tests stay apart from a person's.
    QApplication::setOrganizationName(QStringLiteral("ParallaxTests"));
    QApplication::setApplicationName(QStringLiteral("test_ui_browse"));
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
