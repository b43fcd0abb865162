// What every chart group includes, one header per job: the group base class and timed
// view (chart_group.h), charts and axes (chart_axes.h), series pools, cached reduced
// points and pens (chart_series.h), setting-change markers (change_markers.h), and chart
// text (chart_text.h).
#pragma once

#include "charts/change_markers.h"
#include "charts/chart_axes.h"
#include "charts/chart_group.h"
#include "charts/chart_series.h"
#include "charts/chart_text.h"
