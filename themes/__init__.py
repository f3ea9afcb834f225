"""Themes are data: Textual Theme objects plus .tcss that uses only $variables."""
