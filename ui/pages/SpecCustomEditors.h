#pragma once

#include "core/spec/SpecFields.h"
#include "ui/models/ClusterProfileListModel.h"
#include "ui/pages/SpecFieldEditors.h"

#include <QCoreApplication>
#include <QString>

#include <functional>
#include <memory>
#include <vector>

class QLineEdit;
class QToolButton;
class QWidget;

namespace parallax {

class SpecFormModel;

// The New run form's editors made by hand, where showing the value is not enough: the model's
// presets (with "custom" and going back to the preset), a data path with its file dialog, the
// cluster profiles found on this machine, and the memory of one GPU the estimates compare against
// (not a spec field).
class SpecCustomEditors {
    Q_DECLARE_TR_FUNCTIONS(SpecCustomEditors)
public:
    using ConfirmDiscard = std::function<bool(const QString& title, const QString& what)>;
    using ClusterProfiles = std::vector<ClusterProfileListModel::Entry>;

    // model.preset: the kind's presets and "custom". A preset drops the dimensions set by hand
    // (asking `confirm` first when some were changed since the spec was loaded); "custom" keeps
    // every dimension as it is shown.
    static FieldEditor modelPreset(SpecFormModel* model, const FieldInfo& info, ConfirmDiscard confirm);
    // data.path with "Browse…": a text file or a folder, by the data kind.
    static FieldEditor dataPath(SpecFormModel* model, const QString& path, const FieldInfo& info);
    // model.from with "Browse…": a model folder.
    static FieldEditor modelFolder(SpecFormModel* model, const QString& path, const FieldInfo& info);
    // launch.cluster: a profile of `profiles` (read again by whoever owns them, then refreshed) or
    // the hosts listed in the spec.
    static FieldEditor clusterChoice(SpecFormModel* model, const QString& path, const FieldInfo& info,
                                     std::shared_ptr<const ClusterProfiles> profiles);
    static FieldEditor deviceMemory(SpecFormModel* model);

private:
    // A path field's line edit (objectName "<field>.edit", edits set the field) with a Browse… button.
    struct PathRow {
        QWidget* row = nullptr;
        QLineEdit* path = nullptr;
        QToolButton* browse = nullptr;
    };
    static PathRow pathRow(SpecFormModel* model, const QString& fieldPath);
};

} // namespace parallax
