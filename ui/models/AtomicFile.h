#pragma once

#include <QByteArray>
#include <QString>

namespace parallax {

// Writes `bytes` to `path` through a temporary file renamed over it (QSaveFile): a failure leaves the
// old file and says why in `error` ("Could not write PATH: No space left on device").
bool writeFileAtomically(const QString& path, const QByteArray& bytes, QString* error);

} // namespace parallax
