#include "ui/widgets/SampleImage.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSlider>
#include <QStringList>
#include <QVBoxLayout>

#include <utility>

namespace parallax {

SampleImage::SampleImage(QImage image, QWidget* parent) : QWidget(parent), m_image(std::move(image)) {
    setObjectName(QStringLiteral("sampleImage"));
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

QSize SampleImage::sizeHint() const {
    if (m_image.isNull()) return {kMaxSide / 2, kMaxSide / 2};
    return m_image.size().scaled(QSize(kMaxSide, kMaxSide), Qt::KeepAspectRatio);
}

QSize SampleImage::minimumSizeHint() const { return {32, 32}; }

QString SampleImage::caption(const SampleEvent& sample) {
    QString text = tr("#%1 · seed %2 · %3×%4").arg(sample.index).arg(sample.seed).arg(sample.width).arg(sample.height);
    if (!sample.prompt.empty()) text += QStringLiteral(" · ") + QString::fromStdString(sample.prompt);
    return text;
}

QWidget* SampleImage::tile(RunSamplesModel& model, const SampleEvent& sample, QWidget* parent) {
    const QImage image = model.image(sample.step, sample.index);
    return tile(sample, image, image.isNull() && model.isReading(sample.step), parent);
}

QWidget* SampleImage::tile(const SampleEvent& sample, const QImage& image, bool reading, QWidget* parent) {
    auto* tile = new QWidget(parent);
    tile->setObjectName(QStringLiteral("sampleTile"));
    auto* layout = new QVBoxLayout(tile);
    layout->setContentsMargins(2, 2, 2, 2);
    auto* view = new SampleImage(image, tile);
    const QString prompt = QString::fromStdString(sample.prompt);
    view->setToolTip(prompt.isEmpty() ? tr("%1 denoising steps").arg(sample.steps)
                                      : tr("%1\n%2 denoising steps").arg(prompt).arg(sample.steps));
    // Not wrapped but elided (the whole prompt is the tooltip): a wrapped label would make the
    // row ask for its full height, and a short panel would scroll rather than shrink the images.
    auto* label = new QLabel(tile);
    QStringList lines{label->fontMetrics().elidedText(SampleImage::caption(sample), Qt::ElideRight, kMaxSide)};
    if (image.isNull()) lines << (reading ? tr("(reading the image…)") : tr("(the stored PNG could not be read)"));
    label->setText(lines.join(QChar('\n')));
    label->setObjectName(QStringLiteral("sampleCaption"));
    label->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(view, 1);
    layout->addWidget(label);
    return tile;
}

void SampleImage::paintEvent(QPaintEvent*) {
    QPainter p(this);
    if (m_image.isNull()) {
        p.setPen(palette().color(QPalette::Mid));
        p.drawRect(rect().adjusted(0, 0, -1, -1));
        return;
    }
    const QSize fitted = m_image.size().scaled(size(), Qt::KeepAspectRatio);
    const QRect target(QPoint((width() - fitted.width()) / 2, (height() - fitted.height()) / 2), fitted);
    // Pixels stay sharp when a small image is drawn larger; a large one is smoothed down.
    p.setRenderHint(QPainter::SmoothPixmapTransform, fitted.width() < m_image.width());
    p.drawImage(target, m_image);
}

StepStrip buildStepStrip(QWidget* parent, QVBoxLayout* root, const QString& widest, Qt::Orientation direction) {
    StepStrip out;
    auto* bar = new QHBoxLayout;
    out.slider = new QSlider(Qt::Horizontal, parent);
    out.slider->setPageStep(1);
    out.slider->setTickPosition(QSlider::TicksBelow);
    out.label = new QLabel(parent);
    out.label->setMinimumWidth(out.label->fontMetrics().horizontalAdvance(widest));
    bar->addWidget(new QLabel(QObject::tr("Step"), parent));
    bar->addWidget(out.slider, 1);
    bar->addWidget(out.label);
    root->addLayout(bar);

    auto* scroll = new QScrollArea(parent);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    out.body = new QWidget(scroll);
    if (direction == Qt::Horizontal) out.bodyLayout = new QHBoxLayout(out.body);
    else out.bodyLayout = new QVBoxLayout(out.body);
    out.bodyLayout->setContentsMargins(0, 0, 0, 0);
    scroll->setWidget(out.body);
    root->addWidget(scroll, 1);
    return out;
}

} // namespace parallax
