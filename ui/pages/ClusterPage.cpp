#include "ui/pages/ClusterPage.h"
#include "ui/widgets/TableExport.h"

#include "ui/models/SlurmPartitionsModel.h"

#include "core/launch/RunFolders.h"
#include "ui/models/ClusterHostsModel.h"
#include "ui/models/ClusterProfileListModel.h"
#include "ui/models/LocalMachineSummary.h"

#include <QPainter>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTableView>
#include <QUrl>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QVBoxLayout>

namespace parallax {

namespace {

const QString kExampleProfile = QStringLiteral(":/clusters/example.toml");

QString q(const std::string& s) { return QString::fromStdString(s); }

// How the profile reaches its hosts, in one line per kind of setting.
QString describe(const ClusterProfile& p, const QString& localWorker) {
    QStringList hosts;
    for (const std::string& h : p.hosts) hosts << q(h);
    QStringList lines;
    lines << QObject::tr("Hosts: %1").arg(hosts.join(QStringLiteral(", ")));
    QStringList ssh;
    if (!p.ssh.user.empty()) ssh << QObject::tr("user %1").arg(q(p.ssh.user));
    if (p.ssh.port > 0) ssh << QObject::tr("port %1").arg(p.ssh.port);
    if (!p.ssh.jump_host.empty()) ssh << QObject::tr("through %1").arg(q(p.ssh.jump_host));
    if (!p.ssh.identity_file.empty()) ssh << QObject::tr("key %1").arg(q(p.ssh.identity_file));
    if (!p.ssh.config_file.empty()) ssh << QObject::tr("config %1").arg(q(p.ssh.config_file));
    for (const std::string& o : p.ssh.options) ssh << q(o);
    lines << QObject::tr("ssh: %1").arg(ssh.isEmpty() ? QObject::tr("ssh's own settings (~/.ssh/config)") : ssh.join(QStringLiteral(", ")));
    lines << (p.worker.empty() ? QObject::tr("Worker there: %1 (this machine's path, on a shared file system)").arg(localWorker)
                               : QObject::tr("Worker there: %1").arg(q(p.worker)));
    if (!p.env.empty() || !p.mca.empty()) {
        QStringList keys;
        for (const auto& [k, v] : p.env) keys << q(k);
        QStringList mca;
        for (const auto& [k, v] : p.mca) mca << q(k);
        lines << QObject::tr("Environment: %1 · Open MPI: %2")
                     .arg(keys.isEmpty() ? QObject::tr("none") : keys.join(QStringLiteral(", ")),
                          mca.isEmpty() ? QObject::tr("none") : mca.join(QStringLiteral(", ")));
    }
    return lines.join(QChar('\n'));
}

} // namespace

ClusterPage::ClusterPage(QWidget* parent)
    : QWidget(parent), m_profiles(new ClusterProfileListModel(this)), m_hosts(new ClusterHostsModel(this)),
      m_runner(new PreflightRunner(this)), m_local(new LocalMachineProbe(this)), m_slurm(new SlurmPartitionsModel(this)) {
    m_profiles->setShowsThisMachine(true);
    const QString fromEnvironment = qEnvironmentVariable("PARALLAX_WORKER");
    m_localWorker = !fromEnvironment.isEmpty()
                        ? fromEnvironment
                        : QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("parallax-worker"));

    auto* root = new QVBoxLayout(this);
    m_splitter = new QSplitter(Qt::Horizontal, this);
    root->addWidget(m_splitter, 1);

    QWidget* left = buildProfilePanel();
    QWidget* right = buildHostPanel();
    m_splitter->addWidget(left);
    m_splitter->addWidget(right);
    m_splitter->setStretchFactor(0, 1);
    m_splitter->setStretchFactor(1, 3);

    root->addWidget(buildSlurmBox());

    connect(m_test, &QPushButton::clicked, this, &ClusterPage::testConnection);
    connect(m_newProfile, &QPushButton::clicked, this, &ClusterPage::newProfileDialog);
    connect(m_openFolder, &QPushButton::clicked, this, &ClusterPage::openProfileFolder);
    connect(m_reload, &QPushButton::clicked, this, &ClusterPage::reloadProfiles);
    connect(m_profileView->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &ClusterPage::showProfile);
    connect(m_runner, &PreflightRunner::finished, this, &ClusterPage::onFinished);
    connect(m_local, &LocalMachineProbe::changed, this, [this] {
        if (currentProfilePath() == ClusterProfileListModel::thisMachinePath()) showProfile();
    });

    reloadProfiles();
}

// Left: the profiles and where they come from.
QWidget* ClusterPage::buildProfilePanel() {
    auto* left = new QWidget(m_splitter);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    auto* listTitle = new QLabel(tr("<b>Cluster profiles</b>"), left);
    leftLayout->addWidget(listTitle);
    m_profileView = new QTableView(left);
    m_profileView->setObjectName(QStringLiteral("clusterProfiles"));
    m_profileView->setModel(m_profiles);
    TableExport::install(m_profileView, QStringLiteral("cluster-profiles"));
    m_profileView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_profileView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_profileView->verticalHeader()->hide();
    m_profileView->horizontalHeader()->setStretchLastSection(true);
    m_profileView->setWordWrap(false);
    leftLayout->addWidget(m_profileView, 1);
    auto* buttons = new QHBoxLayout;
    m_newProfile = new QPushButton(tr("New profile…"), left);
    m_newProfile->setToolTip(tr("Write a copy of the example profile into the first profile folder"));
    m_openFolder = new QPushButton(tr("Open folder"), left);
    m_openFolder->setToolTip(tr("Open the selected profile's folder (or the first profile folder) in the file manager"));
    m_reload = new QPushButton(tr("Reload"), left);
    m_reload->setToolTip(tr("Read the profile folders again"));
    buttons->addWidget(m_newProfile);
    buttons->addWidget(m_openFolder);
    buttons->addWidget(m_reload);
    buttons->addStretch(1);
    leftLayout->addLayout(buttons);
    m_folders = new QLabel(left);
    m_folders->setWordWrap(true);
    m_folders->setTextInteractionFlags(Qt::TextSelectableByMouse);
    leftLayout->addWidget(m_folders);
    return left;
}

// Right: the selected profile's hosts.
QWidget* ClusterPage::buildHostPanel() {
    auto* right = new QWidget(m_splitter);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(right);
    QFont titleFont = m_title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.3);
    titleFont.setBold(true);
    m_title->setFont(titleFont);
    rightLayout->addWidget(m_title);
    m_details = new QLabel(right);
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    rightLayout->addWidget(m_details);
    auto* actions = new QHBoxLayout;
    m_test = new QPushButton(tr("Test connection"), right);
    m_test->setToolTip(tr("Ask every host over ssh (batch mode, as a run does): does it answer, is the same worker "
                          "build there, what does it have"));
    m_busy = new QProgressBar(right);
    m_busy->setRange(0, 0);
    m_busy->setMaximumWidth(120);
    m_busy->setTextVisible(false);
    m_busy->hide();
    m_statusLabel = new QLabel(right);
    m_statusLabel->setWordWrap(true);
    m_statusLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    actions->addWidget(m_test);
    actions->addWidget(m_busy);
    actions->addWidget(m_statusLabel, 1);
    rightLayout->addLayout(actions);
    m_hostView = new QTableView(right);
    m_hostView->setObjectName(QStringLiteral("clusterHosts"));
    m_hostView->setModel(m_hosts);
    TableExport::install(m_hostView, QStringLiteral("cluster-hosts"));
    m_hostView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_hostView->verticalHeader()->hide();
    m_hostView->horizontalHeader()->setStretchLastSection(true);
    m_hostView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_hostView->horizontalHeader()->setSectionResizeMode(ClusterHostsModel::ProblemsColumn, QHeaderView::Stretch);
    m_hostView->setWordWrap(false);
    rightLayout->addWidget(m_hostView, 3);
    m_problems = new QPlainTextEdit(right);
    m_problems->setObjectName(QStringLiteral("clusterProblems"));
    m_problems->setReadOnly(true);
    m_problems->setPlaceholderText(tr("Problems and notes of the last check appear here, each with its fix."));
    rightLayout->addWidget(m_problems, 1);
    return right;
}

// Where a run with target = "slurm" can go: the partitions this machine's Slurm commands see.
QGroupBox* ClusterPage::buildSlurmBox() {
    auto* slurmBox = new QGroupBox(tr("Slurm partitions"), this);
    auto* slurmLayout = new QVBoxLayout(slurmBox);
    auto* slurmActions = new QHBoxLayout;
    m_slurmRefresh = new QPushButton(tr("Refresh"), slurmBox);
    m_slurmRefresh->setToolTip(tr("Ask Slurm (sinfo) again for its partitions and their idle nodes"));
    m_slurmStatus = new QLabel(slurmBox);
    m_slurmStatus->setWordWrap(true);
    slurmActions->addWidget(m_slurmRefresh);
    slurmActions->addWidget(m_slurmStatus, 1);
    slurmLayout->addLayout(slurmActions);
    m_slurmView = new QTableView(slurmBox);
    m_slurmView->setObjectName(QStringLiteral("slurmPartitions"));
    m_slurmView->setModel(m_slurm);
    TableExport::install(m_slurmView, QStringLiteral("slurm-partitions"));
    m_slurmView->verticalHeader()->hide();
    m_slurmView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_slurmView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_slurmView->horizontalHeader()->setStretchLastSection(true);
    m_slurmView->setMaximumHeight(m_slurmView->fontMetrics().height() * 9);
    slurmLayout->addWidget(m_slurmView);
    m_slurmView->hide(); // until Slurm lists partitions
    connect(m_slurmRefresh, &QPushButton::clicked, m_slurm, &SlurmPartitionsModel::refresh);
    connect(m_slurm, &SlurmPartitionsModel::loaded, this, [this] {
        m_slurmStatus->setText(m_slurm->statusText());
        m_slurmRefresh->setEnabled(true);
        // Without Slurm the line above says why; an empty table would only take the room.
        m_slurmView->setVisible(m_slurm->rowCount() > 0);
        m_slurmView->resizeColumnsToContents();
    });
    return slurmBox;
}

void ClusterPage::setStorePath(const QString& path) {
    m_storePath = path;
}

void ClusterPage::setLocalWorker(const QString& path) {
    m_localWorker = path;
    // The build is hashed once the page is looked at (showEvent), not when the console starts.
    m_local->refresh(m_localWorker, isVisible());
    showProfile();
}

void ClusterPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // A profile written or fixed in an editor shows up when the page is looked at again.
    reloadProfiles();
    refreshSlurm();
}

void ClusterPage::refreshSlurm() {
    if (m_slurm->refresh()) {
        m_slurmRefresh->setEnabled(false);
        m_slurmStatus->setText(m_slurm->statusText());
    }
}

void ClusterPage::reloadProfiles() {
    const QString selected = currentProfilePath();
    m_profiles->reload();
    m_local->refresh(m_localWorker, isVisible());
    QStringList folders;
    for (const QString& f : m_profiles->folders()) folders << QDir::toNativeSeparators(f);
    m_folders->setText(tr("Profiles are read from %1 (in this order; $PARALLAX_CLUSTERS lists more folders). A spec "
                          "names one with [launch] target = \"hosts\", cluster = \"<name>\".")
                           .arg(folders.isEmpty() ? tr("no folder (neither $PARALLAX_CLUSTERS nor $HOME is set)")
                                                  : folders.join(QStringLiteral(", "))));
    m_profileView->resizeColumnsToContents();
    if (!selectProfile(selected) && m_profiles->rowCount() > 0) selectProfile(m_profiles->entry(0)->path);
    // currentRowChanged does not fire for a reset that leaves no row current.
    showProfile();
}

bool ClusterPage::selectProfile(const QString& path) {
    const int row = path.isEmpty() ? -1 : m_profiles->rowOf(path);
    if (row < 0) return false;
    m_profileView->selectionModel()->setCurrentIndex(m_profiles->index(row, 0),
                                                     QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    return true;
}

QString ClusterPage::currentProfilePath() const {
    const QModelIndex current = m_profileView->selectionModel()->currentIndex();
    const ClusterProfileListModel::Entry* e = m_profiles->entry(current.isValid() ? current.row() : -1);
    return e ? e->path : QString();
}

bool ClusterPage::isChecking() const {
    return m_runner->isRunning();
}

QString ClusterPage::statusText() const {
    return m_status;
}

QString ClusterPage::problemsText() const {
    return m_problems->toPlainText();
}

QString ClusterPage::detailsText() const {
    return m_details->text();
}

void ClusterPage::showProfile() {
    const QModelIndex current = m_profileView->selectionModel()->currentIndex();
    const ClusterProfileListModel::Entry* e = m_profiles->entry(current.isValid() ? current.row() : -1);
    if (!e) {
        m_title->setText(tr("No cluster profile"));
        m_details->setText(tr("A cluster profile names the hosts a run goes to and how ssh reaches them. "
                              "New profile… writes a copy of the example into the first folder listed on the left."));
        m_hosts->clear();
    } else if (e->thisMachine) {
        m_title->setText(e->name());
        m_details->setText(m_local->machine().details());
        m_hosts->clear();
    } else if (!e->profile) {
        m_title->setText(e->name());
        m_details->setText(tr("File: %1").arg(QDir::toNativeSeparators(e->path)));
        m_hosts->clear();
    } else {
        m_title->setText(e->name());
        QString details = tr("File: %1").arg(QDir::toNativeSeparators(e->path));
        if (!e->shadowedBy.isEmpty())
            details += tr("\nlaunch.cluster = \"%1\" finds %2 first: name this profile by its path").arg(e->name(), e->shadowedBy);
        m_details->setText(details + QChar('\n') + describe(*e->profile, m_localWorker));
        m_hosts->setHosts(e->profile->hosts);
        if (isChecking() && m_checkingPath == e->path) {
            m_hosts->setChecking(true);
        } else if (const auto it = m_results.find(e->path);
                   it != m_results.end() && it->second.profile.hosts == e->profile->hosts && it->second.error.isEmpty()) {
            m_hosts->setChecks(it->second.checks, it->second.localBuild);
        }
    }
    refreshStatus();
}

void ClusterPage::testConnection() {
    // A second click while a check runs does nothing: one check at a time.
    if (isChecking()) return;
    const QModelIndex current = m_profileView->selectionModel()->currentIndex();
    const ClusterProfileListModel::Entry* e = m_profiles->entry(current.isValid() ? current.row() : -1);
    if (!e || !e->profile) return;
    PreflightOptions o;
    o.local_worker = m_localWorker.toStdString();
    o.timeout_s = m_timeoutS;
    if (!m_storePath.isEmpty()) o.shared_folder = RunFolders::rootFor(m_storePath.toStdString());
    if (!m_runner->start(*e->profile, o)) return;
    m_checkingPath = e->path;
    m_hosts->setChecking(true);
    refreshStatus();
}

void ClusterPage::onFinished(const PreflightRunner::Result& result) {
    const QString path = q(result.profile.source);
    m_results[path] = result;
    m_checkingPath.clear();
    if (path == currentProfilePath()) {
        showResult(result);
    } else {
        m_hosts->setChecking(false);
        refreshStatus();
    }
}

void ClusterPage::showResult(const PreflightRunner::Result& result) {
    if (result.error.isEmpty()) m_hosts->setChecks(result.checks, result.localBuild);
    else m_hosts->setChecking(false);
    refreshStatus();
}

void ClusterPage::refreshStatus() {
    const QString path = currentProfilePath();
    const ClusterProfileListModel::Entry* e = m_profiles->entry(m_profiles->rowOf(path));
    const bool checking = isChecking();
    const bool checkingThis = checking && m_checkingPath == path;
    m_test->setEnabled(e && e->profile && !checking);
    m_test->setText(checking ? tr("Checking…") : tr("Test connection"));
    m_busy->setVisible(checkingThis);

    QStringList lines;
    bool bad = false;
    if (!e) {
        m_status.clear();
    } else if (e->thisMachine) {
        m_status = m_local->machine().status();
        for (const QString& p : m_local->machine().problems()) lines << tr("problem: %1").arg(p);
        bad = !lines.isEmpty();
    } else if (!e->profile) {
        m_status = tr("This profile cannot be read; fix the file (the error is below) and Reload.");
        lines << e->error;
        bad = true;
    } else if (checkingThis) {
        m_status = e->profile->hosts.size() == 1 ? tr("Checking 1 host over ssh…")
                                                  : tr("Checking %1 hosts over ssh…").arg(e->profile->hosts.size());
    } else if (checking) {
        m_status = tr("Checking another profile's hosts…");
    } else if (const auto it = m_results.find(path); it != m_results.end()) {
        const PreflightRunner::Result& r = it->second;
        const QString when = tr("Checked at %1 in %2 s").arg(r.finishedAt.toString(QStringLiteral("HH:mm:ss"))).arg(r.seconds, 0, 'f', 1);
        if (!r.error.isEmpty()) {
            m_status = tr("%1: the check failed: %2").arg(when, r.error);
            bad = true;
        } else if (r.profile.hosts != e->profile->hosts) {
            m_status = tr("The profile changed since it was checked; test the connection again.");
        } else {
            int ready = 0;
            int unreachable = 0;
            for (const HostCheck& c : r.checks) {
                if (!c.reachable) ++unreachable;
                else if (c.problems.empty()) ++ready;
                for (const std::string& p : c.problems) lines << tr("problem: %1").arg(q(p));
            }
            for (const HostCheck& c : r.checks)
                for (const std::string& n : c.notes) lines << tr("note: %1").arg(q(n));
            const int total = int(r.checks.size());
            if (ready == total) {
                m_status = total == 1 ? tr("%1: the host is ready.").arg(when) : tr("%1: all %2 hosts are ready.").arg(when).arg(total);
            } else {
                QStringList parts;
                if (unreachable > 0) parts << tr("%1 of %2 not reachable").arg(unreachable).arg(total);
                if (total - ready - unreachable > 0) parts << tr("%1 with problems").arg(total - ready - unreachable);
                m_status = tr("%1: %2 (each problem names its fix, below).").arg(when, parts.join(QStringLiteral(", ")));
                bad = true;
            }
            if (r.localBuild.empty())
                lines << (QFileInfo(m_localWorker).isFile()
                              ? tr("note: the build of %1 could not be read here (sha256sum failed or took over "
                                   "10 s), so the hosts' builds were not compared")
                              : tr("note: there is no parallax-worker at %1 here, so the hosts' builds could not be "
                                   "compared"))
                             .arg(m_localWorker);
        }
    } else {
        m_status = tr("Not checked yet.");
    }
    m_statusLabel->setText(m_status);
    m_statusLabel->setStyleSheet(bad ? QStringLiteral("QLabel { color: #c62828; }") : QString());
    const QString text = lines.join(QChar('\n'));
    if (m_problems->toPlainText() != text) m_problems->setPlainText(text);
}

QString ClusterPage::createProfile(const QString& name, QString* error) {
    QString base = name.trimmed();
    if (base.endsWith(QLatin1String(".toml"))) base.chop(5);
    static const QRegularExpression valid(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]*$"));
    if (!valid.match(base).hasMatch()) {
        if (error)
            *error = tr("\"%1\" cannot name a profile: use letters, digits, '.', '_' and '-' (a spec names it as "
                        "cluster = \"<name>\")")
                         .arg(name);
        return {};
    }
    const QStringList folders = m_profiles->folders();
    if (folders.isEmpty()) {
        if (error) *error = tr("There is no profile folder: set $PARALLAX_CLUSTERS or $HOME");
        return {};
    }
    const QString folder = folders.front();
    if (!QDir().mkpath(folder)) {
        if (error) *error = tr("Cannot create the folder %1; check its parent's permissions").arg(folder);
        return {};
    }
    const QString path = QDir(folder).filePath(base + QStringLiteral(".toml"));
    if (QFileInfo::exists(path)) {
        if (error) *error = tr("%1 exists already; pick another name, or edit that file").arg(path);
        return {};
    }
    QFile example(kExampleProfile);
    if (!example.open(QIODevice::ReadOnly)) {
        if (error) *error = tr("The example profile is not in this build of the console (%1)").arg(example.errorString());
        return {};
    }
    const QByteArray text = example.readAll();
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly | QIODevice::NewOnly) || out.write(text) != text.size() || !out.flush()) {
        if (error) *error = tr("Cannot write %1: %2").arg(path, out.errorString());
        out.remove();
        return {};
    }
    out.close();
    reloadProfiles();
    selectProfile(path);
    emit profilesChanged();
    return path;
}

void ClusterPage::newProfileDialog() {
    const QString folder = m_profiles->folders().value(0);
    bool ok = false;
    const QString name = QInputDialog::getText(
        this, tr("New cluster profile"),
        tr("A copy of the example profile is written to %1 under this name.\nEdit its hosts and ssh settings there, "
           "then Test connection.\n\nName:")
            .arg(QDir::toNativeSeparators(folder)),
        QLineEdit::Normal, QString(), &ok);
    if (!ok || name.trimmed().isEmpty()) return;
    QString error;
    const QString path = createProfile(name, &error);
    if (path.isEmpty()) {
        QMessageBox::warning(this, tr("New cluster profile"), error);
        return;
    }
    emit statusMessage(tr("Wrote %1: set its hosts and ssh settings, then Test connection").arg(QDir::toNativeSeparators(path)));
}

void ClusterPage::openProfileFolder() {
    const ClusterProfileListModel::Entry* e = m_profiles->entry(m_profiles->rowOf(currentProfilePath()));
    const QString folder = e && !e->folder.isEmpty() ? e->folder : m_profiles->folders().value(0);
    if (folder.isEmpty()) {
        emit statusMessage(tr("There is no profile folder: set $PARALLAX_CLUSTERS or $HOME"));
        return;
    }
    QDir().mkpath(folder);
    if (!QDesktopServices::openUrl(QUrl::fromLocalFile(folder)))
        emit statusMessage(tr("Could not open %1 in a file manager; profiles go there").arg(QDir::toNativeSeparators(folder)));
}

void ClusterPage::paintIcon(QPainter& p, const QColor&) {
    for (double y : {3.5, 13.5}) {
        p.drawRoundedRect(QRectF(3, y, 18, 7), 1.5, 1.5);
        p.drawPoint(QPointF(7, y + 3.5));
        p.drawLine(QPointF(11, y + 3.5), QPointF(17, y + 3.5));
    }
}

} // namespace parallax
