// Chart text (see chart_text.h).
#include "charts/chart_text.h"

#include <algorithm>
#include <cmath>

namespace plab::ui {

QString distinguishingName(const QString& name, const QStringList& names)
{
    const QString separator = QStringLiteral(", ");
    const QStringList parts = name.split(separator);
    QStringList kept;
    for (const QString& part : parts) {
        const bool shared = std::all_of(names.begin(), names.end(),
                                        [&](const QString& other) { return other.split(separator).contains(part); });
        if (!shared) kept << part;
    }
    return kept.isEmpty() ? name : kept.join(separator);
}

QString formatBytes(double bytes)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (std::abs(bytes) >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return QStringLiteral("%1 %2").arg(bytes, 0, 'f', u == 0 ? 0 : (bytes < 10 ? 2 : 1)).arg(units[u]);
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("–");
    const auto total = static_cast<long long>(std::llround(seconds));
    const long long h = total / 3600, m = (total / 60) % 60, s = total % 60;
    if (h > 0) return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QLatin1Char('0')).arg(s, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(s, 2, 10, QLatin1Char('0'));
}

QString formatPercent(double fraction)
{
    if (!std::isfinite(fraction)) return QStringLiteral("–");
    const double p = 100.0 * fraction;
    if (p != 0.0 && std::abs(p) < 0.01) return QStringLiteral("%1%").arg(p, 0, 'g', 2);
    return QStringLiteral("%1%").arg(p, 0, 'f', 2);
}

}  // namespace plab::ui
