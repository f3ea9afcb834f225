"""pinscope's terminal UI (Textual) and command line."""
