"""Themes are data: Textual Theme objects (themes.py) plus pinscope.tcss, which uses only $variables."""
from pathlib import Path

TCSS = Path(__file__).with_name("pinscope.tcss")
