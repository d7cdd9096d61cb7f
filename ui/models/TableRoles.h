#pragma once

#include <Qt>

namespace parallax {

// Roles a table model of the console may answer beside Qt's.
enum TableRole {
    // A cell's value as data, where its text is formatted for the eye: numbers as numbers (no units,
    // no thousands suffix, a fraction rather than a percent), durations in seconds, times in seconds
    // since the epoch; an invalid QVariant for a value that is missing. A column that holds several
    // fields (steps done of a total) answers a QVariantList. Asked of the horizontal header, the
    // column's name in a file ("duration_s"), or a QStringList naming each field of a list column.
    // TableExport writes these values to CSV; a model that does not answer is written as shown.
    RawValueRole = Qt::UserRole + 256,
};

} // namespace parallax
