"""Themes are data: Textual Theme objects (themes.py) plus pinscope.tcss, which uses only $variables."""
from pathlib import Path

TCSS = Path(__file__).with_name("pinscope.tcss")
# the themes' keys, in the order `t` cycles them: here, without Textual, so that --help can name them
THEME_KEYS = ("dark", "light", "warroom", "okabe-ito")
