// Light and dark themes: the Fusion style with a palette, so that every widget (and the
// charts, which follow palette changes) reads well in both. Colours come from palette
// roles, never hard-coded text colours.
#pragma once

namespace plab::ui {

void applyTheme(bool dark);

}  // namespace plab::ui
