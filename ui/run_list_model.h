// The runs list as a table: name (editable: renames the run), recipe (with a "custom"
// mark), status, test accuracy, skipped steps and images/s. The check box of a row selects
// the run for the comparison overlay; each run's colour is its decoration.
#pragma once

#include "run_data.h"

#include <QAbstractTableModel>
#include <QSet>

namespace plab::ui {

class RunStore;

class RunListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, RecipeColumn, StatusColumn, AccuracyColumn, SkippedColumn, ThroughputColumn,
                  ColumnCount };
    enum Role { RunIdRole = Qt::UserRole + 1, SortValueRole };

    explicit RunListModel(RunStore* store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    RunPtr runAt(int row) const;
    int rowOf(const QString& runId) const;

    // Runs checked for the comparison overlay, in list order.
    QList<RunPtr> comparedRuns() const;
    bool isCompared(const QString& runId) const { return compared_.contains(runId); }
    void setCompared(const QString& runId, bool compared);

    // Texts shown in the list (also used by the window's status bar and tooltips).
    static QString statusText(const RunData& run);
    static QString recipeText(const PrecisionRecipe& recipe);

signals:
    void comparisonChanged();
    void renameFailed(const QString& sentence);

private:
    RunStore* store_;
    QSet<QString> compared_;
};

}  // namespace plab::ui
