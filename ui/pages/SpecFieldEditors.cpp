#include "ui/pages/SpecFieldEditors.h"

#include "core/spec/ModelDimensionEdits.h"
#include "core/util/Overloaded.h"
#include "ui/models/SpecFormModel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <variant>

namespace parallax {

namespace {

constexpr int kMinInt = std::numeric_limits<int>::min();
constexpr int kMaxInt = std::numeric_limits<int>::max();

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString shortest(double value) {
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

QStringList splitEntries(const QString& text) {
    QStringList out;
    for (QString entry : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts))
        out << entry.trimmed();
    return out;
}

} // namespace

QString SpecFieldEditors::fieldText(const char* text) {
    return QCoreApplication::translate("SpecField", text);
}

FieldEditor SpecFieldEditors::forField(SpecFormModel* model, const SpecField& f) {
    const QString path = q(f.path());
    const FieldInfo& info = f.info;
    const auto options = [&info](bool integer) {
        QList<QPair<QVariant, QString>> items;
        for (const FieldOption& o : info.options)
            items.append({integer ? QVariant(QString::fromLatin1(o.value).toLongLong()) : QVariant(QString::fromUtf8(o.value)),
                          fieldText(o.label)});
        return items;
    };
    return std::visit(
        Overloaded{
            [&](std::string*) { return text(model, path, info); },
            [&](ChoiceField* choiceField) {
                QList<QPair<QVariant, QString>> items = options(false);
                if (items.isEmpty())
                    for (const std::string& name : choiceField->names()) items.append({q(name), q(name)});
                return choice(model, path, items, fieldText(info.help));
            },
            [&](bool*) { return check(model, path, info); },
            [&](int64_t*) {
                return info.options.empty() ? integer(model, path, info)
                                            : choice(model, path, options(true), fieldText(info.help));
            },
            [&](uint64_t*) { return number(model, path, info); },
            [&](double*) { return number(model, path, info); },
            [&](std::optional<int64_t>*) {
                // A model dimension left unset takes the preset's value; another integer left
                // unset is derived (launch.processes: dp × tp × pp).
                return std::strcmp(f.section, "model") == 0 ? dimension(model, path, info)
                                                             : optionalInteger(model, path, info);
            },
            [&](std::vector<std::string>*) { return lines(model, path, info); },
            [&](auto*) -> FieldEditor {
                throw std::logic_error("the New run form has no editor for the type of " + f.path() +
                                       "; offer it in specFields() only with one");
            },
        },
        f.ref);
}

FieldEditor SpecFieldEditors::integer(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    auto* spin = new QSpinBox;
    spin->setRange(int(std::clamp<int64_t>(info.minimum, kMinInt, kMaxInt)),
                   int(std::clamp<int64_t>(info.maximum, kMinInt, kMaxInt)));
    // Shown at the minimum: what it means there ("auto", "at the end only").
    if (info.unsetText[0] != '\0') spin->setSpecialValueText(fieldText(info.unsetText));
    spin->setKeyboardTracking(true);
    QObject::connect(spin, &QSpinBox::valueChanged, model, [model, path](int v) { model->setField(path, qlonglong(v)); });
    const auto refresh = [model, spin, path] {
        const QVariant v = model->field(path);
        const QSignalBlocker block(spin);
        // A value outside the usual range (from a file) is shown as it is; the validator says
        // what is wrong with it.
        const qlonglong n = v.isValid() ? v.toLongLong() : 0;
        const int shown = int(std::clamp<qlonglong>(n, kMinInt, kMaxInt));
        if (shown < spin->minimum()) spin->setMinimum(shown);
        if (shown > spin->maximum()) spin->setMaximum(shown);
        spin->setValue(shown);
    };
    return {spin, refresh, fieldText(info.help)};
}

FieldEditor SpecFieldEditors::optionalInteger(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    // Its minimum stands for no value: the text says what is used then ("dp × tp × pp").
    auto* spin = new QSpinBox;
    const int minimum = int(std::clamp<int64_t>(info.minimum, kMinInt, kMaxInt));
    spin->setRange(minimum, int(std::clamp<int64_t>(info.maximum, minimum, kMaxInt)));
    spin->setSpecialValueText(fieldText(info.unsetText));
    QObject::connect(spin, &QSpinBox::valueChanged, model, [model, spin, path](int v) {
        model->setField(path, v == spin->minimum() ? QVariant() : QVariant(qlonglong(v)));
    });
    const auto refresh = [model, spin, path, minimum] {
        const QVariant v = model->field(path);
        const QSignalBlocker block(spin);
        const int n = v.isValid() ? int(std::clamp<qlonglong>(v.toLongLong(), kMinInt + 1, kMaxInt)) : minimum;
        // A value below the range (from a file) is shown as it is; the validator names it.
        if (v.isValid() && n <= spin->minimum()) spin->setMinimum(n - 1);
        spin->setValue(n);
    };
    return {spin, refresh, fieldText(info.help)};
}

FieldEditor SpecFieldEditors::dimension(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    auto* spin = new QSpinBox;
    spin->setRange(int(std::clamp<int64_t>(info.minimum, 1, kMaxInt)), kMaxInt);
    const QString help = fieldText(info.help);
    QObject::connect(spin, &QSpinBox::valueChanged, model, [model, path](int v) { model->setField(path, qlonglong(v)); });
    const auto refresh = [model, spin, path, help] {
        const QVariant explicitValue = model->field(path);
        const std::optional<int64_t> resolved = explicitValue.isValid()
                                                    ? std::optional<int64_t>(explicitValue.toLongLong())
                                                    : resolvedDimension(model->spec(), path.toStdString());
        const QSignalBlocker block(spin);
        if (resolved) {
            const int shown = int(std::clamp<int64_t>(*resolved, kMinInt, kMaxInt));
            if (shown < spin->minimum()) spin->setMinimum(shown);
            spin->setValue(shown);
        }
        // Bold: set in this spec, not taken from the preset.
        QFont f = spin->font();
        f.setBold(explicitValue.isValid());
        spin->setFont(f);
        spin->setToolTip(help + QChar('\n') +
                         (explicitValue.isValid() ? tr("Set in this spec (overrides the preset)") : tr("From the preset")));
    };
    return {spin, refresh, {}};
}

FieldEditor SpecFieldEditors::choice(SpecFormModel* model, const QString& path,
                                     const QList<QPair<QVariant, QString>>& items, const QString& tip) {
    auto* combo = new QComboBox;
    for (const auto& [value, text] : items) combo->addItem(text, value);
    const int known = combo->count();
    QObject::connect(combo, &QComboBox::activated, model,
                     [model, combo, path](int index) { model->setField(path, combo->itemData(index)); });
    const auto refresh = [model, combo, path, known] {
        const QString value = model->field(path).toString();
        const QSignalBlocker block(combo);
        while (combo->count() > known) combo->removeItem(combo->count() - 1);
        for (int i = 0; i < known; ++i) {
            if (combo->itemData(i).toString() == value) {
                combo->setCurrentIndex(i);
                return;
            }
        }
        // A value this form does not offer (from a file): shown, so the validator's message
        // beside it makes sense.
        combo->addItem(tr("%1 (unknown)").arg(value), value);
        combo->setCurrentIndex(combo->count() - 1);
    };
    return {combo, refresh, tip};
}

FieldEditor SpecFieldEditors::number(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    const QString example = QString::fromUtf8(info.example);
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(example);
    const bool unsignedInteger = model->field(path).typeId() == QMetaType::ULongLong;
    auto parse = [unsignedInteger](const QString& text, bool* ok) -> QVariant {
        if (unsignedInteger) return QLocale::c().toULongLong(text.trimmed(), ok);
        return QLocale::c().toDouble(text.trimmed(), ok);
    };
    QObject::connect(edit, &QLineEdit::textEdited, model, [model, path, parse, example, unsignedInteger](const QString& text) {
        bool ok = false;
        const QVariant value = parse(text, &ok);
        if (!ok) {
            model->setInputError(path, unsignedInteger
                                           ? tr("%1: \"%2\" is not a whole number of 0 or more; write e.g. %3")
                                                 .arg(path, text, example)
                                           : tr("%1: \"%2\" is not a number; write e.g. %3").arg(path, text, example));
            return;
        }
        model->setInputError(path, {});
        model->setField(path, value);
    });
    const auto refresh = [model, edit, path, parse] {
        const QVariant value = model->field(path);
        bool ok = false;
        const QVariant shown = parse(edit->text(), &ok);
        // Keep what the person typed ("3e-4") while it means the stored value, and text that
        // does not parse yet while its error is shown.
        if (ok && shown == value) return;
        if (!ok && !model->inputError(path).isEmpty()) return;
        edit->setText(value.typeId() == QMetaType::Double ? shortest(value.toDouble()) : value.toString());
    };
    return {edit, refresh, fieldText(info.help)};
}

FieldEditor SpecFieldEditors::check(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    auto* box = new QCheckBox;
    QObject::connect(box, &QCheckBox::toggled, model, [model, path](bool on) { model->setField(path, on); });
    const auto refresh = [model, box, path] {
        const QSignalBlocker block(box);
        box->setChecked(model->field(path).toBool());
    };
    return {box, refresh, fieldText(info.help)};
}

FieldEditor SpecFieldEditors::text(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(fieldText(info.example));
    QObject::connect(edit, &QLineEdit::textEdited, model, [model, path](const QString& text) { model->setField(path, text); });
    const auto refresh = [model, edit, path] {
        const QString value = model->field(path).toString();
        if (edit->text() != value) edit->setText(value);
    };
    return {edit, refresh, fieldText(info.help)};
}

FieldEditor SpecFieldEditors::lines(SpecFormModel* model, const QString& path, const FieldInfo& info) {
    auto* lines = new QPlainTextEdit;
    lines->setPlaceholderText(fieldText(info.example));
    lines->setMaximumHeight(80);
    lines->setTabChangesFocus(true);
    QObject::connect(lines, &QPlainTextEdit::textChanged, model, [model, lines, path] {
        const QStringList entries = splitEntries(lines->toPlainText());
        if (entries != model->field(path).toStringList()) model->setField(path, entries);
    });
    const auto refresh = [model, lines, path] {
        const QStringList entries = model->field(path).toStringList();
        if (splitEntries(lines->toPlainText()) == entries) return;
        const QSignalBlocker block(lines);
        lines->setPlainText(entries.join(QChar('\n')));
    };
    return {lines, refresh, fieldText(info.help)};
}

} // namespace parallax
