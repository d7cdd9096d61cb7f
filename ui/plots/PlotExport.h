#pragma once

#include "ui/models/PlotTable.h"

#include <QImage>
#include <QObject>
#include <QSize>
#include <QString>
#include <QStringList>

#include <functional>
#include <vector>

class QCustomPlot;
class QMenu;
class QPaintDevice;
class QWidget;

namespace parallax {

// A plot that can be exported: its picture at a size (drawn with vectors where the painter is an
// SVG generator) and its data. Plots install a PlotExport on themselves; it adds the context menu
// (Export PNG…, Export SVG…, Export CSV…, Copy image) and the same actions without a dialog.
class PlotExport : public QObject {
    Q_OBJECT
public:
    // Draws the plot at `size` onto `device` (an image, or an SVG generator: vectors there).
    using Paint = std::function<void(QPaintDevice& device, const QSize& size)>;
    using Table = std::function<PlotTable()>;
    // Runs before every export (a plot that decimates lazily brings its curves up to date).
    using Prepare = std::function<void()>;

    // Right-clicking `widget` opens the menu. Empty `paint`: the widget renders itself. `baseName` is the file name the dialogs offer.
    PlotExport(QWidget* widget, Paint paint, Table table, const QString& baseName = QString());
    // For a QCustomPlot: drawn through QCustomPlot::toPainter (vectors in SVG).
    static PlotExport* forCustomPlot(QCustomPlot* plot, Table table, const QString& baseName = QString());

    void setBaseName(const QString& name) { m_baseName = name; }
    QString baseName() const { return m_baseName; }
    void setPrepare(Prepare prepare) { m_prepare = std::move(prepare); }

    // The size exports are drawn at: the widget's size on screen.
    QSize size() const;
    QImage image() const;
    PlotTable table() const;

    // Without a dialog; false and `error` when the file could not be written.
    bool savePng(const QString& path, QString* error = nullptr) const;
    bool saveSvg(const QString& path, QString* error = nullptr) const;
    bool saveCsv(const QString& path, QString* error = nullptr) const;
    void copyImage() const;

    // The menu the right click opens (the caller owns it); extra entries can be added to it.
    QMenu* createMenu(QWidget* parent);

private:
    void exportWithDialog(const QString& caption, const QString& suffix, const QString& filter,
                          bool (PlotExport::*save)(const QString&, QString*) const);
    void paintInto(QPaintDevice& device, const QSize& size) const;

    QWidget* m_widget;
    Paint m_paint;
    Table m_table;
    Prepare m_prepare;
    QString m_baseName;
};

} // namespace parallax
