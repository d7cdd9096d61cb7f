#pragma once

#include <QMap>
#include <QString>
#include <QStringList>

namespace parallax {

// The example runs offered as starting points: resources/runs/*.toml found from the executable
// (the source tree above a build folder, or <prefix>/share/parallax/runs), else the copies
// compiled into the console (":/runs").
class SpecPresets {
public:
    // Where presets are looked for, in order; the compiled-in copies last.
    static QStringList directories();
    // Preset files by name ("quickstart" -> its path), from the first directory that has any.
    static QMap<QString, QString> files();
    // The names as offered: the quick start first (it is the one to try first), then by name.
    static QStringList names(const QMap<QString, QString>& files);
};

} // namespace parallax
