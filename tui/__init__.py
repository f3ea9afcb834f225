"""pinscope's terminal UI (Textual); the command line is pinscope.cli (cli/)."""
