#pragma once

#include "core/spec/SpecFields.h"

#include <QCoreApplication>
#include <QList>
#include <QPair>
#include <QString>
#include <QVariant>

#include <functional>

class QWidget;

namespace parallax {

class SpecFormModel;

// An editor of one spec field: the widget, how it shows the model's value again after a change
// (leaving text being typed alone), and its tooltip (the field's help; empty: set by `refresh`).
struct FieldEditor {
    QWidget* widget = nullptr;
    std::function<void()> refresh;
    QString tip;
};

// The New run form's editors generated from the field table (specFields()): one by the field's
// type, in the range and with the options the table gives. Each edits `model` at the field's path.
class SpecFieldEditors {
    Q_DECLARE_TR_FUNCTIONS(SpecFieldEditors)
public:
    // The editor for `field` by its type: a spin box in the range, a list of the options, a check
    // box, a line of text or of numbers, one entry per line. Throws std::logic_error for a type the
    // form has no editor for.
    static FieldEditor forField(SpecFormModel* model, const SpecField& field);

    static FieldEditor integer(SpecFormModel* model, const QString& path, const FieldInfo& info);
    // Its minimum stands for no value.
    static FieldEditor optionalInteger(SpecFormModel* model, const QString& path, const FieldInfo& info);
    // A model dimension: unset, it shows the preset's value; set, in bold.
    static FieldEditor dimension(SpecFormModel* model, const QString& path, const FieldInfo& info);
    static FieldEditor choice(SpecFormModel* model, const QString& path, const QList<QPair<QVariant, QString>>& items,
                              const QString& tip);
    static FieldEditor number(SpecFormModel* model, const QString& path, const FieldInfo& info);
    static FieldEditor check(SpecFormModel* model, const QString& path, const FieldInfo& info);
    static FieldEditor text(SpecFormModel* model, const QString& path, const FieldInfo& info);
    // One entry per line (commas and spaces separate entries too).
    static FieldEditor lines(SpecFormModel* model, const QString& path, const FieldInfo& info);

    // The field table's texts in the console's language.
    static QString fieldText(const char* text);
};

} // namespace parallax
