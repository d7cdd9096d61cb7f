#include "ui/plots/PlotExport.h"

#include "ui/widgets/FileDialogs.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPointer>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

namespace parallax {

namespace {

bool writeFile(const QString& path, const QByteArray& bytes, QString* error) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    return true;
}

} // namespace

PlotExport::PlotExport(QWidget* widget, Paint paint, Table table, const QString& baseName)
    : QObject(widget), m_widget(widget), m_paint(std::move(paint)), m_table(std::move(table)),
      m_baseName(baseName.isEmpty() ? QStringLiteral("plot") : baseName) {
    m_widget->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_widget, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu* menu = createMenu(m_widget);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_widget->mapToGlobal(pos));
    });
}

PlotExport* PlotExport::forCustomPlot(QCustomPlot* plot, Table table, const QString& baseName) {
    QPointer<QCustomPlot> guarded(plot);
    Paint paint = [guarded](QPaintDevice& device, const QSize& size) {
        if (!guarded) return;
        QCPPainter painter(&device);
        if (device.devType() != QInternal::Image) {
            // A vector device: every line as a path, nothing from the pixmap caches.
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
        } else {
            painter.setRenderHint(QPainter::Antialiasing);
        }
        guarded->toPainter(&painter, size.width(), size.height());
    };
    return new PlotExport(plot, std::move(paint), std::move(table), baseName);
}

QSize PlotExport::size() const { return m_widget->size().expandedTo(QSize(1, 1)); }

void PlotExport::paintInto(QPaintDevice& device, const QSize& size) const {
    if (m_prepare) m_prepare();
    if (m_paint) {
        m_paint(device, size);
        return;
    }
    QPainter painter(&device);
    m_widget->render(&painter, QPoint(), QRegion(QRect(QPoint(0, 0), size)));
}

QImage PlotExport::image() const {
    const QSize s = size();
    QImage out(s, QImage::Format_ARGB32_Premultiplied);
    out.fill(m_widget->palette().color(QPalette::Base));
    paintInto(out, s);
    return out;
}

PlotTable PlotExport::table() const {
    if (m_prepare) m_prepare();
    return m_table ? m_table() : PlotTable{};
}

bool PlotExport::savePng(const QString& path, QString* error) const {
    QByteArray bytes;
    {
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        if (!image().save(&buffer, "PNG")) {
            if (error) *error = tr("the image could not be encoded");
            return false;
        }
    }
    return writeFile(path, bytes, error);
}

bool PlotExport::saveSvg(const QString& path, QString* error) const {
    QByteArray bytes;
    {
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        const QSize s = size();
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(s);
        svg.setViewBox(QRect(QPoint(0, 0), s));
        svg.setTitle(m_baseName);
        svg.setDescription(tr("Exported from Parallax"));
        paintInto(svg, s);
    }
    if (bytes.isEmpty()) {
        if (error) *error = tr("nothing was drawn");
        return false;
    }
    return writeFile(path, bytes, error);
}

bool PlotExport::saveCsv(const QString& path, QString* error) const {
    return writeFile(path, table().toCsv(), error);
}

void PlotExport::copyImage() const { QApplication::clipboard()->setImage(image()); }

QMenu* PlotExport::createMenu(QWidget* parent) {
    auto* menu = new QMenu(parent);
    menu->addAction(tr("Export PNG…"), this, [this] {
        exportWithDialog(tr("Export the plot as PNG"), QStringLiteral("png"), tr("PNG images (*.png)"),
                         &PlotExport::savePng);
    });
    menu->addAction(tr("Export SVG…"), this, [this] {
        exportWithDialog(tr("Export the plot as SVG"), QStringLiteral("svg"), tr("SVG drawings (*.svg)"),
                         &PlotExport::saveSvg);
    });
    QAction* csv = menu->addAction(tr("Export CSV…"), this, [this] {
        exportWithDialog(tr("Export the plotted data as CSV"), QStringLiteral("csv"), tr("CSV files (*.csv)"),
                         &PlotExport::saveCsv);
    });
    csv->setEnabled(bool(m_table));
    menu->addSeparator();
    menu->addAction(tr("Copy image"), this, &PlotExport::copyImage);
    return menu;
}

void PlotExport::exportWithDialog(const QString& caption, const QString& suffix, const QString& filter,
                                  bool (PlotExport::*save)(const QString&, QString*) const) {
    QString base = m_baseName;
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    const QString start = QDir::home().filePath(base + QChar('.') + suffix);
    QString path = FileDialogs::saveFile(m_widget, caption, start, filter);
    if (path.isEmpty()) return;
    if (!path.endsWith(QChar('.') + suffix, Qt::CaseInsensitive)) path += QChar('.') + suffix;
    QString error;
    if (!(this->*save)(path, &error))
        QMessageBox::warning(m_widget, caption, tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), error));
}

} // namespace parallax
