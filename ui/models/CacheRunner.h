#pragma once

#include "ui/models/ProbeCommand.h"

#include <QString>
#include <QStringList>

namespace parallax {

// The New run form's "Cache now": runs `parallax-cli --store S cache SPEC [--device cuda]`, which
// encodes the spec's image-caption dataset into its latent cache (going on where a cut-short one
// stopped). Its lines ("cache: 64 of 70 samples (12.34 images/s)") come as progress; stopped as
// every ProbeCommand (what is encoded stays: the next one goes on from there).
class CacheRunner : public ProbeCommand {
    Q_OBJECT
public:
    explicit CacheRunner(QObject* parent = nullptr);

    // After --store STORE.
    static QStringList arguments(const QString& specPath, bool cuda);

    void start(const QString& specPath, bool cuda);

signals:
    // The cache is complete; `summary` is the command's last line ("FOLDER: 70 samples (...)" or a
    // bucket's line).
    void finished(const QString& summary);

protected:
    void answered(int exitCode, const QString& output) override;
};

} // namespace parallax
