#pragma once

// What the New run page's tests share: a page over a temporary store with the tiny "form" spec,
// and the ways a person types, chooses and waits.

#include "BrowseTestSupport.h"

#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "ui/models/BalanceRunner.h"
#include "ui/models/FitRunner.h"
#include "ui/models/LayoutAdvice.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/EstimatePanel.h"
#include "ui/pages/NewRunPage.h"
#include "ui/widgets/DeviceGridDiagram.h"
#include "ui/widgets/MemoryBar.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTest>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

namespace parallax::test {

// Types into a spin box as a person would (select all, type, press Enter).
inline void typeInto(QWidget* editor, const QString& text) {
    ASSERT_NE(editor, nullptr);
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(editor)) {
        spin->setFocus();
        spin->selectAll();
        QTest::keyClicks(spin, text);
        QTest::keyClick(spin, Qt::Key_Enter);
    } else if (auto* edit = qobject_cast<QLineEdit*>(editor)) {
        edit->setFocus();
        edit->selectAll();
        QTest::keyClicks(edit, text);
    } else {
        FAIL() << "no text editor";
    }
}

inline void choose(QWidget* editor, const QString& value) {
    auto* combo = qobject_cast<QComboBox*>(editor);
    ASSERT_NE(combo, nullptr);
    int index = -1;
    for (int i = 0; i < combo->count(); ++i)
        if (combo->itemData(i).toString() == value) index = i;
    ASSERT_GE(index, 0) << value.toStdString();
    combo->setCurrentIndex(index);
    emit combo->activated(index);
}

// Waits out the form's validation delay.
inline void settle(NewRunPage& page) {
    ASSERT_TRUE(waitFor([&] { return !page.formModel()->validationPending(); }, 2000));
}

struct Page {
    QTemporaryDir dir;
    NewRunPage page;
    // What the page asked before discarding the form's changes, and the answer it gets.
    QStringList asked;
    bool discard = true;
    Page() {
        page.setStorePath(dir.filePath(QStringLiteral("parallax.db")));
        page.setConfirmDiscard([this](const QString& title, const QString& text) {
            asked << title + QStringLiteral(": ") + text;
            return discard;
        });
        page.setSpec(tinySpec("form"));
        page.formModel()->validateNow();
    }
};

inline QComboBox* modelPresetCombo(NewRunPage& page) {
    return page.fieldEditor(QStringLiteral("model.preset"))->findChild<QComboBox*>();
}

inline void pickModelPreset(NewRunPage& page, const QString& preset) {
    QComboBox* combo = modelPresetCombo(page);
    ASSERT_NE(combo, nullptr);
    const int index = combo->findData(preset);
    ASSERT_GE(index, 0) << preset.toStdString();
    combo->setCurrentIndex(index);
    emit combo->activated(index);
}

// A machine of `cores` cores and memory to spare.
inline MachineInfo machineOf(int64_t cores) {
    MachineInfo m;
    m.cores = cores;
    m.ram_bytes = int64_t(256) << 30;
    return m;
}

inline RunRecord runRecord(qint64 id, RunState state, int64_t lastStep, const std::string& reason = {}) {
    RunRecord r;
    r.id = id;
    r.name = "form";
    r.state = state;
    r.created_at = 1000;
    r.steps_total = 20;
    r.last_step = lastStep;
    r.exit_reason = reason;
    return r;
}

} // namespace parallax::test
