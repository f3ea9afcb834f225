"""Node strings into widgets: escaped (collectors.text.display) and never read as Rich markup.

Textual's DataTable reads a str cell as markup ("[red]" would recolour, "[/]" would raise), so every cell
made from node data goes in as a plain `Text` built here.
"""
from __future__ import annotations

from rich.text import Text

from pinscope.collectors.text import display


def cell(value) -> Text:
    """A DataTable cell from any value: escaped, plain text (no markup)."""
    return value if isinstance(value, Text) else Text(display(value))


def cells(row) -> list[Text]:
    return [cell(v) for v in row]
