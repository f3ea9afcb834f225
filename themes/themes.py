"""pinscope's themes, as data: Textual Theme objects whose `variables` name one colour per CPU role.

Every role also has a glyph (tui/widgets/coregrid.py), so the grid reads in monochrome and with NO_COLOR.
- pinscope-dark / pinscope-light: everyday.
- pinscope-warroom: high contrast for a big screen, few colours, bold glyphs.
- pinscope-okabe-ito: colour-blind safe (Okabe & Ito 2008 palette).
"""
from __future__ import annotations

from textual.theme import Theme

from pinscope.themes import THEME_KEYS

ROLE_VARS = ("role-exclusive", "role-reserved", "role-shared", "role-isolated", "role-offline",
             "role-unassigned", "finding-critical", "finding-warning", "cursor-bg", "highlight-bg", "stale-fg")


def _t(name, dark, primary, bg, fg, surface, panel, roles: dict, **kw) -> Theme:
    return Theme(name=name, primary=primary, background=bg, foreground=fg, surface=surface, panel=panel,
                 dark=dark, variables=roles, **kw)


THEMES: dict[str, Theme] = {
    "dark": _t("pinscope-dark", True, "#4aa3ff", "#0f1419", "#d8dee9", "#161c23", "#1e2630", {
        "role-exclusive": "#ff8c42", "role-reserved": "#b48ead", "role-shared": "#7fb77e",
        "role-isolated": "#5fb3d9", "role-offline": "#4c566a", "role-unassigned": "#ebcb8b",
        "finding-critical": "#ff5555", "finding-warning": "#f1c40f", "cursor-bg": "#3b4252",
        "highlight-bg": "#2e3f5c", "stale-fg": "#5c6370"}, warning="#f1c40f", error="#ff5555", success="#7fb77e",
        accent="#ff8c42"),
    "light": _t("pinscope-light", False, "#005cc5", "#fafafa", "#1f2328", "#f0f0f0", "#e4e4e4", {
        "role-exclusive": "#c2410c", "role-reserved": "#7c3aed", "role-shared": "#15803d",
        "role-isolated": "#0369a1", "role-offline": "#9ca3af", "role-unassigned": "#a16207",
        "finding-critical": "#b91c1c", "finding-warning": "#a16207", "cursor-bg": "#d0d7de",
        "highlight-bg": "#dbeafe", "stale-fg": "#9ca3af"}, warning="#a16207", error="#b91c1c", success="#15803d",
        accent="#c2410c"),
    "warroom": _t("pinscope-warroom", True, "#ffffff", "#000000", "#ffffff", "#000000", "#111111", {
        "role-exclusive": "#ffff00", "role-reserved": "#ffffff", "role-shared": "#00ff00",
        "role-isolated": "#00ffff", "role-offline": "#808080", "role-unassigned": "#ff00ff",
        "finding-critical": "#ff0000", "finding-warning": "#ffff00", "cursor-bg": "#0000ff",
        "highlight-bg": "#303030", "stale-fg": "#808080"}, warning="#ffff00", error="#ff0000", success="#00ff00",
        accent="#ffff00"),
    "okabe-ito": _t("pinscope-okabe-ito", True, "#56b4e9", "#101010", "#e8e8e8", "#181818", "#202020", {
        "role-exclusive": "#e69f00", "role-reserved": "#cc79a7", "role-shared": "#009e73",
        "role-isolated": "#56b4e9", "role-offline": "#666666", "role-unassigned": "#f0e442",
        "finding-critical": "#d55e00", "finding-warning": "#f0e442", "cursor-bg": "#0072b2",
        "highlight-bg": "#2a2a40", "stale-fg": "#777777"}, warning="#f0e442", error="#d55e00", success="#009e73",
        accent="#e69f00"),
}

ORDER = list(THEME_KEYS)


def theme_name(key: str) -> str:
    """'dark' -> 'pinscope-dark'; unknown keys fall back to dark."""
    return THEMES.get(key, THEMES["dark"]).name
