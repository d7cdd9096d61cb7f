#pragma once

#include "ui/models/RunSamplesModel.h"

#include <QImage>
#include <QSize>
#include <QString>
#include <QWidget>

class QBoxLayout;
class QLabel;
class QSlider;
class QVBoxLayout;

namespace parallax {

// One image a run drew, drawn whole in the widget's rectangle at its aspect ratio (small images
// scaled up with their pixels kept sharp, large ones scaled down), the image itself unchanged. It
// asks for kMaxSide at most and gives way down to a thumbnail, so that a short panel shows the
// images of a step and their captions without scrolling.
class SampleImage : public QWidget {
    Q_OBJECT
public:
    // The side a tile asks for at most; the panel's height decides the rest.
    static constexpr int kMaxSide = 256;

    explicit SampleImage(QImage image, QWidget* parent = nullptr);

    const QImage& image() const { return m_image; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    // "#0 · seed 42 · 64×64", then " · " and the prompt when it has one.
    static QString caption(const SampleEvent& sample);
    // The image over its caption, as the Live and Compare pages show a sample; a null image says
    // that its bytes are being read from the store (`reading`) or could not be read.
    static QWidget* tile(const SampleEvent& sample, const QImage& image, bool reading, QWidget* parent);
    // The tile of `model`'s image (step, index) of `sample`.
    static QWidget* tile(RunSamplesModel& model, const SampleEvent& sample, QWidget* parent);

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QImage m_image;
};

// What both sample panels lay out: a "Step" slider with its label (wide enough for `widest`), above
// a scrolled area whose content `body` holds a layout of `direction` (the images of a step, or a row
// per run).
struct StepStrip {
    QSlider* slider = nullptr;
    QLabel* label = nullptr;
    QWidget* body = nullptr;
    QBoxLayout* bodyLayout = nullptr;
};
StepStrip buildStepStrip(QWidget* parent, QVBoxLayout* root, const QString& widest, Qt::Orientation direction);

} // namespace parallax
