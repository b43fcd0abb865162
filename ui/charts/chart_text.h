// Text the charts show: run names shortened to what tells them apart, bytes, durations
// and percentages.
#pragma once

#include <QString>
#include <QStringList>

namespace plab::ui {

// `name` without the comma-separated parts that every one of `names` shares: among "AMP
// FP16, no loss scaling" and "AMP FP16, dynamic loss scaling" the first is "no loss
// scaling". The whole name when nothing is shared or nothing would be left (one run).
QString distinguishingName(const QString& name, const QStringList& names);

QString formatBytes(double bytes);
QString formatDuration(double seconds);
QString formatPercent(double fraction);

}  // namespace plab::ui
