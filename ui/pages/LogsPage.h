#pragma once

#include <QPointer>
#include <QString>
#include <QTimer>
#include <QWidget>

#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPushButton;
class QTableView;

class QPainter;
class QColor;

namespace parallax {

class LogTableModel;
class StoreWatcher;
struct RunRecord;
struct RunStartEvent;

// Every rank's log of one run in one table (time, host, rank, level, message), filtered by ranks
// (a checkable list; none checked shows all), minimum level and a full-text search; follow mode
// keeps the newest line in view until the user scrolls up (scrolling back to the bottom resumes
// it); "First error" jumps to the first error under the current filter.
class LogsPage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (lines of text of several lengths), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    // Typing in the search box waits this long for more keys before searching.
    static constexpr int kSearchDelayMs = 250;

    explicit LogsPage(StoreWatcher* watcher, QWidget* parent = nullptr);
    ~LogsPage() override;

    void setRun(qint64 run);
    qint64 run() const { return m_run; }

    // Shows only these ranks (-1 is the supervisor and launcher); empty: all.
    void setRankFilter(const std::vector<int>& ranks);
    // A rank's lines beside the supervisor's, at every level: what an alert about the rank is read
    // with (the supervisor's own line about it is a warning a level filter could hide).
    void showRankWithSupervisor(int rank);
    std::vector<int> rankFilter() const;
    void setMinLevel(const QString& level); // "" | debug | info | warn | error
    void setSearchText(const QString& text); // applied at once (no typing delay)

    bool follow() const { return m_follow; }
    void setFollow(bool on);

    LogTableModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    // Whose logs these are: "Logs of run #12 gpt-dp2 (running)".
    QLabel* titleLabel() const { return m_title; }

public slots:
    void jumpToFirstError();

signals:
    void followChanged(bool on);

private:
    void buildUi();
    void applyQuery();
    void setRanks(int worldSize, const std::vector<std::string>& hosts);
    void onRowsInserted();
    void onScrolled(int value);
    void onFirstFound(int row);
    void updateTitle();

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    LogTableModel* m_model = nullptr;
    QTableView* m_view = nullptr;
    QListWidget* m_ranks = nullptr;
    QComboBox* m_level = nullptr;
    QLineEdit* m_search = nullptr;
    QCheckBox* m_followBox = nullptr;
    QPushButton* m_firstError = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_title = nullptr;
    QTimer m_searchDelay;
    bool m_follow = true;
    bool m_autoScrolling = false;
    bool m_settingRanks = false;
    int m_pendingJump = -1; // a found row waiting for its page before it is selected
};

} // namespace parallax
