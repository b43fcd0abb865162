// The runs list model over the RunStore.
#include "run_list_model.h"

#include "run_store.h"

#include <QLocale>

#include <cmath>

namespace plab::ui {

RunListModel::RunListModel(RunStore* store, QObject* parent) : QAbstractTableModel(parent), store_(store)
{
    connect(store_, &RunStore::runsAboutToBeAdded, this, [this](int first, int last) { beginInsertRows({}, first, last); });
    connect(store_, &RunStore::runsAdded, this, [this](int, int) { endInsertRows(); });
    connect(store_, &RunStore::runAboutToBeRemoved, this, [this](int row) {
        const bool wasCompared = compared_.remove(store_->runs()[row]->id());
        beginRemoveRows({}, row, row);
        if (wasCompared) QMetaObject::invokeMethod(this, &RunListModel::comparisonChanged, Qt::QueuedConnection);
    });
    connect(store_, &RunStore::runRemoved, this, [this](int) { endRemoveRows(); });
    connect(store_, &RunStore::runChanged, this,
            [this](int row) { emit dataChanged(index(row, 0), index(row, ColumnCount - 1)); });
}

int RunListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : store_->count(); }

int RunListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

RunPtr RunListModel::runAt(int row) const
{
    return row >= 0 && row < store_->count() ? store_->runs()[row] : nullptr;
}

int RunListModel::rowOf(const QString& runId) const { return store_->indexOf(runId); }

QString RunListModel::statusText(const RunData& run)
{
    if (run.interrupted()) return tr("interrupted");
    return QString::fromLatin1(runStatusName(run.status()).data());
}

QString RunListModel::recipeText(const PrecisionRecipe& recipe)
{
    const QString name = QString::fromStdString(PrecisionRecipe::displayName(recipe.preset));
    return recipe.matchesPreset() ? name : tr("%1 (custom)").arg(name);
}

QVariant RunListModel::data(const QModelIndex& index, int role) const
{
    const RunPtr run = index.isValid() ? runAt(index.row()) : nullptr;
    if (!run) return {};
    const int column = index.column();
    if (role == RunIdRole) return run->id();
    if (role == Qt::CheckStateRole && column == NameColumn)
        return compared_.contains(run->id()) ? Qt::Checked : Qt::Unchecked;
    if (role == Qt::DecorationRole && column == NameColumn) return run->color();
    if (role == Qt::TextAlignmentRole && column >= AccuracyColumn)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) {
        QString tip = QString::fromStdString(run->settings().recipe.describe());
        if (!run->statusMessage().isEmpty()) tip += QLatin1Char('\n') + run->statusMessage();
        for (const auto& c : run->changes())
            tip += QLatin1Char('\n') + tr("step %1: %2").arg(c.step).arg(QString::fromStdString(c.description));
        return tip;
    }
    // An autoencoder's column holds its test MSE (sorted below every accuracy, lowest first).
    const bool reconstructs = modelTask(run->settings().model.kind) == ModelTask::reconstruct;
    const double accuracy = run->lastAccuracy();
    const double mse = run->lastTestLoss();
    if (role == SortValueRole) {
        switch (column) {
        case AccuracyColumn:
            if (reconstructs) return std::isnan(mse) ? -2.0 : -1.0 - mse / (1.0 + mse);
            return std::isnan(accuracy) ? -1.0 : accuracy;
        case SkippedColumn: return static_cast<qlonglong>(run->skippedSteps());
        case ThroughputColumn: return run->imagesPerSecond();
        default: break;
        }
        role = Qt::DisplayRole;
    }
    if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
    const QLocale locale;
    switch (column) {
    case NameColumn: return run->name();
    case RecipeColumn: return recipeText(run->settings().recipe);
    case StatusColumn: return statusText(*run);
    case AccuracyColumn:
        if (reconstructs) return std::isnan(mse) ? QStringLiteral("–") : tr("MSE %1").arg(locale.toString(mse, 'f', 4));
        return std::isnan(accuracy) ? QStringLiteral("–") : locale.toString(100.0 * accuracy, 'f', 2) + QStringLiteral(" %");
    case SkippedColumn: return locale.toString(static_cast<qlonglong>(run->skippedSteps()));
    case ThroughputColumn: {
        const double ips = run->imagesPerSecond();
        return ips > 0 ? locale.toString(ips, 'f', 0) : QStringLiteral("–");
    }
    default: return {};
    }
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    const RunPtr run = index.isValid() ? runAt(index.row()) : nullptr;
    if (!run || index.column() != NameColumn) return false;
    if (role == Qt::CheckStateRole) {
        setCompared(run->id(), value.toInt() == Qt::Checked);
        return true;
    }
    if (role == Qt::EditRole) {
        const QString error = store_->rename(run->id(), value.toString());
        if (!error.isEmpty()) {
            emit renameFailed(error);
            return false;
        }
        return true;   // the store's runChanged already announced it
    }
    return false;
}

void RunListModel::setCompared(const QString& runId, bool compared)
{
    const int row = rowOf(runId);
    if (row < 0 || compared_.contains(runId) == compared) return;
    if (compared)
        compared_.insert(runId);
    else
        compared_.remove(runId);
    emit dataChanged(index(row, NameColumn), index(row, NameColumn), {Qt::CheckStateRole});
    emit comparisonChanged();
}

QList<RunPtr> RunListModel::comparedRuns() const
{
    QList<RunPtr> out;
    for (const RunPtr& run : store_->runs())
        if (compared_.contains(run->id())) out << run;
    return out;
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const
{
    if (!index.isValid()) return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    if (index.column() == NameColumn) f |= Qt::ItemIsEditable | Qt::ItemIsUserCheckable;
    return f;
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case NameColumn: return tr("Name");
    case RecipeColumn: return tr("Recipe");
    case StatusColumn: return tr("Status");
    case AccuracyColumn: return tr("Accuracy");
    case SkippedColumn: return tr("Skipped");
    case ThroughputColumn: return tr("Images/s");
    default: return {};
    }
}

}  // namespace plab::ui
